"""Spans of real instrumentations, mapped and checked by `probity collect`;
the checks' live rates against the simulator's known rates; the failures
exported and run as a test."""

import json
import re
import time

from conftest import get, probity, run_app

#: The paper's contraction check; the simulator fails it with probability
#: `contractions` (its replies with contractions carry at least four
#: apostrophes, the others at most one).
CHECK = """
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = {minimum}
"""

CONTENT_V2 = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


def collect_toml(minimum=0.8, extra=""):
    return 'name = "prod"\ngroup_by = "model"\n' + extra + CHECK.format(minimum=minimum) + \
        "\n[monitor]\nepoch = 50\nwindow = 50\n"


def metric(text, name, **labels):
    """The value of metric `name` with exactly these labels, or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r"([a-z_]+)(\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if got == {k: str(v) for k, v in labels.items()}:
            return float(m.group(4))
    return None


def wait_for_spans(collect, n):
    """/metrics once `n` spans arrived and none is waiting to be checked."""
    deadline = time.monotonic() + 60
    while True:
        text = get(collect.url.removesuffix("/v1/traces") + "/metrics")
        spans = metric(text, "probity_traces_spans_total") or 0
        pending = metric(text, "probity_traces_pending_spans") or 0
        if spans >= n and pending == 0:
            return text
        assert time.monotonic() < deadline, f"{spans} of {n} spans after 60 s\n{text}\n{collect.stderr()}"
        time.sleep(0.2)


def stop_and_run_id(collect, tmp_path):
    assert collect.stop() == 0, collect.stderr()
    code, out, err = probity(tmp_path, "runs", "--json", "--store", str(tmp_path / "runs.db"))
    assert code == 0, err
    runs = [json.loads(line) for line in out.splitlines()]
    assert len(runs) == 1 and runs[0]["status"] == "complete", runs
    return runs[0]


def test_openai_v2_spans_are_checked_at_the_simulators_rate(servers, tmp_path):
    sim, collect = servers("[model]\ncontractions = 0.1\n", collect_toml())
    n = 150
    run_app("openai-v2", sim.url, collect.url, n, env=CONTENT_V2)
    text = wait_for_spans(collect, n)
    assert metric(text, "probity_traces_mapped_total") == n, text
    assert metric(text, "probity_traces_mapped_by_operation_total", operation="chat") == n
    rate = metric(text, "probity_traces_check_pass_rate", check="contraction_validator", group="(all)")
    lo = metric(text, "probity_traces_check_pass_rate_lower", check="contraction_validator", group="(all)")
    hi = metric(text, "probity_traces_check_pass_rate_upper", check="contraction_validator", group="(all)")
    # The simulator's true pass rate is 0.9; the sequence covers it (95%).
    assert lo <= 0.9 <= hi, (lo, rate, hi)
    assert 0.0 < lo < rate < hi <= 1.0
    # Grouped by the span's model.
    assert metric(text, "probity_traces_check_pass_rate", check="contraction_validator", group="sim") == rate
    assert metric(text, "probity_traces_alarm", check="contraction_validator", group="(all)", kind="below_minimum") is None
    run = stop_and_run_id(collect, tmp_path)
    # The failures as tests: conversations whole, with their trace ids.
    code, out, err = probity(tmp_path, "export", str(run["id"]), "--store", str(tmp_path / "runs.db"))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    failing = sum(r["count"] for r in rows)
    assert 0 < failing < 0.3 * n, failing
    for r in rows:
        assert r["failed_checks"] == ["contraction_validator"]
        assert [m["role"] for m in r["messages"]] == ["system", "user"]
        assert r["messages"][1]["content"] == r["text"]
        assert len(r["trace_ids"][0]) == 32 and r["operation"] == "chat" and r["model"] == "sim"
        # The app's key never reaches the store or the file.
        assert "sk-app-key" not in out


def test_spans_without_the_content_opt_in_are_counted_not_checked(servers, tmp_path):
    sim, collect = servers("", collect_toml())
    run_app("openai-v2", sim.url, collect.url, 20)
    text = wait_for_spans(collect, 20)
    assert metric(text, "probity_traces_mapped_total") == 0, text
    assert metric(text, "probity_traces_unmapped_total", reason="no_content", convention="genai") == 20
    assert metric(text, "probity_traces_check_pass_rate", check="contraction_validator", group="(all)") is None


def test_openinference_spans_and_a_drop_that_raises_an_alarm(servers, tmp_path):
    # A bad day: the model uses contractions in 60% of its answers.
    sim, collect = servers("[model]\ncontractions = 0.6\n", collect_toml(minimum=0.8))
    n = 120
    run_app("openinference", sim.url, collect.url, n, tools=True)
    text = wait_for_spans(collect, n)
    assert metric(text, "probity_traces_mapped_total") == n, text
    lo = metric(text, "probity_traces_check_pass_rate_lower", check="contraction_validator", group="(all)")
    hi = metric(text, "probity_traces_check_pass_rate_upper", check="contraction_validator", group="(all)")
    # Tool calls (every fifth request) carry no apostrophes: the true rate
    # is 0.2 * 1 + 0.8 * 0.4 = 0.52.
    assert lo <= 0.52 <= hi, (lo, hi)
    assert metric(text, "probity_traces_alarm", check="contraction_validator", group="(all)", kind="below_minimum") == 1
    assert "alarm: check contraction_validator" in collect.stderr()
    run = stop_and_run_id(collect, tmp_path)
    code, out, err = probity(tmp_path, "export", str(run["id"]), "--all", "--store", str(tmp_path / "runs.db"))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sum(r["count"] for r in rows) == n
    assert all(r["convention"] == "openinference" for r in rows)


def test_exported_failures_run_as_a_paired_test(servers, tmp_path):
    sim, collect = servers("[model]\ncontractions = 0.3\n", collect_toml())
    run_app("openai-v2", sim.url, collect.url, 60, env=CONTENT_V2)
    wait_for_spans(collect, 60)
    run = stop_and_run_id(collect, tmp_path)
    store = str(tmp_path / "runs.db")
    code, _, err = probity(tmp_path, "export", str(run["id"]), "--out", "failing.jsonl", "--store", store)
    assert code == 0, err
    failing = [json.loads(line) for line in (tmp_path / "failing.jsonl").read_text().splitlines()]
    assert failing
    config = """name = "regression"
[system]
provider = "sim"
contractions = 0.3
[prompt]
user = "{{ input.text }}"
[experiment]
inputs = "failing.jsonl"
outputs_per_input = 5
""" + CHECK.format(minimum=0.5)
    (tmp_path / "probity.toml").write_text(config)
    code, out, err = probity(tmp_path, "run", "probity.toml", "--store", store)
    assert code in (0, 1), err
    code, out, err = probity(tmp_path, "run", "probity.toml", "--store", store, "--baseline", "regression")
    assert code in (0, 1), err
    assert "contraction_validator" in out + err
