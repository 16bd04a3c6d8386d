"""Shared data for the web UI view tests (issue 7)."""

from __future__ import annotations

from benchapp.models import Credential, Target

CANARY = "canary-pw-7f3a9c1e-never-shown"

DEMO = {
    "name": "demo-mysqlslap",
    "tool": "mysqlslap",
    "targets": [{"name": "local-mariadb"}],
    "params": {
        "engine": "innodb",
        "auto_generate_sql": True,
        "auto_generate_sql_add_autoincrement": True,
        "number_of_queries": 20,
        "iterations": 1,
    },
    "axes": {"load_type": ["read", "key"], "concurrency": [1, 2]},
}


def make_credential(team, name="db-pw", secret=CANARY, kind=Credential.PASSWORD):
    cred = Credential(team=team, name=name, kind=kind)
    cred.set_secret(secret)
    cred.save()
    return cred


def make_target(team, name="local-mariadb", **fields):
    values = {"kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root", **fields}
    return Target.objects.create(team=team, name=name, **values)


def target_post(**fields) -> dict:
    """The target form's POST as a browser sends it: every field, blank unless
    given (by default a MariaDB target at 127.0.0.1:3306)."""
    blank = ("database", "directory", "credential", "ssh_host", "ssh_user", "ssh_credential")
    blank += ("via", "price_per_hour", "notes", "provision", "nodes", "link_mbit", "cloud_instance")
    data = {
        "name": "db1",
        "kind": "mysql",
        "host": "127.0.0.1",
        "port": "3306",
        "user": "root",
        "ssh_port": "22",
        "telemetry": "on",  # a checkbox checked by default
        **dict.fromkeys(blank, ""),
    }
    return {**data, **fields}


def form_data(form) -> dict:
    """The POST data a browser would send for an unbound form as rendered."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None:
            continue
        data[name] = [str(v) for v in value] if isinstance(value, (list, tuple)) else str(value)
    return data


def assert_no_canary(response) -> None:
    assert CANARY not in response.content.decode(), "a secret leaked into the page"
