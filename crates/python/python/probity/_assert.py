"""pytest: fail a test when a run is not reliable."""

from ._errors import NotReliableError
from ._result import Result


def assert_reliable(result: Result) -> None:
    """Raise :class:`probity.NotReliableError` (an ``AssertionError``)
    unless ``result`` passed: every check's verdict passes, every sample
    was taken, no check is broken. The message is the engine's (Rust's
    ``RunOutcome::assert_passed``): each check that does not pass with its
    rate, interval, threshold and whether the sample size established it,
    its message, and a failing output with its input."""
    __tracebackhide__ = True  # pytest shows the caller's line
    if not isinstance(result, Result):
        raise TypeError(f"assert_reliable takes a probity.Result, got {type(result).__name__}")
    if not result.passed:
        raise NotReliableError(result.failure_message or f"run {result.name!r} did not pass")
