//! `POST /v1/responses`: OpenAI's Responses API, guarded as chat
//! completions are ([`super::chat`]): the same checks (over the output's
//! text and its function calls, read as Chat Completions tool calls —
//! `provider::openai_responses`), retries, metrics and records. The
//! request is read here, the answer rendered here: the upstream's
//! response object whole (its `id`, so `previous_response_id` chains
//! work, its `output` items, `status`, …) with `usage` summed over the
//! attempts; streamed, the published response as the events the Responses
//! API streams (`response.created` … `response.completed`), sent once
//! every check has passed.

use super::answer::{Header, Publish};
use super::request::{pinned_and_forwarded, ClientRequest, Refusal, Reply};
use crate::provider::openai_responses::flatten_item;
use crate::provider::types::{Api, Provider, WireRequest};
use crate::retry::guard::Attempt;
use serde_json::{json, Map, Value};

/// Read a Responses API request body: `input` (a string, or a non-empty
/// array of items), `stream`; every other field forwarded or refused
/// naming it ([`pinned_and_forwarded`]). `background` and
/// `stream_options` are the guard's own concern and refused.
pub fn parse(
    body: &[u8],
    pin: &[String],
    upstream: &dyn Provider,
) -> Result<ClientRequest, Refusal> {
    if !upstream.speaks(Api::Responses) {
        return Err("this guard's upstream provider does not speak the Responses API; send Chat Completions (POST /v1/chat/completions), or configure an `openai` upstream (docs/serve.md)".into());
    }
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(mut map) = v else {
        return Err("the body must be a JSON object (a Responses API request)".into());
    };
    map.retain(|_, v| !v.is_null());
    let items = match map.remove("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_object) => {
            items
        }
        _ => {
            return Err(
                "`input` must be a string or a non-empty array of input items (objects)".into(),
            )
        }
    };
    let stream = match map.remove("stream") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(format!("`stream` must be true or false, not {other}")),
    };
    if map.get("background") == Some(&Value::Bool(true)) {
        return Err("`background`: the probity guard answers once the output has passed its checks; send the request without `background`".into());
    }
    if map.contains_key("stream_options") {
        return Err("`stream_options` is not supported by the probity guard (it streams the checked response itself)".into());
    }
    if let Some(model) = map.get("model").filter(|m| !m.is_string()) {
        return Err(format!("`model` must be a string, not {model}"));
    }
    let pinned = pinned_and_forwarded(&mut map, pin, upstream)?;
    Ok(ClientRequest {
        messages: items.iter().map(flatten_item).collect(),
        wire: WireRequest {
            messages: items,
            params: map,
        },
        reply: Reply {
            stream,
            include_usage: false,
            pinned,
            api: Api::Responses,
        },
    })
}

/// Usage over every attempt, in the Responses API's shape: each numeric
/// field of the attempts' `usage` objects summed (details included,
/// [`super::answer::usage`]), `input_tokens` and `output_tokens` the
/// attempts' counts and `total_tokens` their sum.
pub fn usage(attempts: &[Attempt]) -> Value {
    super::answer::usage_as(attempts, ("input_tokens", "output_tokens"))
}

/// The published answer as a Responses API response object: the
/// upstream's whole, `usage` summed over the attempts; an answer without
/// one (a provider without the Responses API) as one message.
pub fn body(h: &Header, p: &Publish, usage: Value) -> Value {
    let mut r = match p.meta.as_deref().and_then(|m| m.response.clone()) {
        Some(r) => r,
        None => json!({
            "id": h.id,
            "object": "response",
            "created_at": h.created,
            "status": "completed",
            "model": p.model.as_deref().unwrap_or(&h.model),
            "output": [{
                "type": "message",
                "id": format!("msg_{}", h.id),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": p.content.as_deref().unwrap_or(""), "annotations": []}],
            }],
        }),
    };
    r["usage"] = usage;
    r
}

/// Longest piece of text in one delta event, in bytes.
const PIECE: usize = 64;

