"""`probity serve` in front of the real model, with retries, driven by the
official `openai` SDK, streamed and not (issue 39, item 1)."""

import json

import openai

from conftest import MODEL, Probity
from probity_servers import Process

REQUESTS = 3


def guard_config(url):
    return f'''name = "real-guard"
call_attempts = 2
timeout_s = 120
on_nothing_passed = "last"
[upstream]
provider = "openai"
base_url = "{url}"
model = "{MODEL}"
max_tokens = 40
[retry]
attempts = 2
feedback = true
[[validator]]
name = "no_contractions"
message = "Output contains too many contractions"
check = \'\'\'count(output, "'") <= 1\'\'\'
[[validator]]
name = "short"
message = "Answer in fewer than 25 words"
kind = "words"
max = 25
'''


def test_the_guard_answers_the_official_client_streamed_and_not(model_url, tmp_path):
    p = Probity(tmp_path)
    p.write("guard.toml", guard_config(model_url))
    guard = Process(["serve", "--config", "guard.toml", "--listen", "127.0.0.1:0", "--store", p.store],
                    tmp_path, name="serve")
    try:
        client = openai.OpenAI(base_url=guard.base_url, api_key="unused", max_retries=0, timeout=300)
        plain = []
        for i in range(REQUESTS):
            r = client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"Thank you for tip {i}!"}])
            assert r.object == "chat.completion"
            assert r.choices[0].message.role == "assistant"
            assert r.choices[0].finish_reason in ("stop", "length")
            assert r.choices[0].message.content, r
            plain.append(r.choices[0].message.content)
        streamed = []
        for i in range(REQUESTS):
            chunks = list(client.chat.completions.create(
                model=MODEL, stream=True,
                messages=[{"role": "user", "content": f"How deep is bulb {i} planted?"}]))
            assert chunks and all(c.object == "chat.completion.chunk" for c in chunks)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert text, chunks
            finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
            assert finish and finish[-1] in ("stop", "length"), chunks
            streamed.append(text)
        assert guard.stop() == 0, guard.stderr()
    finally:
        guard.stop()

    report = p.report("real-guard")
    # Nothing lost: every request recorded, each with 1 or 2 attempts.
    guarded = report["guarded"]
    assert guarded is not None, json.dumps(report)[:2000]
    assert report["live"]["requests"] == 2 * REQUESTS, report["live"]
    measured = guarded["measured"]
    assert measured["requests"] == 2 * REQUESTS, measured
    assert guarded["attempts"] == 2
    assert sum(measured["histogram"]) + measured["nothing_published"] == 2 * REQUESTS, measured
    assert report["shape"]["checks"] == 2
    calls = report["run"]["model_calls"]
    assert 2 * REQUESTS <= calls <= 2 * 2 * REQUESTS, report["run"]
    for check in report["checks"]:
        r = check["rate"]
        assert 0 <= r["lower"] <= r["estimate"] <= r["upper"] <= 1, check
