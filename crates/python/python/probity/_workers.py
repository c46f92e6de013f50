"""Where Python code called by a run executes: a plain system on daemon
threads, coroutine functions (systems and predicates) on one asyncio loop
in a daemon thread. (Plain predicates run on the native module's caller
threads, crates/python/src/calls.rs, which use :func:`describe`,
:func:`settle` and :class:`CallAbandoned` from here.)

The engine waits for each call with a timeout (the check's or the run's
``timeout_s``) without holding the GIL. A call that does not finish in time
is abandoned (:func:`abandon`): a coroutine is cancelled, a thread running
Python code gets :class:`CallAbandoned` raised in it. A thread stuck in C
code (``time.sleep``) cannot be stopped, but the threads are daemons, so
it never keeps the interpreter from exiting, and the pool starts another
thread for the next call instead of waiting for it.

Every call's outcome is ``(True, value)`` or ``(False, text)``, the text
being the exception's type and message then its traceback (probity's own
frames left out), so the cell's reason says where the user's code failed.
"""

import asyncio
import concurrent.futures
import ctypes
import inspect
import queue
import threading
import traceback
from typing import Any, Awaitable, Callable, Optional, Tuple, Union

#: ``(True, value)`` or ``(False, "Type: message\\nTraceback …")``.
Outcome = Tuple[bool, Any]

#: Frames of a traceback kept in a cell's reason (the innermost ones).
TRACEBACK_FRAMES = 8
#: How long an idle worker thread waits for another call before it ends.
IDLE_S = 30.0


class CallAbandoned(BaseException):
    """Raised inside a call the run stopped waiting for (its timeout
    passed). A :class:`BaseException`, so ``except Exception`` in the
    user's code does not swallow it."""


def describe(e: BaseException) -> str:
    """``"Type: message"`` then the traceback's innermost frames."""
    text = str(e)
    head = f"{type(e).__name__}: {text}" if text else type(e).__name__
    # Our own wrappers are the outermost frames: leave them out.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__]
    if not frames:
        return head
    kept = traceback.StackSummary.from_list(frames[-TRACEBACK_FRAMES:])
    return head + "\nTraceback (most recent call last):\n" + "".join(kept.format()).rstrip("\n")


#: Called with the call's :data:`Outcome` when it finishes (not after it
#: was abandoned).
Done = Callable[[Outcome], None]


class _Job:
    """One call on a worker thread; :func:`abandon` takes it as the
    handle. Lighter than a ``concurrent.futures.Future``: a Python
    validator's call costs a few microseconds more than the check."""

    __slots__ = ("fn", "args", "done", "thread", "abandoned")

    def __init__(self, fn: Callable[..., Any], args: Tuple[Any, ...], done: Done) -> None:
        self.fn = fn
        self.args = args
        self.done = done
        #: The ident of the thread running it, while it runs.
        self.thread: Optional[int] = None
        self.abandoned = False


# Guards `_Job.thread` and `_Job.abandoned`: abandon() raises in a thread
# only while it runs that job.
_running = threading.Lock()


def _run(job: _Job) -> None:
    with _running:
        if job.abandoned:
            return
        job.thread = threading.get_ident()
    try:
        value = job.fn(*job.args)
        if inspect.isawaitable(value):  # a plain function that returned a coroutine
            value = asyncio.run_coroutine_threadsafe(_await(value), loop()).result()
        outcome: Outcome = (True, value)
    # Every exception is the call's failure, SystemExit and
    # KeyboardInterrupt included: uncaught, they ended the thread without
    # an answer, and the call waited for its timeout.
    except BaseException as e:
        outcome = (False, describe(e))
    finally:
        with _running:
            job.thread = None
    job.done(outcome)


class Pool:
    """Daemon threads, started as calls need them: a call never waits for a
    thread busy with an abandoned call. Idle threads end after
    :data:`IDLE_S`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: "queue.SimpleQueue[_Job]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Threads waiting for a job, less the jobs queued for them.
        self._waiting = 0

    def submit(self, fn: Callable[..., Any], args: Tuple[Any, ...], done: Done) -> _Job:
        """Call ``fn(*args)`` on a worker thread, then ``done(outcome)``."""
        job = _Job(fn, args, done)
        with self._lock:
            if self._waiting > 0:
                self._waiting -= 1
                self._queue.put(job)
                return job
        threading.Thread(target=self._work, args=(job,), name=self._name, daemon=True).start()
        return job

    def _work(self, job: Optional[_Job]) -> None:
        while job is not None:
            try:
                _run(job)
            except BaseException:  # CallAbandoned delivered just after the call
                pass
            job = self._next()

    def _next(self) -> Optional[_Job]:
        """The next job, or None once idle for :data:`IDLE_S`."""
        with self._lock:
            self._waiting += 1
        try:
            return self._queue.get(timeout=IDLE_S)
        except queue.Empty:
            # Under the lock no job can be queued for this thread meanwhile.
            with self._lock:
                try:
                    return self._queue.get_nowait()
                except queue.Empty:
                    self._waiting -= 1
                    return None


_lock = threading.Lock()
_pool: Optional[Pool] = None
_loop: Optional[asyncio.AbstractEventLoop] = None


def pool() -> Pool:
    """The process's pool of worker threads."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = Pool("probity-call")
        return _pool


def loop() -> asyncio.AbstractEventLoop:
    """The process's asyncio loop for coroutine functions, running in a
    daemon thread: one loop for every run, so clients made on it (an
    ``AsyncOpenAI``) keep working from run to run."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            new = asyncio.new_event_loop()
            threading.Thread(target=new.run_forever, name="probity-asyncio", daemon=True).start()
            _loop = new
        return _loop


async def _guarded(awaitable: Awaitable[Any]) -> Outcome:
    try:
        return (True, await awaitable)
    except asyncio.CancelledError:
        raise  # the call abandoned
    except BaseException as e:
        # SystemExit and KeyboardInterrupt too: uncaught, they stop the
        # loop every coroutine call runs on.
        return (False, describe(e))


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (``async def``, or an object
    whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def settle(value: Any) -> Any:
    """``value``, or what it gives when awaited on the loop if it is
    awaitable (a plain predicate that returned a coroutine). The native
    module calls it for a predicate's value that is not a ``bool``."""
    if inspect.isawaitable(value):
        return asyncio.run_coroutine_threadsafe(_await(value), loop()).result()
    return value


#: What :func:`submit` returns, for :func:`abandon`.
Handle = Union[_Job, "concurrent.futures.Future[Outcome]"]


def submit(fn: Callable[..., Any], args: Tuple[Any, ...], coroutine: bool, done: Done) -> Handle:
    """Start ``fn(*args)`` — on the loop when ``coroutine``, else on a
    worker thread (awaiting what it returns if that is awaitable) — and
    call ``done(outcome)`` when it finishes."""
    if coroutine:
        future = asyncio.run_coroutine_threadsafe(_guarded(fn(*args)), loop())

        def finished(f: "concurrent.futures.Future[Outcome]") -> None:
            if not f.cancelled():
                done(f.result())

        future.add_done_callback(finished)
        return future
    return pool().submit(fn, args, done)


def abandon(handle: Handle) -> None:
    """The run stopped waiting for this call: cancel it (a coroutine, or a
    call not started), or raise :class:`CallAbandoned` in the thread
    running it (Python code stops at its next instruction; C code, such as
    ``time.sleep``, only when it returns)."""
    if not isinstance(handle, _Job):
        handle.cancel()
        return
    with _running:
        handle.abandoned = True
        if handle.thread is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(handle.thread), ctypes.py_object(CallAbandoned))
