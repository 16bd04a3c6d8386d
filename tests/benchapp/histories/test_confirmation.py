"""Confirmation of alerts: a run of only the affected cells, judged against
the levels before and after the change (benchapp.histories.confirmation), and the
detection task that holds a new bad alert until its confirmation decides."""

import random

import pytest
from django.urls import reverse

from benchapp.histories import confirmation, history
from benchapp.history_tasks import detect_changes
from benchapp.models import Alert, AlertDelivery, Cell, Notifier, Plan, Run
from benchapp.plans import planning
from benchapp.runs import orchestration
from benchapp.store import frozenparts
from tests.benchapp.results_data import make_run
from tests.support.measures import measure

pytestmark = pytest.mark.django_db


def fio_document(directory="/tmp/bb-confirm"):
    return {
        "name": "fio nightly",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{directory}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": 1,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write"]},
    }


@pytest.fixture
def plan(team):
    return Plan.objects.create(team=team, name="fio nightly", tool="fio", document=fio_document())


def nights(team, plan, levels, origin="schedule"):
    """One finished run of the plan per level (rw=read and rw=write cells,
    frozen as start_run freezes them), its iops at that level with 1 % noise."""
    rng = random.Random(len(levels))
    runs = []
    for level in levels:
        run = orchestration.start_run(team, plan.document, plan=plan, origin=origin)
        finish_with(run, level, rng)
        runs.append(run)
    return runs


def finish_with(run, level, rng=None):
    """Complete a started run's cells with measurements at `level`."""
    for cell in run.cells.all():
        Cell.objects.filter(pk=cell.pk).update(status=Cell.SUCCEEDED, attempt=1)
        value = level * (1 + rng.gauss(0, 0.01)) if rng else level
        measure(cell, "iops", value, attempt=1)
    Run.objects.filter(pk=run.pk).update(status=Run.SUCCEEDED)
    run.refresh_from_db()


def test_start_run_with_only_some_cell_keys(team):
    run = orchestration.start_run(team, fio_document(), only_keys=["rw=write"])
    assert sorted(run.cells.values_list("key", flat=True)) == ["rw=write"]
    with pytest.raises(planning.PlanRefused, match="none of the cells"):
        orchestration.start_run(team, fio_document(), only_keys=["rw=trim"])


@pytest.mark.parametrize(
    "before, after, value, rising, confirmed",
    [
        ([100, 101, 99, 100, 100.5], [90, 91, 89], 90.5, False, True),
        ([100, 101, 99, 100, 100.5], [90, 91, 89], 100.2, False, False),  # back to before
        ([100, 101, 99, 100, 100.5], [90, 91, 89], 110.0, False, False),  # the other way
        ([100, 101, 99, 100, 100.5], [110, 111], 110.5, True, True),
        ([100, 130, 70, 100, 100], [90, 91, 89], 90.0, False, False),  # inside a noisy before
    ],
)
def test_decide(before, after, value, rising, confirmed):
    assert confirmation.decide(before, after, value, rising)[0] is confirmed


@pytest.fixture
def dropped(team, plan):
    nights(team, plan, [1000] * 20 + [800] * 8)
    return {a.cell_key: a for a in history.detect_plan(plan)}


@pytest.mark.parametrize("level, status", [(800, Alert.CONFIRMED), (1000, Alert.NOT_REPRODUCED)])
def test_a_confirmation_run_decides(team, plan, dropped, level, status):
    alert = dropped["rw=read"]
    run = confirmation.start([alert])
    assert (run.origin, run.plan, list(run.cells.values_list("key", flat=True).distinct())) == (
        "confirm",
        plan,
        ["rw=read"],
    )
    finish_with(run, level)
    confirmation.evaluate_run(run)
    alert.refresh_from_db()
    assert alert.status == status and f"run #{run.pk}" in alert.confirm_note
    assert dropped["rw=write"].status == Alert.NEW  # not re-run, not judged


def test_a_failed_confirmation_run_decides_nothing(team, plan, dropped):
    alert = dropped["rw=read"]
    run = confirmation.start([alert])
    run.cells.update(status=Cell.FAILED)
    Run.objects.filter(pk=run.pk).update(status=Run.FAILED)
    run.refresh_from_db()
    confirmation.evaluate_run(run)
    alert.refresh_from_db()
    assert alert.status == Alert.NEW and "gave no value" in alert.confirm_note


def test_viewers_cannot_confirm(viewer_client, dropped):
    assert (
        viewer_client.post(reverse("alert_confirm", args=[dropped["rw=read"].pk])).status_code
        == 403
    )
    assert not Run.objects.filter(origin="confirm").exists()


def test_the_confirm_button(member_client, team, plan, dropped):
    alert = dropped["rw=write"]
    url = reverse("alert_confirm", args=[alert.pk])
    response = member_client.post(url)
    alert.refresh_from_db()
    assert alert.confirm_run is not None
    assert response.url == reverse("run_detail", args=[alert.confirm_run_id])
    assert list(alert.confirm_run.cells.values_list("key", flat=True).distinct()) == ["rw=write"]
    page = member_client.get(reverse("alert_list")).content.decode()
    assert f"confirmation run #{alert.confirm_run_id}" in page
    member_client.post(url)  # a second click starts nothing
    assert Run.objects.filter(origin="confirm").count() == 1


def test_viewers_cannot_change_history_settings(viewer_client, plan):
    url = reverse("plan_history_settings", args=[plan.pk])
    assert viewer_client.post(url, {"confirm_alerts": "on"}).status_code == 403
    plan.refresh_from_db()
    assert not plan.confirm_alerts


