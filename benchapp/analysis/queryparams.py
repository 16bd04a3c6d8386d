"""Query parameters of the reading pages (results, comparison, share, trend):
a value the page does not know is refused with a 400 that names the
parameter and the values it accepts, instead of being silently ignored
(a bookmark with `?statistic=medain` must not show the mean as if asked for).
"""

from __future__ import annotations

from collections.abc import Sequence

from benchapp.analysis import defaults
from benchapp.analysis.pivot import STATISTICS

MAX_LISTED = 30  # accepted values named in the message; a longer list is cut


class BadParameter(Exception):
    """A query parameter with a value the page does not accept."""

    def __init__(self, name: str, value: str, accepted: Sequence):
        self.name, self.value = name, value
        self.accepted = [str(a) for a in accepted]
        listed = ", ".join(self.accepted[:MAX_LISTED])
        if len(self.accepted) > MAX_LISTED:
            listed += f" (and {len(self.accepted) - MAX_LISTED} more)"
        super().__init__(
            f"{name}={value!r} is not accepted here. Accepted values: {listed or 'none'}."
        )


def check(query, accepted: dict[str, Sequence]) -> None:
    """Raise BadParameter for the first value of a listed parameter that is not
    accepted; empty values mean "the default" and pass. `query` is a QueryDict."""
    for name, allowed in accepted.items():
        for value in query.getlist(name):
            if value and value not in allowed:
                raise BadParameter(name, value, allowed)


def view_parameters(data: dict) -> dict[str, Sequence]:
    """What the pivot parameters of a results or comparison page accept, from
    the data the page shows (benchapp.analysis.results.results)."""
    dims = data["dimensions"]
    accepted = {
        "rows": dims,
        "columns": dims,
        "metric": data["metrics"],
        "statistic": STATISTICS,
        "chart_x": dims,
        "chart": defaults.CHARTS,
    }
    if len(data["run_labels"]) > 1:
        accepted["baseline"] = data["run_labels"]
    return accepted
