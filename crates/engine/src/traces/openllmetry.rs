//! Traceloop's OpenLLMetry: an LLM call's conversation in
//! `gen_ai.prompt.N.{role, content, tool_calls.K.{id, name, arguments},
//! tool_call_id}` and its answer in `gen_ai.completion.0.*`, the kind of
//! call in `llm.request.type`; a workflow, task, agent or tool
//! (`traceloop.span.kind`) with `traceloop.entity.input` and
//! `traceloop.entity.output` as JSON. Content is on unless the app set
//! `TRACELOOP_TRACE_CONTENT=false`.

use super::mapped::{indexed, indexed_calls, role, Convention, Mapped, Output, Unmapped};
use super::span::{attr_str, Span};
use probity_core::conversation::{Message, Role};
use serde_json::{Map, Value};

const C: Convention = Convention::OpenLlmetry;

pub fn applies(span: &Span) -> bool {
    span.attributes.keys().any(|k| {
        k.starts_with("traceloop.")
            || k == "llm.request.type"
            || ["gen_ai.prompt.", "gen_ai.completion."].iter().any(|p| {
                k.strip_prefix(p)
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
    })
}

pub fn map(span: &Span) -> Result<Mapped, Unmapped> {
    let entity = span.str("traceloop.span.kind");
    let operation = match (entity.as_deref(), span.str("llm.request.type").as_deref()) {
        (Some("agent"), _) => "invoke_agent".to_string(),
        (Some("tool"), _) => "execute_tool".to_string(),
        (Some(kind), _) => kind.to_string(),
        (None, Some("completion")) => "text_completion".to_string(),
        (None, Some(other)) => other.to_string(),
        (None, None) => "chat".to_string(),
    };
    let base = Mapped {
        convention: C,
        operation,
        model: span
            .str("gen_ai.response.model")
            .or_else(|| span.str("gen_ai.request.model")),
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
    let shape = |d: String| Unmapped::UnknownShape(C, d);
    let (messages, output) = if entity.is_some() {
        let input = span.str("traceloop.entity.input");
        let output = span.str("traceloop.entity.output");
        (
            input
                .map(|i| vec![Message::text(Role::User, i)])
                .unwrap_or_default(),
            output.map(|o| Output {
                content: Some(o),
                tool_calls: Vec::new(),
            }),
        )
    } else {
        let messages = indexed(&span.attributes, "gen_ai.prompt")
            .into_iter()
            .map(|(i, m)| message(&m).map_err(|e| shape(format!("gen_ai.prompt.{i}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let output = indexed(&span.attributes, "gen_ai.completion")
            .into_iter()
            .next()
            .map(|(_, m)| message(&m).map_err(|e| shape(format!("gen_ai.completion.0: {e}"))))
            .transpose()?
            .map(|m| Output {
                content: Some(m.content).filter(|c| !c.is_empty()),
                tool_calls: m.tool_calls,
            });
        (messages, output)
    };
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

/// One indexed message. Content is text, or (newer versions) a JSON list
/// of parts whose `text` parts are joined.
fn message(m: &Map<String, Value>) -> Result<Message, String> {
    let who = attr_str(m, "role").unwrap_or_else(|| "user".into());
    let r = role(&who).ok_or_else(|| format!("unknown role {who:?}"))?;
    let raw = attr_str(m, "content").unwrap_or_default();
    let content = match serde_json::from_str::<Value>(&raw) {
        Ok(Value::Array(parts)) if parts.iter().all(|p| p.get("type").is_some()) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => Ok(p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()),
                other => Err(format!(
                    "a content part of type {other:?} (only text is checked)"
                )),
            })
            .collect::<Result<String, String>>()?,
        _ => raw,
    };
    Ok(Message {
        tool_calls: indexed_calls(m, "tool_calls", ["id", "name", "arguments"]),
        tool_call_id: attr_str(m, "tool_call_id"),
        ..Message::text(r, content)
    })
}
