"""The user's API tokens: list, create (the key is shown once) and revoke."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts import tokens


@login_required
def token_list(request):
    new_key = ""
    if request.method == "POST":
        # Rendered into this answer only: never stored in a message or a session.
        new_key = tokens.create_token(request.user)
    return render(
        request,
        "tokens/list.html",
        {"tokens": tokens.user_tokens(request.user), "new_key": new_key},
    )


@login_required
@require_POST
def token_revoke(request, prefix):
    if tokens.revoke_token(request.user, prefix):
        messages.success(request, f"Token {prefix}… revoked: it no longer works.")
    else:
        messages.error(request, "No such token.")
    return redirect("token_list")
