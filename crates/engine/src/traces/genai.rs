//! OpenTelemetry's GenAI semantic conventions (`gen_ai.*`), as the
//! instrumentations write them across versions (docs/traces.md has the
//! table):
//!
//! - v1.37 and later: `gen_ai.input.messages`, `gen_ai.output.messages`
//!   and `gen_ai.system_instructions` as JSON, messages of typed `parts`
//!   (`text`, `tool_call`, `tool_call_response`, `reasoning`), on the span
//!   or on its `gen_ai.client.inference.operation.details` event;
//! - v1.28 to v1.36: one event per message (`gen_ai.system.message`,
//!   `gen_ai.user.message`, `gen_ai.assistant.message`,
//!   `gen_ai.tool.message`, `gen_ai.choice`) with the body's fields as
//!   attributes;
//! - v1.26 and v1.27: events `gen_ai.content.prompt` (`gen_ai.prompt`)
//!   and `gen_ai.content.completion` (`gen_ai.completion`), JSON in
//!   OpenAI's shape.
//!
//! `execute_tool` spans map to the tool's call (`gen_ai.tool.name`,
//! `gen_ai.tool.call.arguments`) and its result (`gen_ai.tool.call.result`).

use super::mapped::{
    arguments, json_value, openai_messages, role, Convention, Mapped, Output, Unmapped,
};
use super::span::{attr_str, Span};
use probity_core::conversation::{Message, Role, ToolCall};
use serde_json::{Map, Value};

const C: Convention = Convention::GenAi;

/// Whether `span` speaks the GenAI conventions.
pub fn applies(span: &Span) -> bool {
    [
        "gen_ai.operation.name",
        "gen_ai.system",
        "gen_ai.provider.name",
    ]
    .iter()
    .any(|k| span.attributes.contains_key(*k))
}

/// Map a GenAI span.
pub fn map(span: &Span) -> Result<Mapped, Unmapped> {
    let operation = span
        .str("gen_ai.operation.name")
        .or_else(|| span.name.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "chat".into());
    let model = span
        .str("gen_ai.response.model")
        .or_else(|| span.str("gen_ai.request.model"));
    let base = Mapped {
        convention: C,
        operation,
        model,
        messages: Vec::new(),
        output: Output::default(),
        input_tokens: span
            .int("gen_ai.usage.input_tokens")
            .or_else(|| span.int("gen_ai.usage.prompt_tokens")),
        output_tokens: span
            .int("gen_ai.usage.output_tokens")
            .or_else(|| span.int("gen_ai.usage.completion_tokens")),
        error: span.error.clone(),
    };
    if base.operation == "execute_tool" {
        return tool(span, base);
    }
    let (messages, output) = content(span)?;
    if messages.is_empty() && output.is_none() {
        return Err(Unmapped::NoContent(C));
    }
    let output = output.unwrap_or_default();
    if output.is_empty() && base.error.is_none() {
        return Err(Unmapped::NoContent(C));
    }
    Ok(Mapped {
        messages,
        output,
        ..base
    })
}

/// The input messages and the output, from whichever version's fields the
/// span carries (the newest first).
fn content(span: &Span) -> Result<(Vec<Message>, Option<Output>), Unmapped> {
    let details = span
        .events
        .iter()
        .find(|e| e.name == "gen_ai.client.inference.operation.details")
        .map(|e| &e.attributes);
    for attrs in std::iter::once(&span.attributes).chain(details) {
        if attrs.contains_key("gen_ai.input.messages")
            || attrs.contains_key("gen_ai.output.messages")
        {
            return parts_content(attrs);
        }
    }
    let prompt = span
        .events
        .iter()
        .find(|e| e.name == "gen_ai.content.prompt");
    let completion = span
        .events
        .iter()
        .find(|e| e.name == "gen_ai.content.completion");
    if prompt.is_some() || completion.is_some() {
        let messages = match prompt.and_then(|e| e.attributes.get("gen_ai.prompt")) {
            Some(v) => {
                openai_messages(&json_value(v)).map_err(|e| shape(format!("gen_ai.prompt: {e}")))?
            }
            None => Vec::new(),
        };
        let output = match completion.and_then(|e| e.attributes.get("gen_ai.completion")) {
            Some(v) => Some(
                openai_output(&json_value(v))
                    .map_err(|e| shape(format!("gen_ai.completion: {e}")))?,
            ),
            None => None,
        };
        return Ok((messages, output));
    }
    event_content(span)
}

