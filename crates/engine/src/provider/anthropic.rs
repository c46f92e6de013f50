//! Anthropic messages API.

use super::anthropic_wire;
use super::error::ConfigError;
use super::types::{
    unsendable, AnswerMeta, Completion, Message, Provider, ProviderError, Request, WireAnswer,
    WireRequest,
};
use super::util::{self, Secret};
use crate::provider::openai_wire::upstream_messages;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Duration;

fn default_base_url() -> String {
    "https://api.anthropic.com".to_string()
}
fn default_key_env() -> String {
    "ANTHROPIC_API_KEY".to_string()
}
fn default_version() -> String {
    "2023-06-01".to_string()
}
fn default_max_tokens() -> u32 {
    1024
}
fn default_timeout() -> f64 {
    60.0
}

/// Settings of the `anthropic` provider.
///
/// ```toml
/// provider = "anthropic"
/// model = "claude-3-5-haiku-latest"
/// base_url = "https://api.anthropic.com"   # default
/// api_key_env = "ANTHROPIC_API_KEY"        # default
/// max_tokens = 1024                        # default (the API requires it)
/// temperature = 0.7                        # optional
/// timeout_s = 60                         # per call
/// anthropic_version = "2023-06-01"
/// extra = { top_k = 40 }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnthropicConfig {
    pub model: String,
    #[serde(default = "default_base_url")]
    pub base_url: String,
    #[serde(default = "default_key_env")]
    pub api_key_env: String,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Per-call timeout in seconds (`timeout_secs`, the older name, is
    /// still accepted).
    #[serde(default = "default_timeout", alias = "timeout_secs")]
    pub timeout_s: f64,
    #[serde(default = "default_version")]
    pub anthropic_version: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl AnthropicConfig {
    /// A configuration with defaults for everything but the model.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicConfig {
            model: model.into(),
            base_url: default_base_url(),
            api_key_env: default_key_env(),
            max_tokens: default_max_tokens(),
            temperature: None,
            timeout_s: default_timeout(),
            anthropic_version: default_version(),
            extra: Map::new(),
        }
    }
}

/// The `anthropic` provider: `POST {base_url}/v1/messages` with headers
/// `x-api-key` and `anthropic-version`; the conversation is mapped as
/// [`AnthropicProvider::body`] says, the text content blocks of the answer
/// are concatenated. Errors
/// map as for the OpenAI provider (529 "overloaded" is a `Server` error).
#[derive(Debug)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    /// Parsed once: a request reuses it.
    url: reqwest::Url,
    key: Secret,
    timeout: Duration,
    client: reqwest::Client,
}

impl AnthropicProvider {
    /// Validates the configuration and reads the API key from the environment.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        let timeout = util::timeout(config.timeout_s, "timeout_s")?;
        let base = config.base_url.trim_end_matches('/');
        util::check_http_url(base, "base_url", &config.base_url)?;
        let key = util::read_env(&config.api_key_env, "the anthropic provider's API key")?;
        Ok(AnthropicProvider {
            url: util::endpoint(base, "/v1/messages", "base_url")?,
            key,
            timeout,
            client: util::client()?,
            config,
        })
    }

    /// The JSON body sent for `request`: its conversation mapped onto the
    /// messages API as `probity serve` maps a client's
    /// ([`anthropic_wire`]: system and developer messages as `system`,
    /// tool calls as `tool_use` blocks, tool results as `tool_result`
    /// blocks), then the configured fields. A message the API has no place
    /// for is [`ProviderError::Unsendable`], naming it.
    pub fn body(&self, request: &Request) -> Result<Value, ProviderError> {
        let messages: Vec<Value> = request.messages.iter().map(Message::to_openai).collect();
        let (system, turns) = anthropic_wire::map_messages(&messages)
            .map_err(|(i, problem)| unsendable(request, i, &problem))?;
        let mut obj = self.config_fields();
        if !system.is_empty() {
            obj.insert("system".into(), json!(system.join("\n\n")));
        }
        obj.insert("messages".into(), Value::Array(turns));
        for (k, v) in &self.config.extra {
            obj.insert(k.clone(), v.clone());
        }
        Ok(Value::Object(obj))
    }

    /// The configured fields but `extra`: model, `max_tokens`, temperature.
    fn config_fields(&self) -> Map<String, Value> {
        let c = &self.config;
        let mut obj = Map::new();
        obj.insert("model".into(), json!(c.model));
        obj.insert("max_tokens".into(), json!(c.max_tokens));
        if let Some(t) = c.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        obj
    }
}

