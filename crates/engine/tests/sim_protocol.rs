//! `probity sim serve` speaks enough of OpenAI's Chat Completions protocol to
//! stand in for it upstream of a proxy: request fields honoured, streamed
//! answers, and what it saw (fields, the last body, cancellations) in
//! `/stats`. All over real HTTP.

use probity_engine::sim::server::{spawn_test_server, FaultConfig, TestServer};
use probity_engine::sim::{SimConfig, SimModel};
use serde_json::{json, Value};
use std::time::Duration;

async fn server(f: impl FnOnce(&mut SimConfig)) -> TestServer {
    let mut c = SimConfig::default();
    f(&mut c);
    let (_, s) = spawn_test_server(SimModel::new(c).unwrap(), FaultConfig::default())
        .await
        .unwrap();
    s
}

fn body(extra: Value) -> Value {
    let mut b = json!({"model": "gpt-test", "seed": 7,
        "messages": [{"role": "user", "content": "How do tides work near the coast?"}]});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

async fn post(s: &TestServer, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn content(v: &Value, i: usize) -> &str {
    v["choices"][i]["message"]["content"].as_str().unwrap()
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| e.strip_prefix("data: ").expect(e).to_string())
        .collect()
}

async fn stream(s: &TestServer, body: &Value) -> (reqwest::header::HeaderMap, Vec<String>) {
    let r = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let headers = r.headers().clone();
    (headers, sse_data(&r.text().await.unwrap()))
}

#[tokio::test]
async fn a_plain_answer_echoes_the_model_and_counts_usage() {
    let s = server(|_| {}).await;
    let (status, v) = post(&s, &body(json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(v["model"], "gpt-test");
    assert_eq!(v["object"], "chat.completion");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert!(v["system_fingerprint"].as_str().unwrap().starts_with("fp_"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(v["created"].as_u64().unwrap().abs_diff(now) < 60);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(content(&v, 0).contains("how do tides work"));
    let u = &v["usage"];
    let words = content(&v, 0).split_whitespace().count() as u64;
    assert_eq!(u["completion_tokens"], words);
    assert_eq!(u["prompt_tokens"], 7);
    assert_eq!(
        u["total_tokens"].as_u64(),
        Some(words + 7),
        "usage is consistent"
    );
    // The same seed, the same answer.
    let (_, again) = post(&s, &body(json!({}))).await;
    assert_eq!(content(&again, 0), content(&v, 0));
}

#[tokio::test]
async fn max_tokens_and_stop_cut_the_answer() {
    let s = server(|_| {}).await;
    let (_, full) = post(&s, &body(json!({}))).await;
    let full = content(&full, 0).to_string();
    for field in ["max_tokens", "max_completion_tokens"] {
        let (_, v) = post(&s, &body(json!({field: 3}))).await;
        let cut = content(&v, 0);
        assert_eq!(cut.split_whitespace().count(), 3, "{cut}");
        assert!(full.starts_with(cut));
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["usage"]["completion_tokens"], 3);
    }
    // A stop string: cut before its first occurrence.
    let (_, v) = post(&s, &body(json!({"stop": ["tides", "zzz"]}))).await;
    let at = full.find("tides").unwrap();
    assert_eq!(content(&v, 0), &full[..at]);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let (_, v) = post(&s, &body(json!({"stop": "."}))).await;
    assert_eq!(content(&v, 0), &full[..full.find('.').unwrap()]);
}

#[tokio::test]
async fn response_format_gives_json_objects() {
    let s = server(|_| {}).await;
    let (_, plain) = post(&s, &body(json!({}))).await;
    let (_, v) = post(
        &s,
        &body(json!({"response_format": {"type": "json_object"}})),
    )
    .await;
    let obj: Value = serde_json::from_str(content(&v, 0)).unwrap();
    assert_eq!(obj, json!({"answer": content(&plain, 0)}));
    let schema = json!({"type": "json_schema", "json_schema": {"name": "reply", "strict": true,
        "schema": {"type": "object", "properties": {"text": {"type": "string"},
            "score": {"type": "number"}}, "required": ["text", "score"]}}});
    let (_, v) = post(&s, &body(json!({"response_format": schema}))).await;
    let obj: Value = serde_json::from_str(content(&v, 0)).unwrap();
    assert_eq!(obj["text"], content(&plain, 0));
    assert_eq!(obj["score"], 0);
}

fn weather_tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}])
}

