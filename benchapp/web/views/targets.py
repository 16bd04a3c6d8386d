"""Targets: the team's systems under test; test connection; accept host keys."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import ADMIN, MEMBER, current_team, get_target, require_role
from benchapp.models import Target
from benchapp.runs import connection
from benchapp.web.forms_targets import TargetForm

# Session key of host keys fetched by "test connection" and waiting for acceptance:
# the accepted key is the one the server showed, not one posted back by the browser.
PENDING_KEYS = "pending_host_keys"


@login_required
def target_list(request):
    team = current_team(request)
    targets = Target.objects.filter(team=team).select_related("credential", "ssh_credential")
    return render(request, "targets/list.html", {"team": team, "targets": targets})


@login_required
def target_create(request):
    team = current_team(request)
    require_role(request.user, team, ADMIN)
    form = TargetForm(request.POST or None, team=team, user=request.user)
    if request.method == "POST" and form.is_valid():
        target = form.save()
        messages.success(request, f"Target {target.name} created. Test its connection below.")
        return redirect("target_detail", pk=target.pk)
    return render(request, "targets/form.html", {"form": form, "team": team})


@login_required
def target_detail(request, pk):
    target = get_target(request, pk)
    fingerprint = (
        connection.host_key_fingerprint(target.known_host_key) if target.known_host_key else ""
    )
    return render(request, "targets/detail.html", {"target": target, "fingerprint": fingerprint})


@login_required
def target_edit(request, pk):
    target = get_target(request, pk, role=ADMIN)
    form = TargetForm(request.POST or None, instance=target, team=target.team, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Target {target.name} saved.")
        return redirect("target_detail", pk=target.pk)
    return render(request, "targets/form.html", {"form": form, "target": target})


@login_required
@require_POST
def target_delete(request, pk):
    target = get_target(request, pk, role=ADMIN)
    target.delete()
    messages.success(
        request,
        f"Target {target.name} deleted. Plans that name it keep their own copy of its settings.",
    )
    return redirect("target_list")


@login_required
@require_POST
def target_test(request, pk):
    target = get_target(request, pk, role=MEMBER)
    result = connection.test_connection(target)
    connection.record_check(target, result)  # the home page shows the last check
    if result["host_key"]:
        request.session[PENDING_KEYS] = {
            **request.session.get(PENDING_KEYS, {}),
            str(target.pk): result["host_key"],
        }
    fingerprint = (
        connection.host_key_fingerprint(target.known_host_key) if target.known_host_key else ""
    )
    return render(
        request,
        "targets/detail.html",
        {"target": target, "result": result, "fingerprint": fingerprint},
    )


@login_required
@require_POST
def target_accept_key(request, pk):
    target = get_target(request, pk, role=ADMIN)
    key = request.session.get(PENDING_KEYS, {}).pop(str(target.pk), None)
    if key is None:
        messages.error(request, "No host key is waiting: test the connection first.")
        return redirect("target_detail", pk=target.pk)
    request.session.modified = True
    target.known_host_key = key
    target.save(update_fields=["known_host_key"])
    messages.success(request, f"Host key {connection.host_key_fingerprint(key)} accepted.")
    return redirect("target_detail", pk=target.pk)