impl AnthropicProvider {
    /// The JSON body sent for `request` from a Chat Completions client:
    /// [`AnthropicProvider::body`] with the client's messages and fields
    /// mapped in (`anthropic_wire`); the request's fields win.
    pub(crate) fn wire_body(&self, request: &Request, wire: &WireRequest) -> Result<Value, String> {
        let mut body = self.config_fields();
        for (k, v) in &self.config.extra {
            body.insert(k.clone(), v.clone());
        }
        let messages = upstream_messages(&wire.messages, &request.messages);
        anthropic_wire::apply(&mut body, &messages, &wire.params)?;
        Ok(Value::Object(body))
    }

    async fn post(&self, body: &Value) -> Result<String, ProviderError> {
        let builder = self
            .client
            .post(self.url.clone())
            .header("x-api-key", self.key.expose())
            .header("anthropic-version", &self.config.anthropic_version)
            .json(body);
        let (status, headers, body) = util::send(builder, self.timeout).await?;
        if !(200..300).contains(&status) {
            return Err(util::status_error(
                status,
                &headers,
                &self.key.redact(&body),
            ));
        }
        Ok(body)
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        parse_message(&self.post(&self.body(request)?).await?)
    }

    fn forwards(&self, field: &str) -> bool {
        anthropic_wire::FORWARDED.contains(&field)
    }

    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        let body = self
            .wire_body(request, wire)
            .map_err(|body| ProviderError::Rejected { status: 400, body })?;
        parse_answer(&self.post(&body).await?)
    }

    fn fingerprint(&self) -> String {
        let c = &self.config;
        format!(
            "anthropic|{}|{}",
            util::shown_url(c.base_url.trim_end_matches('/')),
            json!({
                "model": c.model,
                "max_tokens": c.max_tokens,
                "temperature": c.temperature,
                "version": c.anthropic_version,
                "extra": c.extra,
            })
        )
    }
}

/// Parses a messages-API response: the concatenated `text` of the `text`
/// content blocks, and `usage.input_tokens` / `usage.output_tokens`.
pub fn parse_message(body: &str) -> Result<Completion, ProviderError> {
    let answer = parse_answer(body)?;
    if answer.meta.as_ref().is_some_and(|m| m.content.is_none()) {
        return Err(ProviderError::BadResponse(format!(
            "no text content block in response: {}",
            util::body_excerpt(body)
        )));
    }
    Ok(answer.completion)
}

/// Parses a messages-API response whole: the text blocks joined as the
/// content, `tool_use` blocks as tool calls, the stop reason and model
/// (`anthropic_wire`); the checked text as
/// [`AnswerMeta::checked_text`]. A response with neither is malformed.
pub fn parse_answer(body: &str) -> Result<WireAnswer, ProviderError> {
    let v = util::json_body(body)?;
    let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| {
        ProviderError::BadResponse(format!(
            "no content array in response: {}",
            util::body_excerpt(body)
        ))
    })?;
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let content = (!texts.is_empty()).then(|| texts.concat());
    let tool_calls = anthropic_wire::tool_calls(&v);
    if content.is_none() && tool_calls.is_none() {
        return Err(ProviderError::BadResponse(format!(
            "no text or tool_use content block in response: {}",
            util::body_excerpt(body)
        )));
    }
    Ok(WireAnswer {
        completion: Completion {
            text: AnswerMeta::checked_text(content.as_deref(), tool_calls.as_ref()),
            input_tokens: util::tokens(&v, "/usage/input_tokens"),
            output_tokens: util::tokens(&v, "/usage/output_tokens"),
        },
        meta: Some(AnswerMeta {
            content,
            tool_calls,
            finish_reason: v
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(anthropic_wire::finish_reason),
            model: v.get("model").and_then(Value::as_str).map(String::from),
            logprobs: None,
            system_fingerprint: None,
            ..AnswerMeta::default()
        }),
        cut: false,
    })
}
