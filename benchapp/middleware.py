"""Request checks that apply to every view.

NulBytesMiddleware: PostgreSQL refuses NUL characters in text, so a NUL in a
path, query string, form field or JSON body would surface as a 500 deep in a
view. It is refused up front with a 400.
"""

from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

from django.http import HttpResponseBadRequest

NUL_MESSAGE = "NUL characters are not allowed in requests."


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


class NulBytesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if self._refused(request):
            return HttpResponseBadRequest(NUL_MESSAGE, content_type="text/plain")
        return self.get_response(request)

    @staticmethod
    def _refused(request) -> bool:
        if "\x00" in request.path_info:
            return True
        if b"\x00" in unquote_to_bytes(request.META.get("QUERY_STRING", "")):
            return True
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return False
        content_type = request.content_type or ""
        if content_type == "application/json":
            try:
                return _has_nul(json.loads(request.body or b"null"))
            except ValueError:
                return False  # the view reports malformed JSON
        if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            return any(
                _has_nul(key) or any(_has_nul(v) for v in values)
                for key, values in request.POST.lists()
            )
        return False


def safe_next(request, default: str) -> str:
    """The request's `next` (POST, then GET) when it points at this site, else `default`
    (a URL name or path for django.shortcuts.redirect)."""
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
