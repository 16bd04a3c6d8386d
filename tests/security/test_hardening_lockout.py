"""Login rate limit (django-axes): wrong passwords for one username from one
address lock that pair out for the cool-off; wrong API tokens lock the address
out of token authentication."""

from datetime import timedelta

from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.db.models import F
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

LIMIT = settings.AXES_FAILURE_LIMIT


def _login(client, password, username="olivia"):
    return client.post("/login/", {"username": username, "password": password})


def test_wrong_passwords_lock_out_even_the_right_one(client, owner):
    assert LIMIT == 5
    for attempt in range(1, LIMIT):
        response = _login(client, f"wrong-{attempt}")
        assert response.status_code == 200  # the form again, with its error
    assert _login(client, "wrong-last").status_code == 429
    locked = _login(client, "pw-olivia")
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session
    # Another address is not locked out (username + address).
    other = type(client)(REMOTE_ADDR="10.9.8.7")
    assert _login(other, "pw-olivia").status_code == 302
    # An administrator's reset ends the lockout.
    call_command("axes_reset_username", "olivia")
    assert _login(client, "pw-olivia").status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)


def test_lockout_ends_after_the_cool_off(client, owner):
    for attempt in range(LIMIT):
        _login(client, f"wrong-{attempt}")
    assert _login(client, "pw-olivia").status_code == 429
    # The cool-off passes: the failures are dated back past it.
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert _login(client, "pw-olivia").status_code == 302


def test_success_resets_the_count(client, owner):
    for attempt in range(LIMIT - 1):
        _login(client, f"wrong-{attempt}")
    assert _login(client, "pw-olivia").status_code == 302
    client.logout()
    for attempt in range(LIMIT - 1):
        assert _login(client, f"again-{attempt}").status_code == 200


def test_token_endpoint_counts_wrong_passwords(owner):
    api = APIClient()
    for attempt in range(LIMIT - 1):
        response = api.post("/api/token/", {"username": "olivia", "password": f"x{attempt}"})
        assert response.status_code == 400
    assert api.post("/api/token/", {"username": "olivia", "password": "x"}).status_code == 429
    response = api.post("/api/token/", {"username": "olivia", "password": "pw-olivia"})
    assert response.status_code == 429
    assert "try again later" in response.json()["detail"]
    assert "token" not in response.json()
    AxesProxyHandler.reset_attempts(username="olivia")
    response = api.post("/api/token/", {"username": "olivia", "password": "pw-olivia"})
    assert response.status_code == 200
    assert response.json()["token"]


def test_wrong_api_tokens_lock_the_address_out(owner):
    key = Token.objects.create(user=owner).key
    guesser = APIClient(REMOTE_ADDR="10.1.1.1")
    for attempt in range(LIMIT):
        guesser.credentials(HTTP_AUTHORIZATION=f"Token {attempt:040d}")
        response = guesser.get("/api/runs/")
        assert response.status_code == 401, response.content
    # Locked out: even the right token is refused from that address.
    guesser.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = guesser.get("/api/runs/")
    assert response.status_code == 429
    assert response.json()["detail"].startswith("Too many invalid API tokens")
    # Elsewhere the token works; session logins are not affected.
    elsewhere = APIClient(REMOTE_ADDR="10.2.2.2")
    elsewhere.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert elsewhere.get("/api/runs/").status_code == 200
    call_command("axes_reset_ip", "10.1.1.1")
    assert guesser.get("/api/runs/").status_code == 200
