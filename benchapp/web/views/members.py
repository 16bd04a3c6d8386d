"""Members of the current team: everyone in the team sees the list; admins
add users, change roles (viewer, member, admin) and remove members. The
team's owner is neither demoted nor removed here (an operator does that in
the Django admin)."""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import ADMIN, OWNER, current_team, require_role
from benchapp.models import Membership

ASSIGNABLE = [(r, label) for r, label in Membership._meta.get_field("role").choices if r != OWNER]


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ASSIGNABLE)


class AddMemberForm(RoleForm):
    username = forms.CharField(max_length=150)

    def __init__(self, team, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team

    def clean_username(self):
        user = get_user_model().objects.filter(username=self.cleaned_data["username"]).first()
        if user is None:
            raise forms.ValidationError("No user with this name.")
        if Membership.objects.filter(team=self.team, user=user).exists():
            raise forms.ValidationError("Already a member of this team.")
        return user


@login_required
def member_list(request):
    team = current_team(request)
    mine = require_role(request.user, team, Membership.VIEWER)
    form = AddMemberForm(team, request.POST or None)
    if request.method == "POST":
        require_role(request.user, team, ADMIN)
        if form.is_valid():
            Membership.objects.create(
                team=team, user=form.cleaned_data["username"], role=form.cleaned_data["role"]
            )
            messages.success(request, f"{form.cleaned_data['username'].username} added.")
            return redirect("member_list")
    members = Membership.objects.filter(team=team).select_related("user").order_by("user__username")
    return render(
        request,
        "members/list.html",
        {
            "team": team,
            "members": members,
            "form": form,
            "roles": ASSIGNABLE,
            "is_admin": mine.allows(ADMIN),
        },
    )


def _managed(request, pk) -> Membership:
    """A membership of the current team an admin may change: 404 elsewhere,
    403 for the owner's or below the admin role."""
    team = current_team(request)
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=pk, team=team)
    require_role(request.user, team, ADMIN)
    if membership.role == OWNER:
        raise PermissionDenied("The team's owner cannot be changed or removed here.")
    return membership


@login_required
@require_POST
def member_role(request, pk):
    membership = _managed(request, pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose viewer, member or admin.")
        return redirect("member_list")
    membership.role = form.cleaned_data["role"]
    membership.save(update_fields=["role"])
    messages.success(request, f"{membership.user.username} is now {membership.role}.")
    return redirect("member_list")


@login_required
@require_POST
def member_remove(request, pk):
    membership = _managed(request, pk)
    membership.delete()
    messages.success(request, f"{membership.user.username} removed from {membership.team.name}.")
    return redirect("member_list")
