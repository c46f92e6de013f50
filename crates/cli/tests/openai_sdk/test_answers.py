"""Refusals and other answer kinds are answers (issue 36, point 2): a
model's refusal is published as the refusal (the checks judge its text, as
any output's — docs/serve.md); an audio answer passes with its
transcript checked, one with nothing to check is refused with an error
that says so; every field of the upstream's answer and usage and its
`x-request-id` and `x-ratelimit-*` headers reach the client as sent —
streamed or not, whether the guard reads the upstream's stream or not —
while secrets and the upstream's other headers do not."""

import openai
import pytest

from probity_servers import UPSTREAM_KEY, completion

USER = [{"role": "user", "content": "Hello there."}]

REFUSAL = "I'm sorry, I can't help with that request."

UPSTREAM_HEADERS = {
    "x-request-id": "req_8f2a61c0d9",
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9999",
    "x-ratelimit-remaining-tokens": "149984",
    "x-ratelimit-reset-requests": "6ms",
    # Never passed on: it names the upstream's internals.
    "x-internal-backend": "10.20.30.40:8443",
}


def refusal_answer():
    body = completion(None, usage=(12, 9))
    body["choices"][0]["message"]["refusal"] = REFUSAL
    return body


def rich_answer():
    """An answer with every field the issue found dropped: annotations,
    reasoning_content, service_tier, usage details, logprobs, a
    system_fingerprint, and a field of the choice no one here knows."""
    body = completion("Paris is the capital of France.", usage=(40, 25))
    msg = body["choices"][0]["message"]
    msg["refusal"] = None
    msg["annotations"] = [{"type": "url_citation", "url_citation": {
        "start_index": 0, "end_index": 5, "title": "Paris", "url": "https://example.org/paris"}}]
    msg["reasoning_content"] = "The user asks a geography question."
    body["choices"][0]["logprobs"] = {"content": [
        {"token": "Paris", "logprob": -0.01, "bytes": [80, 97, 114, 105, 115], "top_logprobs": []}],
        "refusal": None}
    body["choices"][0]["stop_reason"] = 128009
    body["service_tier"] = "default"
    body["system_fingerprint"] = "fp_44709d6fcb"
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 32, "audio_tokens": 0}
    body["usage"]["completion_tokens_details"] = {
        "reasoning_tokens": 10, "audio_tokens": 0,
        "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    return body


def audio_answer(transcript="Hello, I am speaking."):
    body = completion(None, usage=(20, 60))
    audio = {"id": "audio_abc123", "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=",
             "expires_at": 1700003600}
    if transcript is not None:
        audio["transcript"] = transcript
    body["choices"][0]["message"]["audio"] = audio
    return body


STREAM_UPSTREAM = {"whole": "stream_upstream = false", "streamed": "stream_upstream = true"}


@pytest.fixture(params=list(STREAM_UPSTREAM))
def upstream_mode(request):
    """The guard reads the upstream's answer whole, or as it streams."""
    return STREAM_UPSTREAM[request.param]


def test_a_refusal_is_published_as_the_refusal(guarded, upstream_mode):
    guard, up = guarded([(200, refusal_answer())], extra=upstream_mode)
    raw = guard.client().chat.completions.with_raw_response.create(model="m", messages=USER)
    msg = raw.parse().choices[0].message
    assert msg.refusal == REFUSAL
    assert msg.content is None
    assert raw.headers["x-probity-outcome"] == "published"
    assert len(up.requests) == 1, "a refusal that passed the checks is not retried"


def test_a_streamed_refusal_accumulates_to_the_refusal(guarded, upstream_mode):
    guard, up = guarded([(200, refusal_answer())], extra=upstream_mode)
    with guard.client().chat.completions.stream(model="m", messages=USER) as s:
        events = list(s)
        final = s.get_final_completion()
    assert final.choices[0].message.refusal == REFUSAL
    assert not final.choices[0].message.content
    assert any(e.type == "refusal.done" and e.refusal == REFUSAL for e in events), \
        [e.type for e in events]


def test_structured_output_parse_reads_a_refusal(guarded):
    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    guard, up = guarded([(200, refusal_answer())])
    r = guard.client().chat.completions.parse(model="m", messages=USER, response_format=Answer)
    assert r.choices[0].message.refusal == REFUSAL
    assert r.choices[0].message.parsed is None


def test_a_check_that_fails_refusals_judges_the_refusal_text(guarded):
    checks = '''
[[validator]]
name = "no_refusal"
message = "The model refused"
check = \'\'\'!output.contains("I'm sorry")\'\'\'
'''
    guard, up = guarded([(200, refusal_answer()), (200, completion("Here you go."))], checks=checks)
    raw = guard.client().chat.completions.with_raw_response.create(model="m", messages=USER)
    assert raw.parse().choices[0].message.content == "Here you go."
    assert raw.headers["x-probity-attempts"] == "2"
    assert len(up.requests) == 2


def test_an_audio_answer_passes_whole_with_its_transcript_checked(guarded, upstream_mode):
    guard, up = guarded([(200, audio_answer())], extra=upstream_mode)
    r = guard.client().chat.completions.create(
        model="m", messages=USER, modalities=["text", "audio"],
        audio={"voice": "alloy", "format": "wav"})
    assert r.choices[0].message.model_dump()["audio"] == audio_answer()["choices"][0]["message"]["audio"]
    assert up.requests[0]["modalities"] == ["text", "audio"]
    # The transcript is what the checks read: one with the canary fails.
    guard2, up2 = guarded([(200, audio_answer("the CANARY speaks"))], attempts=2)
    with pytest.raises(openai.UnprocessableEntityError):
        guard2.client().chat.completions.create(model="m", messages=USER)
    assert len(up2.requests) == 2


def test_an_answer_with_nothing_to_check_is_refused_saying_so(guarded, upstream_mode):
    guard, up = guarded([(200, audio_answer(transcript=None))], extra=upstream_mode)
    with pytest.raises(openai.APIStatusError) as e:
        guard.client().chat.completions.create(model="m", messages=USER)
    assert e.value.status_code == 502
    assert "cannot check" in e.value.message and "audio" in e.value.message, e.value.message
    assert "UklGR" not in e.value.response.text, "the audio itself is not quoted"
    assert len(up.requests) == 1, "an answer of a kind the checks cannot read is not retried"


def _plain(v):
    """`v` without null fields (null and absent are the same to the SDK)
    and without what the guard sets itself at the top: its `id` (it names
    the guard's record) and `created`."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _answer_fields(d):
    return _plain({k: v for k, v in d.items() if k not in ("id", "created")})


def test_every_answer_and_usage_field_and_the_upstream_headers_pass_unchanged(guarded, upstream_mode):
    sent = rich_answer()
    guard, up = guarded([(200, sent, UPSTREAM_HEADERS)], extra=upstream_mode)
    raw = guard.client().chat.completions.with_raw_response.create(model="m", messages=USER)
    got = raw.parse().model_dump(exclude_unset=True)
    want = {**sent, "model": "up-model"}
    assert _answer_fields(got) == _answer_fields(want)
    assert raw.parse()._request_id == "req_8f2a61c0d9"
    for k, v in UPSTREAM_HEADERS.items():
        if k.startswith("x-ratelimit-"):
            assert raw.headers.get(k) == v, (k, dict(raw.headers))
    assert "x-internal-backend" not in raw.headers
    assert "10.20.30.40" not in str(dict(raw.headers))


def test_every_field_survives_a_stream_both_ways(guarded, upstream_mode):
    sent = rich_answer()
    guard, up = guarded([(200, sent, UPSTREAM_HEADERS)], extra=upstream_mode)
    raw = guard.client().chat.completions.with_raw_response.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True})
    assert raw.headers.get("x-request-id") == "req_8f2a61c0d9"
    chunks = [c.model_dump(exclude_unset=True) for c in raw.parse()]
    want_msg = sent["choices"][0]["message"]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == want_msg["content"]
    assert [d["annotations"] for d in deltas if "annotations" in d] == [want_msg["annotations"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == want_msg["reasoning_content"]
    finish = [c["choices"][0] for c in chunks if c["choices"] and c["choices"][0].get("finish_reason")]
    assert len(finish) == 1
    assert finish[0]["finish_reason"] == "stop" and finish[0]["stop_reason"] == 128009
    assert finish[0]["logprobs"]["content"] == sent["choices"][0]["logprobs"]["content"]
    assert chunks[-1]["usage"] == sent["usage"]
    assert all(c["service_tier"] == "default" and c["system_fingerprint"] == "fp_44709d6fcb"
               for c in chunks)


def test_usage_details_are_summed_over_attempts(guarded):
    failing = rich_answer()
    failing["choices"][0]["message"]["content"] = "CANARY"
    guard, up = guarded([(200, failing), (200, rich_answer())])
    r = guard.client().chat.completions.create(model="m", messages=USER)
    u = r.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (80, 50, 130)
    assert u.prompt_tokens_details.cached_tokens == 64
    assert u.completion_tokens_details.reasoning_tokens == 20


def test_secrets_in_answer_fields_and_headers_are_masked(guarded, upstream_mode):
    sent = rich_answer()
    sent["choices"][0]["message"]["annotations"][0]["url_citation"]["url"] = \
        f"https://example.org/?key={UPSTREAM_KEY}"
    sent["service_tier"] = UPSTREAM_KEY
    headers = {**UPSTREAM_HEADERS, "x-request-id": f"req-{UPSTREAM_KEY}"}
    guard, up = guarded([(200, sent, headers)], extra=upstream_mode)
    raw = guard.client().chat.completions.with_raw_response.create(model="m", messages=USER)
    assert UPSTREAM_KEY not in raw.text
    assert UPSTREAM_KEY not in str(dict(raw.headers))
    got = raw.parse()
    assert got.choices[0].message.annotations[0].url_citation.url == "https://example.org/?key=***"
    assert raw.headers["x-request-id"] == "req-***"