def test_history_settings_of_a_plan(member_client, plan):
    url = reverse("plan_history_settings", args=[plan.pk])
    member_client.post(url, {"study": " oltp ", "confirm_alerts": "on"})
    plan.refresh_from_db()
    assert (plan.study, plan.confirm_alerts) == ("oltp", True)
    page = member_client.get(reverse("plan_trend", args=[plan.pk])).content.decode()
    assert 'name="confirm_alerts" checked' in page
    member_client.post(url, {"study": "oltp"})
    plan.refresh_from_db()
    assert not plan.confirm_alerts


def test_outsiders_cannot_confirm(outsider_client, dropped):
    url = reverse("alert_confirm", args=[dropped["rw=read"].pk])
    assert outsider_client.post(url).status_code == 404
    assert not Run.objects.filter(origin="confirm").exists()


def test_the_task_holds_a_new_bad_alert_until_confirmed(team, plan):
    Plan.objects.filter(pk=plan.pk).update(confirm_alerts=True)
    Notifier.objects.create(
        team=team, webhook_url="https://hooks.example.com/x", emails="ops@example.com"
    )
    runs = nights(team, plan, [1000] * 20 + [800] * 8)
    created = detect_changes(runs[-1].pk)
    assert len(created) == 2
    confirm_run = Run.objects.get(origin="confirm")
    assert sorted(confirm_run.cells.values_list("key", flat=True).distinct()) == [
        "rw=read",
        "rw=write",
    ]  # one run for both alerts
    assert not AlertDelivery.objects.exists()  # held until the confirmation decides

    finish_with(confirm_run, 800)
    assert detect_changes(confirm_run.pk) == []
    assert set(Alert.objects.values_list("status", flat=True)) == {Alert.CONFIRMED}
    # Both cells moved at one change: one incident, sent once on each channel.
    assert sorted(AlertDelivery.objects.values_list("event", "channel")) == [
        ("confirmed", "email"),
        ("confirmed", "webhook"),
    ]
    assert Run.objects.filter(origin="confirm").count() == 1  # no confirmation of a confirmation


def test_without_confirmation_new_alerts_are_notified_and_a_recovery_resolves(team, plan):
    Notifier.objects.create(team=team, webhook_url="https://hooks.example.com/x")
    runs = nights(team, plan, [1000] * 20 + [800] * 10)
    detect_changes(runs[-1].pk)
    # One change of two cells: one incident, one notification.
    assert sorted(AlertDelivery.objects.values_list("event", flat=True)) == ["new"]
    back = nights(team, plan, [1000] * 10)
    detect_changes(back[-1].pk)
    resolved = Alert.objects.filter(status=Alert.RESOLVED)
    assert sorted(resolved.values_list("cell_key", flat=True)) == ["rw=read", "rw=write"]
    assert all(a.resolved_run == back[-1] for a in resolved)
    # improvements are not sent (only_bad), the resolution of a bad incident is
    assert sorted(AlertDelivery.objects.values_list("event", flat=True)) == ["new", "resolved"]


def test_a_confirmation_after_a_plan_edit_re_runs_the_frozen_cells(team, plan, dropped):
    """The plan was edited after the alert's runs (a bigger block size, two
    seconds): the confirmation measures the cells as the alert's run froze
    them, not the edited plan."""
    alert = dropped["rw=read"]
    edited = fio_document()
    edited["params"].update(bs="64k", runtime=2)
    planning.save_plan(team, edited, plan=plan)
    run = confirmation.start([alert])
    frozen = list(alert.start_run.cells.filter(key="rw=read").order_by("index"))
    again = list(run.cells.order_by("index"))
    assert [c.spec for c in again] == [c.spec for c in frozen]
    assert [(c.key, c.repeat, c.target_name) for c in again] == [
        (c.key, c.repeat, c.target_name) for c in frozen
    ]
    thawed = [frozenparts.frozen(c) for c in again]
    assert {s["plan"]["params"]["bs"] for s in thawed} == {"4k"}
    assert {s["plan"]["params"]["runtime"] for s in thawed} == {1}
    assert run.document == alert.start_run.document != plan.document
    assert (run.origin, run.plan) == ("confirm", plan)
    finish_with(run, 800)
    confirmation.evaluate_run(run)
    alert.refresh_from_db()
    assert alert.status == Alert.CONFIRMED


def test_a_run_without_frozen_cells_cannot_be_confirmed(team, plan):
    runs = [
        make_run(team, plan=plan, cells=[({"rw": "read"}, 1, {"iops": level + i % 3})])
        for i, level in enumerate([1000] * 20 + [800] * 8)
    ]
    (alert,) = history.detect_plan(plan)
    assert alert.start_run == runs[20]
    with pytest.raises(planning.PlanRefused, match="no frozen cells of rw=read"):
        confirmation.start([alert])
    assert not Run.objects.filter(origin="confirm").exists()


def test_an_alert_at_a_plan_edit_says_so(team, plan):
    nights(team, plan, [1000] * 20)
    edited = fio_document()
    edited["params"]["bs"] = "64k"
    planning.save_plan(team, edited, plan=plan)
    plan.refresh_from_db()
    after = nights(team, plan, [800] * 8)
    alerts = history.detect_plan(plan)
    assert alerts and all(a.start_run == after[0] for a in alerts)
    for alert in alerts:
        assert "params.bs: 4k → 64k" in alert.plan_edit
        assert f"and run #{after[0].pk}" in alert.plan_edit
        assert "saved by" in alert.plan_edit  # the PlanRevision save_plan kept
