"""Redaction for pages seen by people outside the team (share links): no host
names, addresses, ports or user names, error texts included.

Two layers:
- the team's own targets, and the targets the shown runs' plans wrote
  themselves, are known: their hosts, SSH hosts, node addresses and user
  names are replaced wherever they appear, quoted or not;
- patterns catch what the targets do not name: IP addresses, host:port,
  names under common domain suffixes, and the places where database, SSH and
  HTTP clients put a host, port or user in their error messages
  ("Access denied for user 'bench'@'db.internal'", 'connection to server at
  "db" (10.0.0.5), port 5432 failed', "ssh: connect to host x port 22").

`Redactor(team).data(value)` copies nested dicts, lists, tuples and
dataclasses with every string redacted (mapping keys are left alone: they
are names chosen by the plan, such as axis and metric names).
"""

from __future__ import annotations

import copy as copy_module
import dataclasses
import re

HOST, ADDRESS, PORT, USER = "[host]", "[address]", "[port]", "[user]"

_IPV4 = r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])"
# Needs "::" or eight groups, so that times such as 10:20:30 stay.
_IPV6 = (
    r"(?<![\w:])(?=[0-9a-fA-F:]*::|(?:[0-9a-fA-F]{1,4}:){7})"
    r"(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}(?:%\w+)?(?![\w:])"
)
_SUFFIXES = (
    "internal|local|localdomain|lan|corp|home|intranet|priv|private|com|net|org|"
    "io|cloud|dev|info|biz|co|us|eu|uk|de|fr"
)
_DOMAIN = rf"(?<![\w.@/-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\.)+(?:{_SUFFIXES})\b"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}[A-Za-z0-9])?"

# (pattern, replacement), in order; contextual ones first, while the
# surrounding words are still there to recognise.
_PATTERNS = [
    # 'user'@'host' (MySQL), user@host (SSH, URLs, e-mail)
    (re.compile(r"'[^'\s]*'@'[^'\s]*'"), f"'{USER}'@'{HOST}'"),
    (re.compile(r"\b[\w.+-]+@[\w.-]+\b"), f"{USER}@{HOST}"),
    # scheme://user:password@host:port
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^\s/'\"]+"), rf"\1{HOST}"),
    # user 'x', user "x", user=x, user: x, role "x", login x, -u x, --user=x
    (
        re.compile(r"(?i)(\b(?:user(?:name)?|role|login)(?:\s*[=:]\s*|\s+))(['\"]?)[^\s'\",;)]+\2"),
        rf"\1\2{USER}\2",
    ),
    (re.compile(r"(\s-u\s*)\S+|(--user[= ])\S+"), lambda m: (m.group(1) or m.group(2)) + USER),
    # resolver errors: host name "x" (libpq), x: Name or service not known (getaddrinfo)
    (re.compile(r"(?i)(\bhost\s+name\s+)(['\"]?)[^\s'\"]+\2"), rf"\1\2{HOST}\2"),
    (
        re.compile(
            r"(?<![^\s'\"(])(?!address\b)[^\s'\"(]+(?=['\"]?:\s*(?:Name or service not known|"
            r"Temporary failure in name resolution|No address associated with hostname|"
            r"nodename nor servname))"
        ),
        HOST,
    ),
    # host "x", host=x, server at "x", to host x, on 'x', at x:port
    (
        re.compile(
            r"(?i)(\b(?:host(?:name)?|server(?: at)?|to host|to server|on|at|address)"
            r"\s*[=:]?\s*)(['\"])[^'\"]+\2"
        ),
        rf"\1\2{HOST}\2",
    ),
    (
        re.compile(r"(?i)(\b(?:host(?:name)?)(?:\s*[=:]\s*|\s+))(?!name\s)[^\s'\",;)\[]+"),
        rf"\1{HOST}",
    ),
    # port 5432, port=5432, port: 22
    (re.compile(r"(?i)(\bports?\s*[=:]?\s*)\d{1,5}\b"), rf"\1{PORT}"),
    # addresses, then name:port, then names under known suffixes
    (re.compile(_IPV4), ADDRESS),
    (re.compile(_IPV6), ADDRESS),
    (re.compile(rf"(?<![\w.]){_NAME}\.{_NAME}:\d{{1,5}}\b"), f"{HOST}:{PORT}"),
    (re.compile(rf"({re.escape(HOST)}|{re.escape(ADDRESS)}):\d{{1,5}}\b"), rf"\1:{PORT}"),
    (re.compile(_DOMAIN), HOST),
]


