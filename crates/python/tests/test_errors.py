"""Errors you can catch: each failure is its own ProbityError subclass,
with the engine's message; a failing Python system or predicate keeps its
traceback in the cell's reason."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest

import probity
from conftest import SIM, paper_inputs, paper_validators


def ok() -> probity.Validator:
    return probity.Validator("ok", check=lambda o: True)


def test_the_hierarchy_lets_callers_catch_by_kind_or_by_builtin() -> None:
    assert issubclass(probity.ConfigError, probity.ProbityError)
    assert issubclass(probity.ConfigError, ValueError)
    assert issubclass(probity.BrokenCheckError, probity.ConfigError)
    assert issubclass(probity.StoreLockedError, probity.StoreError)
    assert issubclass(probity.StoreError, probity.ProbityError)
    assert issubclass(probity.SystemUnreachableError, probity.RunError)
    assert issubclass(probity.ErrorBudgetExceededError, probity.RunError)
    assert issubclass(probity.RunError, RuntimeError)
    assert issubclass(probity.NotReliableError, AssertionError)
    assert issubclass(probity.NotReliableError, probity.ProbityError)


def test_an_unknown_key_is_a_config_error_with_the_engines_message() -> None:
    with pytest.raises(probity.ConfigError) as e:
        probity.Experiment("e", SIM, ["x"], [ok()], confidnce=0.9).run()
    message = str(e.value)
    assert message.startswith("experiment: unknown field `confidnce`, expected one of")
    assert "`confidence`" in message


def test_a_missing_api_key_names_the_variable_and_no_file_that_does_not_exist(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PROBITY_TEST_NO_SUCH_KEY", raising=False)
    system = {"provider": "openai", "model": "m", "api_key_env": "PROBITY_TEST_NO_SUCH_KEY"}
    with pytest.raises(probity.ConfigError) as e:
        probity.Experiment("keyless", system, ["x"], [ok()]).run()
    message = str(e.value)
    assert "PROBITY_TEST_NO_SUCH_KEY" in message
    assert "probity.py" not in message and "probity.toml" not in message


def test_a_run_refused_by_the_engine_names_the_python_file_that_made_it() -> None:
    # A prompt template that does not render is found by the run itself.
    with pytest.raises(probity.ConfigError) as e:
        probity.Experiment(
            "bad-prompt", SIM, ["x"], [ok()], prompt=probity.Prompt("{{ input.nope.deeper }}")
        ).run()
    assert str(e.value).startswith(f"{__file__}: [prompt]"), str(e.value)


def test_a_system_that_always_raises_is_unreachable_with_its_cause_and_traceback() -> None:
    def down(i: probity.Input) -> str:
        raise ConnectionError("connection refused")

    with pytest.raises(probity.SystemUnreachableError) as e:
        probity.Experiment("down", down, paper_inputs(20), [ok()], outputs_per_input=2, error_budget=1.0).run()
    assert "the first 10 calls to the system all failed" in str(e.value)
    assert "ConnectionError: connection refused" in str(e.value)
    result = e.value.result
    assert result is not None and result.status != "complete"
    errors = [s.error for s in result.samples if s.error is not None]
    assert errors
    for error in errors:
        assert error.startswith("the system raised ConnectionError: connection refused\nTraceback")
        assert "in down" in error


def test_more_failed_calls_than_the_budget_is_its_own_error() -> None:
    calls = 0
    lock = threading.Lock()

    def flaky(i: probity.Input) -> str:
        nonlocal calls
        with lock:
            calls += 1
            n = calls
        if n > 12 and n % 2 == 0:  # the first calls succeed, then half fail
            raise TimeoutError("upstream slow")
        return "fine"

    with pytest.raises(probity.ErrorBudgetExceededError) as e:
        probity.Experiment(
            "budget", flaky, paper_inputs(20), [ok()], outputs_per_input=10, concurrency=1,
            error_budget=0.1,
        ).run()
    assert "error budget" in str(e.value)
    assert e.value.result is not None


def test_a_check_that_always_raises_is_a_broken_check_error_keeping_the_traceback() -> None:
    def broken(o: str) -> bool:
        return o.missing_method()  # type: ignore[attr-defined,no-any-return]

    with pytest.raises(probity.BrokenCheckError) as e:
        probity.Experiment("broken", SIM, paper_inputs(20), [broken_validator(broken)], outputs_per_input=2).run()
    assert "`broken`" in str(e.value)
    assert "AttributeError" in str(e.value)
    result = e.value.result
    assert result is not None
    reasons = [s.reason(0) for s in result.samples if s.reason(0)]
    assert reasons
    assert all("return o.missing_method()" in (r or "") for r in reasons)


def broken_validator(fn: object) -> probity.Validator:
    assert callable(fn)
    return probity.Validator("broken", check=fn)


HOLD = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_store_held_by_another_writer_is_a_store_locked_error(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    probity.Experiment("first", SIM, paper_inputs(2), paper_validators(), outputs_per_input=1).run(store=store)
    # Another process: SQLite's locks are per process (and the engine has
    # its own SQLite), so the lock must be held from outside.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with pytest.raises(probity.StoreLockedError) as e:
            probity.Experiment("second", SIM, paper_inputs(2), paper_validators(), outputs_per_input=1).run(
                store=store
            )
    finally:
        holder.communicate("", timeout=60)
    assert str(store) in str(e.value)
    assert "locked" in str(e.value)
    # Once released, the same run goes through.
    probity.Experiment("second", SIM, paper_inputs(2), paper_validators(), outputs_per_input=1).run(store=store)


def test_a_store_that_is_not_a_database_is_a_store_error_not_a_locked_one(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    store.write_text("this is not SQLite\n" * 100)
    with pytest.raises(probity.StoreError) as e:
        probity.Experiment("e", SIM, ["x"], [ok()], outputs_per_input=1).run(store=store)
    assert not isinstance(e.value, probity.StoreLockedError)
    assert str(store) in str(e.value)


def test_assert_reliable_raises_not_reliable_with_the_failing_lines() -> None:
    result = probity.Experiment("paper", SIM, paper_inputs(), paper_validators(), outputs_per_input=10).run()
    assert not result.passed
    with pytest.raises(probity.NotReliableError) as e:
        probity.assert_reliable(result)
    assert str(e.value) == result.failure_message
    assert any(line.startswith("FAIL contraction_validator") for line in result.failure_lines)


def test_bad_arguments_name_themselves_before_anything_runs(tmp_path: Path) -> None:
    def experiment(**kw: object) -> probity.Experiment:
        return probity.Experiment("args", SIM, paper_inputs(5), [ok()], **kw)  # type: ignore[arg-type]

    for kw, says in [
        ({"confidence": float("nan")}, "experiment.confidence = nan: not a finite number"),
        ({"timeout_s": float("inf")}, "experiment.timeout_s = inf: not a finite number"),
    ]:
        with pytest.raises(probity.ConfigError, match=says):
            experiment(**kw).run()
    for bad in (0, -1, 2**70):
        with pytest.raises(ValueError, match="outputs_per_input must be from 1 to 1,000,000"):
            experiment(outputs_per_input=bad)
    with pytest.raises(ValueError, match="attempts must be at least 1"):
        probity.Retry(0)
    with pytest.raises(TypeError, match="rates must be a sequence of numbers"):
        probity.retry_plan("0.5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not an empty string"):
        experiment().run(store="")


def test_outputs_a_check_could_not_judge_are_counted_and_shown() -> None:
    mixed = probity.Validator(
        "mixed",
        check=lambda i, o: None if i.text == "q0" else True,
    )
    result = probity.Experiment(
        "mixed", SIM, [{"id": f"i{k}", "text": f"q{k}"} for k in range(3)], [mixed], outputs_per_input=3
    ).run()
    check = result.checks[0]
    assert (check.n, check.errors) == (6, 3)
    assert "(n=6, 3 not judged)" in repr(check), repr(check)
    assert check.to_dict()["errors"] == 3


def test_a_system_or_inputs_that_cannot_work_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="first positional argument"):
        probity.Experiment("kw", lambda *, x: "o", paper_inputs(5), [ok()])
    with pytest.raises(ValueError, match=r"inputs given inline are a list: \['hello world'\]"):
        probity.Experiment("inline", SIM, "hello world", [ok()])
