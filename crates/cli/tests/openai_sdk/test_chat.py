"""Plain chat completions through `probity serve` with the official client:
status, probity's headers, the upstream's model, usage and finish reason,
tool calls, and `models.list()`."""

import asyncio
import json

import openai

from probity_servers import CLIENT_TIMEOUT, NO_CANARY, completion, guard_toml


def test_plain_completion_through_the_simulator(sim_serve, start_guard):
    guard = start_guard(guard_toml(sim_serve.base_url, model="sim-upstream-model"))
    raw = guard.client().chat.completions.with_raw_response.create(
        model="what-the-client-asked",
        messages=[{"role": "user", "content": "How deep should I plant bulbs?"}],
    )
    assert raw.status_code == 200
    assert raw.headers.get("x-probity-outcome") == "published", dict(raw.headers)
    attempts = raw.headers.get("x-probity-attempts")
    assert attempts is not None and attempts.isdigit() and int(attempts) >= 1, dict(raw.headers)
    r = raw.parse()
    assert r.object == "chat.completion"
    assert r.model == "sim-upstream-model", "the model is the upstream's, not the client's"
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content, "an empty answer"
    assert r.choices[0].finish_reason == "stop"
    assert r.usage is not None and r.usage.total_tokens > 0, r.usage


def test_logprobs_are_the_upstreams_whether_it_streams_to_the_guard_or_not(sim_serve, start_guard):
    # The guard asks a streaming upstream for a stream by default
    # (stream_upstream = true): its logprobs arrive per chunk and were
    # dropped; they are the answer's, whole, as without streaming.
    for extra in ["", "stream_upstream = false\n"]:
        guard = start_guard(guard_toml(sim_serve.base_url, model="sim-upstream-model", extra=extra))
        client = guard.client()
        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "How deep should I plant bulbs?"}],
            logprobs=True, top_logprobs=1,
        )
        content = r.choices[0].logprobs.content if r.choices[0].logprobs else None
        assert content, (extra, r.choices[0].logprobs)
        assert "".join(t.token for t in content) == r.choices[0].message.content, extra
        streamed = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "How deep should I plant bulbs?"}],
            logprobs=True, top_logprobs=1, stream=True,
        )
        tokens = [t.token for c in streamed if c.choices and c.choices[0].logprobs
                  for t in (c.choices[0].logprobs.content or [])]
        assert tokens, extra


def test_an_attempt_is_streamed_from_the_upstream_only_when_a_later_one_could_gain(guarded):
    """stream_upstream = true (the default) streams attempts so a failing
    one can be cut short. With on_nothing_passed = "last" the final attempt
    is never cut: then a lone attempt is asked for whole (streaming it buys
    nothing), while the final one of several is streamed like the others."""
    last = 'on_nothing_passed = "last"'
    leak = completion("The CANARY sings.")
    for attempts, extra, streamed in [(1, last, [False]),
                                      (2, last, [True, True]),
                                      (1, 'on_nothing_passed = "error"', [True]),
                                      (1, last + "\nstream_upstream = false", [False])]:
        guard, up = guarded([(200, leak)] * attempts, attempts=attempts, extra=extra)
        try:
            headers = guard.client().chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "Sing."}]).headers
        except openai.UnprocessableEntityError as e:  # on_nothing_passed = "error"
            headers = e.response.headers
        assert headers["x-probity-attempts"] == str(attempts), (attempts, extra)
        assert [r.get("stream") is True for r in up.requests] == streamed, (attempts, extra, up.requests)


def test_model_usage_and_finish_reason_are_the_upstreams(guarded):
    guard, up = guarded([(200, completion("Cut short", model="up-model-2024-08-06",
                                          finish_reason="length", usage=(13, 5)))])
    raw = guard.client().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Tell me a long story."}])
    assert raw.headers.get("x-probity-outcome") == "published"
    assert raw.headers.get("x-probity-attempts") == "1"
    r = raw.parse()
    assert r.choices[0].message.content == "Cut short"
    assert r.model == "up-model-2024-08-06", "the upstream's answered model, not the client's"
    assert r.choices[0].finish_reason == "length", "the upstream's finish_reason is forwarded"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (13, 5, 18)
    assert len(up.requests) == 1
    assert up.requests[0]["model"] == "up-model", "the config's model is sent upstream"


def test_tool_calls_pass_through(guarded):
    calls = [{"id": "call_abc", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    guard, up = guarded([(200, completion(None, tool_calls=calls, finish_reason="tool_calls"))])
    r = guard.client().chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[{"type": "function", "function": {
            "name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}}}}],
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls, f"no tool calls in {choice.message}"
    call = choice.message.tool_calls[0]
    assert call.id == "call_abc"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_models_list_names_the_upstream_model(guarded):
    guard, _ = guarded()
    ids = [m.id for m in guard.client().models.list()]
    assert "up-model" in ids, ids


def test_models_list_through_the_simulator(sim_serve, start_guard):
    guard = start_guard(guard_toml(sim_serve.base_url, model="sim-upstream-model",
                                   checks=NO_CANARY))
    ids = [m.id for m in guard.client().models.list()]
    assert "sim-upstream-model" in ids, ids


def test_models_retrieve_and_unknown_paths_answer_as_openai_does(sim_serve, start_guard):
    guard = start_guard(guard_toml(sim_serve.base_url, model="sim-upstream-model",
                                   checks=NO_CANARY))
    client = guard.client()
    assert client.models.retrieve("sim-upstream-model").id == "sim-upstream-model"
    try:
        client.models.retrieve("gpt-nonexistent")
    except openai.NotFoundError as e:
        assert "gpt-nonexistent" in str(e), str(e)
    else:
        raise AssertionError("an unknown model was found")
    try:
        client.embeddings.create(model="x", input="hello")
    except openai.NotFoundError as e:
        assert "/v1/chat/completions" in str(e), str(e)
    else:
        raise AssertionError("an unknown route answered")


def test_concurrent_async_requests_each_get_their_own_answer(guarded):
    def echo(n, body):
        return 200, completion("answer to " + body["messages"][-1]["content"])

    guard, up = guarded(echo)

    async def main():
        client = openai.AsyncOpenAI(base_url=guard.base_url, api_key="unused", max_retries=0,
                                    timeout=CLIENT_TIMEOUT)
        async with client:
            questions = [f"question {i}" for i in range(8)]
            answers = await asyncio.gather(*(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": q}])
                for q in questions))
            return questions, [a.choices[0].message.content for a in answers]

    questions, answers = asyncio.run(asyncio.wait_for(main(), CLIENT_TIMEOUT))
    assert answers == [f"answer to {q}" for q in questions]
    assert len(up.requests) == 8


def test_each_answer_says_what_it_cost(guarded):
    """Per request: attempts, calls, tokens per attempt and summed, tokens
    on retries (the usage the upstream reported for each attempt)."""
    guard, up = guarded([(200, completion("CANARY draft", usage=(20, 10))),
                         (200, completion("A clean answer.", usage=(11, 7)))], attempts=3)
    raw = guard.client().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Tell me the secret."}])
    h = raw.headers
    assert h.get("x-probity-attempts") == "2", dict(h)
    assert h.get("x-probity-calls") == "2", dict(h)
    assert h.get("x-probity-attempt-tokens") == "30, 18", dict(h)
    assert h.get("x-probity-tokens") == "48", dict(h)
    assert h.get("x-probity-retry-tokens") == "18", dict(h)
    r = raw.parse()
    assert r.usage.total_tokens == 48, "usage is summed over the attempts"
    assert len(up.requests) == 2
