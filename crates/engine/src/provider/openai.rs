//! OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp,
//! LM Studio, the `probity sim serve` endpoint, …).

use super::error::ConfigError;
use super::openai_stream::{Assembly, SseFrames};
use super::types::{
    AnswerMeta, Completion, CutWhen, Provider, ProviderError, Request, WireAnswer, WireRequest,
};
use super::util::{self, Secret};
use crate::provider::openai_wire::{upstream_messages, ChatResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

fn default_base_url() -> String {
    OPENAI_BASE_URL.to_string()
}

fn default_timeout() -> f64 {
    60.0
}

/// Settings of the `openai` provider.
///
/// ```toml
/// provider = "openai"
/// model = "gpt-4o-mini"
/// base_url = "https://api.openai.com/v1"   # default; e.g. http://127.0.0.1:11434/v1 for Ollama
/// api_key_env = "OPENAI_API_KEY"           # default only for api.openai.com; unset = no key
/// temperature = 0.7                        # optional
/// max_tokens = 512                         # optional
/// seed = 42                                # optional: sends seed + repetition
/// timeout_s = 60                           # per call
/// extra = { top_p = 0.9 }                  # merged into the request body
/// headers = { "OpenAI-Organization" = "${ENV:OPENAI_ORG}" }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    pub model: String,
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// Name of the environment variable holding the API key (sent as
    /// `Authorization: Bearer …`). When unset, `OPENAI_API_KEY` is used for
    /// `api.openai.com` and no key is sent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// When set, each call sends `seed + repetition`: repetitions differ but
    /// are reproducible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Per-call timeout in seconds, fractions allowed (`timeout_secs`, the
    /// older name, is still accepted).
    #[serde(default = "default_timeout", alias = "timeout_secs")]
    pub timeout_s: f64,
    /// Extra body parameters, merged into the request body last (they win).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// Extra headers; values may reference `${ENV:NAME}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl OpenAiConfig {
    /// A configuration with defaults for everything but the model.
    pub fn new(model: impl Into<String>) -> Self {
        OpenAiConfig {
            model: model.into(),
            base_url: default_base_url(),
            api_key_env: None,
            temperature: None,
            max_tokens: None,
            seed: None,
            timeout_s: default_timeout(),
            extra: Map::new(),
            headers: BTreeMap::new(),
        }
    }
}

/// The `openai` provider: `POST {base_url}/chat/completions`.
///
/// Error mapping: 429 → `RateLimited` (with `retry-after-ms` or
/// `Retry-After`), 5xx → `Server`, other non-2xx → `Rejected`, a body without
/// `choices[0].message.content` → `BadResponse`, connection failures →
/// `Transport`, the per-call timeout → `Timeout`. The API key never appears
/// in errors, `Debug` output or the fingerprint.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    url: String,
    key: Option<Secret>,
    headers: Vec<(String, Secret)>,
    timeout: Duration,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// Validates the configuration and reads the API key from the
    /// environment; a missing variable is an error naming it.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let timeout = util::timeout(config.timeout_s, "timeout_s")?;
        let base = config.base_url.trim_end_matches('/');
        util::check_http_url(base, "base_url", &config.base_url)?;
        let key_env = config.api_key_env.clone().or_else(|| {
            base.starts_with("https://api.openai.com")
                .then(|| "OPENAI_API_KEY".to_string())
        });
        let key = match key_env {
            Some(var) => Some(util::read_env(&var, "the openai provider's API key")?),
            None => None,
        };
        let headers = util::headers(&config.headers)?;
        Ok(OpenAiProvider {
            url: util::endpoint(base, "/chat/completions", "base_url")?,
            key,
            headers,
            timeout,
            client: util::client()?,
            config,
        })
    }

    /// The JSON body sent for `request`: its messages verbatim in the Chat
    /// Completions shape, then the configured fields.
    pub fn body(&self, request: &Request) -> Value {
        let c = &self.config;
        let mut obj = Map::new();
        obj.insert("model".into(), json!(c.model));
        // The conversation whole, in OpenAI's own shape: roles, tool calls
        // (arguments as JSON text), tool results and names as they are.
        obj.insert(
            "messages".into(),
            probity_core::conversation::to_openai(&request.messages),
        );
        if let Some(t) = c.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if let Some(m) = c.max_tokens {
            obj.insert("max_tokens".into(), json!(m));
        }
        if let Some(seed) = c.seed {
            obj.insert(
                "seed".into(),
                json!(seed.wrapping_add(u64::from(request.repetition))),
            );
        }
        for (k, v) in &c.extra {
            obj.insert(k.clone(), v.clone());
        }
        Value::Object(obj)
    }

    /// The JSON body sent for `request` from a Chat Completions client:
    /// [`OpenAiProvider::body`] with the client's messages as sent (and
    /// whatever the guard added, see [`upstream_messages`]) and its fields
    /// set over the configured ones — the configuration gives defaults, the
    /// request wins (pins are applied before, by `probity serve`).
    pub fn wire_body(&self, request: &Request, wire: &WireRequest) -> Value {
        let mut body = self.body(request);
        if let Value::Object(obj) = &mut body {
            obj.insert(
                "messages".into(),
                Value::Array(upstream_messages(&wire.messages, &request.messages)),
            );
            for (k, v) in &wire.params {
                obj.insert(k.clone(), v.clone());
            }
        }
        body
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut builder = self.client.post(&self.url).json(body);
        if let Some(key) = &self.key {
            builder = builder.bearer_auth(key.expose());
        }
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.expose());
        }
        builder
    }

    async fn post(&self, body: &Value) -> Result<String, ProviderError> {
        let (status, headers, body) = util::send(self.request(body), self.timeout).await?;
        if !(200..300).contains(&status) {
            return Err(util::status_error(status, &headers, &self.redact(body)));
        }
        Ok(body)
    }

    fn redact(&self, text: String) -> String {
        let mut text = match &self.key {
            Some(k) => k.redact(&text),
            None => text,
        };
        for (_, v) in &self.headers {
            text = v.redact(&text);
        }
        text
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        parse_chat_completion(&self.post(&self.body(request)).await?)
    }

    /// Every field is sent on: an OpenAI-compatible server is the judge of
    /// what it accepts (its 400 reaches the client).
    fn forwards(&self, _field: &str) -> bool {
        true
    }

    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        parse_answer(&self.post(&self.wire_body(request, wire)).await?)
    }

    /// Asks for `"stream": true` (with usage) and reads the events as they
    /// come; after each read, `cut` sees the content so far, and a settled
    /// prefix ends the call there — the response is dropped, closing the
    /// connection, so the upstream stops generating. A server that answers
    /// with a whole JSON body instead is read as such.
    async fn stream_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
        cut: CutWhen<'_>,
    ) -> Result<WireAnswer, ProviderError> {
        let mut body = self.wire_body(request, wire);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let mut resp = self
            .request(&body)
            .send()
            .await
            .map_err(|e| util::transport_error(e, self.timeout))?;
        let status = resp.status().as_u16();
        let is_sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !(200..300).contains(&status) || !is_sse {
            let headers = resp.headers().clone();
            let text = resp
                .text()
                .await
                .map_err(|e| util::transport_error(e, self.timeout))?;
            if !(200..300).contains(&status) {
                return Err(util::status_error(status, &headers, &self.redact(text)));
            }
            return parse_answer(&text);
        }
        let mut frames = SseFrames::default();
        let mut answer = Assembly::default();
        while let Some(bytes) = resp
            .chunk()
            .await
            .map_err(|e| util::transport_error(e, self.timeout))?
        {
            let events = frames.push(&bytes);
            for data in &events {
                answer.take(data)?;
            }
            if !events.is_empty() && cut(answer.text()) {
                return answer.finish(true).map(|a| estimated_usage(a, &body));
            }
            if answer.done {
                break;
            }
        }
        answer.finish(false)
    }

    fn fingerprint(&self) -> String {
        let c = &self.config;
        let header_names: Vec<&str> = c.headers.keys().map(String::as_str).collect();
        format!(
            "openai|{}|{}",
            util::shown_url(c.base_url.trim_end_matches('/')),
            json!({
                "model": c.model,
                "temperature": c.temperature,
                "max_tokens": c.max_tokens,
                "seed": c.seed,
                "extra": c.extra,
                "headers": header_names,
            })
        )
    }
}

