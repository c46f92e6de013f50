"""The pytest plugin (entry point pytest11): the `probity_run` fixture and
the `probity` marker fail a test with the report's failing lines; the
options set the store and M; verdicts reach the terminal summary and the
JUnit XML, also under pytest-xdist."""

import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TESTS = '''
import pytest
import probity

SIM = {"provider": "sim", "seed": 0, "contractions": 0.10, "omit_welcome": 0.15}
INPUTS = [f"Thank you for the tomatoes, part {i}!" if i % 2 == 0 else f"How deep, question {i}?" for i in range(20)]

@probity.validator(name="contraction_validator", minimum=0.95)
def few_contractions(o):
    "Output contains too many contractions"
    return o.count("'") <= 3

@probity.validator(name="short", minimum=0.9)
def short(o):
    return len(o) < 2000

def test_fixture_fails(probity_run):
    probity_run(probity.Experiment("contractions", SIM, INPUTS, [few_contractions], outputs_per_input=20))

def test_fixture_passes(probity_run):
    result = probity_run(probity.Experiment("short", SIM, INPUTS, [short], outputs_per_input=5))
    assert result.passed

@pytest.mark.probity
def test_marker_passes():
    return probity.Experiment("marked", SIM, INPUTS, [short], outputs_per_input=5)
'''


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=TESTS)
    return pytester


def test_the_fixture_and_the_marker_fail_or_pass_with_the_reports_lines(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "NotReliableError" in out
    result.stdout.fnmatch_lines(["*FAIL contraction_validator*", "*Output contains too many contractions*"])
    # The terminal summary lists every run's checks.
    result.stdout.fnmatch_lines(
        [
            "*= probity =*",
            "test_suite.py::test_fixture_fails",
            "  contractions: FAIL: 20 inputs x 20 outputs",
            "  contractions:contraction_validator: FAIL *",
        ]
    )
    result.stdout.fnmatch_lines(["test_suite.py::test_marker_passes", "  marked: PASS: 20 inputs x 5 outputs"])


def test_the_options_set_the_store_and_the_outputs_and_junit_gets_properties(suite: pytest.Pytester) -> None:
    junit = suite.path / "junit.xml"
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "--probity-store", "runs/probity.db", "--probity-outputs", "3",
        f"--junitxml={junit}", "-o", "junit_family=xunit1",
    )
    result.assert_outcomes(passed=2, failed=1)
    rows = sqlite3.connect(str(suite.path / "runs" / "probity.db")).execute(
        "SELECT name, status FROM runs ORDER BY id"
    ).fetchall()
    assert sorted(rows) == [("contractions", "complete"), ("marked", "complete"), ("short", "complete")]
    props = {str(p.get("name")): str(p.get("value")) for p in ET.parse(junit).getroot().iter("property")}
    assert props["probity:marked"].startswith("PASS run ")
    assert props["probity:marked"].endswith(": 20 inputs x 3 outputs")
    assert props["probity:short:short"].startswith("PASS 100.0% [")