/// The response as the server-sent events of a Responses API stream, each
/// `event: TYPE` with its data (`type`, `sequence_number`):
/// `response.created` and `response.in_progress` (the response with no
/// output yet), then per output item `response.output_item.added`, for a
/// message per part `response.content_part.added`, its text in
/// `response.output_text.delta` pieces (a refusal in
/// `response.refusal.delta`), the `….done` events, for a function call its
/// arguments in `response.function_call_arguments.delta` and `.done`,
/// `response.output_item.done`; last `response.completed` with the
/// response whole.
pub fn events(response: &Value) -> String {
    let mut out = Events::default();
    let mut opening = response.clone();
    opening["status"] = json!("in_progress");
    opening["output"] = json!([]);
    opening["usage"] = Value::Null;
    out.push("response.created", json!({"response": opening}));
    out.push("response.in_progress", json!({"response": opening}));
    let items = response["output"].as_array().cloned().unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        match item["type"].as_str() {
            Some("message") => {
                let mut added = item.clone();
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
                out.push(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                );
                let parts = item["content"].as_array().cloned().unwrap_or_default();
                for (j, part) in parts.iter().enumerate() {
                    out.part(&id, i, j, part);
                }
            }
            Some("function_call") => {
                let mut added = item.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                out.push(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                );
                let arguments = item["arguments"].as_str().unwrap_or("");
                let at = json!({"item_id": id, "output_index": i});
                out.push(
                    "response.function_call_arguments.delta",
                    with(&at, json!({"delta": arguments})),
                );
                out.push(
                    "response.function_call_arguments.done",
                    with(&at, json!({"arguments": arguments})),
                );
            }
            _ => out.push(
                "response.output_item.added",
                json!({"output_index": i, "item": item}),
            ),
        }
        out.push(
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        );
    }
    out.push("response.completed", json!({"response": response}));
    out.text
}

/// `a`'s fields with `b`'s.
fn with(a: &Value, b: Value) -> Value {
    let mut m: Map<String, Value> = a.as_object().cloned().unwrap_or_default();
    if let Value::Object(b) = b {
        m.extend(b);
    }
    Value::Object(m)
}

/// Events being written, numbered in order.
#[derive(Default)]
struct Events {
    text: String,
    next: u64,
}

impl Events {
    fn push(&mut self, kind: &str, data: Value) {
        let data = with(&json!({"type": kind, "sequence_number": self.next}), data);
        self.next += 1;
        self.text
            .push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    }

    /// One content part of message item `i` (id `id`): added (empty),
    /// its text in pieces, done.
    fn part(&mut self, id: &Value, i: usize, j: usize, part: &Value) {
        let at = json!({"item_id": id, "output_index": i, "content_index": j});
        let (key, delta, done) = match part["type"].as_str() {
            Some("output_text") => (
                "text",
                "response.output_text.delta",
                "response.output_text.done",
            ),
            Some("refusal") => ("refusal", "response.refusal.delta", "response.refusal.done"),
            _ => {
                self.push(
                    "response.content_part.added",
                    with(&at, json!({"part": part})),
                );
                self.push(
                    "response.content_part.done",
                    with(&at, json!({"part": part})),
                );
                return;
            }
        };
        let text = part[key].as_str().unwrap_or("");
        let mut empty = part.clone();
        empty[key] = json!("");
        if key == "text" {
            empty["annotations"] = json!([]);
        }
        self.push(
            "response.content_part.added",
            with(&at, json!({"part": empty})),
        );
        for piece in super::answer::pieces(text, PIECE) {
            let mut d = json!({"delta": piece});
            if key == "text" {
                d["logprobs"] = json!([]);
            }
            self.push(delta, with(&at, d));
        }
        let mut d = json!({key: text});
        if key == "text" {
            d["logprobs"] = json!([]);
        }
        self.push(done, with(&at, d));
        self.push(
            "response.content_part.done",
            with(&at, json!({"part": part})),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_events_rebuild_the_text_and_end_with_the_response() {
        let r = json!({"id": "resp_1", "object": "response", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Hello there", "annotations": []}]},
                       {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f",
                        "arguments": "{}", "status": "completed"}],
            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}});
        let text = events(&r);
        let data: Vec<Value> = text
            .split("\n\n")
            .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let seq: Vec<u64> = data
            .iter()
            .map(|d| d["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seq, (0..data.len() as u64).collect::<Vec<_>>());
        let joined: String = data
            .iter()
            .filter(|d| d["type"] == "response.output_text.delta")
            .map(|d| d["delta"].as_str().unwrap())
            .collect();
        assert_eq!(joined, "Hello there");
        assert_eq!(data[0]["type"], "response.created");
        assert_eq!(data[0]["response"]["output"], json!([]));
        let last = data.last().unwrap();
        assert_eq!(
            (last["type"].as_str(), &last["response"]),
            (Some("response.completed"), &r)
        );
    }
}
