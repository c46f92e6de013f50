//! OpenAI's Responses API (`POST {base_url}/responses`), spoken by the
//! `openai` provider when its `api = "responses"` and by `probity serve`
//! for clients of `POST /v1/responses`: the request's `input` items built
//! from the conversation, and the answer read back.
//!
//! What the checks read of a response is what they read of a chat
//! completion ([`AnswerMeta::checked_text`]): the text of its `message`
//! output items (`output_text` parts joined; a `refusal` part's text when
//! there is no other), then its `function_call` items as a JSON array of
//! Chat Completions tool calls (`[{"id": call_id, "type": "function",
//! "function": {"name", "arguments"}}]`), so one check serves both APIs.

use super::types::{AnswerMeta, Completion, Message, ProviderError, Role, WireAnswer, NO_TEXT};

use super::util;
use crate::provider::openai_wire::upstream_messages_with;
use serde_json::{json, Map, Value};

/// The `input` items for a conversation of [`Message`]s (`probity run`
/// through the Responses API): a message as `{role, content}` (an easy
/// input message), an assistant's tool calls as `function_call` items
/// after its text, a tool's result as a `function_call_output`.
pub(crate) fn input_items(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        match m.role {
            Role::Tool => out.push(json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.clone().unwrap_or_default(),
                "output": m.content,
            })),
            _ => {
                if !m.content.is_empty() || m.tool_calls.is_empty() {
                    out.push(json!({"role": m.role.as_str(), "content": m.content}));
                }
                for c in &m.tool_calls {
                    let arguments = match &c.arguments {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    out.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": arguments,
                    }));
                }
            }
        }
    }
    out
}

/// A client's `input` item flattened to the [`Message`] the checks and
/// retries read (one per item, in order): a message its role and text
/// (`input_text`/`output_text` parts joined); a `function_call` the
/// assistant's, its text `name(arguments)`; a `function_call_output` a
/// tool's result; any other item (reasoning, a built-in tool's call) the
/// assistant's with no text.
pub(crate) fn flatten_item(item: &Value) -> Message {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => Message::text(
            Role::Assistant,
            format!("{}({})", s("name"), s("arguments")),
        ),
        Some("function_call_output") => Message::text(Role::Tool, s("output")),
        Some("message") | None if item.get("role").is_some() => {
            crate::provider::openai_wire::flatten(item)
        }
        _ => Message::text(Role::Assistant, ""),
    }
}

/// The `input` to send upstream for a client's items as sent (`raw`) and
/// this attempt's flattened messages (`current`, feedback added by the
/// guard): [`upstream_messages_with`], text added to an item of parts as
/// an `input_text` part.
pub fn upstream_input(raw: &[Value], current: &[Message]) -> Vec<Value> {
    upstream_messages_with(raw, current, flatten_item, "input_text")
}

/// Reads a Responses API response body: the checked text (module docs),
/// usage (`input_tokens`, `output_tokens`), and the response whole in
/// [`AnswerMeta::response`] for `probity serve` to pass on. A response
/// whose status is `failed` is a server error; one with neither text nor
/// function calls has nothing to check ([`NO_TEXT`]).
pub(crate) fn parse_response(
    body: &str,
    headers: Vec<(String, String)>,
) -> Result<WireAnswer, ProviderError> {
    let v = util::json_body(body)?;
    let Some(output) = v.get("output").and_then(Value::as_array) else {
        return Err(ProviderError::BadResponse(format!(
            "no `output` in the response: {}",
            util::body_excerpt(body)
        )));
    };
    if v.get("status").and_then(Value::as_str) == Some("failed") {
        return Err(ProviderError::Server {
            status: 500,
            body: format!(
                "the response failed: {}",
                v.get("error").unwrap_or(&Value::Null)
            ),
        });
    }
    let (text, refusal, calls) = read_output(output);
    let text = text.or(refusal);
    let tool_calls = (!calls.is_empty()).then_some(Value::Array(calls));
    if text.is_none() && tool_calls.is_none() {
        let kinds: Vec<&str> = output
            .iter()
            .filter_map(|i| i.get("type").and_then(Value::as_str))
            .take(8)
            .collect();
        return Err(ProviderError::BadResponse(format!(
            "{NO_TEXT}: its output has no text or function calls, only items of type {}",
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            }
        )));
    }
    let usage = v.get("usage").filter(|u| u.is_object()).cloned();
    let tokens = |k: &str| {
        usage
            .as_ref()
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
    };
    Ok(WireAnswer {
        completion: Completion {
            text: AnswerMeta::checked_text(text.as_deref(), tool_calls.as_ref()),
            input_tokens: tokens("input_tokens"),
            output_tokens: tokens("output_tokens"),
        },
        meta: Some(AnswerMeta {
            content: text,
            tool_calls,
            finish_reason: v.get("status").and_then(Value::as_str).map(String::from),
            model: v.get("model").and_then(Value::as_str).map(String::from),
            usage,
            headers,
            response: Some(v),
            ..AnswerMeta::default()
        }),
        cut: false,
    })
}

