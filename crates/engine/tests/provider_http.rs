//! HTTP providers against the simulator server and a tiny Anthropic stand-in;
//! a conversation sent whole through each (a stand-in records the body).

use crate::common;

use probity_core::Input;
use probity_engine::provider::{
    AnthropicConfig, AnthropicProvider, HttpConfig, HttpProvider, Message, OpenAiConfig,
    OpenAiProvider, Provider, ProviderError, Request, Role,
};
use probity_engine::sim::server::{spawn_test_server, FaultConfig};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::system::ProviderConfig;
use std::time::Duration;

fn request(text: &str, repetition: u32) -> Request {
    Request {
        messages: vec![
            Message::text(Role::System, "Be polite."),
            Message::text(Role::User, text),
        ],
        repetition,
        attempt: 0,
        input: Input::text("in-1", text),
    }
}

fn sim() -> SimModel {
    SimModel::new(SimConfig {
        seed: Some(0),
        ..SimConfig::default()
    })
    .unwrap()
}

fn openai(base_url: String, f: impl FnOnce(&mut OpenAiConfig)) -> OpenAiProvider {
    let mut c = OpenAiConfig::new("probity-sim");
    c.base_url = base_url;
    f(&mut c);
    OpenAiProvider::new(c).unwrap()
}

#[tokio::test]
async fn openai_plain_and_seeded() {
    let (_, server) = spawn_test_server(sim(), FaultConfig::default())
        .await
        .unwrap();
    let p = openai(server.base_url(), |_| {});
    let req = request("Thank you! What is a monad?", 0);
    let c = p.complete(&req).await.unwrap();
    assert!(c.text.contains("what is a monad"), "{}", c.text);
    assert!(c.input_tokens.unwrap() > 0 && c.output_tokens.unwrap() > 0);

    // With a seed: seed + repetition is the sim's repetition, so it is reproducible.
    let p = openai(server.base_url(), |c| {
        c.seed = Some(100);
        c.temperature = Some(0.7);
        c.extra.insert("top_p".into(), serde_json::json!(0.9));
    });
    assert_eq!(p.body(&req)["seed"], 100);
    assert_eq!(p.body(&request("x", 5))["seed"], 105);
    assert_eq!(p.body(&req)["top_p"], 0.9);
    let a = p.complete(&request("Explain tides.", 5)).await.unwrap();
    let b = p.complete(&request("Explain tides.", 5)).await.unwrap();
    assert_eq!(a.text, b.text);
    let want = sim()
        .generate(&request("Explain tides.", 5).messages, 105, 0)
        .unwrap();
    assert_eq!(a.text, want.text);
    assert_eq!(server.stats().requests, 3);
    assert_eq!(server.stats().faults_injected, 0);
}

#[tokio::test]
async fn openai_rate_limit_with_retry_after() {
    let faults = FaultConfig {
        rate_limit: 1.0,
        retry_after_secs: 7,
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(sim(), faults).await.unwrap();
    let err = openai(server.base_url(), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            headers: Vec::new(),
        }
    );
    assert!(err.is_retryable());

    // retry-after-ms wins when present.
    let faults = FaultConfig {
        rate_limit: 1.0,
        retry_after_ms: Some(250),
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(sim(), faults).await.unwrap();
    let err = openai(server.base_url(), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(250)));
    let stats = server.stats();
    assert_eq!((stats.requests, stats.faults_injected), (1, 1));
    assert_eq!(stats.by_kind["rate_limit"], 1);
}

