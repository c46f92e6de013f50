//! A Chat Completions request mapped onto Anthropic's messages API, and
//! its answer mapped back — for `probity serve` in front of an `anthropic`
//! upstream. Pure functions over JSON.
//!
//! Requests: `system`/`developer` messages become the top-level `system`;
//! `user` content parts become `text` and `image` blocks (a `data:` URL as
//! base64, any other URL by reference); an `assistant` message's
//! `tool_calls` become `tool_use` blocks (arguments parsed as JSON); a
//! `tool` message a `tool_result` block in a user turn; consecutive turns
//! of one role are merged, and a turn of one text is sent as a string.
//! What the messages API has no place for is an error naming the message
//! (from 0) and the field, never dropped: a system or developer message
//! after the first turn (Anthropic's `system` comes before every turn), a
//! `name`, a tool result without its `tool_call_id`, tool-call arguments
//! that are not a JSON object, a content part other than text and images
//! (text only in system messages). Fields: `max_tokens` / `max_completion_tokens`
//! → `max_tokens`, `temperature`, `top_p`, `stop` → `stop_sequences`,
//! `tools` → `{name, description, input_schema}`, `tool_choice` (`auto`,
//! `required` → `any`, `none`, a named function → `tool`),
//! `parallel_tool_calls: false` → `disable_parallel_tool_use`, `user` →
//! `metadata.user_id`, and `model` when not pinned. Any other field has
//! no Anthropic equivalent and is refused by `probity serve`
//! ([`FORWARDED`]).
//!
//! Answers: `text` blocks joined are the content, `tool_use` blocks the
//! `tool_calls` (input serialized as the arguments string); `stop_reason`
//! `end_turn` / `stop_sequence` → `stop`, `max_tokens` → `length`,
//! `tool_use` → `tool_calls`.

use serde_json::{json, Map, Value};

/// The Chat Completions fields an Anthropic upstream takes.
pub const FORWARDED: &[&str] = &[
    "model",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "user",
];

/// `body` (the provider's own, from its configuration) with the client's
/// `messages` (OpenAI-shaped, as [`crate::provider::openai_wire::upstream_messages`]
/// gives them) and `params` mapped in; the request's fields win.
pub fn apply(
    body: &mut Map<String, Value>,
    messages: &[Value],
    params: &Map<String, Value>,
) -> Result<(), String> {
    let (system, turns) = map_messages(messages).map_err(|(i, p)| format!("message {i}: {p}"))?;
    if system.is_empty() {
        body.remove("system");
    } else {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(turns));
    let mut disable_parallel = false;
    for (k, v) in params {
        match k.as_str() {
            "model" | "temperature" | "top_p" => {
                body.insert(k.clone(), v.clone());
            }
            "max_tokens" | "max_completion_tokens" => {
                body.insert("max_tokens".into(), v.clone());
            }
            "stop" => {
                let stops = match v {
                    Value::String(s) => json!([s]),
                    other => other.clone(),
                };
                body.insert("stop_sequences".into(), stops);
            }
            "tools" => {
                body.insert("tools".into(), map_tools(v)?);
            }
            "tool_choice" => {
                body.insert("tool_choice".into(), map_tool_choice(v)?);
            }
            "parallel_tool_calls" => disable_parallel = v == &Value::Bool(false),
            "user" => {
                body.insert("metadata".into(), json!({"user_id": v}));
            }
            other => return Err(format!("`{other}` has no Anthropic equivalent")),
        }
    }
    if disable_parallel {
        let choice = body
            .entry("tool_choice")
            .or_insert_with(|| json!({"type": "auto"}));
        if let Some(obj) = choice.as_object_mut() {
            obj.insert("disable_parallel_tool_use".into(), json!(true));
        }
    }
    Ok(())
}

