"""A calibrated verifier in `probity serve`, driven by the official client
(issue 23, item 4): the judge answers its labelled set before the guard
listens, and the served run's report and `/metrics` correct the verifier's
rate for the judge's errors. The upstream is `probity sim serve`, which
omits "You're welcome" 30% of the time; an error-free simulated judge of
the same outputs gives the truth; the calibrated judge fails 30% of
passing outputs and passes 5% of failing ones (its own rate ≈ 0.505)."""

import json
import subprocess
import urllib.request

from probity_servers import CLIENT_TIMEOUT, PROBITY_BIN, Process

REQUESTS = 300


def labels():
    """400 pairs labelled by the simulator's rule for thanked answers."""
    rows = []
    for i in range(400):
        passes = i % 2 == 0
        output = f"You're welcome. Glad to help with tip {i}." if passes else f"Glad to help with tip {i}."
        rows.append({"input": f"Thank you for tip {i}!", "output": output, "label": "PASS" if passes else "FAIL"})
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_calibrated_verifier_is_corrected_in_the_served_runs_report(tmp_path, start_guard):
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    (sim_dir / "sim.toml").write_text("[model]\nseed = 3\nomit_welcome = 0.3\ncontractions = 0\ninvalid_json = 0\n")
    sim = Process(["sim", "serve", "--listen", "127.0.0.1:0", "--config", str(sim_dir / "sim.toml")],
                  sim_dir, name="sim")
    try:
        (tmp_path / "labels.jsonl").write_text(labels())
        guard = start_guard(f'''name = "sdk-calibrated"
call_attempts = 1
on_nothing_passed = "last"
[upstream]
provider = "openai"
base_url = "{sim.base_url}"
model = "sim"
[retry]
attempts = 1
[[verifier]]
name = "truth"
instructions = "Say you're welcome when thanked."
minimum_success_percentage = 0.6
[verifier.system]
provider = "sim"
[[verifier]]
name = "noisy"
instructions = "Say you're welcome when thanked."
minimum_success_percentage = 0.6
calibration = "{tmp_path / "labels.jsonl"}"
[verifier.system]
provider = "sim"
seed = 5
false_pass = 0.05
false_fail = 0.3
''')
        client = guard.client()
        for i in range(REQUESTS):
            r = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"Thank you for the advice, part {i}!"}])
            assert r.choices[0].message.content
        with urllib.request.urlopen(f"{guard.root}/metrics", timeout=CLIENT_TIMEOUT) as m:
            metrics = m.read().decode()
        assert guard.process.stop() == 0, guard.process.stderr()
    finally:
        sim.stop()

    corrected = [line for line in metrics.splitlines()
                 if line.startswith('probity_check_corrected_pass_rate{check="noisy",attempt="first"}')]
    assert len(corrected) == 1, metrics
    assert "probity_judge_sensitivity{" in metrics, metrics

    store = guard.process.args[guard.process.args.index("--store") + 1]
    out = subprocess.run([PROBITY_BIN, "report", "sdk-calibrated", "--format", "json", "--store", store],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    truth_check, noisy = report["checks"]
    truth = truth_check["rate"]["estimate"]
    cal = noisy["calibration"]
    assert cal["state"] == "corrected", cal
    assert cal["judge"]["labelled"] == 400
    se = cal["judge"]["sensitivity"]
    assert se["lower"] <= 0.7 <= se["upper"], se
    judged, band = cal["raw"], cal["corrected"]
    print(f"truth {truth:.3f}, judged {judged:.3f}, corrected {band}")
    assert abs(band["estimate"] - truth) < abs(judged - truth), (truth, judged, band)
    assert band["lower"] <= truth <= band["upper"], (truth, band)
    # The same corrected figure the server exported.
    assert abs(float(corrected[0].rsplit(" ", 1)[1]) - band["estimate"]) < 1e-9
