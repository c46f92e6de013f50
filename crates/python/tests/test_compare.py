"""probity.compare: two results compared check by check with core's own
comparison. The CLI (`probity compare A B --format json` on the same runs
read back from the store) is the independent judge of every figure; the
paired difference and its standard error are also recomputed here from
the tensors (mean and sd/√N of the per-input differences, matched by
input id)."""

import copy
import json
import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pytest

import probity
from conftest import paper_inputs, paper_validators, probity_binary

OUTPUTS = 10


def sim(contractions: float, seed: int = 7) -> Dict[str, Any]:
    return {"provider": "sim", "seed": seed, "contractions": contractions, "omit_welcome": 0.15}


def run(
    name: str,
    system: Dict[str, Any],
    store: Path,
    inputs: Optional[Sequence[Union[str, Mapping[str, Any]]]] = None,
    validators: Optional[List[Any]] = None,
) -> probity.Result:
    return probity.Experiment(
        name,
        system,
        list(inputs) if inputs is not None else paper_inputs(20),
        validators if validators is not None else paper_validators(),
        outputs_per_input=OUTPUTS,
    ).run(store=store)


def cli_compare(store: Path, a: probity.Result, b: probity.Result, *extra: str) -> Dict[str, Any]:
    """`probity compare A B --format json --store FILE`; skipped (failed in
    CI) when the binary is not built."""
    exe = probity_binary()
    if exe is None:
        message = "the probity binary is not built (cargo build -p probity-cli, or set PROBITY_BIN)"
        if os.environ.get("CI"):
            pytest.fail(message + ": CI must provide it")
        pytest.skip(message + "; the CLI half of this test did not run")
    out = subprocess.run(
        [exe, "compare", str(a.run_id), str(b.run_id), "--format", "json", "--store", str(store), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    doc: Dict[str, Any] = json.loads(out.stdout)
    # The exit code is the regression verdict.
    assert out.returncode == int(doc["regressed"])
    return doc


def num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def same(x: float, y: Any) -> bool:
    """Equal, NaN for NaN (the CLI writes an undefined figure as null)."""
    y = num(y)
    return (math.isnan(x) and math.isnan(y)) or x == y


def assert_matches_cli(py: probity.Comparison, cli: Dict[str, Any]) -> None:
    """Every figure of the Python comparison is the CLI's, exactly (both
    are core's f64s, printed shortest-round-trip)."""
    assert py.passed == (not cli["regressed"])
    assert py.shared_inputs == cli["inputs"]["shared"]
    assert py.only_baseline_inputs == cli["inputs"]["only_baseline"]
    assert py.only_candidate_inputs == cli["inputs"]["only_candidate"]
    assert py.only_baseline_checks == cli["only_baseline_checks"]
    assert py.only_candidate_checks == cli["only_candidate_checks"]
    assert py.confidence == cli["options"]["confidence"]
    assert py.power == cli["options"]["power"]
    assert [c.name for c in py.checks] == [c["name"] for c in cli["checks"]]
    for c, k in zip(py.checks, cli["checks"]):
        assert c.verdict == k["direction"], c.name
        assert c.paired == (k["basis"] == "paired"), c.name
        assert same(c.difference, k["difference"]), (c.name, c.difference, k["difference"])
        assert same(c.interval[0], k["lower"]) and same(c.interval[1], k["upper"]), c.name
        assert same(c.p_value, k["p_value"]), (c.name, c.p_value, k["p_value"])
        assert same(c.p_adjusted, k["p_adjusted"]), (c.name, c.p_adjusted, k["p_adjusted"])
        assert same(c.mde, k["mde"]), c.name
        assert same(c.baseline_rate, k["baseline"]["estimate"]), c.name
        assert same(c.candidate_rate, k["candidate"]["estimate"]), c.name
        assert c.baseline_interval == (num(k["baseline"]["lower"]), num(k["baseline"]["upper"])), c.name
        assert c.candidate_interval == (num(k["candidate"]["lower"]), num(k["candidate"]["upper"])), c.name
        assert c.paired_inputs == k["paired_inputs"]
        assert same(c.unpaired_difference, k["unpaired"]["difference"])
        if k["paired"] is None:
            assert c.paired_difference is None
        else:
            assert c.paired_difference is not None and same(c.paired_difference, k["paired"]["difference"])
    assert [c.name for c in py.regressions] == [k["name"] for k in cli["checks"] if k["direction"] == "regressed"]
    assert [c.name for c in py.improvements] == [k["name"] for k in cli["checks"] if k["direction"] == "improved"]


def per_input_rates(r: probity.Result, k: int) -> Dict[str, float]:
    """Check k's pass rate per input id, from the tensor (no error cells
    here: the simulator's calls do not fail)."""
    rates = {}
    for i, outputs in enumerate(r.tensor):
        cells = [int(o[k]) for o in outputs]
        assert all(c in (probity.PASS, probity.FAIL) for c in cells)
        rates[r.input_ids[i]] = sum(c == probity.PASS for c in cells) / len(cells)
    return rates


def test_a_worse_prompt_is_an_established_regression_as_the_cli_says(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    a = run("prompt-a", sim(0.1), store)
    b = run("prompt-b", sim(0.5), store)
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))

    contraction = cmp["contraction_validator"]
    assert contraction.paired and contraction.paired_inputs == 20
    assert contraction.verdict == "regressed" and contraction.regressed
    assert contraction.difference < 0 and contraction.interval[1] < 0
    assert contraction.p_adjusted <= 1 - cmp.confidence
    assert not cmp.passed
    assert "contraction_validator" in [c.name for c in cmp.regressions]
    assert cmp.multiple == "holm" and cmp.confidence == 0.95
    # Holm over two checks: the smaller p-value doubled (capped at 1).
    ps = sorted(c.p_value for c in cmp.checks)
    assert min(c.p_adjusted for c in cmp.checks) == min(1.0, 2 * ps[0])

    # The paired difference by hand: the mean and sd/√N of the per-input
    # differences b_i − a_i.
    ra, rb = per_input_rates(a, 0), per_input_rates(b, 0)
    d = [rb[i] - ra[i] for i in ra]
    assert contraction.difference == pytest.approx(statistics.mean(d), abs=1e-12)
    assert contraction.se == pytest.approx(statistics.stdev(d) / math.sqrt(len(d)), rel=1e-9)
    assert contraction.baseline_rate == pytest.approx(statistics.mean(ra.values()), abs=1e-12)

    # The other way round it is an improvement, by as much.
    back = probity.compare(b, a)
    assert back["contraction_validator"].verdict == "improved"
    assert back["contraction_validator"].difference == pytest.approx(-contraction.difference, abs=1e-12)
    assert back.passed and [c.name for c in back.improvements] == ["contraction_validator"]

    # The table and the plain data.
    table = str(cmp)
    assert "contraction_validator" in table and "regressed" in table and "REGRESSED" in table
    assert repr(cmp) == table
    data = cmp.to_dict()
    assert data["passed"] is False and data["regressions"] == ["contraction_validator"]
    assert data["checks"][0]["difference"] == cmp.checks[0].difference
    json.dumps(data)


def test_without_correction_matches_the_cli_no_correction(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    a = run("a", sim(0.1), store)
    b = run("b", sim(0.5), store)
    cmp = probity.compare(a, b, multiple="none", confidence=0.9, power=0.9)
    assert cmp.multiple == "none" and cmp.confidence == 0.9 and cmp.power == 0.9
    assert all(c.p_adjusted == c.p_value for c in cmp.checks)
    assert_matches_cli(
        cmp, cli_compare(store, a, b, "--no-correction", "--confidence", "0.9", "--power", "0.9")
    )


def test_identical_systems_show_no_established_difference(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    a = run("a", sim(0.1, seed=3), store)
    b = run("b", sim(0.1, seed=3), store)
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))
    assert cmp.passed and not cmp.regressions and not cmp.improvements
    for c in cmp.checks:
        # The same seed samples the same outputs: every difference is 0.
        assert c.difference == 0.0 and c.p_value == 1.0
        assert c.verdict == "no_detectable_change"


def test_same_rates_other_seeds_no_established_difference(tmp_path: Path) -> None:
    # Two independent samples of one system: a flagged check here would be
    # a false alarm (probability at most α = 5 % across both checks, by
    # Holm; the seeds are fixed, so this test is repeatable).
    store = tmp_path / "runs.db"
    a = run("a", sim(0.1, seed=11), store)
    b = run("b", sim(0.1, seed=12), store)
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))
    assert cmp.passed and not cmp.regressions
    assert any(c.difference != 0.0 for c in cmp.checks)


