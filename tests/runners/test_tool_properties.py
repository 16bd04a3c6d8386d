"""Property tests (hypothesis) over every tool module of the registry that exists.

1. Building from random params: every argv element is an option, a validated
   value or a WORKDIR path; no user text with shell metacharacters reaches
   argv or env (builder constants may); no password reaches argv, nor env
   except sysbench's MYSQL_PWD (listed in Command.secrets), and
   masked() never shows it. SQL text only travels in uploads.
2. Any value with shell metacharacters is refused for every non-SQL parameter.
3. parse() raises nothing but ParseError on arbitrary text and on mangled real
   captures, and what it returns serialises to JSON.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.command import WORKDIR, Endpoint
from runners.errors import ParseError, ValidationError
from runners.params import Param
from runners.results import Result
from runners.tools import TOOL_NAMES, get_tool

FIXTURES = Path(__file__).parent.parent / "fixtures"
TOOLS = [n for n in TOOL_NAMES if importlib.util.find_spec(f"runners.tools.{n}") is not None]
# Params that make a typical valid command, so random extras are checked on
# commands that do build; unknown tools start from nothing.
BASES = {
    "fio": {"directory": "/data/fio"},
    "stress_ng": {"cpu": 2},
    "sysbench": {"test": "oltp_read_write"},
    "mysqlslap": {},
    "pgbench": {},
}
KINDS = {"mysqlslap": "mysql", "sysbench": "mysql", "pgbench": "postgres"}
# Bugs found by these tests in modules owned elsewhere; xfail (not strict, so the
# fix breaks nothing) until fixed, then remove the entry.
KNOWN_BUGS: dict[str, str] = {}


def with_known_bugs(names: list[str]) -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_BUGS[n])) if n in KNOWN_BUGS else n
        for n in names
    ]


SHELL_META = set(" \t\n\r\x00;|&$`<>()'\"\\*?~!#{}[]")
SQL_CANARY = "SELECT /*bb-sql-canary*/ 1; -- $(touch x) `id` 'q'\n"
PASSWORD_PREFIX = "BbPw-"
# Hostile text: a marker (so a leak is found verbatim, not by a lone ';'
# that a builder constant such as `--delimiter=;` also holds) and at least one
# shell metacharacter.
HOSTILE_MARK = "zq"
NASTY = (
    st.text(alphabet=st.sampled_from(sorted(SHELL_META) + list("ab/-=.")), min_size=1)
    .filter(lambda s: any(c in SHELL_META for c in s))
    .map(lambda s: HOSTILE_MARK + s)
)
SAFE_WORDS = st.sampled_from(["bench", "sbtest", "innodb", "/data/x", "db1", "a.b-c_d", "0-3"])
WORKDIR_PATH = re.compile(r"(-{1,2}[\w.-]+=)?" + re.escape(WORKDIR) + r"/[\w.-]+")

settings.register_profile("bb", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bb")


def test_tool_properties_cover_existing_tools():
    """The lead's registry lists five tools; test whichever are written."""
    assert "fio" in TOOLS and "pgbench" in TOOLS and "stress_ng" in TOOLS


# ------------------------------------------------------------ strategies


def value_for(spec: Param) -> st.SearchStrategy:
    """Mostly plausible values for spec, sometimes hostile ones."""
    plausible = {
        "int": st.integers(int(spec.min or 0), int(min(spec.max or 10**6, 10**6))),
        "float": st.floats(spec.min or 0.0, min(spec.max or 1e6, 1e6), allow_nan=False),
        "bool": st.booleans(),
        "choice": st.sampled_from(spec.choices or ("x",)),
        "size": st.sampled_from(["4k", "32m", "5G", "1024", "64M"]),
        "text": SAFE_WORDS,
        "sql": st.text(min_size=1, max_size=30).map(lambda t: SQL_CANARY + t),
    }.get(spec.kind, SAFE_WORDS)
    if spec.many:
        plausible = st.one_of(plausible, st.lists(plausible, min_size=1, max_size=3))
    return st.one_of(plausible, plausible, plausible, NASTY, st.integers(-5, 5))


