"""Client-bound only when the client is a machine of its own; the host's CPU
when client and target are one machine; one line above the table."""

import pytest

from benchapp.analysis import client_load, results
from tests.benchapp.results_data import make_run
from tests.benchapp.study_runs import s1_run, s2_run

pytestmark = pytest.mark.django_db


def test_separate_client_flags_client_bound_cells_in_one_line(owner_client, team):
    run = s1_run(team)
    run.cells.filter(key="load_type=key,target=m2-4xlarge-iops").update(client_bound=True)
    data = results.results([run])
    assert data["client_load"] == [
        "Client-bound: 1 of 10 cells (load_type=key,target=m2-4xlarge-iops #1) ran with the "
        "client's CPU above 90 % busy: the client, not the target, may be their limit."
    ]
    flagged = [
        (r["label"], c["label"])
        for r, line in zip(data["table"]["rows"], data["table"]["cells"])
        for c, s in zip(data["table"]["columns"], line)
        if s and s.client_bound
    ]
    assert flagged == [("m2-4xlarge-iops", "key")]
    html = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert html.count('class="client-load warn"') == 1
    assert html.count('aria-label="client-bound"') == 1  # a mark on that cell, no box
    assert 'client-bound"' not in html.replace('aria-label="client-bound"', "")  # no cell class


def test_one_machine_shows_the_hosts_cpu_not_client_bound(owner_client, team):
    run = s2_run(team)
    run.cells.update(client_bound=True)  # >90 % busy: the target's own load, not the client
    data = results.results([run])
    assert data["client_bound"] == []
    assert data["client_load"] == [
        "Client and target are one machine: its CPU was 40–88 % busy during the runs "
        "(mean 64 %, 10 cells), the tool's share included."
    ]
    html = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert 'aria-label="client-bound"' not in html and "Client-bound:" not in html
    assert "its CPU was 40–88 % busy" in html


@pytest.mark.parametrize(
    "document, shared",
    [
        ({"client": {"on": "target"}}, True),
        ({"client": {"on": "db8"}}, True),
        ({"client": {"provision": {"provider": "aws_ec2"}}}, False),
        ({"client": {"ssh": {"host": "bench.internal"}}}, False),
        ({"targets": [{"name": "a", "host": "127.0.0.1"}]}, True),  # local client, local server
        ({"targets": [{"name": "a", "host": "db.internal"}]}, False),
        ({"targets": ["stored-target"]}, False),
        # Several clients: one machine only when every client is the target's.
        ({"client": [{"on": "target"}, {"on": "target"}]}, True),
        ({"client": [{"on": "target"}, {"ssh": {"host": "bench.internal"}}]}, False),
        (
            {
                "client": [{"local": True, "count": 2}],
                "targets": [{"name": "a", "host": "127.0.0.1"}],
            },
            True,
        ),
    ],
)
def test_one_machine_from_the_plan(team, document, shared):
    run = make_run(team, document=document)
    assert client_load.one_machine(run) is shared


def test_cells_from_several_clients_get_one_line_with_spread_and_uneven_load(owner_client, team):
    run = s1_run(team)
    cells = list(run.cells.order_by("index"))
    for cell, (clients, spread, uneven) in zip(
        cells, [(2, 0.004, []), (3, 0.012, [3]), (3, 0.001, [])]
    ):
        cell.facts = {
            **cell.facts,
            "clients": clients,
            "start_spread_s": spread,
            "uneven_clients": uneven,
        }
        cell.save(update_fields=["facts"])
    lines = results.results([run])["client_load"]
    assert lines[-1] == (
        "Several clients: 3 cells loaded their target from 2–3 client hosts together, started "
        "at most 12 ms apart; each client's figures are the groups client=N. Uneven load in "
        f"1 cells: {cells[1].key} #1 (client 3) made less than 80% of the clients' median "
        "throughput."
    )
    assert (
        "Several clients: 3 cells" in owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    )
