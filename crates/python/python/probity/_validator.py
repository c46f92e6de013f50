"""Validators written in Python: the paper's ``Validator(name, message,
predicate, minimum_success_percentage)`` (§2.1), and the
:func:`validator` decorator that makes one from a function."""

import inspect
from typing import Any, Callable, Dict, Optional, TypeVar, Union, overload

from . import _workers

F = TypeVar("F", bound=Callable[..., Any])


def _arity(fn: Callable[..., Any], what: str) -> int:
    """1 for ``f(o)``, 2 for ``f(i, o)``: the positional parameters ``fn``
    requires (or, with defaults, accepts)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1  # a builtin without a signature: called with the output
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
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


def _number(owner: str, arg: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}: {arg} must be a number, got {value!r}")
    return float(value)


class Validator:
    """A named check (paper §2.1), one column of the reliability tensor.

    * ``name``: the check's name in reports (unique in an experiment).
    * ``message``: shown when it fails (default: the name).
    * ``check``: a predicate returning ``True`` or ``False`` —
      ``lambda o: ...`` over the output, or ``lambda i, o: ...`` over the
      input (a :class:`probity.Input`, a str of its text) and the output.
      An ``async def`` runs on probity's event loop.
    * ``minimum_success_percentage``: the share of outputs that must pass,
      in [0, 1] (0.95 is 95%); default 1.0.
    * ``weight``: its weight in weighted aggregation; default 1.0.
    * ``timeout_s``: how long one call may take (default: the experiment's
      ``timeout_s``, 60 s unless set).

    A predicate that raises, returns anything but a ``bool`` (``None``,
    ``"no"``, ``1``), or does not return within ``timeout_s`` gives an
    Error cell for that output — its reason names the exception with its
    traceback, the type returned, or the timeout — never a pass by
    truthiness, never a crash. A call past its timeout is abandoned: Python
    code in it is interrupted (``CallAbandoned``), and the run goes on.

    A ``Validator`` is callable: ``v(output)`` (or ``v(input, output)``)
    calls its predicate, so a decorated function still works as one.
    """

    name: str
    message: str
    check: Callable[..., Any]
    minimum_success_percentage: float
    weight: float
    timeout_s: Optional[float]
    arity: int
    is_async: bool

    def __init__(
        self,
        name: str,
        message: Optional[Union[str, Callable[..., Any]]] = None,
        check: Optional[Callable[..., Any]] = None,
        minimum_success_percentage: float = 1.0,
        weight: float = 1.0,
        *,
        timeout_s: Optional[float] = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"Validator: name must be a non-empty str, got {name!r}")
        owner = f"Validator {name!r}"
        if message is not None and not isinstance(message, str):
            if check is None and callable(message):
                message, check = None, message
            else:
                raise TypeError(f"{owner}: message must be a str, got {message!r}")
        if check is None or not callable(check):
            raise TypeError(f"{owner}: check must be callable (lambda o: ... or lambda i, o: ...), got {check!r}")
        msp = _number(owner, "minimum_success_percentage", minimum_success_percentage)
        if not 0.0 <= msp <= 1.0:
            raise ValueError(
                f"{owner}: minimum_success_percentage must be in [0, 1] (0.95 is 95%), "
                f"got {minimum_success_percentage!r}"
            )
        w = _number(owner, "weight", weight)
        if not w >= 0.0 or w == float("inf"):
            raise ValueError(f"{owner}: weight must be a finite number >= 0, got {weight!r}")
        if timeout_s is not None:
            t = _number(owner, "timeout_s", timeout_s)
            if not 0.0 < t <= 86_400.0:
                raise ValueError(f"{owner}: timeout_s must be in (0, 86400] seconds, got {timeout_s!r}")
            timeout_s = t
        self.name = name
        self.message = name if message is None else message
        self.check = check
        self.minimum_success_percentage = msp
        self.weight = w
        self.timeout_s = timeout_s
        self.arity = _arity(check, f"{owner}: check")
        self.is_async = _workers.is_async(check)

    def __call__(self, *args: Any) -> Any:
        """Call the predicate directly (no timeout, no type check)."""
        return self.check(*args)

    def __repr__(self) -> str:
        return (
            f"Validator({self.name!r}, {self.message!r}, {self.check!r}, "
            f"minimum_success_percentage={self.minimum_success_percentage})"
        )

    def to_dict(self) -> Dict[str, Any]:
        """What is stored with a run about this validator: its settings and
        the predicate's source."""
        try:
            source = inspect.getsource(self.check).strip()
        except (OSError, TypeError):
            source = getattr(self.check, "__qualname__", repr(self.check))
        out: Dict[str, Any] = {
            "name": self.name,
            "message": self.message,
            "minimum_success_percentage": self.minimum_success_percentage,
            "weight": self.weight,
            "python": source,
        }
        if self.timeout_s is not None:
            out["timeout_s"] = self.timeout_s
        return out


@overload
def validator(fn: Callable[..., Any], /) -> Validator: ...


@overload
def validator(
    *,
    name: Optional[str] = None,
    message: Optional[str] = None,
    minimum: float = 1.0,
    weight: float = 1.0,
    timeout_s: Optional[float] = None,
) -> Callable[[Callable[..., Any]], Validator]: ...


def validator(
    fn: Optional[Callable[..., Any]] = None,
    /,
    *,
    name: Optional[str] = None,
    message: Optional[str] = None,
    minimum: float = 1.0,
    weight: float = 1.0,
    timeout_s: Optional[float] = None,
) -> Union[Validator, Callable[[Callable[..., Any]], Validator]]:
    """Make a :class:`Validator` of a function::

        @probity.validator(name="polite", minimum=0.9)
        def polite(i: probity.Input, o: str) -> bool:
            "System seems to have forgotten its manners"
            return "You're welcome" in o if "Thank you" in i else True

    ``name`` defaults to the function's name, ``message`` to the first
    line of its docstring (else the name), ``minimum`` is the
    ``minimum_success_percentage``. Bare ``@probity.validator`` works too.
    The result is a :class:`Validator`, still callable as the function.
    """

    def make(f: Callable[..., Any]) -> Validator:
        if not callable(f):
            raise TypeError(f"probity.validator decorates a function, got {f!r}")
        doc = (inspect.getdoc(f) or "").strip().splitlines()
        return Validator(
            name if name is not None else getattr(f, "__name__", "validator"),
            message if message is not None else (doc[0] if doc else None),
            f,
            minimum_success_percentage=minimum,
            weight=weight,
            timeout_s=timeout_s,
        )

    if fn is not None:
        return make(fn)
    return make
