//! `probity serve` is faithful to the Chat Completions protocol: request
//! fields forwarded (or refused naming them), messages intact, the
//! upstream's model, finish reason and tool calls passed on, its 4xx
//! passed back, and a streamed answer that never carries a byte of a
//! failing attempt. The upstream is a fake written here that records what
//! it receives.

use crate::common;

use common::{serve_cmd, start, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

type Reply = dyn Fn(usize, &Value) -> (u16, Value) + Send + Sync;

/// A reply streamed as server-sent events: `{"sse": [chunk, …]}`, one
/// event every 20 ms.
const SSE: &str = "sse";

/// Events the fake upstream wrote for each streamed call before its
/// client went away (or all of them).
type Written = Arc<Mutex<Vec<usize>>>;

fn fake_upstream(reply: Box<Reply>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let (addr, seen, _) = fake_streaming_upstream(reply);
    (addr, seen)
}

/// A fake OpenAI upstream on 127.0.0.1: records each request body and
/// answers `reply(call number, body)` — JSON, or events ([`SSE`]). One
/// request per connection.
fn fake_streaming_upstream(reply: Box<Reply>) -> (String, Arc<Mutex<Vec<Value>>>, Written) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let written: Written = Arc::new(Mutex::new(Vec::new()));
    let events_log = written.clone();
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate().take(200) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, answer) = reply(n, &body);
            log.lock().unwrap().push(body);
            if let Some(events) = answer.get(SSE).and_then(Value::as_array) {
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                );
                let mut sent = 0;
                for e in events.iter().map(Value::to_string).chain(["[DONE]".into()]) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    if write!(conn, "data: {e}\n\n")
                        .and_then(|_| conn.flush())
                        .is_err()
                    {
                        break;
                    }
                    sent += 1;
                }
                events_log.lock().unwrap().push(sent);
                continue;
            }
            let text = answer.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (addr, seen, written)
}

fn answer(content: Value, tool_calls: Option<Value>, finish: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if let Some(calls) = tool_calls {
        message["tool_calls"] = calls;
    }
    json!({
        "id": "up-1", "object": "chat.completion", "created": 1,
        "model": "up-model-2026-01-01",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    })
}

fn guard(dir: &Path, upstream: &str, check: &str) -> Server {
    guard_with(dir, upstream, &format!("check = '''{check}'''"))
}

/// A guard over the openai upstream at `upstream` with one validator
/// (`validator`: its keys besides name and message).
fn guard_with(dir: &Path, upstream: &str, validator: &str) -> Server {
    let config = dir.join("guard.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"proto\"\ncall_attempts = 1\nstream_keepalive_s = 0.2\n[upstream]\nprovider = \"openai\"\nbase_url = \"http://{upstream}/v1\"\nmodel = \"up-model\"\ntemperature = 0.1\n[retry]\nattempts = 3\n[[validator]]\nname = \"c\"\nmessage = \"no canary\"\n{validator}\n"
        ),
    )
    .unwrap();
    start(serve_cmd(dir, &config))
}

