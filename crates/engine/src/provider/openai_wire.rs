//! The OpenAI chat-completions wire format, defined once: read and written
//! by the `openai` provider, `probity serve` (the guard as an endpoint) and
//! the simulator's server.

use crate::provider::types::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A chat-completions request as a server receives it. Fields other than
/// these are ignored; these are read strictly (`"stream": "true"`, a
/// string, is an error, not a bool). Read it with [`ChatRequest::parse`]
/// for messages that name the field.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<WireMessage>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// Whether the client asks for server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Choices asked for: a positive integer.
    #[serde(default)]
    pub n: Option<u32>,
}

impl ChatRequest {
    /// Read a request body (a JSON object). The error is a message for the
    /// client naming the field and what it must be.
    pub fn parse(body: &[u8]) -> Result<ChatRequest, String> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
        let Value::Object(map) = &v else {
            return Err("the body must be a JSON object (a chat completions request)".into());
        };
        let field = |name: &str| map.get(name).filter(|v| !v.is_null());
        if let Some(s) = field("stream") {
            if !s.is_boolean() {
                return Err(format!("`stream` must be true or false, not {s}"));
            }
        }
        if let Some(n) = field("n") {
            if !n
                .as_u64()
                .is_some_and(|n| (1..=u64::from(u32::MAX)).contains(&n))
            {
                return Err(format!("`n` must be a positive integer, not {n}"));
            }
        }
        for (name, ok) in [
            ("model", field("model").is_none_or(Value::is_string)),
            ("seed", field("seed").is_none_or(|s| s.as_u64().is_some())),
        ] {
            if !ok {
                return Err(format!("`{name}` has the wrong type"));
            }
        }
        let messages_ok = map
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                !m.is_empty()
                    && m.iter()
                        .all(|m| m.get("role").is_some_and(Value::is_string))
            });
        if !messages_ok {
            return Err("`messages` must be a non-empty array of messages with a `role`".into());
        }
        ChatRequest::deserialize(&v).map_err(|e| format!("invalid request: {e}"))
    }
}

/// A message as sent by clients: `content` is a string, an array of parts
/// (their `text` joined), or null.
#[derive(Debug, Clone, Deserialize)]
pub struct WireMessage {
    pub role: String,
    #[serde(default)]
    pub content: Value,
}

impl WireMessage {
    /// The message, with `system` and `developer` as system messages and
    /// any role but `assistant` as the user's.
    pub fn into_message(self) -> Message {
        Message::text(role_of(&self.role), flat_content(&self.content))
    }
}

/// A message's role as the flattened [`Message`] keeps it: `system` and
/// `developer` are system messages, `assistant` the assistant's, any other
/// (`user`, `tool`, `function`) the user's.
fn role_of(role: &str) -> Role {
    match role {
        "system" | "developer" => Role::System,
        "assistant" => Role::Assistant,
        _ => Role::User,
    }
}

/// A message's content as text: a string as is, an array of parts their
/// `text` joined (images and other parts have none), null empty.
fn flat_content(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A client's message (a JSON object with a string `role`) flattened to
/// the [`Message`] that checks, the simulator and cache keys read.
pub fn flatten(message: &Value) -> Message {
    Message::text(
        role_of(
            message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("user"),
        ),
        flat_content(message.get("content").unwrap_or(&Value::Null)),
    )
}

/// The messages to send upstream for a client's messages as sent (`raw`)
/// and the flattened messages of this attempt (`current`, which the guard
/// may have changed: feedback appended to a message, messages added).
/// A raw message whose flattened text is unchanged is sent intact (its
/// content parts, `tool_calls`, `tool_call_id`, `name`); one with text
/// appended gets it as a string or, when its content is an array of parts,
/// as one more text part; one otherwise changed gets the new text as its
/// content; messages beyond the raw ones are sent as `{role, content}`.
pub fn upstream_messages(raw: &[Value], current: &[Message]) -> Vec<Value> {
    upstream_messages_with(raw, current, flatten, "text")
}

/// [`upstream_messages`] for messages read by `flatten`, text added to a
/// message of parts as a part of type `text_part` (`text` for Chat
/// Completions; the Responses API's items are read by their own
/// flattening and take `input_text`).
pub fn upstream_messages_with(
    raw: &[Value],
    current: &[Message],
    flatten: fn(&Value) -> Message,
    text_part: &str,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(current.len().max(raw.len()));
    for (i, now) in current.iter().enumerate() {
        let Some(sent) = raw.get(i) else {
            out.push(json!(now));
            continue;
        };
        let was = flatten(sent);
        if was.content == now.content {
            out.push(sent.clone());
            continue;
        }
        let mut message = sent.clone();
        let added = now.content.strip_prefix(was.content.as_str());
        match (message.get_mut("content"), added) {
            (Some(Value::Array(parts)), Some(added)) => {
                parts.push(json!({"type": text_part, "text": added}));
            }
            _ => {
                if let Some(obj) = message.as_object_mut() {
                    obj.insert("content".into(), Value::String(now.content.clone()));
                }
            }
        }
        out.push(message);
    }
    out
}

/// A chat-completions response. Every field has a default when read, so a
/// provider can take what an answer has and say what it lacks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatResponse {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<Choice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
}

impl ChatResponse {
    /// One assistant message `content` with its token usage.
    pub fn single(id: String, created: u64, model: &str, content: String, usage: Usage) -> Self {
        ChatResponse {
            id,
            object: "chat.completion".into(),
            created,
            model: model.into(),
            choices: vec![Choice {
                index: 0,
                message: ResponseMessage {
                    role: "assistant".into(),
                    content: Some(content),
                    tool_calls: None,
                },
                finish_reason: Some("stop".into()),
                logprobs: None,
            }],
            usage: Some(usage),
            system_fingerprint: None,
        }
    }

    /// The first choice's text.
    pub fn text(&self) -> Option<&str> {
        self.choices.first()?.message.content.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Choice {
    pub index: u32,
    pub message: ResponseMessage,
    pub finish_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ResponseMessage {
    pub role: String,
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
}

impl Usage {
    /// Prompt and completion tokens, with their total.
    pub fn of(prompt: u64, completion: u64) -> Self {
        Usage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: Some(prompt + completion),
        }
    }
}

/// An error body: `{"error": {"message", "type", "code"}}`.
pub fn error_body(code: u16, kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": code}})
}