#[tokio::test]
async fn openai_server_error_malformed_and_timeout() {
    let (_, server) = spawn_test_server(
        sim(),
        FaultConfig {
            server_error: 1.0,
            ..FaultConfig::default()
        },
    )
    .await
    .unwrap();
    let err = openai(server.base_url(), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::Server { status: 500, .. }),
        "{err:?}"
    );

    let (_, server) = spawn_test_server(
        sim(),
        FaultConfig {
            malformed: 1.0,
            ..FaultConfig::default()
        },
    )
    .await
    .unwrap();
    let err = openai(server.base_url(), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::BadResponse(_)), "{err:?}");
    assert!(!err.is_retryable());

    let (_, server) = spawn_test_server(
        sim(),
        FaultConfig {
            timeout: 1.0,
            timeout_ms: 5_000,
            ..FaultConfig::default()
        },
    )
    .await
    .unwrap();
    let t0 = std::time::Instant::now();
    let err = openai(server.base_url(), |c| c.timeout_s = 0.2)
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert_eq!(err, ProviderError::Timeout(Duration::from_millis(200)));
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(server.stats().by_kind["timeout"], 1);

    // Nothing listening: a transport error.
    let addr = server.addr();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = openai(format!("http://{addr}/v1"), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn openai_rejected_on_bad_request() {
    // The sim server answers 404 for an unknown path: a final rejection.
    let (_, server) = spawn_test_server(sim(), FaultConfig::default())
        .await
        .unwrap();
    let err = openai(format!("http://{}/nope", server.addr()), |_| {})
        .complete(&request("hi", 0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::Rejected { status: 404, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn openai_key_from_env_never_leaks() {
    // Missing variable: a config error naming it.
    let mut c = OpenAiConfig::new("m");
    c.api_key_env = Some("PROBITY_TEST_NO_SUCH_KEY".into());
    let err = OpenAiProvider::new(c.clone()).unwrap_err();
    assert!(
        err.to_string().contains("PROBITY_TEST_NO_SUCH_KEY"),
        "{err}"
    );
    let err = ProviderConfig::Openai(c).build().err().unwrap();
    assert!(
        err.to_string().contains("PROBITY_TEST_NO_SUCH_KEY"),
        "{err}"
    );

    // Present: sent as Bearer, absent from Debug and fingerprint and errors.
    let secret = "sk-test-SECRET-123456";
    std::env::set_var("PROBITY_TEST_OPENAI_KEY", secret);
    let (_, server) = spawn_test_server(
        sim(),
        FaultConfig {
            server_error: 1.0,
            ..FaultConfig::default()
        },
    )
    .await
    .unwrap();
    let p = openai(server.base_url(), |c| {
        c.api_key_env = Some("PROBITY_TEST_OPENAI_KEY".into())
    });
    assert!(!format!("{p:?}").contains(secret));
    assert!(!p.fingerprint().contains(secret));
    let err = p.complete(&request("hi", 0)).await.unwrap_err();
    assert!(!format!("{err:?}").contains(secret));
}

#[tokio::test]
async fn generic_http_provider_with_json_pointer() {
    let (_, server) = spawn_test_server(sim(), FaultConfig::default())
        .await
        .unwrap();
    std::env::set_var("PROBITY_TEST_HTTP_TOKEN", "tok-987");
    let toml_src = format!(
        r#"
        provider = "http"
        url = "http://{}/v1/chat/completions"
        headers = {{ Authorization = "Bearer ${{ENV:PROBITY_TEST_HTTP_TOKEN}}" }}
        output_pointer = "/choices/0/message/content"
        body = {{ model = "m", messages = "{{{{ messages }}}}", seed = "{{{{ repetition }}}}", user = "{{{{ input.id }}}}-x" }}
        "#,
        server.addr()
    );
    let cfg: ProviderConfig = toml::from_str(&toml_src).unwrap();
    let p = cfg.build().unwrap();
    assert!(!p.fingerprint().contains("tok-987"));
    let req = request("Thank you! Explain JSON pointers.", 3);
    let c = p.complete(&req).await.unwrap();
    let want = sim().generate(&req.messages, 3, 0).unwrap();
    assert_eq!(c.text, want.text);

    // The body renders with types preserved.
    let ProviderConfig::Http(hc) = cfg else {
        unreachable!()
    };
    let hp = HttpProvider::new(hc.clone()).unwrap();
    let body = hp.body(&req).unwrap();
    assert_eq!(body["seed"], 3);
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["user"], "in-1-x");

    // A pointer to nothing is a bad response; an undefined variable is a final error.
    let mut bad = hc.clone();
    bad.output_pointer = "/choices/0/text".into();
    let err = HttpProvider::new(bad)
        .unwrap()
        .complete(&req)
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::BadResponse(_)), "{err:?}");
    let mut bad = hc.clone();
    bad.body = serde_json::json!({"messages": "{{ messages }}", "x": "{{ input.nope }}"});
    let err = HttpProvider::new(bad)
        .unwrap()
        .complete(&req)
        .await
        .unwrap_err();
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("nope"), "{err}");
    // Missing env var in a header: config error naming it.
    let mut bad = HttpConfig::new("http://127.0.0.1:1/x");
    bad.headers
        .insert("X-Key".into(), "${ENV:PROBITY_TEST_NOT_SET_HDR}".into());
    let err = HttpProvider::new(bad).unwrap_err();
    assert!(
        err.to_string().contains("PROBITY_TEST_NOT_SET_HDR"),
        "{err}"
    );
}

#[tokio::test]
async fn anthropic_provider_against_a_stub() {
    use axum::http::HeaderMap;
    use axum::routing::post;
    use axum::Json;
    use serde_json::{json, Value};

    async fn messages(
        headers: HeaderMap,
        Json(body): Json<Value>,
    ) -> (axum::http::StatusCode, Json<Value>) {
        let ok = headers.get("x-api-key").and_then(|v| v.to_str().ok()) == Some("ant-key-1")
            && headers
                .get("anthropic-version")
                .and_then(|v| v.to_str().ok())
                == Some("2023-06-01")
            && body["system"] == "Be polite."
            && body["max_tokens"] == 64
            && body["messages"].as_array().map(|m| m.len()) == Some(1)
            && body["messages"][0]["role"] == "user";
        if !ok {
            return (
                axum::http::StatusCode::BAD_REQUEST,
                Json(json!({"error": {"message": "bad", "body": body}})),
            );
        }
        let text = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_uppercase();
        (
            axum::http::StatusCode::OK,
            Json(json!({
                "id": "msg_1", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "Echo: "}, {"type": "text", "text": text}],
                "usage": {"input_tokens": 12, "output_tokens": 3}
            })),
        )
    }
    let app = axum::Router::new().route("/v1/messages", post(messages));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    std::env::set_var("PROBITY_TEST_ANTHROPIC_KEY", "ant-key-1");
    let mut c = AnthropicConfig::new("claude-test");
    c.base_url = format!("http://{addr}");
    c.api_key_env = "PROBITY_TEST_ANTHROPIC_KEY".into();
    c.max_tokens = 64;
    let p = AnthropicProvider::new(c.clone()).unwrap();
    assert!(!format!("{p:?}").contains("ant-key-1"));
    assert!(!p.fingerprint().contains("ant-key-1"));
    let out = p.complete(&request("hello", 0)).await.unwrap();
    assert_eq!(out.text, "Echo: HELLO");
    assert_eq!((out.input_tokens, out.output_tokens), (Some(12), Some(3)));

    // Wrong key → the stub rejects with 400.
    std::env::set_var("PROBITY_TEST_ANTHROPIC_KEY2", "wrong");
    c.api_key_env = "PROBITY_TEST_ANTHROPIC_KEY2".into();
    let err = AnthropicProvider::new(c.clone())
        .unwrap()
        .complete(&request("hello", 0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::Rejected { status: 400, .. }),
        "{err:?}"
    );
    // Missing key env var.
    c.api_key_env = "PROBITY_TEST_ANTHROPIC_MISSING".into();
    let err = AnthropicProvider::new(c).unwrap_err();
    assert!(err.to_string().contains("PROBITY_TEST_ANTHROPIC_MISSING"));
}

