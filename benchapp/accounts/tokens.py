"""API tokens: authentication that counts wrong tokens, and the owner's list
and revocation.

A token is DRF's authtoken (one per user, header `Authorization: Token <key>`).
Wrong tokens count as failed logins in django-axes under one pseudo username
per address: after AXES_FAILURE_LIMIT of them, every token from that address
is refused (429) for the cool-off, so keys cannot be guessed at speed.
Revoking deletes the token: the next request with it gets a 401.
"""

from __future__ import annotations

from functools import wraps

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth.decorators import login_required
from django.contrib.auth.signals import user_login_failed
from django.http import JsonResponse
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

# Not a valid username (Django usernames have no spaces or parentheses).
API_TOKEN_USERNAME = "(api token)"
PREFIX_LENGTH = 8
LOCKED_MESSAGE = "Too many invalid API tokens from this address; try again later."


class CountedTokenAuthentication(TokenAuthentication):
    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        django_request = request._request
        credentials = {"username": API_TOKEN_USERNAME}
        if AxesProxyHandler.is_locked(django_request, credentials):
            raise exceptions.Throttled(detail=LOCKED_MESSAGE)
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            user_login_failed.send(sender=__name__, credentials=credentials, request=django_request)
            # axes marks the request that reaches the limit; the API answers
            # in JSON, not with the lockout page.
            django_request.axes_locked_out = False
            raise


def user_tokens(user) -> list[dict]:
    """The user's tokens, never their keys: a prefix to tell them apart."""
    return [
        {"prefix": key[:PREFIX_LENGTH], "created": created}
        for key, created in Token.objects.filter(user=user).values_list("key", "created")
    ]


def create_token(user) -> str:
    """A new token for the user (replacing any earlier one); the key is shown once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


def revoke_token(user, prefix: str) -> bool:
    """Deletes the user's token starting with `prefix`; False when none does."""
    if len(prefix) != PREFIX_LENGTH:
        return False
    deleted, _ = Token.objects.filter(user=user, key__startswith=prefix).delete()
    return bool(deleted)


def token_or_login_required(view):
    """A page download (an export) for a signed-in browser or an API token.

    With `Authorization: Token <key>` the request is the token's user (a
    wrong key counts as with the API, and answers 401, or 429 while locked
    out, in JSON); without it, login_required's redirect to the login page.
    """
    signed_in = login_required(view)

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != b"token":
            return signed_in(request, *args, **kwargs)
        try:
            found = CountedTokenAuthentication().authenticate(Request(request))
        except exceptions.APIException as exc:
            return JsonResponse({"detail": str(exc.detail)}, status=exc.status_code)
        request.user = found[0]
        return view(request, *args, **kwargs)

    return wrapped
