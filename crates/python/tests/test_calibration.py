"""A verifier calibrated on a labelled set from Python (paper §4, issue 23
item 4): ``Verifier(..., calibration="labels.jsonl")`` has the judge answer
every labelled pair, and the result carries the judge's sensitivity and
specificity and the rate corrected for them. Checked against the
simulated judge, whose error rates are known, an error-free simulated judge
of the same outputs (the truth), and the Wilson and Rogan–Gladen formulas
written out here from the counts."""

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import probity

#: z for a two-sided 95% interval (scipy.stats.norm.ppf(0.975)).
Z95 = 1.959963984540054


def sim_passes(text: str, output: str) -> bool:
    """The simulator's rules for a thanked answer (crates/engine/src/checks/
    verifier.rs, ``sim_truth``): "You're welcome" when thanked, at most
    three apostrophes."""
    return output.count("'") <= 3 and ("Thank you" not in text or "You're welcome" in output)


def labelled(n: int) -> List[Dict[str, Any]]:
    """n pairs, half passing, labelled by the simulator's truth."""
    rows = []
    for i in range(n):
        text = f"Thank you for tip {i}!"
        output = f"You're welcome. Glad to help with tip {i}." if i % 2 == 0 else f"Glad to help with tip {i}."
        assert sim_passes(text, output) == (i % 2 == 0)
        rows.append({"input": text, "output": output, "label": "PASS" if i % 2 == 0 else "FAIL"})
    return rows


