"""The exceptions probity raises: one base class, :class:`ProbityError`,
and a subclass per kind of failure, so a caller can catch exactly the one
it can handle. Each carries the engine's own message."""

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._result import Result


class ProbityError(Exception):
    """The base of every error probity raises about an experiment or a run
    (argument type errors are plain :class:`TypeError`)."""


class ConfigError(ProbityError, ValueError):
    """The experiment's configuration is refused: a table or key the engine
    does not accept (the message names it and lists the accepted keys), a
    setting out of range, inputs that cannot be read, a system that cannot
    be built (an API key variable that is not set, a template that does
    not compile). Also a :class:`ValueError`."""


class BrokenCheckError(ConfigError):
    """A check erred on every output it saw, so it cannot judge the system
    (a predicate that always raises or never returns a bool, a judge that
    never answers). Like the CLI (exit 2), a configuration error.
    ``result`` holds the run, its Error cells and their reasons."""

    def __init__(self, message: str, result: "Optional[Result]" = None) -> None:
        super().__init__(message)
        #: The run as far as it went.
        self.result = result


class StoreError(ProbityError, RuntimeError):
    """The run store cannot be opened, read or written (the message names
    its path)."""


class StoreLockedError(StoreError):
    """The run store is locked by another process: another writer holds
    the SQLite file, or another live process is running the same run.
    Wait for it to finish, or use another store."""


class RunError(ProbityError, RuntimeError):
    """The run could not complete or measured nothing. ``result`` holds the
    run as far as it went, when there is one."""

    def __init__(self, message: str, result: "Optional[Result]" = None) -> None:
        super().__init__(message)
        #: The run as far as it went (its samples and their errors).
        self.result = result


class SystemUnreachableError(RunError):
    """The first calls to the system all failed with one cause (a wrong key,
    a server that does not answer, a Python system that always raises), so
    the run stopped with no verdict."""


class ErrorBudgetExceededError(RunError):
    """More calls failed than the experiment's ``error_budget`` allows, so
    the run stopped with no verdict."""


class NotReliableError(ProbityError, AssertionError):
    """What :func:`probity.assert_reliable` raises: the run does not pass.
    Its message is the report's failing lines. Also an
    :class:`AssertionError`, so pytest reports a failed test."""


__all__ = [
    "ProbityError",
    "ConfigError",
    "BrokenCheckError",
    "StoreError",
    "StoreLockedError",
    "RunError",
    "SystemUnreachableError",
    "ErrorBudgetExceededError",
    "NotReliableError",
]