async fn post(addr: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_and_messages_reach_the_upstream_and_its_answer_comes_back() {
    let (up, seen) = fake_upstream(Box::new(|_, body| {
        if body.get("tools").is_some() {
            let calls = json!([{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]);
            (200, answer(Value::Null, Some(calls), "tool_calls"))
        } else {
            (200, answer(json!("plain answer"), None, "length"))
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), &up, "!output.contains(\"CANARY\")");
    let messages = json!([
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ]},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
            "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "a cat"},
    ]);
    let fields = json!({
        "temperature": 0.7, "top_p": 0.9, "max_tokens": 5, "stop": ["\n\n"], "seed": 3,
        "presence_penalty": 0.1, "frequency_penalty": 0.2, "logit_bias": {"50256": -100},
        "logprobs": false, "user": "u-1", "metadata": {"team": "a"},
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
    });
    let mut body = json!({"model": "client-model", "messages": messages});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, headers, text) = post(&g.1, &body).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["x-probity-pinned"], "model");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["model"], "up-model-2026-01-01");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["choices"][0]["message"]["content"], "plain answer");
    let sent = seen.lock().unwrap()[0].clone();
    // The request's fields win over [upstream]'s; the pinned model does not.
    for (k, v) in fields.as_object().unwrap() {
        assert_eq!(&sent[k], v, "{k}: {sent}");
    }
    assert_eq!(sent["model"], "up-model");
    assert_eq!(sent["messages"], messages);

    // Tools: the call passes through; the check saw it (it would fail
    // on "CANARY" in the arguments).
    let tools = json!({"model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "tool_choice": "required", "parallel_tool_calls": false});
    let (status, _, text) = post(&g.1, &tools).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let sent = seen.lock().unwrap()[1].clone();
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(sent["tools"], tools["tools"]);

    let models: Value = reqwest::get(format!("http://{}/v1/models", g.1))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "up-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_never_carries_a_failing_attempt() {
    // The first attempt carries the canary; later ones are clean. The
    // upstream is slow enough that the stream opens with keep-alives.
    let (up, seen) = fake_upstream(Box::new(|n, _| {
        std::thread::sleep(std::time::Duration::from_millis(150));
        let text = if n == 0 {
            "CANARY secret draft"
        } else {
            "A clean answer, checked."
        };
        (200, answer(json!(text), None, "stop"))
    }));
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), &up, "!output.contains(\"CANARY\")");
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true,
        "stream_options": {"include_usage": true}});
    let (status, headers, events) = post(&g.1, &body).await;
    assert_eq!(status, 200, "{events}");
    // Opened before the outcome was known: no outcome headers.
    assert!(headers.get("x-probity-attempts").is_none());
    assert!(!events.contains("CANARY"), "{events}");
    assert!(events.starts_with(": "), "kept alive while held: {events}");
    let chunks: Vec<Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .take_while(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "A clean answer, checked.");
    // Usage summed over both attempts, in the last chunk before [DONE].
    assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 20);
    assert!(events.ends_with("data: [DONE]\n\n"));
    // The cost the headers could not carry, as a comment before the answer.
    assert!(
        events.contains(
            ": probity attempts=2 calls=2 tokens=20 attempt-tokens=10,10 retry-tokens=10 cut-tokens=0\n\n"
        ),
        "{events}"
    );
    // The upstream is asked to stream (it answered whole: read as such).
    let sent = seen.lock().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_refusal_reaches_the_client_and_unforwardable_fields_are_refused() {
    let (up, seen) = fake_upstream(Box::new(|_, _| {
        (
            400,
            json!({"error": {"message": "Unrecognized request argument supplied: frobnicate", "type": "invalid_request_error"}}),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), &up, "true");
    let (status, _, text) = post(
        &g.1,
        &json!({"messages": [{"role": "user", "content": "hi"}], "frobnicate": 1}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("frobnicate"), "{text}");
    // Refused once is refused again: no second attempt ([retry] attempts = 3).
    assert_eq!(seen.lock().unwrap().len(), 1);
    // A check no prefix can settle (`true`): the answer is asked for whole.
    assert_eq!(seen.lock().unwrap()[0].get("stream"), None);

    // The in-process simulator takes no sampling field: refused, named.
    let sim_dir = tempfile::tempdir().unwrap();
    let config = sim_dir.path().join("guard.toml");
    std::fs::write(
        &config,
        "[upstream]\nprovider = \"sim\"\n[[validator]]\nname = \"c\"\ncheck = \"true\"\n",
    )
    .unwrap();
    let sim = start(serve_cmd(sim_dir.path(), &config));
    let (status, _, text) = post(
        &sim.1,
        &json!({"messages": [{"role": "user", "content": "hi"}], "temperature": 0.2}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("`temperature`"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_upstream_gets_the_fields_mapped_and_answers_in_openai_shape() {
    let (up, seen) = fake_upstream(Box::new(|_, _| {
        (
            200,
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-2026",
                "content": [{"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 11, "output_tokens": 4}}),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        format!("call_attempts = 1\n[upstream]\nprovider = \"anthropic\"\nbase_url = \"http://{up}\"\nmodel = \"claude-x\"\napi_key_env = \"PROTO_ANTHROPIC_KEY\"\n[[validator]]\nname = \"c\"\ncheck = '''output.contains(\"get_weather\")'''\n"),
    )
    .unwrap();
    let mut cmd = serve_cmd(dir.path(), &config);
    cmd.env("PROTO_ANTHROPIC_KEY", "sk-ant-test-key-123456");
    let g = start(cmd);
    let body = json!({"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"}],
        "max_tokens": 50, "stop": "END", "temperature": 0.3,
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
    let (status, _, text) = post(&g.1, &body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["model"], "claude-x-2026");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Checking.");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Oslo\"}"
    );
    assert_eq!(v["usage"]["total_tokens"], 15);
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(sent["system"], "Be brief.");
    assert_eq!(sent["max_tokens"], 50);
    assert_eq!(sent["stop_sequences"], json!(["END"]));
    assert_eq!(sent["temperature"], 0.3);
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    assert_eq!(sent["tools"][0]["name"], "get_weather");
    // A field with no Anthropic equivalent is refused, named.
    let (status, _, text) = post(
        &g.1,
        &json!({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"1": 1}}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("`logit_bias`"), "{text}");
}

fn chunk(content: &str) -> Value {
    json!({"id": "s", "object": "chat.completion.chunk", "created": 1, "model": "up-model-s",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_upstream_answer_is_abandoned_once_its_prefix_fails() {
    // The first answer says CANARY in its third piece, then goes on for
    // 40 more; the second is clean.
    let (up, seen, written) = fake_streaming_upstream(Box::new(|n, _| {
        let mut events = vec![chunk("Well, "), chunk("the ")];
        if n == 0 {
            events.push(chunk("CANARY "));
            events.extend((0..40).map(|_| chunk("filler ")));
        } else {
            events.push(chunk("answer is clean."));
        }
        events.push(json!({"id": "s", "object": "chat.completion.chunk", "created": 1, "model": "up-model-s",
            "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 9, "total_tokens": 13}}));
        (200, json!({ SSE: events }))
    }));
    let dir = tempfile::tempdir().unwrap();
    let g = guard_with(
        dir.path(),
        &up,
        "kind = \"not-contains\"\nvalue = \"CANARY\"",
    );
    let (status, headers, text) = post(
        &g.1,
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["x-probity-attempts"], "2");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "Well, the answer is clean."
    );
    assert_eq!(v["model"], "up-model-s");
    // The doomed answer was dropped a few events after the canary, long
    // before its 45 events; the clean one was read to the end.
    // The fake upstream logs a stream once its last event is written,
    // which may be just after the guard has answered.
    for _ in 0..100 {
        if written.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let written = written.lock().unwrap().clone();
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written[0] < 12, "the upstream kept streaming: {written:?}");
    assert_eq!(written[1], 5);
    // Both asked to stream; the retry carried the validator's message.
    let sent = seen.lock().unwrap();
    assert_eq!(sent[0]["stream"], true);
    assert!(
        sent[1]["messages"].to_string().contains("no canary"),
        "{}",
        sent[1]
    );
    drop(sent);
    // The abandoned attempt is stored: its prefix, Fail in the settled check.
    assert_eq!(g.stop("TERM"), Some(0));
    let store = probity_engine::store::Store::open(&dir.path().join("runs.db")).unwrap();
    let run = store.latest_named("proto").unwrap().unwrap();
    let attempts = store.attempts(run).unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts[0].output.as_deref().unwrap().contains("CANARY"));
    assert_eq!(attempts[0].cells, [probity_core::Cell::Fail]);
    assert!(attempts[1].published);
}

/// Under `on_nothing_passed = "last"` the published output is a whole
/// answer: attempts are cut short on a failing prefix, but not the final
/// one, which may be published (before, its prefix went out as a complete
/// answer, `finish_reason: "stop"`, usage 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_output_published_is_whole_never_a_cut_prefix() {
    let (up, _, written) = fake_streaming_upstream(Box::new(|_, _| {
        let mut events = vec![chunk("Well, "), chunk("the "), chunk("CANARY ")];
        events.extend((0..40).map(|_| chunk("filler ")));
        events.push(json!({"id": "s", "object": "chat.completion.chunk", "created": 1, "model": "up-model-s",
            "choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 43, "total_tokens": 47}}));
        (200, json!({ SSE: events }))
    }));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"proto\"\ncall_attempts = 1\non_nothing_passed = \"last\"\n[upstream]\nprovider = \"openai\"\nbase_url = \"http://{up}/v1\"\nmodel = \"up-model\"\n[retry]\nattempts = 3\n[[validator]]\nname = \"c\"\nmessage = \"no canary\"\nkind = \"not-contains\"\nvalue = \"CANARY\"\n"
        ),
    )
    .unwrap();
    let g = start(serve_cmd(dir.path(), &config));
    let (status, headers, text) = post(
        &g.1,
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["x-probity-outcome"], "nothing-passed");
    assert_eq!(headers["x-probity-attempts"], "3");
    let v: Value = serde_json::from_str(&text).unwrap();
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        content,
        format!("Well, the CANARY {}", "filler ".repeat(40)),
        "{text}"
    );
    // The whole last answer's 43 tokens, and the two cut attempts' too
    // (estimated: their usage never arrives), said apart in a header.
    let cut: u64 = headers["x-probity-cut-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cut > 0, "{headers:?}");
    assert!(
        v["usage"]["completion_tokens"].as_u64().unwrap() > 43,
        "{text}"
    );
    for _ in 0..100 {
        if written.lock().unwrap().len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The first two were cut short; the final one was read to its end.
    let written = written.lock().unwrap().clone();
    assert_eq!(written.len(), 3, "{written:?}");
    assert!(written[0] < 12 && written[1] < 12, "{written:?}");
    assert_eq!(written[2], 45, "{written:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_upstream_call() {
    // Each answer streams 45 events over about a second.
    let (up, _, written) = fake_streaming_upstream(Box::new(|_, _| {
        (
            200,
            json!({ SSE: (0..45).map(|_| chunk("word ")).collect::<Vec<_>>() }),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let g = guard(dir.path(), &up, "true");
    for stream in [false, true] {
        let body =
            json!({"messages": [{"role": "user", "content": "hi"}], "stream": stream}).to_string();
        let mut conn = std::net::TcpStream::connect(&g.1).unwrap();
        write!(
            conn,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
        drop(conn);
    }
    // Both upstream calls end well before their 45 events.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while written.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The fake upstream logs a stream once its last event is written,
    // which may be just after the guard has answered.
    for _ in 0..100 {
        if written.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let written = written.lock().unwrap().clone();
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.iter().all(|&n| n < 30), "{written:?}");
    let metrics = reqwest::get(format!("http://{}/metrics", g.1))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("probity_cancelled_total 2"), "{metrics}");
}
