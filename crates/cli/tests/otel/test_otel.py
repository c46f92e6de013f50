"""Spans of real instrumentations, mapped and checked by `probity collect`;
the checks' live rates against the simulator's known rates; the failures
exported and run as a test; the verdicts sent back as
`gen_ai.evaluation.result` events, decoded by the official
`opentelemetry-proto` package; an OpenAI Agents SDK app's conversations
with their tool calls."""

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


def attrs(record):
    """A log record's attributes as a dict of plain values."""
    out = {}
    for kv in record.attributes:
        v = kv.value
        out[kv.key] = v.string_value if v.HasField("string_value") else v.double_value
    return out


def test_verdicts_go_back_as_evaluation_events_on_the_evaluated_spans(servers, tmp_path, logs_receiver):
    sim, collect = servers("[model]\ncontractions = 0.3\n",
                           collect_toml(extra=f'export = "{logs_receiver.url}"\n'))
    n = 40
    ids = tmp_path / "ids.txt"
    run_app("openai-v2", sim.url, collect.url, n, env=CONTENT_V2, ids=ids)
    wait_for_spans(collect, n)
    run = stop_and_run_id(collect, tmp_path)
    assert f"evaluation events exported: {n}" in collect.stderr(), collect.stderr()
    # Sent as OTLP/HTTP protobuf to /v1/logs (the URL named no path).
    assert logs_receiver.paths and all(p == ("/v1/logs", "application/x-protobuf") for p in logs_receiver.paths)
    records = logs_receiver.records()
    assert len(records) == n
    # Each event is parented to a span the app's SDK made, one per span.
    spans = {tuple(line.split()) for line in ids.read_text().splitlines()}
    assert len(spans) == n
    assert {(r.trace_id.hex(), r.span_id.hex()) for r in records} == spans
    labels = {}
    for r in records:
        a = attrs(r)
        assert r.event_name == "gen_ai.evaluation.result"
        assert a["gen_ai.evaluation.name"] == "contraction_validator"
        assert a["gen_ai.evaluation.score.label"] in ("pass", "fail")
        assert a["gen_ai.evaluation.score.value"] == (1.0 if a["gen_ai.evaluation.score.label"] == "pass" else 0.0)
        labels[r.trace_id.hex()] = a["gen_ai.evaluation.score.label"]
    # The same verdicts as the run stored: its failing traces are exactly
    # the events labelled fail.
    code, out, err = probity(tmp_path, "export", str(run["id"]), "--store", str(tmp_path / "runs.db"))
    assert code == 0, err
    failing = {t for line in out.splitlines() for t in json.loads(line)["trace_ids"]}
    assert failing == {t for t, label in labels.items() if label == "fail"}
    assert 0 < len(failing) < n


def test_an_agents_sdk_app_gives_conversations_with_tool_calls(servers, tmp_path):
    sim, collect = servers("", collect_toml(extra='group_by = "operation"\n').replace('group_by = "model"\n', ""))
    n = 5
    run_app("openai-agents", sim.url, collect.url, n)
    # The app flushed its exporter before it ended: every span has arrived.
    text = wait_for_spans(collect, 1)
    # Each run: the model asked twice (the tool call, then the answer from
    # the tool's result), the tool run once.
    assert metric(text, "probity_traces_mapped_by_operation_total", operation="chat") == 2 * n, text
    assert metric(text, "probity_traces_mapped_by_operation_total", operation="execute_tool") == n, text
    # The workflow and agent spans carry no messages: counted, not dropped.
    spans = metric(text, "probity_traces_spans_total")
    unmapped = sum(float(v) for v in re.findall(r"^probity_traces_unmapped_total\{.*\} (\S+)$", text, re.M))
    assert spans == 3 * n + unmapped, text
    run = stop_and_run_id(collect, tmp_path)
    code, out, err = probity(tmp_path, "export", str(run["id"]), "--all", "--store", str(tmp_path / "runs.db"))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert all(r["convention"] == "openinference" for r in rows)
    # The second call of each run holds the conversation whole: system,
    # user, the assistant's tool call as structure, the tool's result
    # answering that call.
    whole = [r for r in rows if r["operation"] == "chat" and len(r["messages"]) == 4]
    assert len(whole) == n, rows
    for r in whole:
        system, user, call, result = r["messages"]
        assert system["role"] == "system" and user["role"] == "user" and "weather" in user["content"]
        assert call["role"] == "assistant"
        (tc,) = call["tool_calls"]
        assert tc["type"] == "function" and tc["function"]["name"] == "get_weather"
        assert "city" in json.loads(tc["function"]["arguments"])
        assert result["role"] == "tool" and result["tool_call_id"] == tc["id"] != ""
        assert result["content"].startswith("12 C and rain in")
        assert r["text"] == user["content"] and r["trace_ids"][0]
    tools = [r for r in rows if r["operation"] == "execute_tool"]
    assert sum(r["count"] for r in tools) == n
    assert all(r["messages"][0]["tool_calls"][0]["function"]["name"] == "get_weather" for r in tools)
