"""Fair share between teams (issue 25): how many cells a team may have sent
or running at once, how many runs it may have queued or running, and the
order in which waiting runs are dispatched when something frees up.

A team at its cap of running cells has no further cell sent, so it holds no
worker slot while it waits: its cells stay queued rows until a cell of its
own ends. When a cell ends, every run with queued cells is dispatched again,
those of the team with the fewest running cells first, and on a tie the team
whose last cell started longest ago (then the same two rules between the
runs of one team): teams take turns on a worker and on a shared machine
instead of first come, first served.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db.models import Count, Max, Q

from benchapp.models import Cell, CellLock, Run, Team
from benchapp.plans.planning import PlanRefused

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TooManyRuns(PlanRefused):
    """The team has as many queued or running runs as it may."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            "runs",
            f"your team already has {limit} queued or running runs, its limit "
            "(BENCHBOARD_TEAM_MAX_ACTIVE_RUNS or the team's own): wait for one to end or cancel one",
        )


def running_cells(team_id: int) -> int:
    """The team's cells that are running, or sent to a worker and not yet
    claimed (they hold a lock): what its cap counts."""
    active = Q(run__team_id=team_id, run__status__in=Run.ACTIVE)
    running = Cell.objects.filter(active, status=Cell.RUNNING).count()
    sent = (
        CellLock.objects.filter(holder__run__team_id=team_id, holder__status=Cell.QUEUED)
        .values("holder_id")
        .distinct()
        .count()
    )
    return running + sent


def running_cells_of(team_ids) -> dict[int, int]:
    """running_cells for many teams in two queries: {team id: count} (absent: 0)."""
    running = (
        Cell.objects.filter(
            run__team_id__in=team_ids, run__status__in=Run.ACTIVE, status=Cell.RUNNING
        )
        .order_by()
        .values("run__team_id")
        .annotate(n=Count("id"))
    )
    sent = (
        CellLock.objects.filter(holder__run__team_id__in=team_ids, holder__status=Cell.QUEUED)
        .order_by()
        .values("holder__run__team_id")
        .annotate(n=Count("holder_id", distinct=True))
    )
    found: dict[int, int] = {}
    for row in running:
        found[row["run__team_id"]] = row["n"]
    for row in sent:
        team = row["holder__run__team_id"]
        found[team] = found.get(team, 0) + row["n"]
    return found


def room(team: Team) -> int:
    """How many more cells the team may send now (never below 0)."""
    return max(team.running_cells_limit - running_cells(team.pk), 0)


def check_active_runs(team: Team) -> None:
    """TooManyRuns when the team is at its cap of queued or running runs."""
    limit = team.active_runs_limit
    if Run.objects.filter(team=team, status__in=Run.ACTIVE).count() >= limit:
        raise TooManyRuns(limit)


def waiting_runs() -> list[int]:
    """Active runs with queued cells, in the order they get a turn."""
    ids = list(
        Cell.objects.filter(status=Cell.QUEUED, run__status__in=Run.ACTIVE)
        .order_by()
        .values_list("run_id", flat=True)
        .distinct()
    )
    return fair_order(ids)


def fair_order(run_ids: list[int]) -> list[int]:
    """run_ids sorted by (team's running cells, team's last start, run's
    running cells, run's last start, creation): the least served first."""
    if len(run_ids) < 2:
        return list(run_ids)
    runs = list(Run.objects.filter(pk__in=run_ids).values_list("pk", "team_id", "created_at"))
    teams = {team for _, team, _ in runs}
    live = Cell.objects.filter(run__team_id__in=teams, run__status__in=Run.ACTIVE).order_by()
    per_run = {
        row["run_id"]: (row["n"], row["last"] or EPOCH)
        for row in live.values("run_id").annotate(
            n=Count("id", filter=Q(status=Cell.RUNNING)), last=Max("started_at")
        )
    }
    per_team = {
        row["run__team_id"]: (row["n"], row["last"] or EPOCH)
        for row in live.values("run__team_id").annotate(
            n=Count("id", filter=Q(status=Cell.RUNNING)), last=Max("started_at")
        )
    }
    idle = (0, EPOCH)
    runs.sort(key=lambda r: (*per_team.get(r[1], idle), *per_run.get(r[0], idle), r[2]))
    return [pk for pk, _, _ in runs]


WAITS_SHOWN = 10  # reasons a run page lists (one per target's next cell)


def wait_reasons(run: Run) -> list[str]:
    """Why the run's queued cells are not running: its team at its cap, and
    for the next queued cell of each target, the locks another cell holds
    ("cell K: waiting for machine 10.0.0.5:3306, held by run R cell K2").
    [] for a run that waits for nothing (or is over)."""
    from benchapp.runs import machines, workerpool

    if run.status not in Run.ACTIVE or run.cancel_requested:
        return []
    queued = [
        c for c in machines.next_per_target(run) if not CellLock.objects.filter(holder=c).exists()
    ]
    if not queued:
        return []
    reasons = []
    team = run.team
    if room(team) == 0:
        reasons.append(f"team at its limit of {team.running_cells_limit} running cells")
    for cell in queued[:WAITS_SHOWN]:
        reasons += [f"cell {cell.key}: {why}" for why in machines.blockers(run, cell)]
        if no_host := workerpool.why_no_host(cell):
            reasons.append(f"cell {cell.key}: {no_host}")
    return reasons
