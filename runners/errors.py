"""The exception types of the runners boundary.

One type per kind of failure, each with a `permanent` flag so that the one
retry policy (benchapp.runs.orchestration) can decide without string matching:
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


class OptionValueRefused(RunnerError, ValidationError):
    """A value that may not go into a client option file (a control character would
    add options there). Both a refused value (ValidationError, for the tools'
    validation) and a permanent failure of the cell (RunnerError, for the writers
    reached at run time: facts, checksums, test connection)."""

    def __init__(self, param: str, message: str):
        Exception.__init__(self, f"{param}: {message}")
        self.param = param
        self.message = message
        self.permanent = True
        self.output = ""
