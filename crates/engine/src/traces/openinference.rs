//! Arize Phoenix's OpenInference conventions: `openinference.span.kind`
//! (LLM, AGENT, CHAIN, TOOL, …), the conversation in
//! `llm.input_messages.N.message.*` and the answer in
//! `llm.output_messages.0.message.*` (role, content or `contents.M.
//! message_content.text`, `tool_calls.K.tool_call.{id, function.name,
//! function.arguments}`, `tool_call_id`), else `input.value` and
//! `output.value` (a Chat Completions request and answer as JSON, or text).

use super::mapped::{
    arguments, indexed, indexed_calls, openai_messages, role, Convention, Mapped, Output, Unmapped,
};
use super::span::{attr_str, Span};
use probity_core::conversation::{Message, Role, ToolCall};
use serde_json::{Map, Value};

const C: Convention = Convention::OpenInference;

pub fn applies(span: &Span) -> bool {
    span.attributes.contains_key("openinference.span.kind")
}

pub fn map(span: &Span) -> Result<Mapped, Unmapped> {
    let kind = span.str("openinference.span.kind").unwrap_or_default();
    let operation = match kind.to_ascii_uppercase().as_str() {
        "LLM" => "chat",
        "AGENT" => "invoke_agent",
        "TOOL" => "execute_tool",
        "CHAIN" => "chain",
        // Embeddings, retrievals, rerankings: no answer to check.
        _ => return Err(Unmapped::NotLlm),
    };
    let base = Mapped {
        convention: C,
        operation: operation.into(),
        model: span.str("llm.model_name"),
        messages: Vec::new(),
        output: Output::default(),
        input_tokens: span.int("llm.token_count.prompt"),
        output_tokens: span.int("llm.token_count.completion"),
        error: span.error.clone(),
    };
    let shape = |d: String| Unmapped::UnknownShape(C, d);
    let mut messages: Vec<Message> = indexed(&span.attributes, "llm.input_messages")
        .into_iter()
        .map(|(i, m)| message(&m).map_err(|e| shape(format!("llm.input_messages.{i}: {e}"))))
        .collect::<Result<_, _>>()?;
    let mut output = indexed(&span.attributes, "llm.output_messages")
        .into_iter()
        .next()
        .map(|(_, m)| message(&m).map_err(|e| shape(format!("llm.output_messages.0: {e}"))))
        .transpose()?
        .map(|m| Output {
            content: Some(m.content).filter(|c| !c.is_empty()),
            tool_calls: m.tool_calls,
        });
    if operation == "execute_tool" && messages.is_empty() {
        let call = ToolCall {
            id: span.str("tool_call.id").unwrap_or_default(),
            name: span.str("tool.name").unwrap_or_default(),
            arguments: arguments(span.attributes.get("input.value")),
        };
        if span.attributes.contains_key("input.value") {
            messages.push(Message {
                tool_calls: vec![call],
                ..Message::text(Role::Assistant, "")
            });
        }
    } else if messages.is_empty() {
        if let Some(v) = span.str("input.value") {
            messages = value_messages(&v).map_err(|e| shape(format!("input.value: {e}")))?;
        }
    }
    if output.is_none() {
        if let Some(v) = span.str("output.value") {
            output = Some(value_output(&v).map_err(|e| shape(format!("output.value: {e}")))?);
        }
    }
    let output = output.unwrap_or_default();
    if messages.is_empty() || (output.is_empty() && base.error.is_none()) {
        return Err(Unmapped::NoContent(C));
    }
    Ok(Mapped {
        messages,
        output,
        ..base
    })
}

/// One indexed message (`message.role`, `message.content`, …).
fn message(m: &Map<String, Value>) -> Result<Message, String> {
    let who = attr_str(m, "message.role").unwrap_or_default();
    let r = role(&who).ok_or_else(|| format!("unknown role {who:?}"))?;
    let content = match attr_str(m, "message.content") {
        Some(c) => c,
        None => indexed(m, "message.contents")
            .into_values()
            .map(|p| match attr_str(&p, "message_content.type").as_deref() {
                None | Some("text") => Ok(attr_str(&p, "message_content.text").unwrap_or_default()),
                Some(other) => Err(format!(
                    "a content part of type {other:?} (only text is checked)"
                )),
            })
            .collect::<Result<String, String>>()?,
    };
    Ok(Message {
        tool_calls: indexed_calls(
            m,
            "message.tool_calls",
            [
                "tool_call.id",
                "tool_call.function.name",
                "tool_call.function.arguments",
            ],
        ),
        tool_call_id: attr_str(m, "message.tool_call_id"),
        name: attr_str(m, "message.name"),
        ..Message::text(r, content)
    })
}

/// `input.value`: a request with `messages` as JSON, or text (one user
/// message).
pub(crate) fn value_messages(v: &str) -> Result<Vec<Message>, String> {
    match serde_json::from_str::<Value>(v) {
        Ok(Value::Object(o)) if o.contains_key("messages") => openai_messages(&o["messages"]),
        Ok(Value::Array(a)) if a.iter().all(|m| m.get("role").is_some()) && !a.is_empty() => {
            openai_messages(&Value::Array(a))
        }
        _ => Ok(vec![Message::text(Role::User, v)]),
    }
}

/// `output.value`: a Chat Completions answer as JSON (its first choice's
/// message), or text.
pub(crate) fn value_output(v: &str) -> Result<Output, String> {
    let parsed: Option<Value> = serde_json::from_str(v).ok();
    let message = parsed
        .as_ref()
        .and_then(|p| p.get("choices"))
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"));
    match message {
        Some(m) => {
            let mut m = m.clone();
            if let Some(o) = m.as_object_mut() {
                o.entry("role").or_insert(Value::String("assistant".into()));
            }
            let m = openai_messages(&Value::Array(vec![m]))?.remove(0);
            Ok(Output {
                content: Some(m.content).filter(|c| !c.is_empty()),
                tool_calls: m.tool_calls,
            })
        }
        None => Ok(Output {
            content: Some(v.to_string()),
            tool_calls: Vec::new(),
        }),
    }
}
