//! The OpenAI chat-completions wire format, defined once: read and written
//! by the `openai` provider, `probity serve` (the guard as an endpoint) and
//! the simulator's server.

use crate::provider::types::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A chat-completions request as a server receives it. Fields other than
/// these are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<WireMessage>,
    #[serde(default)]
    pub seed: Option<u64>,
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
        let role = match self.role.as_str() {
            "system" | "developer" => Role::System,
            "assistant" => Role::Assistant,
            _ => Role::User,
        };
        let content = match self.content {
            Value::String(s) => s,
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        Message { role, content }
    }
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
                },
                finish_reason: Some("stop".into()),
            }],
            usage: Some(usage),
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
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ResponseMessage {
    pub role: String,
    pub content: Option<String>,
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
