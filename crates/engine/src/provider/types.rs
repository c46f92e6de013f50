//! What every provider speaks: a [`Request`] (rendered messages for one
//! input, its repetition and attempt) in, a [`Completion`] or a typed
//! [`ProviderError`] out, behind the [`Provider`] trait.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use thiserror::Error;

/// One message of a conversation, whole: its role (system, developer,
/// user, assistant, tool), text, the assistant's tool calls with their
/// arguments as JSON, and the call a tool's result answers. It is
/// `probity_core`'s conversation message ([`probity_core::conversation`]),
/// read from and written to OpenAI's chat shape there.
pub use probity_core::conversation::{Message, Role, ToolCall};

/// A request to the system: the messages for one input — rendered from
/// the prompt templates, or the input's own conversation whole and in
/// order — and the index of the repetition (`j`) it is for. `input`
/// carries the dataset row for providers that want the fields themselves
/// (command, sim). A provider sends every message as it is or refuses the
/// request ([`ProviderError::Unsendable`]): it never drops one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub messages: Vec<Message>,
    pub repetition: u32,
    /// Attempt number within a retry loop (0 for a plain test run).
    pub attempt: u32,
    pub input: probity_core::Input,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// What a Chat Completions client of `probity serve` sent beyond the
/// flattened [`Request::messages`]: its messages as sent (roles, content
/// parts such as images, `tool_calls`, `tool_call_id`), one per flattened
/// message, and every other request field to forward (`temperature`,
/// `tools`, `response_format`, …), the configuration's pins already
/// applied. A provider that speaks a chat protocol sends them (the
/// `openai` provider verbatim, `anthropic` mapped); any other refuses a
/// field it cannot honour ([`Provider::forwards`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WireRequest {
    pub messages: Vec<serde_json::Value>,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// Which of OpenAI's APIs a call speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `POST /chat/completions`.
    #[default]
    Chat,
    /// `POST /responses`.
    Responses,
}

impl Api {
    pub fn is_chat(&self) -> bool {
        *self == Api::Chat
    }
}

/// What an upstream answered beyond the checked text, for `probity serve`
/// to pass on: every field is the upstream's own, redacted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnswerMeta {
    /// The message content as sent (`None`: null, as beside tool calls).
    pub content: Option<String>,
    /// `message.tool_calls` in the OpenAI shape.
    pub tool_calls: Option<serde_json::Value>,
    /// `stop`, `length`, `tool_calls`, `content_filter`, …
    pub finish_reason: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// `choices[0].logprobs`.
    pub logprobs: Option<serde_json::Value>,
    pub system_fingerprint: Option<String>,
    /// Every other field of the message, as sent: `refusal`,
    /// `annotations`, `audio`, `reasoning_content`, … (never `role`,
    /// `content` or `tool_calls`).
    pub message_fields: serde_json::Map<String, serde_json::Value>,
    /// Every other field of the choice (never `index`, `message`, `delta`,
    /// `finish_reason` or `logprobs`): `stop_reason`, an Azure
    /// `content_filter_results`, ….
    pub choice_fields: serde_json::Map<String, serde_json::Value>,
    /// Every other top-level field of the answer (never `id`, `object`,
    /// `created`, `model`, `choices`, `usage` or `system_fingerprint`):
    /// `service_tier`, ….
    pub response_fields: serde_json::Map<String, serde_json::Value>,
    /// The `usage` object whole (`prompt_tokens_details`,
    /// `completion_tokens_details`, …), as the upstream sent it.
    pub usage: Option<serde_json::Value>,
    /// The upstream's response headers a client reads
    /// ([`passed_header`]): `x-request-id`, `x-ratelimit-*`.
    pub headers: Vec<(String, String)>,
    /// For a Responses API client (`POST /v1/responses`): the upstream's
    /// response object whole (`output` items, `usage`, `status`, …).
    pub response: Option<serde_json::Value>,
}

/// Beginning of the error ([`ProviderError::BadResponse`]) for an answer
/// the checks cannot read (an audio answer without a transcript, a message
/// of unknown fields only): the rest names its fields, never their values.
pub const NO_TEXT: &str = "the answer has nothing the checks can read";

/// The error for a message with nothing to check: [`NO_TEXT`], then the
/// names of the fields it has (names only, at most a few, each cut short).
pub fn nothing_to_check(message: &serde_json::Map<String, serde_json::Value>) -> ProviderError {
    let names: Vec<String> = message
        .keys()
        .take(8)
        .map(|k| {
            k.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(40)
                .collect()
        })
        .collect();
    let has = if names.is_empty() {
        "no fields".to_string()
    } else {
        format!("only {}", names.join(", "))
    };
    let audio = if message.contains_key("audio") {
        " (an audio answer without a transcript)"
    } else {
        ""
    };
    ProviderError::BadResponse(format!(
        "{NO_TEXT}: its message has no content, refusal or tool calls, {has}{audio}"
    ))
}

