"""The runners command line.

    python -m runners parse TOOL FILE     # tool output -> Result JSON; exit 2 if unreadable
    python -m runners run PLAN.yaml [--seed N] [--secret NAME=@FILE] [--phases]
                                          # progress on stderr, result document on stdout;
                                          # exit 1 if any cell did not succeed, 2 on a bad plan
    python -m runners packages --debian   # the Debian packages the registries need
    python -m runners fetch TOOL DIR      # a tool's pinned release, verified
Credentials named in a plan come from --secret NAME=@FILE or the environment
variable BENCHBOARD_SECRET_<NAME> (upper case, other characters as _).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from runners.errors import ParseError, ValidationError
from runners.tools import TOOL_NAMES

EXIT_FAILED_CELLS = 1
EXIT_UNUSABLE_INPUT = 2


def _fail(message: str) -> int:
    print(" ".join(message.split()), file=sys.stderr)
    return EXIT_UNUSABLE_INPUT


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8", errors="replace")


def cmd_parse(args: argparse.Namespace) -> int:
    """Print the parse of FILE by TOOL as JSON; exit 2 on ParseError."""
    from runners.tools import get_tool, read_output

    try:
        tool = get_tool(args.tool)
        text = _read(args.file)
    except KeyError as exc:
        return _fail(str(exc.args[0]))
    except OSError as exc:
        return _fail(f"{args.file}: {exc.strerror}")
    try:
        result = read_output(tool, text)
    except ParseError as exc:
        return _fail(f"{args.file}: cannot parse {args.tool} output: {exc}")
    json.dump(result.to_dict(), sys.stdout, indent=2)
    print()
    return 0


def _secret_files(pairs: list[str]) -> dict[str, str]:
    files = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not value.startswith("@"):
            # A secret on the command line would sit in the process list and shell history.
            raise ValidationError("--secret", f"expected NAME=@FILE, got {name}=...")
        files[name] = value[1:]
    return files


def cmd_run(args: argparse.Namespace) -> int:
    """Run a plan inline; result document on stdout, progress on stderr."""
    from runners.inline import progress_line, run_plan, secret_resolver
    from runners.plan import load_plan

    try:
        plan = load_plan(_read(args.plan))
        files = _secret_files(args.secret)
    except OSError as exc:
        return _fail(f"{args.plan}: {exc.strerror}")
    except ValidationError as exc:
        return _fail(f"{args.plan}: {exc}")
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())

    def progress(cell, total, outcome):
        sys.stderr.write(progress_line(cell, total, outcome))
        sys.stderr.flush()

    try:
        document = run_plan(
            plan,
            seed=args.seed,
            resolve_secret=secret_resolver(files),
            on_progress=progress,
            with_phases=args.phases,
            cancel_event=cancel,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    json.dump(document, sys.stdout, indent=2, default=str)
    print()
    ok = all(cell["status"] == "succeeded" for cell in document["cells"])
    return 0 if ok else EXIT_FAILED_CELLS


def cmd_packages(args: argparse.Namespace) -> int:
    """Print the generated Debian package list (scripts/debian-packages.txt)."""
    from runners.packages import generated_text

    sys.stdout.write(generated_text())
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    """Fetch a tool's pinned release into a directory, verified by its sha256."""
    from runners.packages import tool_releases
    from runners.releases import fetch_release

    release = tool_releases().get(args.tool)
    if release is None:
        print(f"{args.tool}: no release to fetch (a Debian package, or unknown)", file=sys.stderr)
        return 2
    print(fetch_release(release, Path(args.directory)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    parse = sub.add_parser("parse", help="parse a tool's raw output into JSON")
    parse.add_argument("tool", help=f"one of {', '.join(TOOL_NAMES)}")
    parse.add_argument("file", help="the captured output (stdout and stderr), - for stdin")
    parse.set_defaults(func=cmd_parse)
    run = sub.add_parser("run", help="run a plan file here, without the web app")
    run.add_argument("plan", help="the plan file (YAML or JSON)")
    run.add_argument("--seed", type=int, help="seed for order: shuffled (overrides the plan's)")
    run.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=@FILE",
        help="read credential NAME from FILE (repeatable)",
    )
    run.add_argument(
        "--phases",
        action="store_true",
        help="include every phase's raw (masked) output in the document",
    )
    run.set_defaults(func=cmd_run)
    packages = sub.add_parser("packages", help="the Debian packages the tool registry needs")
    packages.add_argument(
        "--debian", action="store_true", required=True, help="Debian package names"
    )
    packages.set_defaults(func=cmd_packages)
    fetch = sub.add_parser("fetch", help="fetch a tool's pinned release, verified by sha256")
    fetch.add_argument("tool", help="a tool installed from a release (its RELEASE)")
    fetch.add_argument("directory", help="where its binary goes (e.g. /usr/local/bin)")
    fetch.set_defaults(func=cmd_fetch)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
