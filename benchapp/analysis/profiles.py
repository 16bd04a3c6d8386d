"""CPU profiles for the pages: a cell's flame graphs and the differential
flame graph of two cells (runners.profiles does the arithmetic; the folded
stacks come from the artifact store)."""

from __future__ import annotations

from benchapp.models import Cell, CellProfile
from benchapp.store import artifactstore
from runners import profiles as folded

TOP_FRAMES = 8


def _stacks(profile: CellProfile):
    """A profile's stacks (Counter), or None when its object is gone."""
    try:
        return folded.read_folded(artifactstore.read_profile(profile))
    except artifactstore.StoreError:
        return None


def cell_profiles(cell: Cell) -> list[dict]:
    """Each profile of the cell's last attempt: role, process, host, samples,
    the flame graph's tree and the top frames by self share (or the reason
    the stacks cannot be read)."""
    out = []
    for profile in cell.profiles.filter(attempt=cell.attempt):
        stacks = _stacks(profile)
        row = {
            "id": profile.pk,
            "json_id": f"profile-tree-{profile.pk}",
            "role": profile.role,
            "process": profile.process,
            "host": profile.host,
            "samples": profile.samples,
            "size": profile.size,
        }
        if stacks is None:
            row["missing"] = "its stacks are no longer in the artifact store"
        else:
            row["tree"] = folded.tree(stacks, profile.process or profile.role)
            row["top"] = [
                {"function": fn, "share": round(100 * share, 1)}
                for fn, share in folded.top_frames(stacks, TOP_FRAMES)
            ]
        out.append(row)
    return out


def profiled_cells(cells) -> list[Cell]:
    """The cells (of a queryset) that have at least one profile, in run and index order."""
    ids = CellProfile.objects.filter(cell__in=cells).values_list("cell_id", flat=True)
    return list(Cell.objects.filter(pk__in=ids).select_related("run").order_by("run_id", "index"))


def differential(before: Cell, after: Cell, role: str) -> dict | None:
    """The differential flame graph (after's stacks, coloured by the change
    from before) and the functions whose share grew and shrank most, for
    the profiles of role ("tool" or "server"); None when either lacks one."""
    pair = []
    for cell in (before, after):
        profile = cell.profiles.filter(attempt=cell.attempt, role=role).first()
        stacks = _stacks(profile) if profile else None
        if not stacks:
            return None
        pair.append(stacks)
    return {
        "tree": folded.diff_tree(*pair),
        "changes": folded.changes(*pair),
        "samples": [sum(s.values()) for s in pair],
    }