fn map_tools(tools: &Value) -> Result<Value, String> {
    let tools = tools.as_array().ok_or("`tools` must be an array")?;
    tools
        .iter()
        .map(|t| {
            let f = t
                .get("function")
                .ok_or("each of `tools` must be {\"type\": \"function\", \"function\": {…}}")?;
            let mut out = json!({
                "name": f.get("name").cloned().unwrap_or(Value::Null),
                "input_schema": f.get("parameters").cloned().unwrap_or(json!({"type": "object"})),
            });
            if let Some(d) = f.get("description") {
                out["description"] = d.clone();
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Value::Array)
}

fn map_tool_choice(choice: &Value) -> Result<Value, String> {
    Ok(match choice {
        Value::String(s) if s == "auto" => json!({"type": "auto"}),
        Value::String(s) if s == "required" => json!({"type": "any"}),
        Value::String(s) if s == "none" => json!({"type": "none"}),
        Value::Object(o) => match o.get("function").and_then(|f| f.get("name")) {
            Some(name) => json!({"type": "tool", "name": name}),
            None => return Err(format!("`tool_choice` {choice} names no function")),
        },
        other => {
            return Err(format!(
                "`tool_choice` {other} is not auto, required, none or a function"
            ))
        }
    })
}

/// The system texts and the turns, consecutive turns of one role merged;
/// or the first message (its index) the messages API cannot carry, and
/// why.
pub(crate) fn map_messages(
    messages: &[Value],
) -> Result<(Vec<String>, Vec<Value>), (usize, String)> {
    let mut system = Vec::new();
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let at = |problem: String| (i, problem);
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        if m.get("name").is_some_and(|n| !n.is_null()) {
            return Err(at(
                "field `name` has no place in Anthropic's messages API".into()
            ));
        }
        let (role, blocks) = match role {
            "system" | "developer" if turns.is_empty() => {
                system.push(system_text(m.get("content")).map_err(at)?);
                continue;
            }
            "system" | "developer" => {
                return Err(at(format!(
                    "a {role} message after the first turn has no place in Anthropic's messages API (its `system` comes before every turn)"
                )))
            }
            "assistant" => ("assistant", assistant_blocks(m).map_err(at)?),
            "tool" => {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("a tool result without `tool_call_id`".into()))?;
                let block = json!({
                    "type": "tool_result",
                    "tool_use_id": id,
                    "content": system_text(m.get("content")).map_err(at)?,
                });
                ("user", vec![block])
            }
            _ => ("user", content_blocks(m.get("content")).map_err(at)?),
        };
        match turns.last_mut() {
            Some((last, b)) if last == role => b.extend(blocks),
            _ => turns.push((role.to_string(), blocks)),
        }
    }
    let turns = turns
        .into_iter()
        .map(|(role, content)| match content.as_slice() {
            [one] if one["type"] == "text" => json!({"role": role, "content": one["text"]}),
            _ => json!({"role": role, "content": content}),
        })
        .collect();
    Ok((system, turns))
}

/// The text of a content (a string, or its text parts joined) where only
/// text has a place: a system prompt, a tool's result.
fn system_text(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (p, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    (kind, _) => {
                        return Err(format!(
                            "content[{p}] is a `{}` part; only text has a place here",
                            kind.unwrap_or("?")
                        ))
                    }
                }
            }
            Ok(text)
        }
        Some(other) => Err(format!("`content` {other} is neither text nor parts")),
    }
}

fn content_blocks(content: Option<&Value>) -> Result<Vec<Value>, String> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![json!({"type": "text", "text": s})]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(p, part)| part_block(part).map_err(|e| format!("content[{p}]: {e}")))
            .collect(),
        Some(other) => Err(format!("message content {other} is neither text nor parts")),
    }
}

fn part_block(part: &Value) -> Result<Value, String> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => {
            Ok(json!({"type": "text", "text": part.get("text").cloned().unwrap_or(json!(""))}))
        }
        Some("image_url") => {
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .ok_or("an image_url part has no url")?;
            Ok(image_block(url))
        }
        Some(other) => Err(format!(
            "content parts of type `{other}` have no Anthropic equivalent"
        )),
        None => Err("a content part has no `type`".into()),
    }
}

