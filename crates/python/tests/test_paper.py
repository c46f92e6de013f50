"""The paper's own examples on the built-in simulator: the two validators
of §2.1 as Python lambdas, and the retry plan of §4.2."""

import pytest

import probity
from conftest import SIM, paper_inputs, paper_validators


def test_the_two_validators_of_section_2_1_find_the_simulators_known_faults() -> None:
    result = probity.Experiment(
        "paper-2.1", SIM, paper_inputs(), paper_validators(), outputs_per_input=20
    ).run()
    assert result.shape == (20, 20, 2)
    contraction, politeness = result.checks
    # The simulator overuses contractions in 10% of its answers: the 95%
    # minimum is missed; it forgets "You're welcome" in 15% of the answers
    # to thanks (half the inputs), so 92.5% pass against a 90% minimum.
    assert contraction.verdict == "fail"
    assert contraction.interval[0] <= 0.90 <= contraction.interval[1]
    assert contraction.interval[1] < 0.95
    assert politeness.verdict == "pass"
    assert politeness.interval[0] <= 0.925 <= politeness.interval[1]
    assert not result.passed
    with pytest.raises(probity.NotReliableError) as failed:
        probity.assert_reliable(result)
    message = str(failed.value)
    assert "FAIL contraction_validator" in message
    assert "Output contains too many contractions" in message
    assert "politeness_validator" not in message


def test_the_retry_plan_of_section_4_2_4() -> None:
    # p = 0.95, 0.90, 0.85: P_pass = 0.72675, E[R] = 1.376 (the paper's
    # figures); for 99% the paper's m = 2.74 -> 3 is miscomputed:
    # ln(0.01)/ln(0.27325) = 3.55, so 4 attempts (3 give 0.9796 < 0.99).
    plan = probity.retry_plan([0.95, 0.90, 0.85], target=0.99)
    assert plan.p_pass == pytest.approx(0.72675)
    assert plan.expected_attempts == pytest.approx(1.376, abs=5e-4)
    assert plan.expected_retries == pytest.approx(0.376, abs=5e-4)
    assert plan.attempts_exact == pytest.approx(3.55, abs=5e-3)
    assert plan.attempts == 4
    assert plan.success_within_attempts is not None and plan.success_within_attempts >= 0.99
    assert probity.retry_plan([0.95, 0.90, 0.85], target=0.97).attempts == 3


def test_the_retry_plan_from_a_run_and_the_guarded_system_it_predicts() -> None:
    result = probity.Experiment(
        "paper-4.2", SIM, paper_inputs(), paper_validators(), outputs_per_input=20
    ).run()
    summary_plan = result.retry_plan
    rates = [c.rate for c in result.checks]
    assert summary_plan["rates"] == pytest.approx(rates)
    assert summary_plan["p_independent"] == pytest.approx(rates[0] * rates[1])
    joint = summary_plan["empirical"]["overall"]["estimate"]
    m = probity.retry_plan([joint], target=0.99).attempts
    assert m is not None and m >= 2
    # The guarded system (§4.2.1): up to m attempts, every validator must
    # pass; each sample is its first attempt, and retries are calls.
    guarded = probity.Experiment(
        "paper-4.2-guarded",
        SIM,
        paper_inputs(),
        paper_validators(),
        outputs_per_input=20,
        retry=probity.Retry(m, on="validators", feedback=False),
    ).run()
    assert guarded.status == "complete"
    failed_first = sum(1 for s in guarded.samples if probity.FAIL in s.cells)
    assert failed_first > 0
    assert guarded.model_calls > 400
