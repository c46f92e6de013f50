"""The typed API: results as objects (attributes, repr, to_dict,
to_pandas), validators by decorator, verifiers/retry/prompt as objects,
docstrings in help(), the package marked typed."""

import json
import pydoc
from pathlib import Path

import pytest

import probity
from conftest import SIM, paper_inputs, paper_validators


@probity.validator(name="contraction_validator", minimum=0.95)
def few_contractions(o: str) -> bool:
    """Output contains too many contractions"""
    return o.count("'") <= 3


@probity.validator
def politeness_validator(i: probity.Input, o: str) -> bool:
    return "You're welcome" in o if "Thank you" in i else True


def test_the_decorator_makes_a_validator_still_callable_as_the_function() -> None:
    assert isinstance(few_contractions, probity.Validator)
    assert few_contractions.name == "contraction_validator"
    assert few_contractions.message == "Output contains too many contractions"
    assert few_contractions.minimum_success_percentage == 0.95
    assert few_contractions("it's") is True
    assert few_contractions("it's it's it's it's") is False
    assert politeness_validator.name == "politeness_validator"
    assert politeness_validator.message == "politeness_validator"
    assert politeness_validator.arity == 2
    with pytest.raises(ValueError, match="minimum_success_percentage must be in"):
        probity.validator(name="x", minimum=95)(lambda o: True)


def test_decorated_validators_measure_as_the_papers_lambdas_do() -> None:
    a = probity.Experiment("deco", SIM, paper_inputs(), [few_contractions, politeness_validator], outputs_per_input=10).run()
    b = probity.Experiment("lambdas", SIM, paper_inputs(), paper_validators(), outputs_per_input=10).run()
    # The simulator is seeded: the same outputs, the same cells.
    assert a.rates == b.rates
    assert a.shape == b.shape == (20, 10, 2)


def test_results_are_typed_objects_with_repr_and_plain_data() -> None:
    result = probity.Experiment("typed", SIM, paper_inputs(6), paper_validators(), outputs_per_input=4).run()
    check = result["contraction_validator"]
    assert isinstance(check, probity.CheckResult)
    assert repr(check).startswith(f"<{check.verdict.upper()} contraction_validator ")
    assert check.to_dict()["lower"] == check.interval[0]
    assert check.to_dict()["upper"] == check.interval[1]
    sample = result.samples[0]
    assert isinstance(sample, probity.Sample)
    assert sample.input_id == result.input_ids[0] and sample.repetition == 0
    assert len(sample.cells) == 2
    word = "passed" if result.passed else "failed"
    assert repr(result) == f"<Result 'typed' {word}: 6 inputs x 4 outputs x 2 checks>"
    data = result.to_dict()
    assert json.loads(json.dumps(data)) == data  # plain data
    assert [c["name"] for c in data["checks"]] == ["contraction_validator", "politeness_validator"]
    assert len(data["samples"]) == 24


def test_to_pandas_gives_one_row_per_check_and_per_sample() -> None:
    pd = pytest.importorskip("pandas")
    result = probity.Experiment("frame", SIM, paper_inputs(6), paper_validators(), outputs_per_input=4).run()
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["name"]) == ["contraction_validator", "politeness_validator"]
    assert list(frame["rate"]) == [c.rate for c in result.checks]
    samples = result.samples_to_pandas()
    assert len(samples) == 24
    assert list(samples.columns[-2:]) == ["contraction_validator", "politeness_validator"]
    assert int((samples["contraction_validator"] == probity.PASS).sum()) == round(result.rates["contraction_validator"] * 24)


def test_the_retry_plan_is_an_object() -> None:
    plan = probity.retry_plan([0.9], target=0.99)
    assert isinstance(plan, probity.RetryPlan)
    assert plan.attempts == 2 and plan.to_dict()["attempts"] == 2
    with pytest.raises(probity.ConfigError):
        probity.retry_plan([1.5])


def test_docstrings_show_in_help() -> None:
    for obj, words in (
        (probity.Experiment, "A reliability test (paper §2.2)"),
        (probity.Experiment.run, "StoreLockedError"),
        (probity.Validator, "timeout_s"),
        (probity.validator, "@probity.validator"),
        (probity.Result, "to_pandas"),
        (probity.StoreLockedError, "locked by another process"),
        (probity.assert_reliable, "NotReliableError"),
    ):
        text = pydoc.render_doc(obj, renderer=pydoc.plaintext)  # type: ignore[attr-defined]
        assert words in text, obj


def test_the_package_is_marked_typed_and_its_native_half_has_stubs() -> None:
    here = Path(probity.__file__).parent
    assert (here / "py.typed").is_file()
    assert (here / "_probity.pyi").is_file()


def test_print_result_shows_every_check_with_its_rate_interval_and_verdict() -> None:
    # The simulator's contractions at 30%: contraction_validator fails its
    # 95% minimum, established at 20 × 10.
    sim = dict(SIM, contractions=0.30)
    result = probity.Experiment("printed", sim, paper_inputs(20), paper_validators(), outputs_per_input=10).run()
    shown = str(result)
    lines = shown.splitlines()
    assert lines[0].startswith("printed: FAIL — 20 inputs × 10 outputs × 2 checks, 200 calls, "), shown
    # One row per check, in column order, right under the heading.
    for check, row in zip(result.checks, lines[1 : 1 + len(result.checks)]):
        assert f" {check.name} " in row, row
        lo, hi = check.interval
        assert row.split()[0] == check.verdict.upper()
        assert f"{check.rate:.1%} [{lo:.1%}, {hi:.1%}]" in row, row
        assert f"min {check.minimum_success_percentage:.0%}" in row
        assert ("not established" in row) == (not check.established)
        assert f"(n={check.n})" in row
    failing = result["contraction_validator"]
    assert failing.verdict == "fail" and failing.established
    # The report's failing lines follow the table.
    at = lines.index("  failing (as the report says it):")
    assert at == 1 + len(result.checks)
    assert result.failure_lines and [line.strip() for line in lines[at + 1 :]] == [
        line.strip() for line in result.failure_lines
    ]
    # print() writes the same text; repr stays one line.
    assert "\n" not in repr(result)
