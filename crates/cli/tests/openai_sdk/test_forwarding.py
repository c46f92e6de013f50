"""Every Chat Completions field the client sends reaches an
OpenAI-compatible upstream as sent, or is refused with HTTP 400 naming it:
never silently dropped. Messages of every role, and content parts, arrive
intact. The fake upstream records each body it receives."""

import openai
import pytest

from probity_servers import completion

USER = [{"role": "user", "content": "Hello there."}]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}

JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "strict": True,
        "schema": {"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"], "additionalProperties": False},
    },
}

#: Each case: the fields one request adds to `model` and `messages`.
FIELDS = {
    "temperature": {"temperature": 0.25},
    "top_p": {"top_p": 0.5},
    "max_tokens": {"max_tokens": 64},
    "max_completion_tokens": {"max_completion_tokens": 96},
    "stop": {"stop": ["END", "\n\n"]},
    "seed": {"seed": 4242},
    "presence_penalty": {"presence_penalty": 0.5},
    "frequency_penalty": {"frequency_penalty": -0.25},
    "logit_bias": {"logit_bias": {"50256": -100, "1234": 5}},
    "logprobs": {"logprobs": True, "top_logprobs": 3},
    "response_format_json_object": {"response_format": {"type": "json_object"}},
    "response_format_json_schema": {"response_format": JSON_SCHEMA},
    "tools": {"tools": [WEATHER_TOOL], "tool_choice": "auto", "parallel_tool_calls": False},
    "tool_choice_named": {"tools": [WEATHER_TOOL],
                          "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "user": {"user": "end-user-17"},
    "metadata": {"metadata": {"session": "abc", "tier": "gold"}},
}


@pytest.mark.parametrize("case", FIELDS, ids=list(FIELDS))
def test_field_is_forwarded_or_refused_by_name(guarded, case):
    fields = FIELDS[case]
    guard, up = guarded([(200, completion('{"text": "ok"}'))])
    client = guard.client()
    try:
        r = client.chat.completions.create(model="gpt-4o", messages=USER, **fields)
    except openai.BadRequestError as e:
        # Refused: the 400 names a field it refused, and nothing went upstream.
        assert any(name in e.message for name in fields), \
            f"the 400 does not name any of {list(fields)}: {e.message}"
        assert up.requests == [], "a refused request must not reach the upstream"
        return
    assert r.choices[0].message.content == '{"text": "ok"}'
    assert len(up.requests) == 1, up.requests
    sent = up.requests[0]
    for name, value in fields.items():
        assert name in sent, f"`{name}` was silently dropped: upstream got {sorted(sent)}"
        assert sent[name] == value, f"`{name}` changed on the way: {sent[name]!r} != {value!r}"
    assert sent["model"] == "up-model", "the guard's [upstream] model is sent, not the client's"


def test_all_fields_together_reach_the_upstream_exactly(guarded):
    """The common case of a real client: many fields at once, all forwarded
    (an OpenAI-compatible upstream takes every one of them)."""
    fields = {}
    for case in ("temperature", "top_p", "max_completion_tokens", "stop", "seed",
                 "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
                 "response_format_json_schema", "tools", "user", "metadata"):
        fields.update(FIELDS[case])
    guard, up = guarded([(200, completion('{"text": "ok"}'))])
    guard.client().chat.completions.create(model="gpt-4o", messages=USER, **fields)
    assert len(up.requests) == 1
    sent = up.requests[0]
    missing = [k for k in fields if k not in sent]
    assert not missing, f"dropped on the way upstream: {missing}"
    changed = {k: (sent[k], v) for k, v in fields.items() if sent[k] != v}
    assert not changed, f"changed on the way upstream (sent, asked): {changed}"
    assert sent["model"] == "up-model"


def test_messages_of_every_role_and_content_parts_arrive_intact(guarded):
    image = {"type": "image_url",
             "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Answer in English."},
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture, "},
                                     {"type": "text", "text": "and what is the weather?"},
                                     image]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": -3}'},
        {"role": "assistant", "content": "It is a cat; Oslo is at -3 °C.", "name": "helper"},
        {"role": "user", "content": "Thanks — anything else?"},
    ]
    guard, up = guarded([(200, completion("Nothing else."))])
    r = guard.client().chat.completions.create(model="gpt-4o", messages=messages,
                                               tools=[WEATHER_TOOL])
    assert r.choices[0].message.content == "Nothing else."
    assert len(up.requests) == 1
    sent = up.requests[0]["messages"]
    assert len(sent) == len(messages), f"{len(sent)} messages upstream, {len(messages)} sent: {sent}"
    for i, (got, want) in enumerate(zip(sent, messages)):
        # `content: null` may be sent as null or left out; everything else exactly.
        got = {k: v for k, v in got.items() if not (k == "content" and v is None)}
        want = {k: v for k, v in want.items() if not (k == "content" and v is None)}
        assert got == want, f"message {i} ({want['role']}) changed on the way:\n{got}\n!=\n{want}"


def test_unknown_field_is_forwarded_or_refused_by_name(guarded):
    guard, up = guarded([(200, completion("fine"))])
    try:
        guard.client().chat.completions.create(
            model="gpt-4o", messages=USER, extra_body={"frobnicate_level": 3})
    except openai.BadRequestError as e:
        assert "frobnicate_level" in e.message, e.message
        assert up.requests == []
        return
    assert up.requests[0].get("frobnicate_level") == 3, \
        f"`frobnicate_level` was silently dropped: upstream got {sorted(up.requests[0])}"
