"""The Responses API (issue 36, point 7): `POST /v1/responses` guarded as
chat completions are — the checks read the output's text and its function
calls, a failing output is retried, a streamed response is held until it
has passed and then sent as the Responses API's events, the same headers
and metrics — read by the official client's `client.responses`; embeddings
are refused saying why; and `probity run` tests a system through the
Responses API (`api = "responses"` on the openai provider)."""

import json
import subprocess
import urllib.request

import openai
import pytest

from probity_servers import PROBITY_BIN, UPSTREAM_KEY, response


def test_a_response_passes_whole_with_the_upstreams_id_and_usage(guarded):
    sent = response("Paris is the capital of France.", usage=(30, 8))
    guard, up = guarded([(200, sent, {"x-request-id": "req_r1"})])
    raw = guard.client().responses.with_raw_response.create(
        model="gpt-4.1", input="What is the capital of France?", instructions="Be brief.",
        temperature=0.2)
    r = raw.parse()
    assert r.output_text == "Paris is the capital of France."
    assert r.id == "resp_up_1", "the upstream's id, so previous_response_id chains work"
    assert r.usage.input_tokens == 30 and r.usage.output_tokens == 8 and r.usage.total_tokens == 38
    assert raw.headers["x-probity-outcome"] == "published"
    assert raw.headers["x-probity-attempts"] == "1"
    assert raw.headers["x-request-id"] == "req_r1"
    assert up.paths == ["/v1/responses"]
    body = up.requests[0]
    assert body["input"] == [{"role": "user", "content": "What is the capital of France?"}]
    assert body["instructions"] == "Be brief." and body["temperature"] == 0.2
    assert body["model"] == "up-model"


def test_a_failing_output_is_retried_with_feedback_on_the_items(guarded):
    guard, up = guarded([(200, response("the CANARY is out")), (200, response("All fine."))])
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Say something."}]}]
    r = guard.client().responses.create(model="m", input=items)
    assert r.output_text == "All fine."
    assert len(up.requests) == 2
    assert up.requests[0]["input"] == items
    retried = up.requests[1]["input"]
    assert retried[0]["content"][0] == items[0]["content"][0]
    assert retried[0]["content"][-1]["type"] == "input_text", retried
    assert "canary" in json.dumps(retried).lower(), "the retry carries the check's feedback"


def test_the_checks_read_function_calls(guarded):
    checks = '''
[[validator]]
name = "no_deletes"
message = "The model tried to delete an account"
check = \'\'\'!output.contains("delete_account")\'\'\'
'''
    guard, up = guarded([(200, response(function_call=("delete_account", '{"id": 7}')))],
                        checks=checks, attempts=2)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        guard.client().responses.create(model="m", input="Tidy up.")
    assert "no output passed" in e.value.message
    assert len(up.requests) == 2
    guard2, _ = guarded([(200, response(function_call=("get_weather", '{"city": "Oslo"}')))],
                        checks=checks)
    r = guard2.client().responses.create(model="m", input="Weather?")
    call = r.output[0]
    assert (call.type, call.name, call.arguments, call.call_id) == \
        ("function_call", "get_weather", '{"city": "Oslo"}', "call_1")


def test_a_streamed_response_is_held_then_sent_as_events(guarded):
    guard, up = guarded([(200, response("the CANARY " * 30)), (200, response("Clean answer. " * 20))])
    stream = guard.client().responses.create(model="m", input="Talk.", stream=True)
    events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed", types
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Clean answer. " * 20
    assert "CANARY" not in str([e.model_dump() for e in events]), "no byte of the failing output"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output_text == text
    assert events[-1].response.usage.input_tokens == 22, "usage summed over both attempts"


def test_the_stream_helper_gets_the_final_response(guarded):
    guard, up = guarded([(200, response("Streamed and whole."))])
    with guard.client().responses.stream(model="m", input="Hi.") as s:
        deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
        final = s.get_final_response()
    assert "".join(deltas) == "Streamed and whole."
    assert final.output_text == "Streamed and whole."
    assert final.id == "resp_up_1"


def test_a_responses_request_is_counted_in_the_metrics(guarded):
    guard, up = guarded([(200, response("fine"))])
    guard.client().responses.create(model="m", input="Hi.")
    with urllib.request.urlopen(guard.root + "/metrics", timeout=10) as r:
        metrics = r.read().decode()
    line = next(l for l in metrics.splitlines() if l.startswith("probity_requests_total"))
    assert line.split()[-1] == "1", line


def test_an_upstream_error_on_responses_passes_as_the_upstream_meant_it(guarded):
    bad = {"error": {"message": "Unknown parameter: 'frobnicate'.", "type": "invalid_request_error",
                     "param": "frobnicate", "code": "unknown_parameter"}}
    guard, up = guarded([(400, bad)])
    with pytest.raises(openai.BadRequestError) as e:
        guard.client().responses.create(model="m", input="Hi.", extra_body={"frobnicate": 1})
    assert e.value.param == "frobnicate" and e.value.code == "unknown_parameter"
    assert up.requests[0]["frobnicate"] == 1


def test_background_is_refused_by_name(guarded):
    guard, up = guarded([(200, response())])
    with pytest.raises(openai.BadRequestError) as e:
        guard.client().responses.create(model="m", input="Hi.", background=True)
    assert "background" in e.value.message
    assert up.requests == []


def test_embeddings_are_refused_saying_why(guarded):
    guard, up = guarded([(200, response())])
    with pytest.raises(openai.NotFoundError) as e:
        guard.client().embeddings.create(model="text-embedding-3-small", input="hello")
    assert "does not proxy embeddings" in e.value.message
    assert up.requests == []


def test_probity_run_tests_a_system_through_the_responses_api(fake_upstream, tmp_path):
    up = fake_upstream(lambda n, body: (200, response("Fine, thank you." if n % 2 else "Fine. CANARY")))
    (tmp_path / "probity.toml").write_text(f'''name = "through-responses"
[system]
provider = "openai"
api = "responses"
base_url = "{up.base_url}"
model = "up-model"
api_key_env = "PROBITY_SDK_UPSTREAM_KEY"
max_tokens = 32
[prompt]
system = "Be polite."
user = "{{{{ input.text }}}}"
[experiment]
outputs_per_input = 2
concurrency = 1
[[input]]
id = "a"
text = "How are you?"
[[input]]
id = "b"
text = "Hello?"
[[validator]]
name = "no_canary"
message = "The answer leaks the canary"
check = \'\'\'!output.contains("CANARY")\'\'\'
''')
    env = {"PROBITY_SDK_UPSTREAM_KEY": UPSTREAM_KEY, "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([PROBITY_BIN, "run", "probity.toml", "-q", "--store", "runs.db"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1), run.stderr
    assert set(up.paths) == {"/v1/responses"} and len(up.paths) == 4
    first = up.requests[0]
    assert first["input"] == [{"role": "system", "content": "Be polite."},
                              {"role": "user", "content": "How are you?"}]
    assert first["max_output_tokens"] == 32 and "max_tokens" not in first
    report = subprocess.run([PROBITY_BIN, "report", "1", "--format", "json", "--store", "runs.db"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    data = json.loads(report.stdout)
    assert data["counts"]["fail"] == 2 and data["counts"]["pass"] == 2, data["counts"]
    assert data["errors"]["system"]["total"] == 0
