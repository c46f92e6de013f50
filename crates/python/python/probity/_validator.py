"""Validators written in Python: the paper's ``Validator(name, message,
predicate, minimum_success_percentage)`` (§2.1)."""

import inspect
from typing import Any, Callable, Optional


def _arity(fn: Callable[..., Any], what: str) -> int:
    """1 for ``f(o)``, 2 for ``f(i, o)``: the positional parameters ``fn``
    requires (or, with defaults, accepts)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1  # a builtin without a signature: called with the output
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(required) in (1, 2):
        return len(required)
    if not required and (len(positional) >= 2 or varargs):
        return 2
    if not required and len(positional) == 1:
        return 1
    raise TypeError(
        f"{what} must take one argument (the output: lambda o: ...) or two "
        f"(the input and the output: lambda i, o: ...); it takes {sig}"
    )


class Validator:
    """A named check (paper §2.1): ``name``, ``message`` shown when it
    fails, ``check`` a callable returning True or False — ``lambda o: ...``
    over the output or ``lambda i, o: ...`` over the input (a
    :class:`probity.Input`, a str of its text) and the output — the
    ``minimum_success_percentage`` its success rate must reach (in [0, 1],
    default 1.0) and its ``weight`` in weighted aggregation (default 1.0).

    A check that raises, or returns None, gives an Error cell with the
    exception's message for that output: not a failure, never a crash.
    """

    def __init__(
        self,
        name: str,
        message: Optional[str] = None,
        check: Optional[Callable[..., Any]] = None,
        minimum_success_percentage: float = 1.0,
        weight: float = 1.0,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"Validator: name must be a non-empty str, got {name!r}")
        if message is not None and not isinstance(message, str):
            if check is None and callable(message):
                message, check = None, message
            else:
                raise TypeError(f"Validator {name!r}: message must be a str, got {message!r}")
        if check is None or not callable(check):
            raise TypeError(
                f"Validator {name!r}: check must be callable (lambda o: ... or "
                f"lambda i, o: ...), got {check!r}"
            )
        for arg, value in (
            ("minimum_success_percentage", minimum_success_percentage),
            ("weight", weight),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"Validator {name!r}: {arg} must be a number, got {value!r}")
        if not 0.0 <= float(minimum_success_percentage) <= 1.0:
            raise ValueError(
                f"Validator {name!r}: minimum_success_percentage must be in [0, 1] "
                f"(0.95 is 95%), got {minimum_success_percentage!r}"
            )
        if not float(weight) >= 0.0 or float(weight) == float("inf"):
            raise ValueError(f"Validator {name!r}: weight must be a finite number >= 0, got {weight!r}")
        self.name = name
        self.message = name if message is None else message
        self.check = check
        self.minimum_success_percentage = float(minimum_success_percentage)
        self.weight = float(weight)
        self.arity = _arity(check, f"Validator {name!r}: check")

    def __repr__(self) -> str:
        return (
            f"Validator({self.name!r}, {self.message!r}, {self.check!r}, "
            f"minimum_success_percentage={self.minimum_success_percentage})"
        )

    def _describe(self) -> dict:
        """What is stored with a run about this validator."""
        try:
            source = inspect.getsource(self.check).strip()
        except (OSError, TypeError):
            source = getattr(self.check, "__qualname__", repr(self.check))
        return {
            "name": self.name,
            "message": self.message,
            "minimum_success_percentage": self.minimum_success_percentage,
            "weight": self.weight,
            "python": source,
        }