/// Whether an upstream response header reaches a `probity serve` client:
/// the request id (`x-request-id`, which the SDKs expose as
/// `_request_id`) and the rate-limit state (`x-ratelimit-*`). Nothing else
/// passes: an upstream's other headers (`server`, `via`, cookies) may name
/// its internals.
pub fn passed_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "x-request-id" || name.starts_with("x-ratelimit-")
}

/// The headers of `map` that [`passed_header`] lets through, in order.
pub fn passed_headers(map: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .filter(|(k, _)| passed_header(k.as_str()))
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// The text the checks read for a message (before its tool calls,
/// [`AnswerMeta::checked_text`]): `content` when it has any; else a
/// refusal's text (`refusal`); else an audio answer's `audio.transcript`;
/// else `content` as it is (`Some("")` or `None`). A refusal is an answer:
/// the checks judge its text like any other (docs/serve.md).
pub fn message_text<'a>(
    content: Option<&'a str>,
    fields: &'a serde_json::Map<String, serde_json::Value>,
) -> Option<&'a str> {
    content
        .filter(|c| !c.is_empty())
        .or_else(|| fields.get("refusal").and_then(serde_json::Value::as_str))
        .or_else(|| {
            fields
                .get("audio")
                .and_then(|a| a.get("transcript"))
                .and_then(serde_json::Value::as_str)
        })
        // An audio answer without a transcript has no text, even beside
        // an empty `content`.
        .or(content.filter(|_| !fields.contains_key("audio")))
}

impl AnswerMeta {
    /// The text validators and verifiers check for an answer with this
    /// content and these tool calls: the content alone without tool calls;
    /// with them, the content (if any) and a newline, then the tool calls
    /// as a JSON array (`[{"id":…,"type":"function","function":{"name":…,
    /// "arguments":"…"}}]`), so a check can read them (docs/validators.md).
    pub fn checked_text(content: Option<&str>, tool_calls: Option<&serde_json::Value>) -> String {
        let calls = tool_calls
            .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
            .map(serde_json::Value::to_string);
        match (content.filter(|c| !c.is_empty()), calls) {
            (Some(text), Some(calls)) => format!("{text}\n{calls}"),
            (None, Some(calls)) => calls,
            (text, None) => text.unwrap_or_default().to_string(),
        }
    }
}

/// An answer to [`Provider::complete_wire`]: the completion checked, and
/// what the upstream said besides (`None` from a provider that has no
/// chat protocol).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WireAnswer {
    pub completion: Completion,
    pub meta: Option<AnswerMeta>,
    /// The answer was abandoned while it streamed, its prefix (the
    /// completion's text) already settling a failure
    /// ([`Provider::stream_wire`]); the upstream call was dropped.
    pub cut: bool,
}

/// Whether a streamed prefix already settles a failure (see
/// [`Provider::stream_wire`]).
pub type CutWhen<'a> = &'a (dyn Fn(&str) -> bool + Send + Sync);

/// Why a call produced no output.
#[derive(Debug, Clone, Error, PartialEq, Serialize, Deserialize)]
pub enum ProviderError {
    #[error("rate limited (HTTP 429){}", retry_after.map(|d| format!(", retry after {:.1}s", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        retry_after: Option<Duration>,
        /// The upstream's headers a `probity serve` client is given
        /// ([`passed_header`]: `x-request-id`, `x-ratelimit-*`), passed on
        /// with the 429 as with an answer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<(String, String)>,
    },
    #[error("server error: HTTP {status}: {body}")]
    Server { status: u16, body: String },
    #[error("request rejected: HTTP {status}: {body}")]
    Rejected { status: u16, body: String },
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("transport error: {0}")]
    Transport(String),
    #[error("malformed response: {0}")]
    BadResponse(String),
    #[error("command failed: {0}")]
    Command(String),
    /// A system running in this process (a Python callable) raised: the
    /// exception's type and message. Final, like a rejection.
    #[error("the system raised {0}")]
    Raised(String),
    /// The provider cannot express the request's conversation as it is
    /// (a role, a tool call, a field it has no place for): which input,
    /// which message, what ([`unsendable`]). Final: nothing was sent.
    #[error("cannot send {0}")]
    Unsendable(String),
}

