//! A conversation as data: what a system under test is sent when an input
//! carries `messages`, and what an agent's episode leaves behind (its
//! transcript). Roles, text, tool calls with their arguments as JSON, and
//! tool results tied to the call they answer.
//!
//! The one interchange shape is OpenAI's Chat Completions message (the
//! shape `probity export` writes and most traces carry):
//! [`Message::from_openai`] reads it, naming the message and the field that
//! is wrong, and [`Message::to_openai`] writes it. Nothing is dropped on the
//! way in: a field this type cannot hold is an error, never a truncation.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use thiserror::Error;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    /// OpenAI's newer name for instructions from the application.
    Developer,
    User,
    Assistant,
    /// A tool's result, answering the assistant's call `tool_call_id`.
    Tool,
}

impl Role {
    /// The role's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

/// One call of a tool by the assistant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which the tool's result names.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON. The wire carries them as a JSON text; a text
    /// that is not JSON is kept as a JSON string, never dropped.
    pub arguments: Value,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// The text (empty for an assistant message that only calls tools).
    #[serde(default)]
    pub content: String,
    /// The assistant's tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool's result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An optional speaker name (OpenAI's `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Why a message could not be read: which message, which field, what is
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("message {index}: {problem}")]
pub struct ConversationError {
    /// The message's place in its conversation, from 0.
    pub index: usize,
    pub problem: String,
}

impl Message {
    /// A message with text only.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// A tool's result for call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::text(Role::Tool, content)
        }
    }

    /// Read message `index` in OpenAI's Chat Completions shape. Content may
    /// be a string, null (beside tool calls), or a list of text parts
    /// (joined in order); any other part (an image, audio) is an error
    /// naming it, as is an unknown role or a field this type cannot hold
    /// (a null field holds nothing and is let through).
    pub fn from_openai(index: usize, v: &Value) -> Result<Message, ConversationError> {
        let err = |problem: String| ConversationError { index, problem };
        let obj = v
            .as_object()
            .ok_or_else(|| err(format!("expected an object, found {}", kind(v))))?;
        for (key, value) in obj {
            // A null field carries nothing (SDKs echo `"audio": null`).
            if value.is_null() {
                continue;
            }
            if !matches!(
                key.as_str(),
                "role" | "content" | "tool_calls" | "tool_call_id" | "name" | "refusal"
            ) {
                return Err(err(format!(
                    "field `{key}` is not part of a chat message probity can send on"
                )));
            }
        }
        let role = match obj.get("role") {
            Some(Value::String(r)) => Role::parse(r).ok_or_else(|| {
                err(format!(
                    "unknown role `{r}` (expected system, developer, user, assistant or tool)"
                ))
            })?,
            Some(other) => return Err(err(format!("`role` is {}, not a string", kind(other)))),
            None => return Err(err("no `role`".into())),
        };
        let content = content_text(obj.get("content")).map_err(err)?;
        let refusal = match obj.get("refusal") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(err(format!("`refusal` is {}", kind(other)))),
        };
        let content = match (content, refusal) {
            (c, None) => c,
            (c, Some(r)) if c.is_empty() => r,
            (_, Some(_)) => return Err(err("both `content` and `refusal` are set".into())),
        };
        let tool_calls = match obj.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(calls)) => calls
                .iter()
                .enumerate()
                .map(|(c, call)| tool_call(call).map_err(|p| err(format!("tool_calls[{c}]: {p}"))))
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(err(format!("`tool_calls` is {}", kind(other)))),
        };
        if !tool_calls.is_empty() && role != Role::Assistant {
            return Err(err(format!(
                "a {} message has `tool_calls`; only an assistant calls tools",
                role.as_str()
            )));
        }
        let tool_call_id = opt_string(obj, "tool_call_id").map_err(err)?;
        if role == Role::Tool && tool_call_id.is_none() {
            return Err(err("a tool message has no `tool_call_id`".into()));
        }
        Ok(Message {
            role,
            content,
            tool_calls,
            tool_call_id,
            name: opt_string(obj, "name").map_err(err)?,
        })
    }

    /// This message in OpenAI's Chat Completions shape (arguments written
    /// back as a JSON text).
    pub fn to_openai(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), json!(self.role.as_str()));
        if self.tool_calls.is_empty() || !self.content.is_empty() {
            m.insert("content".into(), json!(self.content));
        } else {
            m.insert("content".into(), Value::Null);
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|c| {
                    let arguments = match &c.arguments {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            m.insert("tool_calls".into(), Value::Array(calls));
        }
        if let Some(id) = &self.tool_call_id {
            m.insert("tool_call_id".into(), json!(id));
        }
        if let Some(name) = &self.name {
            m.insert("name".into(), json!(name));
        }
        Value::Object(m)
    }
}

