"""probity's pytest plugin, registered by the package's ``pytest11`` entry
point (it loads whenever probity is installed beside pytest).

Two ways to run an experiment in a test, both failing the test with the
report's failing lines when the run does not pass:

* the ``probity_run`` fixture: ``probity_run(experiment)`` runs it and
  returns the :class:`probity.Result`;
* the ``probity`` marker: a test marked ``@pytest.mark.probity`` returns an
  :class:`probity.Experiment`, which the plugin runs (an ``async def``
  test is awaited by its async plugin, pytest-asyncio or anyio, first).

Options: ``--probity-store STORE`` writes every run to that run store, a
SQLite file or a team's PostgreSQL database as a ``postgres://`` URL
(``probity runs``/``report``/``compare`` read it); ``--probity-outputs N``
sets every experiment's outputs per input (M), e.g. small on a laptop and
large in CI. Each check's verdict is recorded as a test property (JUnit
XML ``<property>``: ``record_property``) and listed in the terminal
summary, also under pytest-xdist (properties travel with the reports).
"""

import contextlib
import functools
import inspect
import os
import signal
import threading
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Tuple

import pytest

from . import _probity
from ._errors import NotReliableError
from ._experiment import Experiment, RunFixture
from ._result import Result

#: The prefix of the test properties the plugin records.
PREFIX = "probity:"

_collected: "Dict[str, List[Tuple[str, str]]]" = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("probity", "probity reliability tests")
    group.addoption(
        "--probity-store",
        action="store",
        default=None,
        metavar="STORE",
        help="write every probity run to this run store: a SQLite file or a postgres:// URL "
        "(default: runs kept in memory)",
    )
    group.addoption(
        "--probity-outputs",
        action="store",
        type=int,
        default=None,
        metavar="N",
        help="outputs per input (M) for every probity experiment, overriding the test's",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "probity: the test returns a probity.Experiment; the plugin runs it and fails the test "
        "unless the run passes",
    )
    outputs = config.getoption("--probity-outputs")
    if outputs is not None:
        problem = _probity.count_error("--probity-outputs", outputs, "outputs_per_input")
        if problem is not None:
            raise pytest.UsageError(problem)


def _run(config: pytest.Config, experiment: Experiment, record: Callable[[str, object], None]) -> Result:
    """Run ``experiment`` under the options, record its checks, and fail
    the test unless it passed."""
    __tracebackhide__ = True
    if not isinstance(experiment, Experiment):
        raise TypeError(f"expected a probity.Experiment, got {type(experiment).__name__}")
    outputs: Optional[int] = config.getoption("--probity-outputs")
    if outputs is not None:
        experiment.outputs_per_input = outputs
    store: Optional[str] = config.getoption("--probity-store")
    if store is not None and "://" not in store:
        # A file is where pytest was started (xdist workers run elsewhere).
        store = os.path.join(str(config.invocation_params.dir), store)
    result = experiment.run(store=store)
    n, m, k = result.shape
    run = f" run {result.run_id}" if result.run_id is not None else ""
    record(f"{PREFIX}{result.name}", f"{'PASS' if result.passed else 'FAIL'}{run}: {n} inputs x {m} outputs")
    for c in result.checks:
        lo, hi = c.interval
        record(
            f"{PREFIX}{result.name}:{c.name}",
            f"{c.verdict.upper()} {c.rate:.1%} [{lo:.1%}, {hi:.1%}] >= {c.minimum_success_percentage:.0%} "
            f"(n={c.n}{', established' if c.established else ''})",
        )
    if not result.passed:
        raise NotReliableError(result.failure_message or f"run {result.name!r} did not pass")
    return result


@pytest.fixture
def probity_run(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> RunFixture:
    """``probity_run(experiment)``: run it (with ``--probity-store`` and
    ``--probity-outputs`` applied) and return its :class:`probity.Result`;
    the test fails with the report's failing lines unless it passed."""

    def run(experiment: Experiment) -> Result:
        __tracebackhide__ = True
        return _run(request.config, experiment, record_property)

    return run


def pytest_collection_modifyitems(items: "List[pytest.Item]") -> None:
    """Each test marked ``probity`` is wrapped so that the experiment it
    returns is run when the test is called. pytest (or an async plugin:
    pytest-asyncio, anyio) still calls the test its own way, with its
    fixtures and its event loop; an ``async def`` test without such a
    plugin gets pytest's own message naming the plugin it lacks."""
    for item in items:
        if isinstance(item, pytest.Function) and item.get_closest_marker("probity") is not None:
            item.obj = _running_what_it_returns(item)


def _running_what_it_returns(item: pytest.Function) -> Callable[..., Any]:
    """``item``'s test function, wrapped: call it, then run the
    :class:`probity.Experiment` it returns (an ``async def`` test is
    awaited first; the run then holds the test's loop, as a synchronous
    call in it would: probity's own coroutines run on its own loop)."""
    test = item.obj

    def run(returned: object) -> None:
        __tracebackhide__ = True
        if not isinstance(returned, Experiment):
            raise TypeError(
                f"a test marked probity must return a probity.Experiment, got {type(returned).__name__}"
            )
        _run(item.config, returned, lambda name, value: item.user_properties.append((name, value)))

    if inspect.iscoroutinefunction(test):

        @functools.wraps(test)
        async def awaited_then_run(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True
            experiment = await test(*args, **kwargs)
            with _ctrl_c_interrupts():
                run(experiment)

        return awaited_then_run

    @functools.wraps(test)
    def called_then_run(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True
        run(test(*args, **kwargs))

    return called_then_run


@contextlib.contextmanager
def _ctrl_c_interrupts() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt meanwhile (the run stops, its store
    keeps it interrupted). An asyncio runner replaces Python's handler with
    one that cancels its task, which cannot run while the run holds the
    loop: the run went on to its last call."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        # None: a handler not set from Python; the default is the nearest.
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # On the xdist controller too: the worker's properties come with the
    # report.
    if report.when != "call":
        return
    lines = [(str(k)[len(PREFIX) :], str(v)) for k, v in report.user_properties if str(k).startswith(PREFIX)]
    if lines:
        _collected[report.nodeid] = lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _collected:
        return
    terminalreporter.section("probity")
    for nodeid in sorted(_collected):
        terminalreporter.write_line(nodeid)
        for name, value in _collected[nodeid]:
            terminalreporter.write_line(f"  {name}: {value}")


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Generator[None, None, None]:
    _collected.clear()
    yield