/// The error for message `index` of `request` (from 0), which the
/// provider cannot send as it is: names the input, the message and its
/// role, and `problem` (the field, and what would carry it).
pub fn unsendable(request: &Request, index: usize, problem: &str) -> ProviderError {
    let role = request
        .messages
        .get(index)
        .map(|m| format!(" ({})", m.role.as_str()))
        .unwrap_or_default();
    ProviderError::Unsendable(format!(
        "input {:?}: message {index}{role}: {problem}",
        request.input.id
    ))
}

impl ProviderError {
    /// Whether trying again may help: rate limits, 5xx, timeouts and
    /// transport failures. Rejections (4xx other than 429) and malformed
    /// answers are final.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
                | ProviderError::Timeout(_)
                | ProviderError::Transport(_)
        )
    }

    /// The HTTP status the upstream answered with, when it answered one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::RateLimited { .. } => Some(429),
            ProviderError::Server { status, .. } | ProviderError::Rejected { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The upstream's headers a client is given with this error
    /// (`x-request-id`, `x-ratelimit-*` of a 429); none for the others.
    pub fn headers(&self) -> &[(String, String)] {
        match self {
            ProviderError::RateLimited { headers, .. } => headers,
            _ => &[],
        }
    }

    /// The server's requested wait, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The system under test.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// One call. Implementations apply no retries of their own: the runner
    /// owns backoff, rate limits and timeouts.
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError>;

    /// A stable description of everything that determines the answer besides
    /// the messages (kind, model, sampling parameters), used in the cache
    /// key. Never includes secrets.
    fn fingerprint(&self) -> String;

    /// For a provider that negotiates structured output with its upstream
    /// (`crate::provider::negotiate`): the mode asked for and the mode its
    /// next call uses, by their configuration names. `None` for others.
    fn structured_output(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// Whether this provider sends the Chat Completions request field
    /// `field` of a [`WireRequest`] on to its system. The default: none —
    /// a provider without a chat protocol honours no such field, and
    /// `probity serve` refuses a request that sets one (HTTP 400 naming
    /// it) rather than drop it silently.
    fn forwards(&self, _field: &str) -> bool {
        false
    }

    /// Whether this provider can send a [`WireRequest`] of `api` on
    /// (`probity serve` refuses a client of an API its upstream does not
    /// speak, naming it). The default: Chat Completions only.
    fn speaks(&self, api: Api) -> bool {
        api == Api::Chat
    }

    /// One call for a Chat Completions client (`probity serve`): `wire`
    /// carries its messages as sent and the fields to forward. The default
    /// serves providers without a chat protocol: it refuses any field
    /// (they are checked by the caller against [`Provider::forwards`]
    /// first) and answers [`Provider::complete`] with no metadata.
    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        if let Some(field) = wire.params.keys().find(|f| !self.forwards(f)) {
            return Err(ProviderError::Rejected {
                status: 400,
                body: format!("the upstream provider cannot take the request field `{field}`"),
            });
        }
        let completion = self.complete(request).await?;
        Ok(WireAnswer {
            completion,
            meta: None,
            cut: false,
        })
    }

    /// [`Provider::complete_wire`], reading the answer as the upstream
    /// streams it where the provider can: after each piece, `cut` is asked
    /// whether the text so far already settles a failure, and if so the
    /// call is dropped (the upstream stops generating) and the prefix is
    /// answered with [`WireAnswer::cut`]. The default reads it whole.
    async fn stream_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
        _cut: CutWhen<'_>,
    ) -> Result<WireAnswer, ProviderError> {
        self.complete_wire(request, wire).await
    }

    /// One call for a Responses API client (`probity serve`'s `POST
    /// /v1/responses`): `wire.messages` are its `input` items as sent,
    /// `wire.params` its other fields; the answer keeps the response whole
    /// ([`AnswerMeta::response`]). The default: a provider that does not
    /// speak the Responses API ([`Provider::speaks`]) sends nothing.
    async fn complete_responses(
        &self,
        _request: &Request,
        _wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        Err(ProviderError::Unsendable(
            "a Responses API request: this provider speaks Chat Completions only".into(),
        ))
    }
}

#[async_trait::async_trait]
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        (**self).complete(request).await
    }

    fn fingerprint(&self) -> String {
        (**self).fingerprint()
    }

    fn forwards(&self, field: &str) -> bool {
        (**self).forwards(field)
    }

    fn speaks(&self, api: Api) -> bool {
        (**self).speaks(api)
    }

    fn structured_output(&self) -> Option<(&'static str, &'static str)> {
        (**self).structured_output()
    }

    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        (**self).complete_wire(request, wire).await
    }

    async fn stream_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
        cut: CutWhen<'_>,
    ) -> Result<WireAnswer, ProviderError> {
        (**self).stream_wire(request, wire, cut).await
    }

    async fn complete_responses(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        (**self).complete_responses(request, wire).await
    }
}
