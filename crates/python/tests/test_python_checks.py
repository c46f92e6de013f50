"""Validators and systems written in Python: arity, exceptions, async and
sync systems, tables beside callables, bad arguments."""

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

import pytest

import probity
from conftest import SIM, column, paper_inputs


def contraction() -> probity.Validator:
    return probity.Validator("contractions", "too many", lambda o: o.count("'") <= 3)


def test_an_exception_in_a_validator_is_an_error_cell_with_its_message_and_traceback() -> None:
    def picky(o: str) -> bool:
        if "tomatoes" in o:
            raise ValueError("cannot judge tomatoes")
        return True

    result = probity.Experiment(
        "raises", SIM, paper_inputs(4), [probity.Validator("picky", check=picky), contraction()],
        outputs_per_input=3,
    ).run()
    errors = [s for s in result.samples if s.cells[0] == probity.ERROR]
    assert errors, "the validator raised on the tomato inputs"
    for s in errors:
        reason = s.reason(0)
        assert reason is not None
        first, *trace = reason.splitlines()
        assert first == "validator `picky` raised ValueError: cannot judge tomatoes"
        # The traceback names the user's function and line, not probity's.
        assert trace[0] == "Traceback (most recent call last):"
        assert any(__file__ in line and "in picky" in line for line in trace), reason
        assert 'raise ValueError("cannot judge tomatoes")' in reason
        assert "_workers.py" not in reason
    assert column(result.tensor, 0).count(probity.ERROR) == len(errors)
    # The other column is untouched.
    assert set(column(result.tensor, 1)) <= {probity.PASS, probity.FAIL}


def test_a_validator_returning_none_is_an_error_and_a_broken_check() -> None:
    with pytest.raises(probity.BrokenCheckError) as broken:
        probity.Experiment(
            "none", SIM, ["hello"], [probity.Validator("forgot_return", check=lambda o: None)],
            outputs_per_input=2,
        ).run()
    result = broken.value.result
    assert result is not None
    assert all(s.cells == [probity.ERROR] for s in result.samples)
    assert "returned NoneType (None), not a bool" in (result.samples[0].reason(0) or "")
    assert result.broken and result.broken[0][0] == "forgot_return"
    assert "forgot_return" in str(broken.value)
    assert "BROKEN forgot_return" in (result.failure_message or "")


def test_the_two_argument_form_sees_the_input_as_its_text_with_fields() -> None:
    seen: List[Tuple[str, Any, Any, str, bool]] = []

    def check(i: probity.Input, o: str) -> bool:
        seen.append((i.id, i["lang"], i.lang, str(i), "Thank" in i))
        return True

    result = probity.Experiment(
        "fields", SIM, [{"id": "a", "text": "Thank you!", "lang": "en"}],
        [probity.Validator("fields", check=check)], outputs_per_input=2,
    ).run()
    assert result.passed
    assert seen == [("a", "en", "en", "Thank you!", True)] * 2


def test_a_sync_system_runs_on_other_threads_and_its_exceptions_are_failed_calls() -> None:
    threads: Set[int] = set()

    def system(i: probity.Input) -> str:
        threads.add(threading.get_ident())
        if "boom" in i:
            raise RuntimeError("the app fell over")
        return f"You're welcome: {i}"

    result = probity.Experiment(
        "sync", system, ["Thank you", "boom"], [contraction()], outputs_per_input=5,
        error_budget=1.0,
    ).run()
    assert threading.get_ident() not in threads
    ok = [s for s in result.samples if s.output is not None]
    failed = [s for s in result.samples if s.output is None]
    assert {s.output for s in ok} == {"You're welcome: Thank you"}
    assert len(failed) == 5
    for s in failed:
        assert s.error is not None
        first, *trace = s.error.splitlines()
        assert first == "the system raised RuntimeError: the app fell over"
        assert any("in system" in line for line in trace), s.error


def test_an_async_system_runs_on_an_event_loop_concurrently() -> None:
    running = 0
    most = 0

    async def system(i: probity.Input) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return "Hello!" if "x" in i else "It's fine"

    result = probity.Experiment(
        "async", system, [f"x{n}" for n in range(10)], [contraction()], outputs_per_input=4,
        concurrency=8,
    ).run()
    assert result.passed
    assert len(result.samples) == 40
    assert most > 1, "calls overlapped on the loop"


