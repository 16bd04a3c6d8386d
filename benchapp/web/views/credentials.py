"""Credentials: write-only secrets. Pages show the fingerprint and the date
it was last set, never the secret."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import ProtectedError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts import credbinding
from benchapp.accounts.access import ADMIN, current_team, get_credential, require_role
from benchapp.models import Credential
from benchapp.web.forms_targets import CredentialForm


@login_required
def credential_list(request):
    team = current_team(request)
    credentials = list(
        Credential.objects.filter(team=team).order_by("name").prefetch_related("bound_targets")
    )
    binding = credbinding.summaries(credentials)
    for cred in credentials:
        cred.binding = binding.get(cred.pk, "")
    return render(request, "credentials/list.html", {"team": team, "credentials": credentials})


@login_required
def credential_create(request):
    team = current_team(request)
    require_role(request.user, team, ADMIN)
    form = CredentialForm(request.POST or None, team=team)
    if request.method == "POST" and form.is_valid():
        cred = form.save()
        messages.success(
            request, f"Credential {cred.name} stored (fingerprint {cred.fingerprint})."
        )
        return redirect("credential_list")
    return render(request, "credentials/form.html", {"form": form})


@login_required
def credential_edit(request, pk):
    cred = get_credential(request, pk, role=ADMIN)
    form = CredentialForm(request.POST or None, instance=cred, team=cred.team)
    if request.method == "POST" and form.is_valid():
        cred = form.save()
        changed = "secret replaced" if form.cleaned_data.get("secret") else "secret unchanged"
        messages.success(request, f"Credential {cred.name} saved ({changed}).")
        return redirect("credential_list")
    context = {
        "form": form,
        "credential": cred,
        "credential_uses": credbinding.summaries([cred])[cred.pk],
    }
    return render(request, "credentials/form.html", context)


@login_required
@require_POST
def credential_delete(request, pk):
    cred = get_credential(request, pk, role=ADMIN)
    try:
        cred.delete()
    except ProtectedError:
        messages.error(request, f"{cred.name} is used by a target; change the target first.")
        return redirect("credential_list")
    messages.success(request, f"Credential {cred.name} deleted.")
    return redirect("credential_list")
