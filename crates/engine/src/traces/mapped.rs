//! What a span maps to: an input (a conversation, whole) and an output
//! (text and tool calls), or the reason it could not be mapped.

use probity_core::conversation::{Message, Role, ToolCall};
use serde_json::Value;

/// The semantic convention a span was read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Convention {
    /// OpenTelemetry's GenAI semantic conventions (`gen_ai.*`).
    GenAi,
    /// Arize Phoenix's OpenInference (`openinference.span.kind`, `llm.*`).
    OpenInference,
    /// Traceloop's OpenLLMetry (`gen_ai.prompt.N.*`, `traceloop.*`).
    OpenLlmetry,
}

impl Convention {
    pub fn as_str(self) -> &'static str {
        match self {
            Convention::GenAi => "genai",
            Convention::OpenInference => "openinference",
            Convention::OpenLlmetry => "openllmetry",
        }
    }
}

/// The output a span carries: the text, and the tool calls the model made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
}

impl Output {
    pub fn is_empty(&self) -> bool {
        self.content.as_deref().is_none_or(str::is_empty) && self.tool_calls.is_empty()
    }

    /// The tool calls in OpenAI's shape (`[{id, type, function: {name,
    /// arguments}}]`), as an assistant message holds them.
    pub(crate) fn tool_calls_openai(&self) -> Option<Value> {
        if self.tool_calls.is_empty() {
            return None;
        }
        let message = Message {
            tool_calls: self.tool_calls.clone(),
            ..Message::text(Role::Assistant, "")
        };
        message.to_openai().get("tool_calls").cloned()
    }
}

/// A span mapped to one input and its output.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub convention: Convention,
    /// `chat`, `text_completion`, `invoke_agent`, `execute_tool`, … (the
    /// GenAI operation names; other conventions' kinds are named so).
    pub operation: String,
    pub model: Option<String>,
    /// The conversation the model was sent, whole.
    pub messages: Vec<Message>,
    /// What came back; empty when the span records a failure.
    pub output: Output,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The span's status message when its status is ERROR.
    pub error: Option<String>,
}

/// Why a span was not mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmapped {
    /// Not an LLM span by any convention read here (an HTTP client span,
    /// a database span): not counted against the mapping.
    NotLlm,
    /// An LLM span without the content the checks need: message content
    /// is opt-in in every instrumentation, and this one did not opt in.
    NoContent(Convention),
    /// An LLM span whose content is in a shape not understood: `detail`
    /// says which attribute and what is wrong.
    UnknownShape(Convention, String),
    /// A span of an operation the configuration leaves out
    /// (`[traces] operations`).
    Filtered,
}

impl Unmapped {
    /// The reason's name on `/metrics` and in reports.
    pub fn reason(&self) -> &'static str {
        match self {
            Unmapped::NotLlm => "not_llm",
            Unmapped::NoContent(_) => "no_content",
            Unmapped::UnknownShape(..) => "unknown_shape",
            Unmapped::Filtered => "filtered",
        }
    }
}

/// A message from a role name as the conventions write it (`human` and
/// `ai` as LangChain does, `model` as Gemini does); `None` for another.
pub fn role(name: &str) -> Option<Role> {
    Some(match name.to_ascii_lowercase().as_str() {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" | "human" => Role::User,
        "assistant" | "ai" | "model" => Role::Assistant,
        "tool" | "function" | "ipython" => Role::Tool,
        _ => return None,
    })
}

/// Tool-call arguments as JSON: a JSON text parsed, any other text kept as
/// a string, a JSON value as it is.
pub fn arguments(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
    }
}

/// A value that may be JSON written as a string: parsed when it is.
pub(crate) fn json_value(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// A whole message list in OpenAI's shape (a list of `{role, content,
/// tool_calls?, tool_call_id?}`), read leniently: content parts other than
/// text are an error naming them, fields probity does not carry (`refusal`
/// aside) are ignored.
pub(crate) fn openai_messages(v: &Value) -> Result<Vec<Message>, String> {
    let list = v
        .as_array()
        .ok_or_else(|| "the messages are not a list".to_string())?;
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let mut m = m
                .as_object()
                .ok_or_else(|| format!("message {i} is not an object"))?
                .clone();
            m.retain(|k, _| {
                matches!(
                    k.as_str(),
                    "role" | "content" | "tool_calls" | "tool_call_id" | "name" | "refusal"
                )
            });
            if let Some(r) = m.get("role").and_then(Value::as_str).and_then(role) {
                m.insert("role".into(), Value::String(r.as_str().into()));
            }
            Message::from_openai(i, &Value::Object(m)).map_err(|e| e.to_string())
        })
        .collect()
}

/// The attributes `PREFIX.N.REST` of `attrs`, by N in order, each as the
/// map of its `REST` keys (`llm.input_messages.0.message.role` under
/// prefix `llm.input_messages` is entry 0's `message.role`).
pub fn indexed(
    attrs: &serde_json::Map<String, Value>,
    prefix: &str,
) -> std::collections::BTreeMap<usize, serde_json::Map<String, Value>> {
    let mut out: std::collections::BTreeMap<usize, serde_json::Map<String, Value>> =
        Default::default();
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some((n, rest)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(n) = n.parse::<usize>() {
            out.entry(n)
                .or_default()
                .insert(rest.to_string(), v.clone());
        }
    }
    out
}

/// The tool calls `PREFIX.K.…` of one indexed message: `id`, `name` and
/// `arguments` at the keys `id_key`, `name_key`, `args_key` under each K.
pub(crate) fn indexed_calls(
    m: &serde_json::Map<String, Value>,
    prefix: &str,
    keys: [&str; 3],
) -> Vec<ToolCall> {
    indexed(m, prefix)
        .into_values()
        .map(|c| ToolCall {
            id: crate::traces::span::attr_str(&c, keys[0]).unwrap_or_default(),
            name: crate::traces::span::attr_str(&c, keys[1]).unwrap_or_default(),
            arguments: arguments(c.get(keys[2])),
        })
        .collect()
}
