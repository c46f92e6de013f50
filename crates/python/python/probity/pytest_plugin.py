"""probity's pytest plugin, registered by the package's ``pytest11`` entry
point (it loads whenever probity is installed beside pytest).

Two ways to run an experiment in a test, both failing the test with the
report's failing lines when the run does not pass:

* the ``probity_run`` fixture: ``probity_run(experiment)`` runs it and
  returns the :class:`probity.Result`;
* the ``probity`` marker: a test marked ``@pytest.mark.probity`` returns an
  :class:`probity.Experiment`, which the plugin runs.

Options: ``--probity-store PATH`` writes every run to that run store
(``probity runs``/``report``/``compare`` read it); ``--probity-outputs N``
sets every experiment's outputs per input (M), e.g. small on a laptop and
large in CI. Each check's verdict is recorded as a test property (JUnit
XML ``<property>``: ``record_property``) and listed in the terminal
summary, also under pytest-xdist (properties travel with the reports).
"""

import os
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

import pytest

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
        metavar="PATH",
        help="write every probity run to this SQLite run store (default: runs kept in memory)",
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
    if outputs is not None and outputs < 1:
        raise pytest.UsageError(f"--probity-outputs must be at least 1, got {outputs}")


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
    if store is not None:
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


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Optional[bool]:
    """A test marked ``probity``: call it, then run the experiment it
    returns."""
    if pyfuncitem.get_closest_marker("probity") is None:
        return None
    __tracebackhide__ = True
    names = pyfuncitem._fixtureinfo.argnames
    args = {name: pyfuncitem.funcargs[name] for name in names}
    experiment = pyfuncitem.obj(**args)
    if not isinstance(experiment, Experiment):
        raise TypeError(
            f"a test marked probity must return a probity.Experiment, got {type(experiment).__name__}"
        )

    def record(name: str, value: object) -> None:
        pyfuncitem.user_properties.append((name, value))

    _run(pyfuncitem.config, experiment, record)
    return True


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