fn shape(detail: String) -> Unmapped {
    Unmapped::UnknownShape(C, detail)
}

/// v1.37+: messages of typed parts.
fn parts_content(attrs: &Map<String, Value>) -> Result<(Vec<Message>, Option<Output>), Unmapped> {
    let mut messages = Vec::new();
    if let Some(v) = attrs.get("gen_ai.system_instructions") {
        let text = parts_text(&json_value(v))
            .map_err(|e| shape(format!("gen_ai.system_instructions: {e}")))?;
        messages.push(Message::text(Role::System, text));
    }
    if let Some(v) = attrs.get("gen_ai.input.messages") {
        let list = json_value(v);
        let list = list
            .as_array()
            .ok_or_else(|| shape("gen_ai.input.messages: not a list".into()))?;
        for (i, m) in list.iter().enumerate() {
            messages.extend(
                parts_message(m).map_err(|e| shape(format!("gen_ai.input.messages[{i}]: {e}")))?,
            );
        }
    }
    let output = match attrs.get("gen_ai.output.messages") {
        Some(v) => {
            let list = json_value(v);
            let first = list
                .as_array()
                .ok_or_else(|| shape("gen_ai.output.messages: not a list".into()))?
                .first();
            match first {
                Some(m) => Some(
                    parts_output(m)
                        .map_err(|e| shape(format!("gen_ai.output.messages[0]: {e}")))?,
                ),
                None => None,
            }
        }
        None => None,
    };
    Ok((messages, output))
}

/// The text parts of a list of parts, joined.
fn parts_text(v: &Value) -> Result<String, String> {
    let parts = v.as_array().ok_or("not a list of parts")?;
    let mut text = String::new();
    for (i, p) in parts.iter().enumerate() {
        match p.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(p.get("content").and_then(Value::as_str).unwrap_or("")),
            other => return Err(format!("part {i} is of type {other:?}, not text")),
        }
    }
    Ok(text)
}

/// One input message of parts: one message, or one tool message per
/// `tool_call_response` part.
fn parts_message(m: &Value) -> Result<Vec<Message>, String> {
    if m.get("parts").is_none() && m.get("content").is_some() {
        // A message written in OpenAI's shape.
        return openai_messages(&Value::Array(vec![m.clone()]));
    }
    let who = m.get("role").and_then(Value::as_str).unwrap_or("");
    let r = role(who).ok_or_else(|| format!("unknown role {who:?}"))?;
    let parts = m
        .get("parts")
        .and_then(Value::as_array)
        .ok_or("no `parts` list")?;
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => text.push_str(p.get("content").and_then(Value::as_str).unwrap_or("")),
            "tool_call" => calls.push(tool_call(p)),
            "tool_call_response" => {
                let id = p.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                let result = p.get("response").or_else(|| p.get("result")).unwrap_or(&Value::Null);
                let result = match result {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                results.push(Message::tool_result(id, result));
            }
            // The model's reasoning is not what it said: not checked.
            "reasoning" => {}
            other => return Err(format!("part {i} is of type {other:?} (only text, tool calls and tool results are checked)")),
        }
    }
    if !results.is_empty() {
        return Ok(results);
    }
    Ok(vec![Message {
        tool_calls: calls,
        name: m.get("name").and_then(Value::as_str).map(str::to_string),
        ..Message::text(r, text)
    }])
}

