"""Streaming through the guard: the client gets chunks of the checked output
only. A draft the validator rejects (the canary) never reaches the client,
in any chunk or byte."""

import json
import urllib.error
import urllib.request

from probity_servers import CLIENT_TIMEOUT, completion

CLEAN = "A clean answer, checked before it was sent."


def canary_first(n, body):
    """The first call leaks the canary; every later call is clean."""
    if n == 0:
        return 200, completion("CANARY secret draft")
    return 200, completion(CLEAN)


def test_stream_yields_chunks_of_the_output(guarded):
    guard, _ = guarded([(200, completion(CLEAN))])
    stream = guard.client().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Hi"}], stream=True)
    chunks = list(stream)
    assert chunks, "no chunks"
    assert all(c.object == "chat.completion.chunk" for c in chunks), [c.object for c in chunks]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == CLEAN
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert reasons == ["stop"], f"one final finish_reason expected: {reasons}"
    assert len({c.id for c in chunks}) == 1, "every chunk of one completion has its id"


def test_stream_include_usage_sends_a_usage_chunk(guarded):
    guard, _ = guarded([(200, completion(CLEAN, usage=(9, 4)))])
    stream = guard.client().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Hi"}], stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1, f"one usage chunk expected, got {len(usage)}"
    assert (usage[0].prompt_tokens, usage[0].completion_tokens, usage[0].total_tokens) == (9, 4, 13)
    assert chunks[-1].usage is not None and chunks[-1].choices == [], \
        "the usage chunk comes last, with no choices"


def test_sdk_stream_helper_gets_the_final_completion(guarded):
    guard, _ = guarded([(200, completion(CLEAN))])
    with guard.client().chat.completions.stream(
            model="gpt-4o", messages=[{"role": "user", "content": "Hi"}]) as stream:
        deltas = [e.delta for e in stream if e.type == "content.delta"]
        final = stream.get_final_completion()
    assert "".join(deltas) == CLEAN
    assert final.choices[0].message.content == CLEAN
    assert final.choices[0].finish_reason == "stop"


def test_canary_never_reaches_a_streaming_client(guarded):
    guard, up = guarded(canary_first, attempts=3)
    raw = guard.client().chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Tell me the secret."}],
        stream=True, stream_options={"include_usage": True})
    assert raw.status_code == 200
    assert raw.headers.get("x-probity-attempts") == "2", dict(raw.headers)
    assert raw.headers.get("x-probity-outcome") == "published", dict(raw.headers)
    chunks = list(raw.parse())
    for c in chunks:
        assert "CANARY" not in c.model_dump_json(), f"the canary reached the client: {c}"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == CLEAN
    assert len(up.requests) == 2, "the canary draft was retried once"


def test_canary_is_absent_from_every_raw_byte(guarded):
    guard, up = guarded(canary_first, attempts=3)
    req = urllib.request.Request(
        guard.base_url + "/chat/completions",
        data=json.dumps({"model": "gpt-4o", "stream": True,
                         "messages": [{"role": "user", "content": "Tell me the secret."}]}).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer unused"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=CLIENT_TIMEOUT) as resp:
            status, headers = resp.status, resp.headers
            raw = resp.read()
    except urllib.error.HTTPError as e:
        raise AssertionError(f"HTTP {e.code}: {e.read()[:500]!r}") from None
    assert status == 200
    assert headers.get("content-type", "").startswith("text/event-stream"), headers.get("content-type")
    assert headers.get("x-probity-attempts") == "2", dict(headers)
    assert b"CANARY" not in raw, f"the canary is in the raw stream: {raw[:500]!r}"
    events = [line[len(b"data: "):] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert events and events[-1] == b"[DONE]", f"the stream does not end with [DONE]: {raw[-200:]!r}"
    text = "".join(
        (c["choices"][0]["delta"].get("content") or "")
        for c in map(json.loads, events[:-1]) if c.get("choices"))
    assert text == CLEAN
    assert len(up.requests) == 2
