"""`manage.py workers` (docs/operations.md, "Worker hosts"): the recipe's
list, drain, resume and forget steps, through a real worker host."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchapp.models import WorkerHost
from benchapp.runs.hostid import host_id

pytestmark = pytest.mark.django_db(transaction=True)


def workers(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("workers", *args, stdout=out)
    return out.getvalue()


def test_workers_command_lists_drains_resumes_and_forgets_a_stopped_host(start_worker):
    worker = start_worker("recipe", concurrency=2)
    me = host_id()  # the worker runs on this host: same id
    listed = workers()
    assert me in listed and "\tup\t0/2 busy" in listed and "fio" in listed

    assert "draining" in workers("drain", me)
    assert WorkerHost.objects.get(host_id=me).draining
    assert "\tdraining\t" in workers("list")
    assert "resumed" in workers("resume", me)
    assert not WorkerHost.objects.get(host_id=me).draining

    with pytest.raises(CommandError, match="still has a live worker"):
        workers("forget", me)
    worker.stop()  # a warm shutdown marks its process stopped: its slots are gone
    assert "forgotten" in workers("forget", me)
    assert not WorkerHost.objects.filter(host_id=me).exists()
    with pytest.raises(CommandError, match="no worker host"):
        workers("drain", me)
