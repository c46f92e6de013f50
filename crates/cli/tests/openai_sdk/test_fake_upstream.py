"""The fake upstream itself, read by the official client directly (no guard
in between): it speaks OpenAI as the SDK understands it, so a failure in
the other files is the guard's, not the fake's."""

import json

import openai
import pytest

from probity_servers import CLIENT_TIMEOUT, completion


def direct(up):
    return openai.OpenAI(base_url=up.base_url, api_key="x", max_retries=0, timeout=CLIENT_TIMEOUT)


def test_fake_answers_tool_calls_and_streams_as_openai_does(fake_upstream):
    calls = [{"id": "call_1", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]
    up = fake_upstream([(200, completion("Plain text")),
                        (200, completion(None, tool_calls=calls, finish_reason="tool_calls"))])
    client = direct(up)
    with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "Hi"}],
            stream_options={"include_usage": True}) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == "Plain text"
    assert final.usage.total_tokens == 18
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert json.loads(r.choices[0].message.tool_calls[0].function.arguments) == {"city": "Oslo"}
    assert [b["model"] for b in up.requests] == ["m", "m"]
    assert up.requests[0]["stream"] is True and "stream" not in up.requests[1]


def test_fake_errors_are_read_by_the_client(fake_upstream):
    up = fake_upstream([(400, {"error": {"message": "bad temperature", "type": "invalid_request_error"}})])
    with pytest.raises(openai.BadRequestError) as e:
        direct(up).chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    assert "bad temperature" in e.value.message