/// The output's text (its `output_text` parts), its refusals' text, and
/// its function calls in the Chat Completions shape.
fn read_output(output: &[Value]) -> (Option<String>, Option<String>, Vec<Value>) {
    let mut text: Option<String> = None;
    let mut refusal: Option<String> = None;
    let mut calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let s = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or("");
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            text.get_or_insert_with(String::new).push_str(s("text"))
                        }
                        Some("refusal") => refusal
                            .get_or_insert_with(String::new)
                            .push_str(s("refusal")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let s = |k: &str| item.get(k).cloned().unwrap_or(Value::String(String::new()));
                calls.push(json!({
                    "id": s("call_id"),
                    "type": "function",
                    "function": {"name": s("name"), "arguments": s("arguments")},
                }));
            }
            _ => {}
        }
    }
    (text, refusal, calls)
}

/// The request body for `probity run` (no client request): `model`, the
/// conversation as `input` items, and `configured` (temperature,
/// `max_output_tokens` for max_tokens, seed is not a Responses field and
/// is left out, `extra` last).
pub fn run_body(model: &str, messages: &[Message], configured: &Map<String, Value>) -> Value {
    let mut obj = Map::new();
    obj.insert("model".into(), json!(model));
    obj.insert("input".into(), Value::Array(input_items(messages)));
    for (k, v) in configured {
        let k = if k == "max_tokens" {
            "max_output_tokens"
        } else {
            k.as_str()
        };
        if k != "seed" {
            obj.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use probity_core::conversation::ToolCall;

    #[test]
    fn a_response_reads_as_text_then_chat_shaped_tool_calls() {
        let body = json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "m",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Hel", "annotations": []},
                             {"type": "output_text", "text": "lo", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "f",
                 "arguments": "{\"a\":1}", "status": "completed"}
            ],
            "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
        });
        let a = parse_response(&body.to_string(), Vec::new()).unwrap();
        assert_eq!(
            a.completion.text,
            "Hello\n[{\"function\":{\"arguments\":\"{\\\"a\\\":1}\",\"name\":\"f\"},\"id\":\"call_9\",\"type\":\"function\"}]"
        );
        assert_eq!(
            (a.completion.input_tokens, a.completion.output_tokens),
            (Some(5), Some(3))
        );
        assert_eq!(a.meta.unwrap().response.unwrap()["id"], "resp_1");
    }

    #[test]
    fn a_refusal_is_the_text_and_nothing_to_read_is_named() {
        let refusal = json!({"status": "completed", "output": [{"type": "message", "role": "assistant",
            "content": [{"type": "refusal", "refusal": "I can't."}]}]});
        let a = parse_response(&refusal.to_string(), Vec::new()).unwrap();
        assert_eq!(a.completion.text, "I can't.");
        let nothing =
            json!({"status": "completed", "output": [{"type": "web_search_call", "id": "ws"}]});
        let e = parse_response(&nothing.to_string(), Vec::new()).unwrap_err();
        assert!(e.to_string().contains("web_search_call"), "{e}");
        let failed = json!({"status": "failed", "output": [], "error": {"code": "server_error"}});
        assert!(matches!(
            parse_response(&failed.to_string(), Vec::new()),
            Err(ProviderError::Server { .. })
        ));
    }

    #[test]
    fn a_conversation_with_tool_calls_becomes_input_items() {
        let mut assistant = Message::text(Role::Assistant, "");
        assistant.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "get".into(),
            arguments: json!({"x": 1}),
        }];
        let mut tool = Message::text(Role::Tool, "42");
        tool.tool_call_id = Some("c1".into());
        let items = input_items(&[Message::text(Role::User, "hi"), assistant, tool]);
        assert_eq!(
            Value::Array(items),
            json!([
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c1", "name": "get", "arguments": "{\"x\":1}"},
                {"type": "function_call_output", "call_id": "c1", "output": "42"}
            ])
        );
    }
}