/// Read a whole conversation in OpenAI's shape: a JSON array of messages.
pub fn from_openai(v: &Value) -> Result<Vec<Message>, ConversationError> {
    let list = v.as_array().ok_or_else(|| ConversationError {
        index: 0,
        problem: format!("`messages` is {}, not a list of messages", kind(v)),
    })?;
    list.iter()
        .enumerate()
        .map(|(i, m)| Message::from_openai(i, m))
        .collect()
}

/// A conversation in OpenAI's shape.
pub fn to_openai(messages: &[Message]) -> Value {
    Value::Array(messages.iter().map(Message::to_openai).collect())
}

fn tool_call(v: &Value) -> Result<ToolCall, String> {
    let obj = v.as_object().ok_or_else(|| format!("is {}", kind(v)))?;
    if let Some(t) = obj.get("type").and_then(Value::as_str) {
        if t != "function" {
            return Err(format!("type `{t}` (only function calls are supported)"));
        }
    }
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or("no `id`")?
        .to_string();
    let f = obj
        .get("function")
        .and_then(Value::as_object)
        .ok_or("no `function`")?;
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .ok_or("no `function.name`")?
        .to_string();
    let arguments = match f.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
        Some(other) => other.clone(),
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

fn content_text(v: Option<&Value>) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (p, part) in parts.iter().enumerate() {
                let t = part.get("type").and_then(Value::as_str).unwrap_or("");
                match (t, part.get("text").and_then(Value::as_str)) {
                    ("text", Some(s)) => text.push_str(s),
                    _ => {
                        return Err(format!(
                            "content[{p}] is a `{t}` part; only text parts can be sent on"
                        ))
                    }
                }
            }
            Ok(text)
        }
        Some(other) => Err(format!("`content` is {}", kind(other))),
    }
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` is {}, not a string", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_with_tool_calls_reads_and_writes_back_whole() {
        let wire = json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Book "}, {"type": "text", "text": "it"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{\"seat\":\"4A\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "Booked."}
        ]);
        let messages = from_openai(&wire).unwrap();
        assert_eq!(messages.len(), 5);
        assert_eq!(messages[1].content, "Book it");
        assert_eq!(messages[2].tool_calls[0].arguments, json!({"seat": "4A"}));
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("c1"));
        let again = from_openai(&to_openai(&messages)).unwrap();
        assert_eq!(again, messages);
    }

    #[test]
    fn what_cannot_be_sent_on_is_named_never_dropped() {
        let image = json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]);
        let e = from_openai(&image).unwrap_err();
        assert_eq!(e.index, 0);
        assert!(e.problem.contains("image_url"), "{e}");
        let e = from_openai(
            &json!([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]),
        )
        .unwrap_err();
        assert_eq!(e.index, 1);
        assert!(e.to_string().contains("unknown role `robot`"), "{e}");
        let e = from_openai(&json!([{"role": "tool", "content": "x"}])).unwrap_err();
        assert!(e.problem.contains("tool_call_id"), "{e}");
        let e = from_openai(&json!([{"role": "user", "content": "x", "audio": {}}])).unwrap_err();
        assert!(e.problem.contains("`audio`"), "{e}");
    }

    #[test]
    fn arguments_that_are_not_json_are_kept_as_text() {
        let m = Message::from_openai(
            0,
            &json!({"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{broken"}}]}),
        )
        .unwrap();
        assert_eq!(m.tool_calls[0].arguments, json!("{broken"));
        assert_eq!(
            m.to_openai()["tool_calls"][0]["function"]["arguments"],
            json!("{broken")
        );
    }
}