def write_labels(path: Path, rows: List[Dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def wilson(x: int, n: int, z: float = Z95) -> Tuple[float, float]:
    """The Wilson score interval, written out."""
    centre = (x + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(x * (n - x) / n + z * z / 4)
    return (centre - half, centre + half)


def column_rate(result: probity.Result, k: int) -> float:
    """Check k's pass share over the cells it judged (errors excluded)."""
    cells = [int(c[k]) for outputs in result.tensor for c in outputs]
    judged = [c for c in cells if c in (probity.PASS, probity.FAIL)]
    return sum(c == probity.PASS for c in judged) / len(judged)


def experiment(labels: str, minimum: float = 0.6) -> probity.Experiment:
    """A simulated system that omits "You're welcome" 30% of the time (true
    rate 0.7), judged by an error-free judge ("truth") and by one that
    fails 30% of passing outputs and passes 5% of failing ones (Se 0.7,
    Sp 0.95: its own rate is 0.7·0.7 + 0.05·0.3 = 0.505), calibrated on
    ``labels``."""
    return probity.Experiment(
        "calibrated",
        {"provider": "sim", "seed": 11, "omit_welcome": 0.3, "contractions": 0},
        [f"Thank you for the advice, part {i}!" for i in range(30)],
        verifiers=[
            probity.Verifier(
                "truth",
                "Say you're welcome when thanked.",
                minimum_success_percentage=minimum,
                system={"provider": "sim"},
            ),
            probity.Verifier(
                "noisy",
                "Say you're welcome when thanked.",
                minimum_success_percentage=minimum,
                system={"provider": "sim", "seed": 3, "false_pass": 0.05, "false_fail": 0.3},
                calibration=labels,
            ),
        ],
        outputs_per_input=20,
        call_attempts=1,
    )


def test_the_corrected_rate_and_the_judges_accuracy_are_in_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_labels(tmp_path / "labels.jsonl", labelled(400))
    # A relative path resolves against the working directory at run().
    monkeypatch.chdir(tmp_path)
    result = experiment("labels.jsonl").run()
    truth_check, noisy = result["truth"], result["noisy"]
    assert truth_check.calibration is None
    assert truth_check.judged_rate == truth_check.rate
    cal = noisy.calibration
    assert cal is not None and cal.state == "corrected", cal
    assert result.calibrations == {"noisy": cal}

    # The judge's accuracy: the counts over 200 + 200 labels, their shares
    # and Wilson intervals as written out here; the simulated judge's own
    # error rates (Se 0.7, Sp 0.95) inside them.
    assert (cal.pass_labels, cal.fail_labels, cal.errors) == (200, 200, 0)
    assert cal.judged_pass is not None and cal.judged_fail is not None
    assert cal.sensitivity_interval is not None and cal.specificity_interval is not None
    assert cal.corrected_rate is not None and cal.corrected_interval is not None
    se, sp = cal.judged_pass / 200, cal.judged_fail / 200
    assert cal.sensitivity == pytest.approx(se, abs=1e-12)
    assert cal.specificity == pytest.approx(sp, abs=1e-12)
    assert cal.sensitivity_interval == pytest.approx(wilson(cal.judged_pass, 200), abs=1e-9)
    assert cal.specificity_interval == pytest.approx(wilson(cal.judged_fail, 200), abs=1e-9)
    assert cal.sensitivity_interval[0] <= 0.7 <= cal.sensitivity_interval[1]
    assert cal.specificity_interval[0] <= 0.95 <= cal.specificity_interval[1]

    # The judge's own rate is its column's pass share; the corrected rate
    # is Rogan–Gladen from it and the measured Se, Sp.
    judged = column_rate(result, 1)
    assert noisy.judged_rate == pytest.approx(judged, abs=1e-12)
    assert cal.judged_rate == pytest.approx(judged, abs=1e-12)
    rogan_gladen = min(1.0, max(0.0, (judged + sp - 1) / (se + sp - 1)))
    assert cal.corrected_rate == pytest.approx(rogan_gladen, abs=1e-12)
    lo, hi = cal.corrected_interval
    assert 0 <= lo <= rogan_gladen <= hi <= 1

    # Against the truth (the error-free judge's rate on the same outputs):
    # the corrected rate is nearer than the judge's own, and its interval
    # covers it where the judge's own interval does not.
    truth = column_rate(result, 0)
    assert truth_check.rate == pytest.approx(truth, abs=1e-12)
    assert 0.6 < truth < 0.8, truth
    assert abs(cal.corrected_rate - truth) < abs(judged - truth)
    assert lo <= truth <= hi, (truth, cal)
    assert not (noisy.judged_interval[0] <= truth <= noisy.judged_interval[1])

    # The check's rate and verdict are the corrected ones: the judge's own
    # rate is below the 0.6 minimum, the corrected one above it.
    assert (noisy.rate, noisy.interval) == (cal.corrected_rate, cal.corrected_interval)
    assert judged < 0.6 < cal.corrected_rate
    assert noisy.verdict != "fail", noisy
    row = noisy.to_dict()
    assert (row["rate"], row["judged_rate"]) == (cal.corrected_rate, judged)
    assert (row["sensitivity"], row["specificity"]) == (cal.sensitivity, cal.specificity)
    assert "corrected" in repr(cal)


def test_a_bad_labels_file_is_a_config_error_naming_its_line(tmp_path: Path) -> None:
    rows = labelled(10)
    path = tmp_path / "labels.jsonl"
    write_labels(path, rows)
    with path.open("a") as f:
        f.write(json.dumps({"input": "x", "output": "y", "label": "maybe"}) + "\n")
    with pytest.raises(probity.ConfigError) as e:
        experiment(str(path)).run()
    assert f"{path} line 11" in str(e.value)
    assert '"maybe"' in str(e.value)
    assert "noisy" in str(e.value)

    with pytest.raises(probity.ConfigError) as e:
        experiment(str(tmp_path / "missing.jsonl")).run()
    assert "missing.jsonl" in str(e.value)

    only_passes = tmp_path / "passes.jsonl"
    write_labels(only_passes, [r for r in rows if r["label"] == "PASS"])
    with pytest.raises(probity.ConfigError, match="no FAIL example"):
        experiment(str(only_passes)).run()

    with pytest.raises(TypeError, match="calibration"):
        probity.Verifier("v", "x", calibration=3)  # type: ignore[arg-type]
