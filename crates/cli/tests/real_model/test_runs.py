"""`probity run`, `compare`, `revalidate` and a sequential run against the
real model (issue 39, item 1). N × M stays small: a call is about half a
second to 1.5 s on one thread."""

import json

import pytest

from conftest import INPUTS, VALIDATORS, Probity, inputs_toml, system_table

N, M = len(INPUTS), 2


def assert_rate_shape(rate, n_expected=None):
    """An interval that holds its estimate, counts that add up."""
    assert 0.0 <= rate["lower"] <= rate["estimate"] <= rate["upper"] <= 1.0, rate
    assert rate["pass"] + rate["fail"] == rate["n"], rate
    if n_expected is not None:
        assert rate["n"] + rate["error"] + rate["missing"] == n_expected, rate


def assert_report_consistent(report, exit_code, n, m):
    """What holds for any model: every sample stored, every check's verdict
    one of three and consistent with its interval, the exit code the
    summary's."""
    assert report["shape"] == {"inputs": n, "outputs_per_input": m, "checks": 2}
    counts = report["counts"]
    assert sum(counts.values()) == n * m * 2, counts
    assert report["errors"]["system"]["total"] == 0, report["errors"]
    for check in report["checks"]:
        assert_rate_shape(check["rate"], n * m)
        v = check["verdict"]
        assert v["decision"] in ("pass", "fail", "inconclusive"), v
        if v["established"] and v["decision"] == "pass":
            assert check["rate"]["lower"] >= check["threshold"], check
        if v["established"] and v["decision"] == "fail":
            assert check["rate"]["upper"] < check["threshold"], check
    assert exit_code == (0 if report["passed"] else 1), report["summary"]


@pytest.fixture(scope="module")
def two_runs(model_url, tmp_path_factory):
    """The same file run twice (runs 1 and 2)."""
    p = Probity(tmp_path_factory.mktemp("runs"))
    config = p.write("probity.toml", f'''name = "real-polite"
{system_table(model_url)}
[prompt]
system = "You are a polite assistant. Never use contractions."
user = "{{{{ input.text }}}}"
[experiment]
outputs_per_input = {M}
concurrency = 1
timeout_s = 120
{inputs_toml()}
{VALIDATORS}''')
    codes = [p.run("run", config, "-q").returncode for _ in range(2)]
    return p, config, codes


def test_a_fixed_run_stores_every_sample_and_reports_consistent_verdicts(two_runs):
    p, _, codes = two_runs
    for run, code in zip((1, 2), codes):
        report = p.report(run)
        assert_report_consistent(report, code, N, M)
        assert report["run"]["model_calls"] == N * M
        assert report["run"]["complete"] is True


def test_two_runs_compared_have_an_interval_around_their_difference(two_runs):
    p, _, _ = two_runs
    out = p.run("compare", 1, 2, "--format", "json")
    cmp = json.loads(out.stdout)
    assert cmp["schema"] == "probity.compare.v1"
    assert [c["name"] for c in cmp["checks"]] == ["no_contractions", "polite"]
    assert cmp["inputs"]["shared"] == N
    for c in cmp["checks"]:
        assert c["direction"] in ("improved", "regressed", "no_detectable_change", "no_data"), c
        if c["direction"] == "no_data":
            continue
        assert c["lower"] <= c["difference"] <= c["upper"], c
        # The difference is the candidate's rate minus the baseline's.
        assert c["unpaired"]["difference"] == pytest.approx(
            c["candidate"]["estimate"] - c["baseline"]["estimate"], abs=1e-9)
        expected = ("improved" if c["lower"] > 0 else "regressed" if c["upper"] < 0
                    else "no_detectable_change")
        assert c["direction"] == expected, c
    assert out.returncode == (1 if cmp["regressed"] else 0)


def test_a_stored_run_revalidated_with_a_changed_check_calls_no_model(two_runs):
    p, config, _ = two_runs
    loose = p.write("loose.toml", config.read_text().replace("<= 3", "<= 100"))
    out = p.run("revalidate", 1, "--config", loose)
    assert "no model calls" in out.stderr + out.stdout, out.stderr
    runs = [json.loads(r) for r in p.run("runs", "--json", ok=(0,)).stdout.splitlines() if r.strip()]
    latest = max(r["id"] for r in runs)
    assert latest > 2, runs
    report = p.report(latest)
    assert report["run"]["model_calls"] == 0
    assert_report_consistent(report, 0 if report["passed"] else 1, N, M)
    # No output of 48 tokens has a hundred apostrophes: every one passes now.
    contractions = report["checks"][0]["rate"]
    assert contractions["pass"] == contractions["n"] == N * M, contractions


def test_a_sequential_run_with_two_validators_stops_within_its_budget(model_url, probity):
    budget_inputs, m = 6, 2
    inputs = inputs_toml() + '[[input]]\nid = "in5"\ntext = "Thank you for the seeds."\n'
    config = probity.write("seq.toml", f'''name = "real-sequential"
{system_table(model_url)}
[prompt]
system = "You are a polite assistant. Never use contractions."
user = "{{{{ input.text }}}}"
[experiment]
outputs_per_input = {m}
concurrency = 1
timeout_s = 120
{inputs}
{VALIDATORS}''')
    code = probity.run("run", config, "--sequential", "-q").returncode
    report = probity.report(1)
    seq = report["sequential"]
    assert seq is not None
    assert seq["stop"] in ("settled", "budget_spent", "futile"), seq
    assert seq["budget_samples"] == budget_inputs * m
    assert 0 < seq["samples"] <= seq["budget_samples"]
    assert seq["samples_saved"] == seq["budget_samples"] - seq["samples"]
    assert report["run"]["model_calls"] == seq["samples"]
    assert [c["name"] for c in seq["checks"]] == ["no_contractions", "polite"]
    for c in seq["checks"]:
        assert c["state"] in ("pass", "fail", "open", "futile"), c
        assert c["lower"] <= c["estimate"] <= c["upper"], c
    if seq["stop"] == "settled":
        assert all(c["state"] in ("pass", "fail") for c in seq["checks"]), seq
    assert code == (0 if report["passed"] else 1)
