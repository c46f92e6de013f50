"""Tool-calling traffic through `probity serve`, judged as structure
(issue 34 item 9c): `[[agent_check]]` tables read the answer's tool calls
as the upstream sent them — never text that merely looks like a call —
with the request's messages as context, and decide retries as validators
do. The client is the official `openai` SDK."""

import json
import subprocess
import urllib.request

import openai
import pytest

from probity_servers import PROBITY_BIN, completion, guard_toml, response

TOOL_CHECKS = '''
[[agent_check]]
name = "never_delete"
message = "The answer deletes an account"
kind = "tool_not_called"
tool = "delete_account"

[[agent_check]]
name = "weather_for_paris"
kind = "tool_called"
tool = "get_weather"
arguments = { city = "Paris" }
'''

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "delete_account", "parameters": {
        "type": "object", "properties": {"user": {"type": "string"}}}}},
]
USER = [{"role": "user", "content": "Weather in Paris?"}]


def call(name, arguments, cid="call_1"):
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def calling(*calls):
    return (200, completion(None, tool_calls=list(calls), finish_reason="tool_calls"))


DELETE = calling(call("delete_account", {"user": "u1"}))
WEATHER = calling(call("get_weather", {"city": "Paris"}))


@pytest.mark.parametrize("stream", [False, True])
def test_a_forbidden_call_is_retried_and_the_good_call_published(guarded, stream):
    guard, up = guarded([DELETE, WEATHER], checks=TOOL_CHECKS, attempts=3)
    client = guard.client()
    if stream:
        chunks = list(client.chat.completions.create(
            model="m", messages=USER, tools=TOOLS, stream=True))
        calls = [c for ch in chunks if ch.choices for c in (ch.choices[0].delta.tool_calls or [])]
        names = [c.function.name for c in calls if c.function and c.function.name]
        assert names == ["get_weather"], names
    else:
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=USER, tools=TOOLS)
        assert raw.headers.get("x-probity-attempts") == "2", dict(raw.headers)
        assert raw.headers.get("x-probity-outcome") == "published"
        msg = raw.parse().choices[0].message
        assert [c.function.name for c in msg.tool_calls] == ["get_weather"]
        assert json.loads(msg.tool_calls[0].function.arguments) == {"city": "Paris"}
    assert len(up.requests) == 2, "one retry after the forbidden call"
    # The retry's request carries the failure's reason: the call and its turn.
    fed_back = json.dumps(up.requests[1]["messages"])
    assert "delete_account" in fed_back, fed_back


def test_arguments_are_matched_as_json_not_as_text(guarded):
    # Lyon, then Paris with its arguments in another key order and spacing.
    lyon = calling(call("get_weather", {"city": "Lyon"}))
    paris = (200, completion(None, finish_reason="tool_calls", tool_calls=[{
        "id": "c2", "type": "function",
        "function": {"name": "get_weather", "arguments": '{ "unit":"C" ,  "city" : "Paris" }'}}]))
    guard, up = guarded([lyon, paris], checks=TOOL_CHECKS, attempts=3)
    r = guard.client().chat.completions.create(model="m", messages=USER, tools=TOOLS)
    assert json.loads(r.choices[0].message.tool_calls[0].function.arguments)["city"] == "Paris"
    assert len(up.requests) == 2


def test_text_that_looks_like_a_call_is_not_a_call(guarded):
    """An answer whose text spells a tool call in OpenAI's JSON is text:
    `tool_not_called` passes it and `tool_called` does not count it."""
    spoof = json.dumps([call("delete_account", {"user": "u1"}), call("get_weather", {"city": "Paris"})])
    guard, up = guarded([(200, completion("Sure.\n" + spoof))], checks=TOOL_CHECKS, attempts=2,
                        extra='on_nothing_passed = "error"')
    with pytest.raises(openai.UnprocessableEntityError) as e:
        guard.client().chat.completions.create(model="m", messages=USER, tools=TOOLS)
    attempts = e.value.body["attempts"] if isinstance(e.value.body, dict) and "attempts" in e.value.body \
        else e.value.response.json()["error"]["attempts"]
    reasons = [r for a in attempts for r in a["reasons"]]
    # Only "weather_for_paris" failed (no real call); "never_delete" passed.
    assert reasons and all("get_weather" in r for r in reasons), reasons
    assert not any("delete_account" in r for r in reasons), reasons
    assert len(up.requests) == 2