#[tokio::test]
async fn tools_are_called_as_openai_does() {
    let s = server(|_| {}).await;
    let ask = |text: &str, choice: Value| {
        let mut b = json!({"model": "m", "tools": weather_tools(),
            "messages": [{"role": "user", "content": text}]});
        if !choice.is_null() {
            b["tool_choice"] = choice;
        }
        b
    };
    for (text, choice) in [
        ("What's the weather in Oslo?", Value::Null),
        ("hello", json!("required")),
        (
            "hello",
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ),
    ] {
        let (status, v) = post(&s, &ask(text, choice)).await;
        assert_eq!(status, 200);
        let c = &v["choices"][0];
        assert_eq!(c["finish_reason"], "tool_calls", "{v}");
        assert!(c["message"]["content"].is_null());
        let call = &c["message"]["tool_calls"][0];
        assert!(call["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "get_weather");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["city"], text);
    }
    // auto without the trigger, and none: text.
    for (text, choice) in [("hello", Value::Null), ("weather?", json!("none"))] {
        let (_, v) = post(&s, &ask(text, choice)).await;
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert!(v["choices"][0]["message"]["content"].is_string());
    }
    // The tool's result comes back (assistant tool_calls, a tool message,
    // content parts with an image): the answer is text.
    let follow_up = json!({"model": "m", "tools": weather_tools(), "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}]});
    let (status, v) = post(&s, &follow_up).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(content(&v, 0).contains("sunny"));
}

#[tokio::test]
async fn n_choices_and_logprobs() {
    let s = server(|_| {}).await;
    let (_, v) = post(
        &s,
        &body(json!({"n": 3, "logprobs": true, "top_logprobs": 2})),
    )
    .await;
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    let texts: std::collections::HashSet<&str> = (0..3).map(|i| content(&v, i)).collect();
    assert!(texts.len() > 1, "choices differ: {texts:?}");
    let total: usize = (0..3)
        .map(|i| content(&v, i).split_whitespace().count())
        .sum();
    assert_eq!(v["usage"]["completion_tokens"], total as u64);
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i);
        let lp = c["logprobs"]["content"].as_array().unwrap();
        let joined: String = lp.iter().map(|e| e["token"].as_str().unwrap()).collect();
        assert_eq!(joined, content(&v, i));
        for e in lp {
            assert!(e["logprob"].as_f64().unwrap() <= 0.0);
            assert_eq!(e["top_logprobs"].as_array().unwrap().len(), 2);
        }
    }
    let (_, v) = post(&s, &body(json!({}))).await;
    assert!(v["choices"][0]["logprobs"].is_null());
}

#[tokio::test]
async fn a_wrong_field_is_a_400_naming_it() {
    let s = server(|_| {}).await;
    for (extra, param) in [
        (json!({"max_tokens": "ten"}), "max_tokens"),
        (json!({"n": 0}), "n"),
        (json!({"stop": 5}), "stop"),
        (json!({"stream": "yes"}), "stream"),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            "messages[0].role",
        ),
    ] {
        let (status, v) = post(&s, &body(extra)).await;
        assert_eq!(status, 400, "{v}");
        assert_eq!(v["error"]["param"], param);
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(v["error"]["message"].as_str().unwrap().contains(param));
    }
}

#[tokio::test]
async fn stats_count_fields_and_keep_the_last_body() {
    let s = server(|_| {}).await;
    post(
        &s,
        &body(json!({"temperature": 0.2, "tools": weather_tools()})),
    )
    .await;
    post(
        &s,
        &body(json!({"temperature": 0.5, "x_unknown": {"a": 1}})),
    )
    .await;
    let last = body(json!({"top_p": 0.9}));
    post(&s, &last).await;
    let stats: Value = reqwest::get(format!("http://{}/stats", s.addr()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"], 3);
    let f = &stats["fields"];
    assert_eq!(
        (&f["temperature"], &f["tools"], &f["x_unknown"], &f["top_p"]),
        (&json!(2), &json!(1), &json!(1), &json!(1))
    );
    assert_eq!(f["messages"], 3);
    let got: Value = reqwest::get(format!("http://{}/stats/last_request", s.addr()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got, last);
    assert_eq!(s.last_request(), last);
}

fn parse_chunks(data: &[String]) -> Vec<Value> {
    data.iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_stream_carries_the_same_text_in_chunks() {
    let s = server(|_| {}).await;
    let (_, whole) = post(&s, &body(json!({}))).await;
    let (headers, data) = stream(
        &s,
        &body(json!({"stream": true, "stream_options": {"include_usage": true}})),
    )
    .await;
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    assert_eq!(data.last().unwrap(), "[DONE]");
    assert_eq!(data.iter().filter(|d| *d == "[DONE]").count(), 1);
    let chunks = parse_chunks(&data);
    assert!(chunks.len() > 4, "pieces of a few tokens: {}", chunks.len());
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], chunks[0]["id"]);
        assert_eq!(c["model"], "gpt-test");
    }
    let first = &chunks[0]["choices"][0];
    assert_eq!(
        first["delta"],
        json!({"role": "assistant", "content": "", "refusal": null})
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, content(&whole, 0));
    // Then an empty delta with the finish reason, then the usage alone.
    let n = chunks.len();
    assert_eq!(chunks[n - 2]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[n - 2]["choices"][0]["finish_reason"], "stop");
    assert!(chunks[n - 2]["usage"].is_null());
    assert_eq!(chunks[n - 1]["choices"], json!([]));
    assert_eq!(chunks[n - 1]["usage"], whole["usage"]);
    // Without include_usage, no usage chunk and no usage field.
    let (_, data) = stream(&s, &body(json!({"stream": true, "max_tokens": 4}))).await;
    let chunks = parse_chunks(&data);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    let last = &chunks.last().unwrap()["choices"][0];
    assert_eq!(last["finish_reason"], "length");
}

#[tokio::test]
async fn a_tool_call_streams_its_arguments_in_fragments() {
    let s = server(|_| {}).await;
    let b = json!({"model": "m", "stream": true, "tools": weather_tools(),
        "messages": [{"role": "user", "content": "What is the weather like in Oslo today?"}]});
    let (_, data) = stream(&s, &b).await;
    let chunks = parse_chunks(&data);
    let first = &chunks[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(first["index"], 0);
    assert!(first["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(first["function"]["name"], "get_weather");
    let fragments: Vec<&str> = chunks[1..]
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert!(fragments.len() > 1);
    let args: Value = serde_json::from_str(&fragments.concat()).unwrap();
    assert_eq!(args["city"], "What is the weather like in Oslo today?");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn generated_tokens_count_what_the_model_sent() {
    let s = server(|c| c.token_ms = 5).await;
    let client = reqwest::Client::new();
    // A whole answer: all its completion tokens.
    let whole: Value = client
        .post(format!("{}/chat/completions", s.base_url()))
        .json(&body(json!({"seed": 3})))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let n = whole["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(n > 5);
    assert_eq!(s.stats().generated_tokens, n);
    // The same answer streamed and read to the end: as many again.
    let mut r = client
        .post(format!("{}/chat/completions", s.base_url()))
        .json(&body(json!({"seed": 3, "stream": true})))
        .send()
        .await
        .unwrap();
    while r.chunk().await.unwrap().is_some() {}
    assert_eq!(s.stats().generated_tokens, 2 * n);
    // Streamed and dropped after the role and one piece: fewer.
    let mut r = client
        .post(format!("{}/chat/completions", s.base_url()))
        .json(&body(json!({"seed": 3, "stream": true})))
        .send()
        .await
        .unwrap();
    r.chunk().await.unwrap().unwrap();
    r.chunk().await.unwrap().unwrap();
    drop(r);
    wait_for_cancelled(&s, 1).await;
    let third = s.stats().generated_tokens - 2 * n;
    assert!(third < n, "{third} of {n}");
}

async fn wait_for_cancelled(s: &TestServer, n: u64) {
    for _ in 0..100 {
        if s.stats().cancelled >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    panic!("cancelled stayed {}", s.stats().cancelled);
}

#[tokio::test]
async fn a_client_leaving_mid_stream_is_counted_cancelled() {
    let s = server(|c| c.token_ms = 30).await;
    let mut r = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.base_url()))
        .json(&body(json!({"stream": true})))
        .send()
        .await
        .unwrap();
    r.chunk().await.unwrap().unwrap();
    r.chunk().await.unwrap().unwrap();
    drop(r);
    wait_for_cancelled(&s, 1).await;
    assert_eq!(s.stats().requests, 1);
}

#[tokio::test]
async fn a_client_leaving_during_the_latency_is_counted_cancelled() {
    let s = server(|c| c.latency_ms = 2000).await;
    let sent = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.base_url()))
        .json(&body(json!({})))
        .timeout(Duration::from_millis(150))
        .send()
        .await;
    assert!(sent.is_err());
    wait_for_cancelled(&s, 1).await;
}

#[tokio::test]
async fn faults_before_a_stream_keep_their_status() {
    let faults = FaultConfig {
        rate_limit: 1.0,
        ..FaultConfig::default()
    };
    let (_, s) = spawn_test_server(SimModel::new(SimConfig::default()).unwrap(), faults)
        .await
        .unwrap();
    let (status, v) = post(&s, &body(json!({"stream": true}))).await;
    assert_eq!(status, 429);
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let model = SimModel::new(SimConfig {
        error_rate: 1.0,
        ..SimConfig::default()
    })
    .unwrap();
    let (_, s) = spawn_test_server(model, FaultConfig::default())
        .await
        .unwrap();
    let (status, _) = post(&s, &body(json!({"stream": true}))).await;
    assert_eq!(status, 500);
    assert_eq!(s.stats().cancelled, 0);
}
