"""benchapp.dbretry: a unit of database work is tried again after a lost
connection, within its budget, and never inside a transaction."""

from __future__ import annotations

import pytest
from django.db import OperationalError, transaction

from benchapp import dbretry
from benchapp.models import Team


def flaky(failures: int):
    """A unit of work that loses the database `failures` times, then counts teams."""
    calls = []

    def work():
        calls.append(1)
        if len(calls) <= failures:
            raise OperationalError("server closed the connection unexpectedly")
        return Team.objects.count()

    return work, calls


@pytest.mark.django_db(transaction=True)
def test_retrying_returns_once_the_database_is_back(monkeypatch):
    monkeypatch.setattr(dbretry, "FIRST_WAIT", 0.01)
    work, calls = flaky(3)
    assert dbretry.retrying(work, "counting", budget=10) == 0
    assert len(calls) == 4


@pytest.mark.django_db(transaction=True)
def test_retrying_gives_up_after_its_budget(monkeypatch):
    monkeypatch.setattr(dbretry, "FIRST_WAIT", 0.05)
    work, calls = flaky(1000)
    with pytest.raises(OperationalError):
        dbretry.retrying(work, "counting", budget=0.3)
    assert 2 <= len(calls) < 10


@pytest.mark.django_db(transaction=True)
def test_retrying_raises_at_once_inside_a_transaction():
    work, calls = flaky(1)
    with pytest.raises(OperationalError), transaction.atomic():
        dbretry.retrying(work, "counting", budget=10)
    assert len(calls) == 1


def test_lost_database_reads_the_cause():
    try:
        try:
            raise OperationalError("gone")
        except OperationalError as exc:
            raise RuntimeError("while reading a credential") from exc
    except RuntimeError as exc:
        assert dbretry.lost_database(exc)
    assert not dbretry.lost_database(ValueError("bad plan"))
