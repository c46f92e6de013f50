"""A Python callable as the system under test, run concurrently: a
coroutine function on one asyncio loop in a background thread, a plain
function in a thread pool. The native side calls :meth:`Caller.submit`
(with the GIL) and waits for the returned future without holding it."""

import asyncio
import concurrent.futures
import inspect
import threading
from typing import Any, Callable, List, Optional, Tuple


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)
    )


def _arity(fn: Callable[..., Any]) -> int:
    """1: ``system(input)``; 2: ``system(input, messages)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    required = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(required) == 2:
        return 2
    if len(required) <= 1:
        return 1
    raise TypeError(
        f"system must take one argument (the input) or two (the input and the "
        f"chat messages); it takes {sig}"
    )


def _error(e: BaseException) -> Tuple[bool, str]:
    text = str(e)
    return (False, f"{type(e).__name__}: {text}" if text else type(e).__name__)


def _answer(value: Any) -> Tuple[bool, str]:
    if isinstance(value, str):
        return (True, value)
    return (False, f"TypeError: the system returned {type(value).__name__}, expected str")


class Caller:
    """Runs ``fn`` for the native runner; :meth:`close` when the run ends."""

    def __init__(self, fn: Callable[..., Any], concurrency: int) -> None:
        self.fn = fn
        self.arity = _arity(fn)
        self.is_async = _is_async(fn)
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._concurrency = max(1, concurrency)
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        fn = self.fn
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"

    def _args(self, input: Any, messages: List[Tuple[str, str]]) -> tuple:
        if self.arity == 2:
            return (input, [{"role": r, "content": c} for r, c in messages])
        return (input,)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="probity-asyncio", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _thread_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._concurrency, thread_name_prefix="probity-system"
                )
            return self._pool

    async def _call_async(self, args: tuple) -> Tuple[bool, str]:
        try:
            return _answer(await self.fn(*args))
        except Exception as e:  # every exception is the call's failure
            return _error(e)

    def _call_sync(self, args: tuple) -> Tuple[bool, str]:
        try:
            value = self.fn(*args)
            if inspect.isawaitable(value):
                value = asyncio.run_coroutine_threadsafe(
                    _await(value), self._event_loop()
                ).result()
            return _answer(value)
        except Exception as e:
            return _error(e)

    def submit(
        self, input: Any, messages: List[Tuple[str, str]], repetition: int, attempt: int
    ) -> "concurrent.futures.Future[Tuple[bool, str]]":
        args = self._args(input, messages)
        if self.is_async:
            return asyncio.run_coroutine_threadsafe(self._call_async(args), self._event_loop())
        return self._thread_pool().submit(self._call_sync, args)

    def close(self) -> None:
        with self._lock:
            pool, loop, thread = self._pool, self._loop, self._thread
            self._pool = self._loop = self._thread = None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(timeout=5)
            if not loop.is_running():
                loop.close()


async def _await(value: Any) -> Any:
    return await value
