"""The guard on the upstream's bad days, read by the official client with
its DEFAULT retry settings (max_retries = 2): a rate limit is a
RateLimitError the client backs off from, the upstream's 400 keeps its
code and param, and the guard's retries and the client's never multiply —
every test counts the upstream calls one SDK call cost (issue 36)."""

import socket

import openai
import pytest

from probity_servers import CLIENT_TIMEOUT, UPSTREAM_KEY, completion, guard_toml

USER = [{"role": "user", "content": "Hello there."}]


def sdk(guard):
    """The client as an application makes it: default retries."""
    return openai.OpenAI(base_url=guard.base_url, api_key="unused", timeout=CLIENT_TIMEOUT)


RATE_LIMITED = {"error": {"message": "Rate limit reached for requests", "type": "requests",
                          "param": None, "code": "rate_limit_exceeded"}}


#: What an OpenAI 429 carries besides its wait: the request id and the
#: rate-limit state, which the client reads to pace itself.
LIMIT_HEADERS = {
    "x-request-id": "req_429_5b1e",
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "120ms",
    "x-ratelimit-remaining-tokens": "29812",
    # Never passed on: it names the upstream's internals.
    "x-internal-backend": "10.20.30.40:8443",
}


@pytest.mark.parametrize("stream_upstream", ["true", "false"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_429_is_a_rate_limit_error_the_sdk_backs_off_from(guarded, stream, stream_upstream):
    """Streamed or not, and whether the guard asked the upstream for a
    stream or not: the 429 reaches the SDK with the upstream's wait, its
    request id and its x-ratelimit-* headers as sent."""
    guard, up = guarded([(429, RATE_LIMITED, {"retry-after-ms": "150", "retry-after": "1",
                                               **LIMIT_HEADERS})],
                        attempts=3, call_attempts=3,
                        extra=f"stream_upstream = {stream_upstream}")
    with pytest.raises(openai.RateLimitError) as e:
        sdk(guard).chat.completions.create(model="m", messages=USER, stream=stream)
    assert e.value.status_code == 429
    h = e.value.response.headers
    assert h.get("retry-after") == "1" and h.get("retry-after-ms") == "150", dict(h)
    for name, value in LIMIT_HEADERS.items():
        if name.startswith("x-internal"):
            assert name not in h, dict(h)
        else:
            assert h.get(name) == value, (name, dict(h))
    assert e.value.request_id == LIMIT_HEADERS["x-request-id"]
    assert h.get("x-probity-attempts") == "1"
    # One upstream call per SDK try: the SDK's 3 tries, never 3 × attempts
    # × call_attempts (the 18).
    assert len(up.requests) == 3, f"one SDK call made {len(up.requests)} upstream calls"


def test_a_429_then_an_answer_is_the_answer_after_the_sdks_backoff(guarded):
    guard, up = guarded([(429, RATE_LIMITED, {"retry-after-ms": "100"}), (200, completion("Fine."))],
                        attempts=3, call_attempts=3)
    r = sdk(guard).chat.completions.create(model="m", messages=USER)
    assert r.choices[0].message.content == "Fine."
    assert len(up.requests) == 2


@pytest.mark.parametrize("call_attempts", [1, 3])
def test_a_failing_upstream_costs_at_most_the_guards_retries_never_multiplied(guarded, call_attempts):
    """5xx every time. With call_attempts = 3 the guard retries twice and
    tells the SDK not to (x-should-retry: false): 3 calls. With 1 the guard
    retries nothing and the SDK's own 2 retries are the only ones: 3."""
    guard, up = guarded([(503, {"error": {"message": "overloaded at 10.9.8.7:8000", "type": "server_error"}})],
                        attempts=3, call_attempts=call_attempts)
    with pytest.raises(openai.InternalServerError) as e:
        sdk(guard).chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 502
    assert len(up.requests) == 3, f"one SDK call made {len(up.requests)} upstream calls"
    assert "10.9.8.7" not in e.value.response.text, "the upstream's words reached the client"
    assert "HTTP 503" in e.value.message, e.value.message
    if call_attempts == 3:
        assert e.value.response.headers.get("x-should-retry") == "false"
        assert e.value.response.headers.get("x-probity-calls") == "3"


def test_a_transient_failure_then_an_answer_costs_one_attempt(guarded):
    guard, up = guarded([(500, {"error": {"message": "boom"}}), (200, completion("Recovered."))],
                        attempts=3, call_attempts=3)
    raw = sdk(guard).chat.completions.with_raw_response.create(model="m", messages=USER)
    assert raw.parse().choices[0].message.content == "Recovered."
    assert raw.headers.get("x-probity-attempts") == "1"
    assert raw.headers.get("x-probity-calls") == "2"
    assert len(up.requests) == 2


def test_a_400_keeps_its_code_param_and_message(guarded):
    too_long = {"error": {"message": "This model's maximum context length is 8192 tokens.",
                          "type": "invalid_request_error", "param": "messages",
                          "code": "context_length_exceeded"}}
    guard, up = guarded([(400, too_long)], attempts=3, call_attempts=3)
    with pytest.raises(openai.BadRequestError) as e:
        sdk(guard).chat.completions.create(model="m", messages=USER)
    assert e.value.code == "context_length_exceeded"
    assert e.value.param == "messages"
    assert e.value.body["message"] == "This model's maximum context length is 8192 tokens."
    assert len(up.requests) == 1


def test_a_down_upstream_names_no_internal_address_and_costs_the_guards_retries(start_guard):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    guard = start_guard(guard_toml(f"http://127.0.0.1:{port}/v1", attempts=3, call_attempts=2))
    with pytest.raises(openai.InternalServerError) as e:
        sdk(guard).chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 502
    body = e.value.response.text
    assert f"{port}" not in body and "127.0.0.1" not in body, body
    assert UPSTREAM_KEY not in body
    assert "could not be reached" in e.value.message, e.value.message
    assert e.value.response.headers.get("x-probity-calls") == "2"
    assert e.value.response.headers.get("x-should-retry") == "false"
    # The operator's log has the detail the client was spared.
    assert f"127.0.0.1:{port}" in guard.process.stderr()
