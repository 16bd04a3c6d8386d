"""The exception types of the runners boundary.

One type per kind of failure, each with a `permanent` flag so that the one
retry policy (benchapp.orchestration) can decide without string matching:
authentication, host keys and missing binaries are permanent; resets and
timeouts are transient.
"""


class ValidationError(ValueError):
    """A plan or tool parameter was refused. `param` names the culprit."""

    def __init__(self, param: str, message: str):
        self.param = param
        self.message = message
        super().__init__(f"{param}: {message}" if param else message)


class ParseError(ValueError):
    """Tool output could not be read. The message is one line."""


class RunnerError(Exception):
    """Running something failed (connection, auth, timeout, missing tool...)."""

    def __init__(self, message: str, *, permanent: bool = False, output: str = ""):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        # Partial output captured before the failure: always kept, never lost.
        self.output = output