def test_inputs_are_paired_by_id_whatever_their_order(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    rows = [{"id": f"q{n}", "text": t} for n, t in enumerate(paper_inputs(20))]
    a = run("a", sim(0.1), store, inputs=rows)
    b = run("b", sim(0.5), store, inputs=list(reversed(rows)))
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))
    c = cmp["contraction_validator"]
    assert c.paired and cmp.shared_inputs == 20
    # Same content in another order: nothing changed.
    assert cmp.changed_inputs == []
    ra, rb = per_input_rates(a, 0), per_input_rates(b, 0)
    assert c.difference == pytest.approx(statistics.mean(rb[i] - ra[i] for i in ra), abs=1e-12)


def test_shared_ids_whose_content_changed_are_paired_and_warned_about(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    rows = [{"id": f"q{n}", "text": t} for n, t in enumerate(paper_inputs(20))]
    edited = copy.deepcopy(rows)
    edited[3]["text"] += " (reworded)"
    edited[11]["lang"] = "en"  # a field added is a change too
    a = run("a", sim(0.1), store, inputs=rows)
    b = run("b", sim(0.1), store, inputs=edited)
    with pytest.warns(UserWarning, match=r"2 shared inputs changed content between the runs \(e.g. 'q3'\)"):
        cmp = probity.compare(a, b)
    cli = cli_compare(store, a, b)
    assert_matches_cli(cmp, cli)
    # The CLI's own list, from the stored inputs' fields.
    assert cmp.changed_inputs == ["q3", "q11"] == cli["inputs"]["changed"]
    assert cmp["contraction_validator"].paired and cmp.shared_inputs == 20
    assert "warning: 2 shared inputs changed content" in str(cmp)
    assert cmp.to_dict()["changed_inputs"] == ["q3", "q11"]
    # Compared the other way round: the same inputs.
    with pytest.warns(UserWarning):
        assert probity.compare(b, a).changed_inputs == ["q3", "q11"]


def test_results_on_different_inputs_are_compared_unpaired(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    texts = paper_inputs(20)
    a = run("a", sim(0.1), store, inputs=[{"id": f"a{n}", "text": t} for n, t in enumerate(texts)])
    b = run("b", sim(0.5), store, inputs=[{"id": f"b{n}", "text": t} for n, t in enumerate(texts)])
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))
    assert cmp.shared_inputs == 0 and cmp.only_baseline_inputs == 20 and cmp.only_candidate_inputs == 20
    c = cmp["contraction_validator"]
    assert not c.paired and c.paired_difference is None
    assert c.difference == c.unpaired_difference == pytest.approx(c.candidate_rate - c.baseline_rate, abs=1e-12)
    assert c.verdict == "regressed"