/// `data:<media type>;base64,<data>` as a base64 source, any other URL by
/// reference.
fn image_block(url: &str) -> Value {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    match inline {
        Some((media_type, data)) => json!({"type": "image", "source": {
            "type": "base64", "media_type": media_type, "data": data}}),
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn assistant_blocks(m: &Value) -> Result<Vec<Value>, String> {
    let mut blocks = content_blocks(m.get("content"))?;
    for (c, call) in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = format!("tool_calls[{c}].function.arguments");
        let input = match call.pointer("/function/arguments") {
            None | Some(Value::Null) => json!({}),
            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
            Some(Value::String(s)) => {
                serde_json::from_str(s).map_err(|e| format!("`{field}` is not JSON ({e}): {s}"))?
            }
            Some(other) => other.clone(),
        };
        if !input.is_object() {
            return Err(format!(
                "`{field}` is {input}; Anthropic's tool_use takes a JSON object"
            ));
        }
        blocks.push(json!({
            "type": "tool_use",
            "id": call.get("id").cloned().unwrap_or(Value::Null),
            "name": call.pointer("/function/name").cloned().unwrap_or(Value::Null),
            "input": input,
        }));
    }
    Ok(blocks)
}

/// An Anthropic answer's tool calls in the OpenAI shape (`None`: none).
pub fn tool_calls(answer: &Value) -> Option<Value> {
    let calls: Vec<Value> = answer
        .get("content")?
        .as_array()?
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|b| {
            json!({
                "id": b.get("id").cloned().unwrap_or(Value::Null),
                "type": "function",
                "function": {
                    "name": b.get("name").cloned().unwrap_or(Value::Null),
                    "arguments": b.get("input").map(Value::to_string).unwrap_or_else(|| "{}".into()),
                },
            })
        })
        .collect();
    (!calls.is_empty()).then_some(Value::Array(calls))
}

/// An Anthropic `stop_reason` as a Chat Completions `finish_reason`.
pub fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "max_tokens" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        other => other,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_tools_and_fields_map_onto_the_messages_api() {
        let messages = vec![
            json!({"role": "developer", "content": "Be brief."}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{\"x\":1}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "a cat"}),
            json!({"role": "user", "content": "And now?"}),
        ];
        let params = json!({"max_completion_tokens": 9, "stop": "END", "user": "u1",
            "tools": [{"type": "function", "function": {"name": "look", "description": "d", "parameters": {"type": "object"}}}],
            "tool_choice": "required", "parallel_tool_calls": false});
        let mut body = Map::new();
        apply(&mut body, &messages, params.as_object().unwrap()).unwrap();
        let body = Value::Object(body);
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["max_tokens"], 9);
        assert_eq!(body["stop_sequences"], json!(["END"]));
        assert_eq!(body["metadata"]["user_id"], "u1");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        let turns = body["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 3, "{turns:?}");
        assert_eq!(turns[0]["content"][1]["source"]["media_type"], "image/png");
        assert_eq!(turns[1]["content"][0]["input"], json!({"x": 1}));
        // The tool result and the next user message are one user turn.
        assert_eq!(turns[2]["content"][0]["type"], "tool_result");
        assert_eq!(turns[2]["content"][1]["text"], "And now?");
    }

    #[test]
    fn fields_without_an_equivalent_are_errors_and_answers_map_back() {
        let mut body = Map::new();
        let params = json!({"logit_bias": {"1": 2}});
        let err = apply(&mut body, &[], params.as_object().unwrap()).unwrap_err();
        assert!(err.contains("`logit_bias`"), "{err}");
        let answer = json!({"content": [{"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}], "stop_reason": "tool_use"});
        let calls = tool_calls(&answer).unwrap();
        assert_eq!(calls[0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(finish_reason("tool_use"), "tool_calls");
        assert_eq!(finish_reason("max_tokens"), "length");
    }
}