def redact_text(text: str, known: dict[str, str] | None = None) -> str:
    """`text` without host names, addresses, ports or user names. `known`
    maps exact values (a team's hosts, users, ports) to their replacement."""
    for value, replacement in sorted((known or {}).items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", replacement, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def known_values(team) -> dict[str, str]:
    """The team's target hosts, ports and users (values of 3+ characters;
    ports only when not a bare small number that could be a measurement)."""
    known = {}
    for target in team.targets.all():
        for host in [target.host, target.ssh_host, *_node_hosts(target.nodes)]:
            if host and len(host) >= 3:
                known[host] = HOST
        for user in (target.user, target.ssh_user):
            if user and len(user) >= 3:
                known[user] = USER
    return known


def plan_values(documents) -> dict[str, str]:
    """The hosts and users that plan documents wrote themselves (targets, their
    SSH hosts and nodes, the client's SSH host), as known_values gives them for
    stored targets: a plan-written host stays out of a share page too."""
    known = {}
    for document in documents:
        document = document if isinstance(document, dict) else {}
        targets = document.get("targets") if isinstance(document.get("targets"), list) else []
        client = document.get("client") if isinstance(document.get("client"), dict) else {}
        for entry in [*targets, client]:
            if not isinstance(entry, dict):
                continue
            ssh = entry.get("ssh") if isinstance(entry.get("ssh"), dict) else {}
            hosts = [entry.get("host"), entry.get("via"), ssh.get("host")]
            for host in [*hosts, *_node_hosts(entry.get("nodes"))]:
                if isinstance(host, str) and len(host) >= 3:
                    known[host] = HOST
            for user in (entry.get("user"), ssh.get("user")):
                if isinstance(user, str) and len(user) >= 3:
                    known[user] = USER
    return known


def _node_hosts(nodes) -> list[str]:
    hosts = []
    for node in nodes or []:
        if isinstance(node, str):
            hosts.append(node)
        elif isinstance(node, dict):
            hosts += [str(node[k]) for k in ("host", "address", "ssh_host") if node.get(k)]
    return hosts


# Parameter and fact names whose values are hosts, ports or users wherever they
# appear ("params.host", "ssh_port", "facts.hostname", "nodes").
_SENSITIVE_WORDS = {
    "host",
    "hostname",
    "hosts",
    "address",
    "addr",
    "ip",
    "endpoint",
    "port",
    "user",
    "username",
    "login",
    "dsn",
    "url",
    "socket",
    "nodes",
    "via",
}


def sensitive_name(name) -> bool:
    words = re.split(r"[._\-\s]+", str(name).lower().strip())
    return bool(words) and words[-1] in _SENSITIVE_WORDS


def _hidden(value):
    return "[redacted]" if value not in (None, "", "—", "-") else value


class Redactor:
    def __init__(self, team, runs=()):
        """team: whose stored targets are known; runs: the runs shown, whose plans'
        own targets are known too."""
        self.known = {**plan_values(run.document for run in runs), **known_values(team)}

    def text(self, value: str) -> str:
        return redact_text(value, self.known)

    def data(self, value):
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if (
                isinstance(value.get("name"), str)
                and sensitive_name(value["name"])
                and isinstance(value.get("values"), list)
            ):  # a row of the parameter diff
                return {**value, "values": [_hidden(v) for v in value["values"]]}
            return {k: _hidden(v) if sensitive_name(k) else self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple, set)):
            return type(value)(self.data(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            copy = copy_module.copy(value)
            for f in dataclasses.fields(value):
                object.__setattr__(copy, f.name, self.data(getattr(value, f.name)))
            return copy
        return value