def test_checks_in_one_result_only_are_reported(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    contraction, politeness = paper_validators()
    short = probity.Validator("short", "Too long", lambda o: len(o) < 10_000, minimum_success_percentage=0.9)
    a = run("a", sim(0.1), store, validators=[contraction, politeness])
    b = run("b", sim(0.1), store, validators=[short, contraction])
    cmp = probity.compare(a, b)
    assert_matches_cli(cmp, cli_compare(store, a, b))
    assert [c.name for c in cmp.checks] == ["contraction_validator"]
    assert cmp.only_baseline_checks == ["politeness_validator"]
    assert cmp.only_candidate_checks == ["short"]
    table = str(cmp)
    assert "only in the baseline (not compared): politeness_validator" in table
    assert "only in the candidate (not compared): short" in table
    with pytest.raises(KeyError, match="only in the candidate"):
        cmp["short"]


def test_in_memory_results_compare_too() -> None:
    a = probity.Experiment("a", sim(0.1), paper_inputs(10), paper_validators(), outputs_per_input=OUTPUTS).run()
    b = probity.Experiment("b", sim(0.5), paper_inputs(10), paper_validators(), outputs_per_input=OUTPUTS).run()
    assert a.run_id is None
    cmp = probity.compare(a, b)
    assert cmp["contraction_validator"].regressed
    assert "'a' -> candidate 'b'" in str(cmp)


def test_bad_arguments_raise_naming_them() -> None:
    a = probity.Experiment("a", sim(0.1), paper_inputs(4), paper_validators(), outputs_per_input=2).run()
    with pytest.raises(TypeError, match="candidate must be a probity.Result.*got dict"):
        probity.compare(a, {"checks": []})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="baseline must be a probity.Result.*got str"):
        probity.compare("run-1", a)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="multiple must be one of 'holm', 'none'; got 'bonferroni'"):
        probity.compare(a, a, multiple="bonferroni")
    with pytest.raises(TypeError, match="multiple must be a str, one of 'holm', 'none'"):
        probity.compare(a, a, multiple=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence must lie strictly between 0 and 1"):
        probity.compare(a, a, confidence=1.5)
    with pytest.raises(ValueError, match="power must lie strictly between 0.5 and 1"):
        probity.compare(a, a, power=0.3)
    with pytest.raises(TypeError, match="confidence must be a number"):
        probity.compare(a, a, confidence="0.9")  # type: ignore[arg-type]
    # A result whose parts do not fit: a ValueError naming the side, from
    # the native half, never a panic.
    broken = copy.copy(a)
    broken.summary = {"shape": [4, 2, 2]}
    with pytest.raises(ValueError, match="baseline: not a probity result's summary"):
        probity.compare(broken, a)
    truncated = copy.copy(a)
    truncated._cells = truncated._cells[:-1]
    with pytest.raises(ValueError, match="candidate: 15 cells for a 4 × 2 × 2 tensor"):
        probity.compare(a, truncated)
