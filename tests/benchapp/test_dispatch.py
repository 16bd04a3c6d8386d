"""Dispatch at the database level: which cells a dispatch sends and which runs
a released target wakes, read back as the messages that reach Redis (no
worker runs here, so they stay in the queue)."""

import json
import threading
import time

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction

from benchapp.dispatch import EXECUTE_CELL
from benchapp.models import Cell, CellLock, Run, Team
from benchapp.runs import orchestration, placement


@pytest.fixture
def broker():
    """The Redis database of CELERY_BROKER_URL, emptied of this session's queue."""
    conn = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    conn.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    yield conn
    conn.delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def sent(broker) -> list[tuple[str, int]]:
    """(task name, first argument) of each message in the queue, oldest first."""
    raw = broker.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1)
    headers = [json.loads(message)["headers"] for message in reversed(raw)]
    return [(h["task"], int(h["argsrepr"].strip("(),"))) for h in headers]


def fio_plan(targets, repeat=1) -> dict:
    return {
        "name": "dispatch",
        "tool": "fio",
        "targets": [{"name": name, "kind": "host"} for name in targets],
        "params": {"filename": "fio.data", "size": "1M", "runtime": 1, "time_based": True},
        "axes": {"target": list(targets)},
        "repeat": repeat,
        "order": "interleaved",
        # Local targets share the worker host: only their target locks are
        # under test here (tests/benchapp/runs/test_machines.py has the machines).
        "isolation": "target",
    }


@pytest.fixture(autouse=True)
def roomy_team(team):
    team.max_running_cells = 10
    team.save()


def test_dispatch_sends_the_first_queued_cell_of_each_target(
    team, broker, django_capture_on_commit_callbacks
):
    run = orchestration.start_run(team, fio_plan(["a", "b", "c"], repeat=3))
    first_of = {
        target: run.cells.filter(target_name=target).order_by("index").first().pk
        for target in "abc"
    }
    with django_capture_on_commit_callbacks(execute=True):
        ids = orchestration.dispatch(run.pk)
        again = orchestration.dispatch(run.pk)  # every target is held: nothing more
    assert ids == [first_of["a"], first_of["b"], first_of["c"]]
    assert again == []
    assert sent(broker) == [(EXECUTE_CELL, cell_id) for cell_id in ids]


def executed(broker) -> list[int]:
    return [cell_id for task, cell_id in sent(broker) if task == EXECUTE_CELL]


def test_a_released_target_goes_to_the_first_waiting_run_once(
    team, broker, django_capture_on_commit_callbacks
):
    """Runs queued behind a busy target are dispatched when it is released:
    the first of them (in the fair order) takes it, and nothing else is sent
    however many of their cells wait on it."""
    running = orchestration.start_run(team, fio_plan(["disk"]))
    waiting = [orchestration.start_run(team, fio_plan(["disk"], repeat=4)) for _ in range(2)]
    with django_capture_on_commit_callbacks(execute=True):
        (cell_id,) = orchestration.dispatch(running.pk)
        assert [orchestration.dispatch(run.pk) for run in waiting] == [[], []]
    cell = orchestration.claim(cell_id)
    broker.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    with django_capture_on_commit_callbacks(execute=True):
        orchestration._finish_cell(cell, Cell.SUCCEEDED)
    assert executed(broker) == [waiting[0].cells.order_by("index").first().pk]


def test_a_freed_machine_goes_to_the_least_served_team_first(
    team, broker, django_capture_on_commit_callbacks
):
    """Local cells share the worker host: when team alpha's cell ends, team
    beta's waiting run (no cell started yet) gets the machine before
    alpha's next run, although alpha's was queued first."""
    other = Team.objects.create(name="beta")
    machine = {"isolation": "machine"}
    first = orchestration.start_run(team, {**fio_plan(["a"]), **machine})
    again = orchestration.start_run(team, {**fio_plan(["b"]), **machine})
    theirs = orchestration.start_run(other, {**fio_plan(["c"]), **machine})
    with django_capture_on_commit_callbacks(execute=True):
        (cell_id,) = orchestration.dispatch(first.pk)
        assert orchestration.dispatch(again.pk) == orchestration.dispatch(theirs.pk) == []
    cell = orchestration.claim(cell_id)
    broker.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    with django_capture_on_commit_callbacks(execute=True):
        orchestration._finish_cell(cell, Cell.SUCCEEDED)
    assert executed(broker) == [theirs.cells.get().pk]


def test_a_cell_is_sent_once_when_two_dispatches_race(team):
    """Two dispatches of one run that both read the target as free (each on
    a worker whose cell just finished): the one that takes the lock second
    finds it taken, even by the very cell it would send."""
    run = orchestration.start_run(team, fio_plan(["disk"]))
    cell = run.cells.get()
    assert placement.take_locks(run, cell)  # the first dispatch
    assert not placement.take_locks(run, cell)  # the second


@pytest.mark.django_db(transaction=True)
def test_two_dispatches_of_one_run_at_once_keep_its_concurrency(team):
    """A run limited to one cell at a time, two targets: while one dispatch
    is taking target a (its transaction not yet committed), a second
    dispatch of the same run must not count a as free and send b too."""
    run = orchestration.start_run(team, fio_plan(["a", "b"]), concurrency=1)
    Run.objects.filter(pk=run.pk).update(status=Run.RUNNING)  # as after its first dispatch
    first = run.cells.get(target_name="a")
    holding, release = threading.Event(), threading.Event()
    second: list[list[int]] = []

    def first_dispatch():  # what a dispatch does, paused before its commit
        try:
            with transaction.atomic():
                Run.objects.select_for_update().get(pk=run.pk)
                assert placement.take_locks(run, first)
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    def second_dispatch():
        try:
            second.append(orchestration.dispatch(run.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=first_dispatch), threading.Thread(target=second_dispatch)]
    threads[0].start()
    assert holding.wait(10)
    threads[1].start()
    time.sleep(0.5)  # the second dispatch reads while the first is open
    release.set()
    for thread in threads:
        thread.join(20)
    assert second == [[]]
    assert (
        list(CellLock.objects.exclude(holder=None).values_list("holder__target_name", flat=True))
        == ["a"] * CellLock.objects.exclude(holder=None).count()
    )
