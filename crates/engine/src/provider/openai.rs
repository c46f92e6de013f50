//! OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp,
//! LM Studio, the `probity sim serve` endpoint, …).

use super::error::ConfigError;
use super::openai_responses;
use super::openai_stream::{Assembly, SseFrames};
use super::types::{
    message_text, nothing_to_check, passed_headers, AnswerMeta, Api, Completion, CutWhen, Provider,
    ProviderError, Request, WireAnswer, WireRequest,
};
use super::util::{self, Secret};
use crate::provider::openai_wire::upstream_messages;
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
    /// The API `probity run` calls: `"chat"` (`POST /chat/completions`,
    /// the default) or `"responses"` (`POST /responses`, OpenAI's
    /// Responses API: the conversation as `input` items, `max_tokens`
    /// sent as `max_output_tokens`, no `seed`). `probity serve` speaks
    /// whichever its client speaks.
    #[serde(default, skip_serializing_if = "Api::is_chat")]
    pub api: Api,
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
            api: Api::Chat,
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
    /// `{base_url}/chat/completions`, parsed once: a request reuses it.
    url: reqwest::Url,
    /// `{base_url}/responses`.
    responses_url: reqwest::Url,
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
            responses_url: util::endpoint(base, "/responses", "base_url")?,
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
    pub(crate) fn wire_body(&self, request: &Request, wire: &WireRequest) -> Value {
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

    /// The body `probity run` sends through the Responses API
    /// ([`openai_responses::run_body`]): the configured fields as
    /// [`OpenAiProvider::body`] sets them.
    fn responses_body(&self, request: &Request) -> Value {
        let mut configured = match self.body(request) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        configured.remove("model");
        configured.remove("messages");
        openai_responses::run_body(&self.config.model, &request.messages, &configured)
    }

    /// A client's Responses API request as sent upstream: the configured
    /// model and fields (as [`OpenAiProvider::responses_body`]), its items
    /// (with what the guard added, [`openai_responses::upstream_input`])
    /// and its fields over them.
    fn responses_wire_body(&self, request: &Request, wire: &WireRequest) -> Value {
        let mut body = self.responses_body(request);
        if let Value::Object(obj) = &mut body {
            obj.insert(
                "input".into(),
                Value::Array(openai_responses::upstream_input(
                    &wire.messages,
                    &request.messages,
                )),
            );
            for (k, v) in &wire.params {
                obj.insert(k.clone(), v.clone());
            }
        }
        body
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        self.request_to(&self.url, body)
    }

    fn request_to(&self, url: &reqwest::Url, body: &Value) -> reqwest::RequestBuilder {
        let mut builder = self.client.post(url.clone()).json(body);
        if let Some(key) = &self.key {
            builder = builder.bearer_auth(key.expose());
        }
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.expose());
        }
        builder
    }

    async fn post(&self, body: &Value) -> Result<String, ProviderError> {
        self.post_keeping_headers(body).await.map(|(_, body)| body)
    }

    /// [`OpenAiProvider::post`], with the response headers a client of
    /// `probity serve` is given ([`passed_headers`]).
    async fn post_keeping_headers(
        &self,
        body: &Value,
    ) -> Result<(Vec<(String, String)>, String), ProviderError> {
        self.post_to(&self.url, body).await
    }

    async fn post_to(
        &self,
        url: &reqwest::Url,
        body: &Value,
    ) -> Result<(Vec<(String, String)>, String), ProviderError> {
        let (status, headers, body) = util::send(self.request_to(url, body), self.timeout).await?;
        if !(200..300).contains(&status) {
            return Err(util::status_error(status, &headers, &self.redact(body)));
        }
        Ok((passed_headers(&headers), body))
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
        match self.config.api {
            Api::Chat => parse_chat_completion(&self.post(&self.body(request)).await?),
            Api::Responses => {
                let (_, body) = self
                    .post_to(&self.responses_url, &self.responses_body(request))
                    .await?;
                openai_responses::parse_response(&body, Vec::new()).map(|a| a.completion)
            }
        }
    }

    /// Every field is sent on: an OpenAI-compatible server is the judge of
    /// what it accepts (its 400 reaches the client).
    fn forwards(&self, _field: &str) -> bool {
        true
    }

    /// Chat Completions and the Responses API.
    fn speaks(&self, _api: Api) -> bool {
        true
    }

    async fn complete_responses(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        let (headers, body) = self
            .post_to(
                &self.responses_url,
                &self.responses_wire_body(request, wire),
            )
            .await?;
        openai_responses::parse_response(&body, headers)
    }

    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        let (headers, body) = self
            .post_keeping_headers(&self.wire_body(request, wire))
            .await?;
        parse_answer_with(&body, headers)
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
            return parse_answer_with(&text, passed_headers(&headers));
        }
        let mut frames = SseFrames::default();
        let mut answer = Assembly::default();
        answer.headers = passed_headers(resp.headers());
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
        // The Chat Completions fingerprint is as it always was (stored
        // caches stay valid); the Responses API's is another system.
        let kind = if c.api.is_chat() {
            "openai"
        } else {
            "openai-responses"
        };
        format!(
            "{kind}|{}|{}",
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
/// ([`message_text`] — content, else a refusal, else an audio transcript —
/// and tool calls when there are any, [`AnswerMeta::checked_text`]),
/// usage, and what `probity serve` passes on: model, `finish_reason`,
/// tool calls, logprobs, and every other field of the message, the choice
/// and the answer as sent. A body whose message has none of content,
/// refusal, transcript or tool calls is malformed, its error naming the
/// fields it has ([`super::types::NO_TEXT`]).
pub fn parse_answer(body: &str) -> Result<WireAnswer, ProviderError> {
    parse_answer_with(body, Vec::new())
}

/// [`parse_answer`] keeping `headers` (the upstream's, [`passed_headers`]).
pub(crate) fn parse_answer_with(
    body: &str,
    headers: Vec<(String, String)>,
) -> Result<WireAnswer, ProviderError> {
    let v = util::json_body(body)?;
    let missing = || {
        ProviderError::BadResponse(format!(
            "no choices[0].message in response: {}",
            util::body_excerpt(body)
        ))
    };
    let Value::Object(mut top) = v else {
        return Err(missing());
    };
    let Some(Value::Object(mut choice)) = top.remove("choices").and_then(|c| match c {
        Value::Array(a) => a.into_iter().next(),
        _ => None,
    }) else {
        return Err(missing());
    };
    let Some(Value::Object(mut message)) = choice.remove("message") else {
        return Err(missing());
    };
    let content = match message.remove("content") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let tool_calls = message
        .remove("tool_calls")
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
    message.remove("role");
    let text = message_text(content.as_deref(), &message);
    if text.is_none() && tool_calls.is_none() {
        return Err(nothing_to_check(&message));
    }
    let text = AnswerMeta::checked_text(text, tool_calls.as_ref());
    let string = |v: Option<Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    let usage = top.remove("usage").filter(Value::is_object);
    let tokens = |key: &str| {
        usage
            .as_ref()
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
    };
    let (input_tokens, output_tokens) = (tokens("prompt_tokens"), tokens("completion_tokens"));
    let finish_reason = string(choice.remove("finish_reason"));
    let logprobs = choice.remove("logprobs").filter(|l| !l.is_null());
    choice.remove("index");
    let model = string(top.remove("model"));
    let system_fingerprint = string(top.remove("system_fingerprint"));
    for k in ["id", "object", "created"] {
        top.remove(k);
    }
    Ok(WireAnswer {
        completion: Completion {
            text,
            input_tokens,
            output_tokens,
        },
        meta: Some(AnswerMeta {
            content,
            tool_calls,
            finish_reason,
            model,
            logprobs,
            system_fingerprint,
            message_fields: message,
            choice_fields: choice,
            response_fields: top,
            usage,
            headers,
            response: None,
        }),
        cut: false,
    })
}