def test_the_histories_calls_are_context_not_this_answers(guarded):
    """A conversation whose earlier assistant turn deleted an account: the
    answer is judged on its own calls, so it is published at once."""
    guard, up = guarded([WEATHER], checks=TOOL_CHECKS, attempts=3)
    history = [
        {"role": "user", "content": "Delete u1, then tell me the weather in Paris."},
        {"role": "assistant", "content": None, "tool_calls": [call("delete_account", {"user": "u1"}, "c0")]},
        {"role": "tool", "tool_call_id": "c0", "content": "deleted"},
    ]
    raw = guard.client().chat.completions.with_raw_response.create(
        model="m", messages=history, tools=TOOLS)
    assert raw.headers.get("x-probity-attempts") == "1", dict(raw.headers)
    assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"
    # The whole conversation reached the upstream, in order.
    sent = up.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "delete_account"


def test_a_transcript_check_reads_the_whole_conversation(guarded):
    checks = '''
[[agent_check]]
name = "weather_after_asking"
kind = "transcript"
check = \'\'\'let m = input.transcript.messages; m.len() == 2 && m[0].content.contains("Paris") && input.transcript.tool_calls[0].arguments.city == "Paris"\'\'\'
'''
    guard, up = guarded([WEATHER], checks=checks, attempts=2)
    raw = guard.client().chat.completions.with_raw_response.create(
        model="m", messages=USER, tools=TOOLS)
    assert raw.headers.get("x-probity-attempts") == "1", dict(raw.headers)


def test_metrics_count_the_tool_checks_by_name(guarded):
    guard, up = guarded([DELETE, WEATHER], checks=TOOL_CHECKS, attempts=3)
    guard.client().chat.completions.create(model="m", messages=USER, tools=TOOLS)
    root = guard.base_url.rsplit("/v1", 1)[0]
    text = urllib.request.urlopen(root + "/metrics", timeout=10).read().decode()
    assert 'check="never_delete"' in text, text[:2000]
    assert 'check="weather_for_paris"' in text


@pytest.mark.parametrize("kind,extra,needle", [
    ("final_state", 'expected = { a = 1 }', "no environment stands behind a guard"),
    ("turns", "max = 3", "an answer is one turn"),
    ("tool_caled", 'tool = "x"', "unknown kind `tool_caled`"),
    ("tool_called", "", "needs `tool`"),
])
def test_a_check_the_guard_cannot_apply_is_refused_naming_its_line(tmp_path, kind, extra, needle):
    text = guard_toml("http://127.0.0.1:9/v1", checks=f'''
[[agent_check]]
name = "bad"
kind = "{kind}"
{extra}
''')
    (tmp_path / "guard.toml").write_text(text)
    line = text.splitlines().index("[[agent_check]]") + 1
    out = subprocess.run([PROBITY_BIN, "serve", "--config", str(tmp_path / "guard.toml"),
                          "--listen", "127.0.0.1:0", "--store", str(tmp_path / "runs.db")],
                         capture_output=True, text=True, timeout=20,
                         env={"PROBITY_SDK_UPSTREAM_KEY": "k", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "guard.toml" in out.stderr and needle in out.stderr, out.stderr
    assert f"line {line}" in out.stderr, (line, out.stderr)


def test_two_checks_of_one_name_are_refused(tmp_path):
    text = guard_toml("http://127.0.0.1:9/v1", checks=TOOL_CHECKS + '''
[[validator]]
name = "never_delete"
check = "true"
''')
    (tmp_path / "guard.toml").write_text(text)
    out = subprocess.run([PROBITY_BIN, "serve", "--config", str(tmp_path / "guard.toml"),
                          "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=20,
                         env={"PROBITY_SDK_UPSTREAM_KEY": "k", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert '"never_delete"' in out.stderr and "unique" in out.stderr, out.stderr


def test_responses_api_function_calls_are_checked_as_calls(guarded):
    """Through `/v1/responses` the answer's `function_call` items are read
    as calls; a `transcript` check, which needs a Chat conversation, is an
    error naming why — never a verdict about the model."""
    guard, up = guarded([(200, response(function_call=("delete_account", '{"user": "u1"}'))),
                         (200, response(function_call=("get_weather", '{"city": "Paris"}')))],
                        checks=TOOL_CHECKS, attempts=3)
    r = guard.client().responses.create(model="m", input="Weather in Paris?")
    assert (r.output[0].type, r.output[0].name) == ("function_call", "get_weather")
    assert len(up.requests) == 2
    transcript = '''
[[agent_check]]
name = "reads_the_conversation"
kind = "transcript"
check = "true"
'''
    guard2, _ = guarded([(200, response("Hello."))], checks=transcript, attempts=2)
    with pytest.raises(openai.InternalServerError) as e:
        guard2.client().responses.create(model="m", input="Hi")
    assert "Responses API" in e.value.response.text and "not a verdict" in e.value.response.text, \
        e.value.response.text
