//! Test doubles shared by the engine's integration tests.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use probity_core::{Input, Validator};
use probity_engine::provider::{Completion, Provider, ProviderError, Request};
use probity_engine::system::ProviderConfig;
use probity_engine::Experiment;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A provider from its TOML table.
pub fn system(table: &str) -> Arc<dyn Provider> {
    toml::from_str::<ProviderConfig>(table)
        .unwrap()
        .build()
        .unwrap()
}

/// Experiment `name`: the paper's contraction validator (§2.1, minimum
/// 0.95) over `n` gardening questions, M = `m` outputs each, asked of
/// `system`.
pub fn contraction_experiment(
    name: &str,
    system: Arc<dyn Provider>,
    m: usize,
    n: usize,
) -> Experiment {
    Experiment::new(name, system)
        .inputs((0..n).map(|i| {
            Input::text(
                (i + 1).to_string(),
                format!("Question number {i} about gardening?"),
            )
        }))
        .validator(
            Validator::new("contraction_validator")
                .minimum_success_percentage(0.95)
                .check(|o: &str| o.matches('\'').count() <= 3),
        )
        .outputs_per_input(m)
}

/// Counts the calls that reach a provider (the system or a judge).
pub struct Counting {
    pub inner: Arc<dyn Provider>,
    pub calls: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl Provider for Counting {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.complete(request).await
    }

    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }
}

/// A run's header with nothing but its name: no inputs, one output each,
/// no checks (for tests of the store's runs themselves).
pub fn bare_run(name: &str) -> probity_engine::store::NewRun<'_> {
    probity_engine::store::NewRun {
        name,
        config_hash: "h",
        config: "",
        system: "sim",
        inputs: &[],
        outputs_per_input: 1,
        checks: &[],
        settings: &DEFAULT_SETTINGS,
        parent_run: None,
        reused_from: None,
        outputs_from: None,
        variant: None,
    }
}

static DEFAULT_SETTINGS: std::sync::LazyLock<probity_engine::store::StoredSettings> =
    std::sync::LazyLock::new(Default::default);

/// A four-message conversation with a tool call, in OpenAI's chat shape:
/// the user asks, the assistant calls a tool, the tool answers, the user
/// follows up.
pub fn trip_conversation() -> serde_json::Value {
    serde_json::json!([
        {"role": "user", "content": "Book me seat 4A on the 9:15 to Lyon."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "book_seat", "arguments": "{\"seat\":\"4A\",\"train\":\"9:15\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"booked\":true,\"car\":7}"},
        {"role": "user", "content": "And in French?"}
    ])
}

/// Input `id` carrying `messages` (and `text`, its last user message, as
/// `probity export` writes a served request).
pub fn conversation_input(id: &str, messages: serde_json::Value) -> Input {
    let last_user = messages
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let mut input = Input::text(id, last_user);
    input.fields.insert("messages".into(), messages);
    input
}

/// A request for `input`'s conversation as `[prompt]` defaults render it.
pub fn conversation_request(input: &Input) -> Request {
    Request {
        messages: probity_engine::provider::template::PromptTemplate::new(None, "{{ input.text }}")
            .unwrap()
            .render(input)
            .unwrap(),
        repetition: 0,
        attempt: 0,
        input: input.clone(),
    }
}