#[tokio::test]
async fn server_routes_and_stats_over_http() {
    let (addr, server) = spawn_test_server(sim(), FaultConfig::default())
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let health = client
        .get(format!("http://{addr}/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let models: serde_json::Value = client
        .get(format!("http://{addr}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "probity-sim");
    // Unseeded requests use a counter: two calls differ in repetition.
    let body = serde_json::json!({"model": "x", "messages": [{"role": "user", "content": "Hi"}]});
    for _ in 0..3 {
        let r = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let bad = client
        .post(format!("http://{addr}/v1/chat/completions"))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let stats: serde_json::Value = client
        .get(format!("http://{addr}/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"], 4);
    assert_eq!(stats["faults_injected"], 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fault_mix_is_counted() {
    let faults = FaultConfig {
        seed: 1,
        rate_limit: 0.2,
        server_error: 0.2,
        malformed: 0.2,
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(sim(), faults).await.unwrap();
    let p = openai(server.base_url(), |_| {});
    let mut errors = 0;
    for r in 0..200 {
        if p.complete(&request("hi", r)).await.is_err() {
            errors += 1;
        }
    }
    let s = server.stats();
    assert_eq!(s.requests, 200);
    assert_eq!(s.faults_injected, errors);
    assert!((80..160).contains(&errors), "{errors}");
    let bad = FaultConfig {
        rate_limit: 0.7,
        server_error: 0.7,
        ..FaultConfig::default()
    };
    assert!(spawn_test_server(sim(), bad).await.is_err());
}

/// A stand-in upstream on 127.0.0.1 answering every POST with `answer`
/// and keeping the bodies it was sent.
async fn recording(
    answer: serde_json::Value,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    use axum::Json;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    let app = axum::Router::new().fallback(axum::routing::post(
        move |Json(body): Json<serde_json::Value>| {
            let (keep, answer) = (keep.clone(), answer.clone());
            async move {
                keep.lock().unwrap().push(body);
                Json(answer)
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

fn trip_request() -> Request {
    common::conversation_request(&common::conversation_input(
        "trip",
        common::trip_conversation(),
    ))
}

/// The openai provider sends the conversation verbatim.
#[tokio::test]
async fn openai_sends_a_conversation_verbatim() {
    let (addr, seen) = recording(serde_json::json!({"choices": [{"message":
        {"role": "assistant", "content": "En français : réservé."}, "finish_reason": "stop"}]}))
    .await;
    let p = openai(format!("http://{addr}/v1"), |_| {});
    let out = p.complete(&trip_request()).await.unwrap();
    assert_eq!(out.text, "En français : réservé.");
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(sent["messages"], common::trip_conversation());
}

/// The anthropic provider maps the conversation onto the messages API: a
/// developer message as `system`, the tool call as a `tool_use` block
/// with its arguments as JSON, the result as a `tool_result` block.
#[tokio::test]
async fn anthropic_maps_a_conversation_onto_blocks() {
    use serde_json::json;
    let (addr, seen) = recording(json!({"content": [{"type": "text", "text": "Réservé."}],
        "usage": {"input_tokens": 30, "output_tokens": 3}}))
    .await;
    std::env::set_var("PROBITY_TEST_ANTHROPIC_CONV_KEY", "ant-key-2");
    let mut c = AnthropicConfig::new("claude-test");
    c.base_url = format!("http://{addr}");
    c.api_key_env = "PROBITY_TEST_ANTHROPIC_CONV_KEY".into();
    let p = AnthropicProvider::new(c).unwrap();
    let mut conversation = common::trip_conversation();
    conversation.as_array_mut().unwrap().insert(
        0,
        json!({"role": "developer", "content": "Answer briefly."}),
    );
    let input = common::conversation_input("trip", conversation);
    let out = p
        .complete(&common::conversation_request(&input))
        .await
        .unwrap();
    assert_eq!(out.text, "Réservé.");
    let sent = seen.lock().unwrap()[0].clone();
    assert_eq!(sent["system"], "Answer briefly.");
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "Book me seat 4A on the 9:15 to Lyon."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1",
                "name": "book_seat", "input": {"seat": "4A", "train": "9:15"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"booked\":true,\"car\":7}"},
                {"type": "text", "text": "And in French?"}]}
        ])
    );

    // What the messages API has no place for is refused, named, unsent.
    for (at, message, problem) in [
        (
            3,
            json!({"role": "system", "content": "Now be verbose."}),
            "message 3 (system): a system message after the first turn has no place in Anthropic's messages API",
        ),
        (
            0,
            json!({"role": "user", "content": "Hi", "name": "ann"}),
            "message 0 (user): field `name` has no place in Anthropic's messages API",
        ),
    ] {
        let mut conversation = common::trip_conversation();
        conversation.as_array_mut().unwrap().insert(at, message);
        let input = common::conversation_input("odd", conversation);
        let e = p
            .complete(&common::conversation_request(&input))
            .await
            .unwrap_err();
        assert!(matches!(e, ProviderError::Unsendable(_)), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("cannot send input \"odd\": {problem}")),
            "{e}"
        );
    }
    let mut not_an_object = common::trip_conversation();
    not_an_object[1]["tool_calls"][0]["function"]["arguments"] = json!("[1, 2]");
    let input = common::conversation_input("args", not_an_object);
    let e = p
        .complete(&common::conversation_request(&input))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("message 1 (assistant): `tool_calls[0].function.arguments` is [1,2]"),
        "{e}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "nothing refused is sent");
}

/// An http body with `{{ messages }}` sends the conversation whole; one
/// without it (the default `{"prompt": "{{ prompt }}"}`) refuses it,
/// naming the first message it has no place for, and sends nothing.
#[tokio::test]
async fn http_sends_a_conversation_whole_or_refuses_it() {
    use serde_json::json;
    let (addr, seen) = recording(json!({"reply": "ok"})).await;
    let mut c = HttpConfig::new(format!("http://{addr}/chat"));
    c.body = json!({"messages": "{{ messages }}", "system": "{{ system }}"});
    c.output_pointer = "/reply".into();
    let p = HttpProvider::new(c.clone()).unwrap();
    assert_eq!(p.complete(&trip_request()).await.unwrap().text, "ok");
    assert_eq!(
        seen.lock().unwrap()[0]["messages"],
        common::trip_conversation()
    );

    let plain = HttpProvider::new(HttpConfig {
        body: json!({"prompt": "{{ prompt }}"}),
        ..c.clone()
    })
    .unwrap();
    let e = plain
        .complete(&trip_request())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cannot send input \"trip\": message 1 (assistant): an assistant turn with tool calls has no place in the body"),
        "{e}"
    );
    // A system prompt with no `{{ system }}` in the body is refused too.
    let e = plain
        .complete(&request("Hi", 0))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "cannot send input \"in-1\": message 0 (system): the http body has no `{{ system }}`"
        ),
        "{e}"
    );
    // A body that renders the row (`input`) is trusted to carry it.
    let by_row = HttpProvider::new(HttpConfig {
        body: json!({"q": "{{ input.text }}", "history": "{{ input.messages }}"}),
        ..c
    })
    .unwrap();
    assert_eq!(by_row.complete(&trip_request()).await.unwrap().text, "ok");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// The simulator answers the last user turn, its draws made over the
/// whole conversation: two conversations that differ only in a tool
/// call's argument are different inputs to it.
#[test]
fn the_simulator_draws_over_the_whole_conversation() {
    let model = SimModel::new(SimConfig {
        seed: Some(3),
        input_spread: 0.5,
        ..SimConfig::default()
    })
    .unwrap();
    let rates = |conversation: serde_json::Value| {
        let r = common::conversation_request(&common::conversation_input("s", conversation));
        model.true_rates(&r.messages).contractions
    };
    let base = rates(common::trip_conversation());
    let mut other = common::trip_conversation();
    other[1]["tool_calls"][0]["function"]["arguments"] =
        serde_json::json!("{\"seat\":\"9C\",\"train\":\"9:15\"}");
    assert_ne!(base, rates(other));
    assert_eq!(base, rates(common::trip_conversation()));
    let out = model.generate(&trip_request().messages, 0, 0).unwrap();
    assert!(out.text.to_lowercase().contains("french"), "{}", out.text);
}