def test_a_system_taking_messages_gets_the_rendered_prompt() -> None:
    got: List[List[Dict[str, str]]] = []

    def system(i: probity.Input, messages: List[Dict[str, str]]) -> str:
        got.append(messages)
        return "ok"

    probity.Experiment(
        "messages", system, ["hi"], [contraction()], outputs_per_input=1,
        prompt=probity.Prompt("Q: {{ input.text }}", system="Be polite."),
    ).run()
    assert got == [[{"role": "system", "content": "Be polite."}, {"role": "user", "content": "Q: hi"}]]
    # `{{ input }}` alone is the input's text, not its map.
    got.clear()
    probity.Experiment(
        "messages", system, ["hi"], [contraction()], outputs_per_input=1, prompt=probity.Prompt("Q: {{ input }}"),
    ).run()
    assert got == [[{"role": "user", "content": "Q: hi"}]]


TRIP: List[Dict[str, Any]] = [
    {"role": "user", "content": "Book me seat 4A on the 9:15 to Lyon."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "book_seat", "arguments": '{"seat":"4A","train":"9:15"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"booked":true,"car":7}'},
    {"role": "user", "content": "And in French?"},
]


def test_a_system_taking_messages_gets_an_inputs_conversation_whole() -> None:
    got: List[List[Dict[str, Any]]] = []

    def system(i: probity.Input, messages: List[Dict[str, Any]]) -> str:
        got.append(messages)
        return "Réservé."

    inputs = [{"id": "trip", "text": "And in French?", "messages": TRIP}]
    probity.Experiment(
        "conversation", system, inputs, [contraction()], outputs_per_input=2,
        prompt=probity.Prompt(system="You book trains."),
    ).run()
    assert got == [[{"role": "system", "content": "You book trains."}] + TRIP] * 2
    # The conversation's own instructions win over [prompt] system by default;
    # conversation_system = "never" sends it exactly as it is.
    got.clear()
    probity.Experiment(
        "conversation", system, inputs, [contraction()], outputs_per_input=1,
        prompt=probity.Prompt(system="You book trains.", conversation_system="never"),
    ).run()
    assert got == [TRIP]
    # A message that cannot be sent on is a configuration error naming it.
    bad = [{"id": "odd", "messages": [{"role": "robot", "content": "beep"}]}]
    with pytest.raises(probity.ConfigError) as e:
        probity.Experiment("conversation", system, bad, [contraction()], outputs_per_input=1).run()
    assert 'input "odd": field `messages`: message 0: unknown role `robot`' in str(e.value)


def test_a_system_returning_something_else_than_a_str_is_a_failed_call() -> None:
    # Every call fails alike: the system is unreachable, and says why.
    with pytest.raises(probity.SystemUnreachableError) as e:
        probity.Experiment(
            "not-str", lambda i: 42, ["hi"], [contraction()], outputs_per_input=2, error_budget=1.0,
        ).run()
    result = e.value.result
    assert result is not None
    assert result.samples[0].error == "the system raised TypeError: the system returned int, expected str"


def test_tables_beside_callables_keep_their_column_order(tmp_path: Path) -> None:
    program = tmp_path / "welcome.py"
    program.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    o = json.loads(line)['output']\n"
        "    print(json.dumps({'verdict': 'pass' if len(o) > 0 else 'fail'}), flush=True)\n"
    )
    result = probity.Experiment(
        "mixed", SIM, paper_inputs(4),
        [
            {"name": "count_table", "kind": "count", "value": "'", "max": 3},
            contraction(),
            {"name": "expression", "check": "count(output, \"'\") <= 3"},
            {"name": "program", "kind": "program", "command": [sys.executable, str(program)]},
        ],
        outputs_per_input=5,
    ).run()
    assert [c.name for c in result.checks] == ["count_table", "contractions", "expression", "program"]
    t = result.tensor
    assert column(t, 0) == column(t, 1) == column(t, 2)
    assert set(column(t, 3)) == {probity.PASS}


