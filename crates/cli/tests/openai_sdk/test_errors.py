"""The guard's errors as the official client raises them: the right
exception class, status and message — and never the upstream's key."""

import re
import socket

import openai
import pytest

from probity_servers import GUARD_TOKEN, UPSTREAM_KEY, completion, guard_toml

USER = [{"role": "user", "content": "Hello there."}]

ALWAYS_FAILS = '''
[[validator]]
name = "never"
message = "This check never passes"
check = "false"
'''


def test_wrong_bearer_token_is_an_authentication_error(fake_upstream, start_guard):
    up = fake_upstream()
    guard = start_guard(guard_toml(up.base_url, extra='token_env = "PROBITY_SDK_TOKEN"'),
                        token=GUARD_TOKEN)
    with pytest.raises(openai.AuthenticationError) as e:
        guard.client(api_key="not-the-token").chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 401
    assert GUARD_TOKEN not in str(e.value.body) and GUARD_TOKEN not in e.value.message
    assert up.requests == [], "an unauthorized request must not reach the upstream"
    # The right token gets through; upstream, the guard presents the
    # upstream's key, never the client's token.
    r = guard.client(api_key=GUARD_TOKEN).chat.completions.create(model="m", messages=USER)
    assert r.choices[0].message.content == "Hello from upstream."
    assert len(up.headers) == 1
    assert up.headers[0].get("authorization") == f"Bearer {UPSTREAM_KEY}"
    assert not any(GUARD_TOKEN in v for v in up.headers[0].values()), \
        f"the client's token was forwarded upstream: {up.headers[0]}"


def test_the_upstream_refusing_the_guards_key_is_a_bad_gateway_not_the_clients_auth_error(guarded):
    # The upstream's 401 is about the guard's key: passed on, the client's
    # SDK raised AuthenticationError about its own token, and OpenAI's
    # message quotes part of the key ("sk-UPS*****999").
    refusal = {"error": {"message": "Incorrect API key provided: sk-UPS*****999.", "type": "invalid_request_error",
                         "code": "invalid_api_key"}}
    guard, up = guarded([(401, refusal)], attempts=2)
    with pytest.raises(openai.InternalServerError) as e:
        guard.client().chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 502
    assert "credentials" in e.value.message, e.value.message
    assert "sk-UPS" not in e.value.response.text, e.value.response.text


def test_nothing_passed_is_unprocessable(guarded):
    guard, up = guarded(extra='on_nothing_passed = "error"', checks=ALWAYS_FAILS, attempts=3)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        guard.client().chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 422
    assert "no output passed" in e.value.message, e.value.message
    assert e.value.response.headers.get("x-probity-attempts") == "3"
    assert e.value.response.headers.get("x-probity-outcome") == "nothing-passed"
    assert len(up.requests) == 3


def test_nothing_passed_while_streaming_is_an_error_before_any_chunk(guarded):
    """A stream whose every attempt fails is refused as a whole: no chunk
    of a rejected draft, and no draft in the error either."""
    guard, up = guarded([(200, completion("CANARY every time"))], attempts=2)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        for _ in guard.client().chat.completions.create(model="m", messages=USER, stream=True):
            pass
    assert "CANARY" not in e.value.response.text, e.value.response.text
    assert len(up.requests) == 2


def test_on_nothing_passed_last_answers_flagged(guarded):
    guard, up = guarded([(200, completion("CANARY every time"))], attempts=2,
                        extra='on_nothing_passed = "last"')
    raw = guard.client().chat.completions.with_raw_response.create(model="m", messages=USER)
    assert raw.status_code == 200
    assert raw.headers.get("x-probity-outcome") == "nothing-passed"
    assert raw.headers.get("x-probity-attempts") == "2"
    assert raw.parse().choices[0].message.content == "CANARY every time"


def test_n_above_one_is_refused_naming_n(guarded):
    guard, up = guarded()
    with pytest.raises(openai.BadRequestError) as e:
        guard.client().chat.completions.create(model="m", messages=USER, n=2)
    assert re.search(r"\bn\b", e.value.message), f"the 400 does not name `n`: {e.value.message}"
    assert up.requests == []


def test_field_the_upstream_cannot_take_is_refused_naming_it(start_guard):
    """The in-process simulator is no OpenAI-compatible upstream: a field it
    cannot take is refused, not dropped."""
    guard = start_guard('''name = "sim-guard"
[upstream]
provider = "sim"
[retry]
attempts = 2
[[validator]]
name = "any"
check = "true"
''')
    with pytest.raises(openai.BadRequestError) as e:
        guard.client().chat.completions.create(
            model="m", messages=USER, extra_body={"frobnicate_level": 3})
    assert "frobnicate_level" in e.value.message, e.value.message


REFUSAL = {"error": {
    "message": "Invalid 'messages[0].content': string too long (sdk-test-marker).",
    "type": "invalid_request_error", "param": "messages", "code": "string_above_max_length"}}


def test_upstream_400_reaches_the_client_with_its_message(guarded):
    guard, up = guarded([(400, REFUSAL)], attempts=3)
    with pytest.raises(openai.APIStatusError) as e:
        guard.client().chat.completions.create(model="m", messages=USER)
    assert 400 <= e.value.status_code < 500, \
        f"an upstream 400 is the client's mistake, not a gateway failure: {e.value.status_code}"
    assert "string too long (sdk-test-marker)" in e.value.message, e.value.message
    assert UPSTREAM_KEY not in e.value.response.text


def test_upstream_400_is_not_retried(guarded):
    """The same request refused once is refused again: asking it `attempts`
    times only spends the upstream's quota and the client's time."""
    guard, up = guarded([(400, REFUSAL)], attempts=3)
    with pytest.raises(openai.APIStatusError):
        guard.client().chat.completions.create(model="m", messages=USER)
    assert len(up.requests) == 1, \
        f"a request the upstream refused (400) was sent {len(up.requests)} times"


def test_upstream_down_is_a_bad_gateway_naming_neither_its_address_nor_the_key(start_guard):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    guard = start_guard(guard_toml(f"http://127.0.0.1:{port}/v1", attempts=2))
    with pytest.raises(openai.InternalServerError) as e:
        guard.client().chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 502
    body = e.value.response.text
    assert UPSTREAM_KEY not in body, "the upstream's API key is in the error"
    assert "upstream" in e.value.message.lower(), e.value.message
    assert f"127.0.0.1:{port}" not in body, f"the error shows the upstream's address: {body}"