/// A cut answer's usage (the usage chunk comes last, so a stream dropped
/// early never has it) estimated as the rate limiter estimates a call: a
/// quarter of the bytes of the prompt (`body`'s messages as sent) and of
/// the text generated so far. Counts the upstream reported are kept.
fn estimated_usage(mut a: WireAnswer, body: &Value) -> WireAnswer {
    let quarter = |bytes: usize| (bytes as u64).div_ceil(4);
    let c = &mut a.completion;
    if c.input_tokens.is_none() {
        c.input_tokens = Some(quarter(body["messages"].to_string().len()));
    }
    if c.output_tokens.is_none() {
        c.output_tokens = Some(quarter(c.text.len()));
    }
    a
}

/// Parses an OpenAI chat-completions response body: the text of
/// `choices[0].message.content` and the usage token counts when present.
pub fn parse_chat_completion(body: &str) -> Result<Completion, ProviderError> {
    parse_answer(body).map(|a| a.completion)
}

/// Parses an OpenAI chat-completions response body whole: the checked text
/// ([`AnswerMeta::checked_text`]: the content, and tool calls when there
/// are any), usage, and what `probity serve` passes on (model,
/// `finish_reason`, tool calls, logprobs). A body with neither content nor
/// tool calls is malformed.
pub fn parse_answer(body: &str) -> Result<WireAnswer, ProviderError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        ProviderError::BadResponse(format!(
            "response is not JSON ({e}): {}",
            util::body_excerpt(body)
        ))
    })?;
    let missing = || {
        ProviderError::BadResponse(format!(
            "no choices[0].message.content or tool_calls in response: {}",
            util::body_excerpt(body)
        ))
    };
    let response = ChatResponse::deserialize(&v).map_err(|_| missing())?;
    let choice = response.choices.first().ok_or_else(missing)?;
    let message = &choice.message;
    let has_calls = message
        .tool_calls
        .as_ref()
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if message.content.is_none() && !has_calls {
        return Err(missing());
    }
    let usage = response.usage.unwrap_or_default();
    let model = Some(response.model.clone()).filter(|m| !m.is_empty());
    Ok(WireAnswer {
        completion: Completion {
            text: AnswerMeta::checked_text(message.content.as_deref(), message.tool_calls.as_ref()),
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        },
        meta: Some(AnswerMeta {
            content: message.content.clone(),
            tool_calls: message.tool_calls.clone().filter(|_| has_calls),
            finish_reason: choice.finish_reason.clone(),
            model,
            logprobs: choice.logprobs.clone().filter(|l| !l.is_null()),
            system_fingerprint: response.system_fingerprint.clone(),
        }),
        cut: false,
    })
}