@st.composite
def params_for(draw, module) -> dict:
    names = draw(st.lists(st.sampled_from(sorted(module.PARAMS)), max_size=5, unique=True))
    params = dict(BASES.get(module.NAME, {}))
    for name in names:
        params[name] = draw(value_for(module.PARAMS[name]))
    return params


@st.composite
def endpoints(draw, module) -> Endpoint:
    kind = draw(st.sampled_from([KINDS.get(module.NAME, "host")] * 3 + ["mysql", "postgres"]))
    text = st.one_of(SAFE_WORDS, SAFE_WORDS, NASTY, st.none())
    password = draw(st.one_of(st.none(), st.text(min_size=3).map(lambda t: PASSWORD_PREFIX + t)))
    return Endpoint(
        kind=kind,
        host=draw(st.one_of(st.just("127.0.0.1"), text)),
        port=draw(st.one_of(st.none(), st.integers(-1, 70000))),
        user=draw(text),
        database=draw(text),
        password=password,
        socket=draw(st.one_of(st.none(), st.none(), st.just("/run/mysqld/mysqld.sock"))),
    )


# ------------------------------------------------------------ 1. argv


def hostile_inputs(params: dict, endpoint: Endpoint) -> list[str]:
    """The user-supplied strings that carry shell metacharacters (SQL excepted:
    it only travels in files). None of them may reach argv or env."""
    values: list = [endpoint.host, endpoint.user, endpoint.database, endpoint.socket]
    for value in params.values():
        values.extend(value if isinstance(value, list) else [value])
    return [v for v in values if isinstance(v, str) and v.startswith(HOSTILE_MARK)]


def check_command(module, command, endpoint: Endpoint, params: dict) -> None:
    """The invariants of a built Command (see the module docstring).

    Elements are traced by taint rather than by shape: a builder's own constant
    such as mysqlslap's `--delimiter=;` is fine (no shell is involved), while
    any hostile user text that got through would show up verbatim.
    """
    assert command.argv[0] == module.BINARY
    assert all(isinstance(a, str) for a in command.argv)
    password = endpoint.password
    hostile = hostile_inputs(params, endpoint)
    for element in command.argv:
        assert not (password and password in element), f"password in argv: {element!r}"
        if WORKDIR in element:
            assert WORKDIR_PATH.fullmatch(element), element
        assert not set(element) & set("\n\r\x00"), f"control character in argv: {element!r}"
        assert not any(h in element for h in hostile), f"unvalidated text in argv: {element!r}"
        assert SQL_CANARY.strip() not in element
    for name, value in command.env.items():
        if name == "MYSQL_PWD":  # sysbench's mysql driver: the environment, never argv
            assert module.NAME == "sysbench" and value == password
            assert password in command.secrets
            continue
        assert not password or password not in value
        assert not any(h in value for h in hostile)
        assert SQL_CANARY.strip() not in value
    if password:
        assert password not in command.masked()
    for upload in command.uploads:
        assert upload.mode == 0o600 and "/" not in upload.name


@pytest.mark.parametrize("name", with_known_bugs(TOOLS))
def test_tool_properties_argv_carries_only_validated_values(name):
    module = get_tool(name)

    @settings(max_examples=300)
    @given(params=params_for(module), endpoint=endpoints(module), data=st.data())
    def check(params, endpoint, data):
        phase = data.draw(st.sampled_from(module.PHASES))
        try:
            command = module.build(params, endpoint, phase)
        except ValidationError as exc:
            assert not endpoint.password or endpoint.password not in str(exc)
            return
        check_command(module, command, endpoint, params)

    check()