def test_a_bad_outputs_option_is_a_usage_error(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("--probity-outputs", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--probity-outputs must be from 1 to 1,000,000, not 0*"])


def test_under_xdist_the_summary_and_the_store_have_every_run(suite: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--probity-store", "runs.db", "--probity-outputs", "20"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*= probity =*"])
    for name in ("contractions", "short", "marked"):
        result.stdout.fnmatch_lines([f"  {name}: * 20 inputs x 20 outputs"])
    rows = sqlite3.connect(str(Path(suite.path) / "runs.db")).execute("SELECT name FROM runs").fetchall()
    assert sorted(r[0] for r in rows) == ["contractions", "marked", "short"]


ASYNC_TESTS = '''
import asyncio
import pytest
import pytest_asyncio
import probity

SIM = {"provider": "sim", "seed": 0, "contractions": 0.10, "omit_welcome": 0.15}
INPUTS = [f"How deep, question {i}?" for i in range(20)]

@probity.validator(name="short", minimum=0.9)
def short(o):
    return len(o) < 2000

@probity.validator(name="no_contractions", minimum=0.99)
def no_contractions(o):
    return "'" not in o

@pytest_asyncio.fixture
async def outputs():
    await asyncio.sleep(0)
    return 4

@pytest.mark.asyncio
@pytest.mark.probity
async def test_async_marker_passes(outputs):
    await asyncio.sleep(0)
    return probity.Experiment("async_short", SIM, INPUTS, [short], outputs_per_input=outputs)

@pytest.mark.asyncio
@pytest.mark.probity
async def test_async_marker_fails():
    return probity.Experiment("async_strict", SIM, INPUTS, [no_contractions], outputs_per_input=10)

@pytest.mark.asyncio
@pytest.mark.probity
async def test_async_marker_returns_nothing():
    await asyncio.sleep(0)

class TestInAClass:
    @pytest.mark.probity
    def test_method_marker_passes(self):
        return probity.Experiment("method_short", SIM, INPUTS, [short], outputs_per_input=2)
'''


def test_an_async_marked_test_is_awaited_then_its_experiment_run(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    pytester.makepyfile(test_async=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=strict", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["FAILED test_async.py::test_async_marker_fails - *NotReliableEr*"])
    result.stdout.fnmatch_lines(["  async_strict:no_contractions: FAIL *"])
    result.stdout.fnmatch_lines(["*TypeError: a test marked probity must return a probity.Experiment, got NoneType"])
    # The fixture's value (an async fixture on the test's loop) was used.
    result.stdout.fnmatch_lines(["test_async.py::test_async_marker_passes", "  async_short: PASS: 20 inputs x 4 outputs"])
    result.stdout.fnmatch_lines(["test_async.py::TestInAClass::test_method_marker_passes", "  method_short: PASS: *"])


def test_an_async_marked_test_without_an_async_plugin_gets_pytests_message(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")  # imported by the file under test
    pytester.makepyfile(test_async=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio", "-k", "async_marker_fails")
    assert result.ret != pytest.ExitCode.OK
    out = result.stdout.str()
    assert "async def functions are not natively supported" in out
    assert "got coroutine" not in out


def test_the_store_option_takes_a_postgresql_url(suite: pytest.Pytester, postgres_url: str) -> None:
    pytest.importorskip("xdist")
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--probity-store", postgres_url)
    result.assert_outcomes(passed=2, failed=1)
    # Nothing was made as a file under the URL's name.
    assert not any("postgres" in p.name for p in Path(suite.path).rglob("*"))
    result.stdout.fnmatch_lines(["  marked: PASS run *: 20 inputs x 5 outputs"])


FAILING_STORE = '''
import os
import probity

def test_store_down():
    url = os.environ["DOWN_STORE"]  # in the test's source, the password would be the user's own line
    probity.Experiment("down", {"provider": "sim"}, ["a"], [{"name": "short", "kind": "words", "max": 300}]).run(
        store=url
    )

def test_store_down_through_the_fixture(probity_run):
    probity_run(probity.Experiment("down", {"provider": "sim"}, ["a"], [{"name": "short", "kind": "words", "max": 300}]))
'''


def test_a_store_password_never_reaches_pytests_output_or_junit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWN_STORE", "postgres://ci:Pw-0x5eCret@127.0.0.1:9/probity")
    pytester.makepyfile(test_down=FAILING_STORE)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tb=long", f"--junitxml={junit}",
        "--probity-store", "postgres://ci:Pw-0x5eCret@127.0.0.1:9/probity",
    )
    result.assert_outcomes(failed=2)
    assert "StoreError" in result.stdout.str()
    # The command line pytester echoes is the only place it may appear.
    shown = [line for line in result.stdout.lines + result.stderr.lines if not line.startswith("running: ")]
    assert not [line for line in shown if "Pw-0x5eCret" in line]
    assert "Pw-0x5eCret" not in junit.read_text()
