"""Share pages are kept out of shared caches and send no Referer."""

import pytest

from benchapp.models import Comparison
from tests.benchapp.results_data import make_run


@pytest.mark.parametrize("suffix", ["", "results.json"])
def test_share_pages_are_private_no_store(client, team, owner, suffix):
    a = make_run(team, name="a", cells=[({"threads": t}, 1, {"tps": 10.0 * t}) for t in (1, 2)])
    b = make_run(team, name="b", cells=[({"threads": t}, 1, {"tps": 11.0 * t}) for t in (1, 2)])
    comparison = Comparison.objects.create(team=team, name="ab", created_by=owner)
    comparison.runs.set([a, b])
    token = comparison.share()
    response = client.get(f"/share/{token}/{suffix}")
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    assert response["Referrer-Policy"] == "no-referrer"