fn parts_output(m: &Value) -> Result<Output, String> {
    let message = parts_message(m)?;
    let m = message
        .into_iter()
        .next()
        .unwrap_or_else(|| Message::text(Role::Assistant, ""));
    Ok(Output {
        content: Some(m.content).filter(|c| !c.is_empty()),
        tool_calls: m.tool_calls,
    })
}

fn tool_call(p: &Value) -> ToolCall {
    ToolCall {
        id: p
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        arguments: arguments(p.get("arguments")),
    }
}

/// An output in OpenAI's shape: a list of choices or messages (the first
/// taken), a message, or a text.
fn openai_output(v: &Value) -> Result<Output, String> {
    let v = match v {
        Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let message = v.get("message").cloned().unwrap_or(v);
    match &message {
        Value::String(s) => Ok(Output {
            content: Some(s.clone()),
            tool_calls: Vec::new(),
        }),
        Value::Object(o) => {
            let mut o = o.clone();
            o.entry("role").or_insert(Value::String("assistant".into()));
            let m = openai_messages(&Value::Array(vec![Value::Object(o)]))?.remove(0);
            Ok(Output {
                content: Some(m.content).filter(|c| !c.is_empty()),
                tool_calls: m.tool_calls,
            })
        }
        other => Err(format!("{} is no output", super::span::kind(other))),
    }
}

/// v1.28–v1.36: one event per message, its body's fields as attributes.
fn event_content(span: &Span) -> Result<(Vec<Message>, Option<Output>), Unmapped> {
    let mut messages = Vec::new();
    let mut output = None;
    for e in &span.events {
        let a = &e.attributes;
        let content = attr_str(a, "content").unwrap_or_default();
        let r = match e.name.as_str() {
            "gen_ai.system.message" => Role::System,
            "gen_ai.user.message" => Role::User,
            "gen_ai.assistant.message" => Role::Assistant,
            "gen_ai.tool.message" => {
                let id = attr_str(a, "id").unwrap_or_default();
                messages.push(Message::tool_result(id, content));
                continue;
            }
            "gen_ai.choice" if output.is_none() => {
                let message = a.get("message").map(json_value).unwrap_or(Value::Null);
                let message = if message.is_null() {
                    Value::Object(a.clone())
                } else {
                    message
                };
                output = Some(
                    openai_output(&message).map_err(|e| shape(format!("gen_ai.choice: {e}")))?,
                );
                continue;
            }
            _ => continue,
        };
        let calls = match a.get("tool_calls").map(json_value) {
            Some(Value::Array(calls)) => calls
                .iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(c);
                    ToolCall {
                        id: c.get("id").and_then(Value::as_str).unwrap_or("").into(),
                        name: f.get("name").and_then(Value::as_str).unwrap_or("").into(),
                        arguments: arguments(f.get("arguments")),
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        messages.push(Message {
            tool_calls: calls,
            ..Message::text(r, content)
        });
    }
    Ok((messages, output))
}

/// An `execute_tool` span: the tool's call as an assistant message, its
/// result as the output.
fn tool(span: &Span, base: Mapped) -> Result<Mapped, Unmapped> {
    let args = span.attributes.get("gen_ai.tool.call.arguments");
    let result = span.str("gen_ai.tool.call.result");
    if args.is_none() && result.is_none() {
        return Err(Unmapped::NoContent(C));
    }
    let call = ToolCall {
        id: span.str("gen_ai.tool.call.id").unwrap_or_default(),
        name: span.str("gen_ai.tool.name").unwrap_or_default(),
        arguments: arguments(args),
    };
    Ok(Mapped {
        messages: vec![Message {
            tool_calls: vec![call],
            ..Message::text(Role::Assistant, "")
        }],
        output: Output {
            content: result,
            tool_calls: Vec::new(),
        },
        ..base
    })
}
