"""static_cluster: existing hosts leased per run, priced per host-hour (no cloud call)."""

from datetime import UTC, datetime

import pytest

from runners.errors import ValidationError
from runners.providers import ProvisionContext, get_provider
from runners.providers.billing import actual, estimate

CLUSTER = get_provider("static_cluster")
SPEC = {
    "provider": "static_cluster",
    "name": "lab",
    "kind": "mysql",
    "hosts": [{"host": "10.0.0.5"}, {"host": "10.0.0.6", "port": 3307}],
    "price_per_hour": 0.5,
    "ssh": {"user": "bench", "credential": "lab-key"},
    "user": "bench",
}


def context(calls: list) -> ProvisionContext:
    return ProvisionContext(
        run_id="7-261126",
        team="t",
        owner="o",
        expires_at=datetime(2026, 11, 27, tzinfo=UTC),
        on_create=lambda kind, token, tags: calls.append(("create", kind, token)),
        on_created=lambda kind, token, cloud_id: calls.append(("created", kind, cloud_id)),
    )


def test_provision_leases_one_row_per_host_and_talks_to_the_first():
    calls = []
    handle = CLUSTER.provision(SPEC, context(calls))
    assert calls == [
        ("create", "cluster_host", "7-261126/lab/0"),
        ("created", "cluster_host", "lab/0/10.0.0.5"),
        ("create", "cluster_host", "7-261126/lab/1"),
        ("created", "cluster_host", "lab/1/10.0.0.6"),
    ]
    assert handle.ids == {
        "cluster": "lab/0/10.0.0.5",
        "hosts": ["lab/0/10.0.0.5", "lab/1/10.0.0.6"],
    }
    assert (handle.endpoint.host, handle.endpoint.port, handle.endpoint.user) == (
        "10.0.0.5",
        3306,
        "bench",
    )
    assert handle.extra["nodes"] == [
        {"host": "10.0.0.5", "port": 3306},
        {"host": "10.0.0.6", "port": 3307},
    ]
    assert (handle.ssh["host"], handle.ssh["user"]) == ("10.0.0.5", "bench")
    assert handle.ids[CLUSTER.PRIMARY_ID] == "lab/0/10.0.0.5"


def test_provision_talks_to_the_balancer_when_given():
    handle = CLUSTER.provision({**SPEC, "via": {"host": "10.0.0.9", "port": 6033}}, context([]))
    assert (handle.endpoint.host, handle.endpoint.port) == ("10.0.0.9", 6033)


def test_every_host_is_priced_and_counted():
    assert estimate([SPEC], 3.0, {}).total == pytest.approx(2 * 0.5 * 3)
    assert CLUSTER.counted_resources(SPEC) == 2
    one_host = {
        "kind": "cluster_host",
        "spec": SPEC,
        "started": datetime(2026, 11, 26, 10, tzinfo=UTC),
        "ended": datetime(2026, 11, 26, 11, 30, tzinfo=UTC),
    }
    assert actual([one_host, one_host]).total == pytest.approx(2 * 0.5 * 1.5)


@pytest.mark.parametrize(
    "change, param",
    [
        ({"hosts": []}, "hosts"),
        ({"hosts": [{"host": f"10.0.0.{i}"} for i in range(65)]}, "hosts"),
        ({"hosts": [{"host": "a b"}]}, "nodes[0].host"),
        ({"price_per_hour": None}, "price_per_hour"),
        ({"price_per_hour": -1}, "price_per_hour"),
        ({"price_per_hour": True}, "price_per_hour"),
        ({"price_per_hour": "0.5"}, "price_per_hour"),
        ({"kind": "oracle"}, "kind"),
    ],
)
def test_bad_spec_is_refused_before_any_row(change, param):
    calls = []
    with pytest.raises(ValidationError) as refused:
        CLUSTER.provision({**SPEC, **change}, context(calls))
    assert refused.value.param == param and calls == []
    if param != "kind":
        with pytest.raises(ValidationError):
            estimate([{**SPEC, **change}], 1.0, {})


def test_teardown_deletes_nothing_and_the_hosts_stay():
    handle = CLUSTER.provision(SPEC, context([]))
    assert CLUSTER.teardown(handle, context([])) is None
    assert CLUSTER.exists(handle, context([])) is True
