//! A client's Chat Completions request as the guard takes it: the fields
//! the guard reads itself (`messages`, `stream`, `stream_options`, `n`),
//! and every other field forwarded to the upstream or refused — never
//! dropped.

use crate::provider::openai_wire::flatten;
use crate::provider::types::{Api, Message, Provider, WireRequest};
use serde_json::{Map, Value};

/// A request the guard will serve.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientRequest {
    /// The messages flattened to text, for the checks.
    pub messages: Vec<Message>,
    /// The messages as sent and the fields to forward.
    pub wire: WireRequest,
    /// What shapes the answer: kept by the handler while the rest moves
    /// into the guard's task.
    pub reply: Reply,
}

/// What the answer to a request is shaped by.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// Answer as server-sent events.
    pub stream: bool,
    /// `stream_options.include_usage`: a usage chunk before `[DONE]`.
    pub include_usage: bool,
    /// Fields the client set that the configuration pins (not forwarded).
    pub pinned: Vec<String>,
    /// The API the client spoke (`wire.messages` are a Responses API
    /// client's `input` items).
    pub api: Api,
}

/// Why a request is refused: a message for the client naming the field.
pub(crate) type Refusal = String;

/// Read a request body against the configuration's pins and what the
/// upstream forwards.
pub fn parse(
    body: &[u8],
    pin: &[String],
    upstream: &dyn Provider,
) -> Result<ClientRequest, Refusal> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(mut map) = v else {
        return Err("the body must be a JSON object (a chat completions request)".into());
    };
    // A null field is as good as absent (clients send `"stop": null`).
    map.retain(|_, v| !v.is_null());
    let messages = take_messages(&mut map)?;
    let stream = match map.remove("stream") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(format!("`stream` must be true or false, not {other}")),
    };
    let include_usage = take_stream_options(&mut map, stream)?;
    match map.remove("n") {
        None => {}
        Some(n) if n.as_u64() == Some(1) => {}
        Some(n) if n.as_u64().is_some_and(|n| n > 1) => {
            return Err(format!(
                "n = {n}: the probity guard answers one checked output per request; send n = 1 or leave it out"
            ))
        }
        Some(n) => return Err(format!("`n` must be a positive integer, not {n}")),
    }
    if let Some(model) = map.get("model").filter(|m| !m.is_string()) {
        return Err(format!("`model` must be a string, not {model}"));
    }
    let pinned = pinned_and_forwarded(&mut map, pin, upstream)?;
    Ok(ClientRequest {
        messages: messages.iter().map(flatten).collect(),
        wire: WireRequest {
            messages,
            params: map,
        },
        reply: Reply {
            stream,
            include_usage,
            pinned,
            api: Api::Chat,
        },
    })
}

/// The fields of `map` the configuration pins, removed (they are not
/// forwarded); then a refusal naming the first field left that the
/// upstream does not take.
pub fn pinned_and_forwarded(
    map: &mut Map<String, Value>,
    pin: &[String],
    upstream: &dyn Provider,
) -> Result<Vec<String>, Refusal> {
    let pinned: Vec<String> = map
        .keys()
        .filter(|k| pin.iter().any(|p| p == *k))
        .cloned()
        .collect();
    for k in &pinned {
        map.remove(k);
    }
    if let Some(field) = map.keys().find(|f| !upstream.forwards(f)) {
        return Err(format!(
            "`{field}` cannot be forwarded to this guard's upstream provider, which does not take it; leave it out, or configure an upstream that does (docs/serve.md)"
        ));
    }
    Ok(pinned)
}

fn take_messages(map: &mut Map<String, Value>) -> Result<Vec<Value>, Refusal> {
    let bad =
        || Refusal::from("`messages` must be a non-empty array of messages with a string `role`");
    let Some(Value::Array(messages)) = map.remove("messages") else {
        return Err(bad());
    };
    let ok = !messages.is_empty()
        && messages
            .iter()
            .all(|m| m.get("role").is_some_and(Value::is_string));
    if ok {
        Ok(messages)
    } else {
        Err(bad())
    }
}

/// `stream_options` is the guard's own (it streams to the client; the
/// upstream is asked for a whole answer): read `include_usage`, refuse
/// other options and options without `stream`.
fn take_stream_options(map: &mut Map<String, Value>, stream: bool) -> Result<bool, Refusal> {
    let Some(options) = map.remove("stream_options") else {
        return Ok(false);
    };
    if !stream {
        return Err("`stream_options` is only allowed with \"stream\": true".into());
    }
    let Value::Object(options) = options else {
        return Err(format!("`stream_options` must be an object, not {options}"));
    };
    let mut include_usage = false;
    for (k, v) in options {
        match (k.as_str(), v) {
            ("include_usage", Value::Bool(b)) => include_usage = b,
            ("include_usage", Value::Null) => {}
            ("include_usage", other) => {
                return Err(format!(
                    "`stream_options.include_usage` must be true or false, not {other}"
                ))
            }
            (other, _) => {
                return Err(format!(
                    "`stream_options.{other}` is not supported by the probity guard"
                ))
            }
        }
    }
    Ok(include_usage)
}