@pytest.mark.parametrize("name", TOOLS)
def test_tool_properties_base_params_build(name):
    """The base params of the argv property really build (else it tests little)."""
    module = get_tool(name)
    password = None if name == "redis_benchmark" else PASSWORD_PREFIX + "x y;z"  # refused
    endpoint = Endpoint(kind=KINDS.get(name, "host"), host="127.0.0.1", port=1, user="u",
                        database="d", password=password)  # fmt: skip
    check_command(module, module.build(BASES.get(name, {}), endpoint), endpoint, {})


# ------------------------------------------------------------ 2. metacharacters


@pytest.mark.parametrize("name", TOOLS)
def test_tool_properties_metacharacters_are_refused(name):
    module = get_tool(name)
    names = sorted(n for n, spec in module.PARAMS.items() if spec.kind != "sql")

    @settings(max_examples=300)
    @given(param=st.sampled_from(names), value=NASTY)
    def check(param, value):
        with pytest.raises(ValidationError) as info:
            module.validate({**BASES.get(name, {}), param: value})
        assert info.value.param  # names the culprit

    check()


LINE_END_CASES = [
    (name, param, value + end)
    for name in TOOLS
    for param, spec in sorted(get_tool(name).PARAMS.items())
    if spec.kind in ("text", "size")
    for value in (["4k"] if spec.kind == "size" else ["/data/x", "bench", "0-3"])
    for end in ("\n", "\r\n")
]


@pytest.mark.parametrize("name, param, value", LINE_END_CASES)
def test_tool_properties_trailing_newline_is_refused(name, param, value):
    """re.match(r"^...$") lets "bench\n" through; validation must not."""
    with pytest.raises(ValidationError):
        get_tool(name).validate({**BASES.get(name, {}), param: value})


@pytest.mark.parametrize("name", with_known_bugs([n for n in TOOLS if n in KINDS]))
@pytest.mark.parametrize("field", ["host", "user", "database"])
def test_tool_properties_endpoint_newline_never_reaches_argv(name, field):
    module = get_tool(name)
    fields = {"host": "127.0.0.1", "user": "u", "database": "d", field: "bench\n"}
    try:
        command = module.build(BASES[name], Endpoint(kind=KINDS[name], port=1, **fields))
    except ValidationError:
        return
    assert not any("\n" in a for a in command.argv), command.argv


# ------------------------------------------------------------ 3. parse


def captures(name: str) -> list[str]:
    folder = FIXTURES / name
    return [p.read_text(errors="replace") for p in sorted(folder.glob("*.out"))] or [""]


@st.composite
def mangled(draw, texts: list[str]) -> str:
    """A real capture truncated, spliced with random text, or with a slice replaced."""
    text = draw(st.sampled_from(texts))
    cut = draw(st.integers(0, len(text)))
    noise = draw(st.text(max_size=40))
    how = draw(st.sampled_from(["truncate", "insert", "replace", "double"]))
    if how == "truncate":
        return text[:cut]
    if how == "insert":
        return text[:cut] + noise + text[cut:]
    if how == "replace":
        return text[:cut] + noise + text[cut + draw(st.integers(0, 200)) :]
    return text + text[:cut]


def check_parse(module, text: str) -> None:
    try:
        result = module.parse(text)
    except ParseError as exc:
        assert "\n" not in str(exc), "ParseError message must be one line"
        return
    assert isinstance(result, Result)
    json.dumps(result.to_dict())
    assert all(isinstance(v, (int, float)) for v in result.metrics.values())


@pytest.mark.parametrize("name", TOOLS)
def test_tool_properties_parse_raises_only_parse_error_on_any_text(name):
    module = get_tool(name)

    @settings(max_examples=300)
    @given(text=st.text())
    def check(text):
        check_parse(module, text)

    check()


@pytest.mark.parametrize("name", TOOLS)
def test_tool_properties_parse_raises_only_parse_error_on_mangled_captures(name):
    module = get_tool(name)
    texts = captures(name)

    @settings(max_examples=300)
    @given(text=mangled(texts))
    def check(text):
        check_parse(module, text)

    check()
