"""Request checks that apply to every view.

NulBytesMiddleware: PostgreSQL refuses NUL characters in text, so a NUL in a
path, query string, form field or JSON body would surface as a 500 deep in a
view. It is refused up front with a 400.

The same middleware reads a JSON body once for every view, signed in or not:
a body that is not JSON, or nests deeper than MAX_JSON_DEPTH, is a 400 with
a message. (A 100,000-level `[[[...]]]` made json.loads raise RecursionError,
an unhandled 500; and every view, serializer and validator walks the data
recursively, so depth is bounded before any of them sees it.)
"""

from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

from django.http import HttpResponseBadRequest, JsonResponse

NUL_MESSAGE = "NUL characters are not allowed in requests."
# A plan document (itself capped at 32 levels, runners/safeyaml.py) sits one
# level down in an API body; nothing the app takes is deeper.
MAX_JSON_DEPTH = 64


class BadJson(ValueError):
    """A JSON body the app refuses; the message says why."""


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def json_depth_exceeded(data, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests past `limit` levels (iterative: no recursion)."""
    stack = [(data, 1)] if isinstance(data, (dict, list)) else []
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def read_json_body(body: bytes):
    """The parsed body; BadJson naming the problem when malformed or too deep."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise BadJson(f"The JSON body nests more than {MAX_JSON_DEPTH} levels.") from None
    except ValueError as exc:
        raise BadJson(f"The body is not valid JSON: {exc}") from None
    if json_depth_exceeded(data):
        raise BadJson(f"The JSON body nests more than {MAX_JSON_DEPTH} levels.")
    return data


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


class NulBytesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            refused = self._refused(request)
        except BadJson as exc:
            return JsonResponse({"detail": str(exc)}, status=400)
        if refused:
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
        if _is_json(content_type):
            body = request.body
            return bool(body.strip()) and _has_nul(read_json_body(body))
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
