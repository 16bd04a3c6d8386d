"""Commands built by tool adapters and the endpoints they talk to."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from runners.errors import OptionValueRefused

# Builders cannot know where an executor will put uploaded files; they write
# this token into argv/env and the executor replaces it with its work dir.
WORKDIR = "@WORKDIR@"
MASK = "****"


@dataclass(frozen=True)
class Endpoint:
    """A system under test as the tool sees it.

    kind is a target kind (runners.engines.TARGET_KINDS). password is the clear secret,
    resolved by the caller from a Credential or an environment variable; it
    never goes into repr() and builders must list it in Command.secrets.
    """

    kind: str = "host"
    host: str | None = None
    port: int | None = None
    user: str | None = None
    database: str | None = None
    password: str | None = field(default=None, repr=False)
    socket: str | None = None

    @property
    def where(self) -> str:
        """The address as a message names it: the socket, else the host."""
        return self.socket or self.host or "localhost"


@dataclass(frozen=True)
class Upload:
    """A file the executor writes into its work dir before running."""

    name: str
    content: bytes = field(repr=False)
    mode: int = 0o600


@dataclass
class Command:
    """One process to run: argv (no shell), extra env, files, secrets to mask.

    `package` names the Debian package that provides argv[0], for the
    "tool not installed" error. sandbox: False for the operator's own
    commands (service stop/start, rsync of a data directory), which a
    sandbox would only break; only trusted plans may run them locally.
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    uploads: list[Upload] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list, repr=False)
    tool: str = ""
    package: str = ""
    sandbox: bool = True

    def mask(self, text: str) -> str:
        """Return text with every secret replaced by ****."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, MASK)
        return text

    def masked(self) -> str:
        """The command line as it may be shown and stored.

        Masks each argument before quoting: a secret with quotes or spaces
        changes form when quoted and would slip past a mask of the joined line.
        """
        return shlex.join(self.mask(a) for a in self.argv)

    def resolved(self, workdir: str) -> Command:
        """A copy with WORKDIR replaced by the executor's real directory."""
        return Command(
            argv=[a.replace(WORKDIR, workdir) for a in self.argv],
            env={k: v.replace(WORKDIR, workdir) for k, v in self.env.items()},
            uploads=self.uploads,
            secrets=self.secrets,
            tool=self.tool,
            package=self.package,
            sandbox=self.sandbox,
        )


def control_character(text: str) -> str | None:
    """The first control character of text (a line break, NUL, DEL...), or None.

    The one rule of what may go into a client option file ([client] file,
    pgpass) and so into a stored secret (benchapp's credential form): a line
    break there starts a new option (a plugin directory, a file to include),
    and NUL cuts the value.
    """
    return next((ch for ch in text if ord(ch) < 32 or ord(ch) == 127), None)


def option_value(value, what: str) -> str:
    """value as text for a client option file ([client] file, pgpass), or a
    permanent RunnerError when it holds a control character.

    Every writer of such a file (runners/engines/) passes each value through
    here, whatever validated the secret before.
    """
    text = str(value)
    if control_character(text) is not None:
        raise OptionValueRefused(
            what,
            f"the {what} contains a control character (line break, NUL...): it cannot go "
            "into a client option file, which it would add options to; nothing was written",
        )
    return text
