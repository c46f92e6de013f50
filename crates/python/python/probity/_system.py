"""A Python callable as the system under test. The native side calls
:meth:`Caller.submit` (with the GIL) and waits for the returned future,
without the GIL, for at most the run's ``timeout_s``; a call that takes
longer is abandoned (:func:`probity._workers.abandon`) and is a failed
call. Plain functions run on daemon threads, coroutine functions on one
asyncio loop (:mod:`probity._workers`)."""

import inspect
import json
from typing import Any, Callable, Dict, List, Tuple

from . import _workers


def _arity(fn: Callable[..., Any]) -> int:
    """1: ``system(input)``; 2: ``system(input, messages)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    params = list(sig.parameters.values())
    required = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    positional = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
    required_keywords = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if not positional or required_keywords:
        # The input is passed by position: a system that cannot take it so
        # (only keyword arguments, or ones it requires) would fail every call.
        raise TypeError(
            f"system must take the input as its first positional argument (and may take the chat "
            f"messages as a second); it takes {sig}"
        )
    if len(required) == 2:
        return 2
    if len(required) <= 1:
        return 1
    raise TypeError(
        f"system must take one argument (the input) or two (the input and the chat messages); it takes {sig}"
    )


def fingerprint(fn: Callable[..., Any]) -> str:
    """The callable's qualified name: part of a stored run's cache key."""
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


class Caller:
    """Runs ``fn`` for the native runner."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.arity = _arity(fn)
        self.is_async = _workers.is_async(fn)
        self.fingerprint = fingerprint(fn)

    def submit(
        self, input: Any, messages: str, repetition: int, attempt: int, done: _workers.Done
    ) -> _workers.Handle:
        """Start one call; ``done`` gets ``(True, output)`` or ``(False,
        "Type: message\\nTraceback …")``. ``messages`` is the conversation
        as JSON text, in OpenAI's chat shape: a system taking two arguments
        gets it as a list of dicts, whole (``role``, ``content``, and
        ``tool_calls``, ``tool_call_id``, ``name`` where a message has
        them)."""
        args: Tuple[Any, ...] = (input,)
        if self.arity == 2:
            chat: List[Dict[str, Any]] = json.loads(messages)
            args = (input, chat)
        return _workers.submit(self.fn, args, self.is_async, done)