def test_bad_arguments_are_type_and_config_errors_naming_them() -> None:
    with pytest.raises(TypeError, match="check must be callable"):
        probity.Validator("v", "m", "not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="one argument .* or two"):
        probity.Validator("v", "m", lambda a, b, c: True)
    with pytest.raises(ValueError, match="minimum_success_percentage must be in"):
        probity.Validator("v", "m", lambda o: True, minimum_success_percentage=95)
    with pytest.raises(TypeError, match="system must be a callable"):
        probity.Experiment("e", 3, ["x"], [contraction()])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="inputs must be"):
        probity.Experiment("e", SIM, 3, [contraction()])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"validators\[0\]"):
        probity.Experiment("e", SIM, ["x"], ["count(output) < 3"])  # type: ignore[list-item]
    with pytest.raises(probity.ConfigError, match=r"validators\[0\]: unknown field `valu`, expected one of"):
        probity.Experiment("e", SIM, ["x"], [{"name": "c", "kind": "contains", "valu": "x"}]).run()
    with pytest.raises(ValueError, match="experiment: unknown field `confidnce`"):
        probity.Experiment("e", SIM, ["x"], [contraction()], confidnce=0.9).run()
    with pytest.raises(ValueError, match="no validators or verifiers|at least one check"):
        probity.Experiment("e", SIM, ["x"], []).run()
    with pytest.raises(ValueError, match="two checks are named"):
        probity.Experiment("e", SIM, ["x"], [contraction(), contraction()]).run()
    with pytest.raises(ValueError, match="needs its own 'system'"):
        probity.Experiment(
            "e", lambda i: "x", ["x"], verifiers=[{"name": "j", "instructions": "PASS"}]
        )


def test_inputs_from_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    path.write_text('{"id": "q1", "text": "Thank you!"}\n{"id": "q2", "text": "Hi"}\n')
    result = probity.Experiment("file", SIM, str(path), [contraction()], outputs_per_input=2).run()
    assert result.input_ids == ["q1", "q2"]


def test_a_verifier_and_its_simulated_judge_from_a_table_or_an_object() -> None:
    for verifier in (
        {"name": "judge", "instructions": "PASS when polite.", "minimum_success_percentage": 0.5},
        probity.Verifier("judge", "PASS when polite.", minimum_success_percentage=0.5),
    ):
        result = probity.Experiment(
            "judged", SIM, paper_inputs(4), [contraction()], verifiers=[verifier], outputs_per_input=3,
        ).run()
        assert [c.name for c in result.checks] == ["contractions", "judge"]
        assert result["judge"].kind == "verifier"
        assert result["judge"].minimum_success_percentage == 0.5


def test_with_numpy_the_tensor_is_an_array() -> None:
    np = pytest.importorskip("numpy")
    result = probity.Experiment("array", SIM, ["a", "b"], [contraction()], outputs_per_input=3).run()
    assert isinstance(result.tensor, np.ndarray)
    assert result.tensor.shape == (2, 3, 1) and result.tensor.dtype == np.uint8
    assert (result.tensor[:, :, 0] == probity.PASS).sum() == column(result.tensor, 0).count(probity.PASS)


def test_without_numpy_the_tensor_is_nested_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    result = probity.Experiment("lists", SIM, ["a", "b"], [contraction()], outputs_per_input=3).run()
    assert isinstance(result.tensor, list)
    assert len(result.tensor) == 2 and len(result.tensor[0]) == 3 and len(result.tensor[0][0]) == 1


def test_a_system_raising_system_exit_is_a_failed_call_named_at_once() -> None:
    # Before, SystemExit or KeyboardInterrupt ended the worker thread
    # without an answer: each call waited for its timeout (here 60 s).
    def exits(i: str) -> str:
        raise SystemExit(3)

    async def interrupts(i: str) -> str:
        raise KeyboardInterrupt

    for system, name in [(exits, "SystemExit: 3"), (interrupts, "KeyboardInterrupt")]:
        with pytest.raises(probity.SystemUnreachableError) as e:
            probity.Experiment(
                "exits", system, ["a", "b"], [contraction()], outputs_per_input=2, timeout_s=60, error_budget=1.0,
            ).run()
        result = e.value.result
        assert result is not None
        assert all(s.error is not None and name in s.error for s in result.samples), result.samples


def test_a_system_returning_a_str_that_is_not_text_says_so() -> None:
    with pytest.raises(probity.SystemUnreachableError) as e:
        probity.Experiment(
            "surrogate", lambda i: "a\ud800b", ["hi"], [contraction()], outputs_per_input=2, error_budget=1.0,
        ).run()
    result = e.value.result
    assert result is not None
    error = result.samples[0].error or ""
    assert "not valid text" in error and "expected str" not in error, error
