//! The OpenAI Chat Completions protocol as the simulator's server speaks
//! it: the request fields it honours ([`ChatOptions::parse`]), the answers
//! it builds from the model's text ([`build_choice`]), and the response
//! bodies, whole ([`completion_body`]) or as `chat.completion.chunk` events
//! ([`stream_events`]).
//!
//! A *token* here is a whitespace-separated word with the whitespace before
//! it ([`tokens`]): `max_tokens` counts them, streamed pieces are made of
//! them, `logprobs` has one entry per token, and `usage` counts them.

use super::rng::{Fnv, SplitMix64};
use crate::provider::types::{Message, Role};
use serde_json::{json, Map, Value};

/// The largest `n` accepted (OpenAI's limit).
const MAX_N: u64 = 128;
/// The largest `top_logprobs` accepted (OpenAI's limit).
const MAX_TOP_LOGPROBS: u64 = 20;
/// Tokens per streamed content piece.
const PIECE_TOKENS: usize = 3;

/// A request the server refuses (HTTP 400): the offending field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    /// The field, as a path (`messages[2].role`, `stop`, …).
    pub param: String,
    pub message: String,
}

fn bad(param: impl Into<String>, message: impl Into<String>) -> BadRequest {
    BadRequest {
        param: param.into(),
        message: message.into(),
    }
}

/// What `response_format` asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    Text,
    /// `json_object`: `{"answer": text}`.
    JsonObject,
    /// `json_schema`: the schema's top-level properties filled in (the
    /// first string property holds the text), `{"answer": text}` without.
    JsonSchema(Value),
}

/// A function the client offers (`tools[i].function`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    /// Its JSON-schema `parameters` (null when absent).
    pub parameters: Value,
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    None,
    Auto,
    Required,
    Named(String),
}

/// The request fields the simulator honours; every other field is ignored.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    /// The request's `model`, echoed in the answer (`probity-sim` without).
    pub model: String,
    pub messages: Vec<Message>,
    /// Whether the last message is the user's (not a tool result).
    pub last_is_user: bool,
    pub seed: Option<u64>,
    pub n: u32,
    /// `max_completion_tokens`, else `max_tokens`.
    pub max_tokens: Option<u64>,
    pub stop: Vec<String>,
    pub format: Format,
    pub tools: Vec<Tool>,
    pub tool_choice: ToolChoice,
    /// `None` without `logprobs: true`, else `top_logprobs` (0 when absent).
    pub logprobs: Option<u32>,
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
}

/// A field's value, absent when missing or null.
fn field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name).filter(|v| !v.is_null())
}

fn boolean(map: &Map<String, Value>, name: &str) -> Result<bool, BadRequest> {
    match field(map, name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(bad(
            name,
            format!("`{name}` must be true or false, not {v}"),
        )),
    }
}

fn integer_in(
    map: &Map<String, Value>,
    name: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, BadRequest> {
    match field(map, name) {
        None => Ok(None),
        Some(v) => match v.as_u64().filter(|n| range.contains(n)) {
            Some(n) => Ok(Some(n)),
            None => Err(bad(
                name,
                format!(
                    "`{name}` must be an integer from {} to {}, not {v}",
                    range.start(),
                    range.end()
                ),
            )),
        },
    }
}

impl ChatOptions {
    /// Reads a request body. The error names the field and what it must be.
    pub fn parse(body: &Value) -> Result<ChatOptions, BadRequest> {
        let Value::Object(map) = body else {
            return Err(bad("", "the body must be a JSON object"));
        };
        let model = match field(map, "model") {
            None => "probity-sim".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => return Err(bad("model", format!("`model` must be a string, not {v}"))),
        };
        let (messages, last_is_user) = parse_messages(map.get("messages"))?;
        let seed = match field(map, "seed") {
            None => None,
            // A negative seed is a valid seed too; its bits are the repetition.
            Some(v) => match v.as_u64().or_else(|| v.as_i64().map(|i| i as u64)) {
                Some(s) => Some(s),
                None => return Err(bad("seed", format!("`seed` must be an integer, not {v}"))),
            },
        };
        let n = integer_in(map, "n", 1..=MAX_N)?.unwrap_or(1) as u32;
        let max_tokens = match integer_in(map, "max_completion_tokens", 1..=u64::MAX)? {
            Some(m) => Some(m),
            None => integer_in(map, "max_tokens", 1..=u64::MAX)?,
        };
        let stop = parse_stop(field(map, "stop"))?;
        let format = parse_format(field(map, "response_format"))?;
        let tools = parse_tools(field(map, "tools"))?;
        let tool_choice = parse_tool_choice(field(map, "tool_choice"), &tools)?;
        let logprobs = match (
            boolean(map, "logprobs")?,
            integer_in(map, "top_logprobs", 0..=MAX_TOP_LOGPROBS)?,
        ) {
            (false, Some(_)) => {
                return Err(bad("top_logprobs", "`top_logprobs` needs `logprobs: true`"))
            }
            (false, None) => None,
            (true, k) => Some(k.unwrap_or(0) as u32),
        };
        let stream = boolean(map, "stream")?;
        let include_usage = parse_stream_options(field(map, "stream_options"), stream)?;
        Ok(ChatOptions {
            model,
            messages,
            last_is_user,
            seed,
            n,
            max_tokens,
            stop,
            format,
            tools,
            tool_choice,
            logprobs,
            stream,
            include_usage,
        })
    }
}

/// The messages as the model reads them (`system` and `developer` are
/// system messages, `assistant` the assistant's, `user` and `tool` the
/// user's), and whether the last one is the user's.
fn parse_messages(value: Option<&Value>) -> Result<(Vec<Message>, bool), BadRequest> {
    let list = match value {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err(bad("messages", "`messages` must be a non-empty array")),
    };
    let mut messages = Vec::with_capacity(list.len());
    let mut last_is_user = false;
    for (i, m) in list.iter().enumerate() {
        let at = |f: &str| format!("messages[{i}]{f}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let role = match role {
            "system" | "developer" => Role::System,
            "user" | "tool" | "function" => Role::User,
            "assistant" => Role::Assistant,
            _ => {
                return Err(bad(
                    at(".role"),
                    format!(
                        "`{}` must be one of system, developer, user, assistant, tool",
                        at(".role")
                    ),
                ))
            }
        };
        last_is_user = m.get("role").and_then(Value::as_str) == Some("user");
        let content = content_text(m.get("content"), &at(".content"))?;
        messages.push(Message::text(role, content));
    }
    Ok((messages, last_is_user))
}

/// A message's text: a string, the `text` of an array of parts (other
/// parts, such as `image_url`, accepted and not read), or "" for null.
fn content_text(content: Option<&Value>, at: &str) -> Result<String, BadRequest> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                let Some(kind) = part.get("type").and_then(Value::as_str) else {
                    return Err(bad(
                        format!("{at}[{j}].type"),
                        format!("`{at}[{j}]` must be an object with a string `type`"),
                    ));
                };
                if kind == "text" {
                    let Some(t) = part.get("text").and_then(Value::as_str) else {
                        return Err(bad(
                            format!("{at}[{j}].text"),
                            format!("`{at}[{j}].text` must be a string"),
                        ));
                    };
                    text.push_str(t);
                }
            }
            Ok(text)
        }
        Some(v) => Err(bad(
            at,
            format!("`{at}` must be a string, an array of parts or null, not {v}"),
        )),
    }
}

/// `stop`: a string or an array of at most 4 strings; empty ones ignored.
fn parse_stop(value: Option<&Value>) -> Result<Vec<String>, BadRequest> {
    let list: Vec<&Value> = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) if list.len() <= 4 => list.iter().collect(),
        Some(v @ Value::String(_)) => vec![v],
        Some(v) => {
            return Err(bad(
                "stop",
                format!("`stop` must be a string or an array of up to 4 strings, not {v}"),
            ))
        }
    };
    list.into_iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad("stop", format!("`stop` entries must be strings, not {v}")))
        })
        .filter(|s| !matches!(s, Ok(s) if s.is_empty()))
        .collect()
}

fn parse_format(value: Option<&Value>) -> Result<Format, BadRequest> {
    let Some(v) = value else {
        return Ok(Format::Text);
    };
    match v.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Format::Text),
        Some("json_object") => Ok(Format::JsonObject),
        Some("json_schema") => {
            let schema = v.get("json_schema").and_then(|s| s.get("schema"));
            Ok(Format::JsonSchema(schema.cloned().unwrap_or(Value::Null)))
        }
        _ => Err(bad(
            "response_format.type",
            format!("`response_format.type` must be text, json_object or json_schema in {v}"),
        )),
    }
}

fn parse_tools(value: Option<&Value>) -> Result<Vec<Tool>, BadRequest> {
    let list = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(v) => return Err(bad("tools", format!("`tools` must be an array, not {v}"))),
    };
    let mut tools = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let function = t.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        match (t.get("type").and_then(Value::as_str), name) {
            (Some("function"), Some(name)) if !name.is_empty() => tools.push(Tool {
                name: name.to_string(),
                parameters: function
                    .and_then(|f| f.get("parameters"))
                    .cloned()
                    .unwrap_or(Value::Null),
            }),
            _ => {
                return Err(bad(
                    format!("tools[{i}].function.name"),
                    format!(
                        "`tools[{i}]` must be {{\"type\": \"function\", \"function\": {{\"name\": …}}}}"
                    ),
                ))
            }
        }
    }
    Ok(tools)
}

/// `tool_choice`: defaults to `auto` with tools and `none` without; it may
/// only be given with tools, and a named function must be one of them.
fn parse_tool_choice(value: Option<&Value>, tools: &[Tool]) -> Result<ToolChoice, BadRequest> {
    let Some(v) = value else {
        return Ok(if tools.is_empty() {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        });
    };
    if tools.is_empty() {
        return Err(bad(
            "tool_choice",
            "`tool_choice` is only allowed when `tools` are given",
        ));
    }
    let named = v
        .get("function")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str);
    match (v.as_str(), named) {
        (Some("none"), _) => Ok(ToolChoice::None),
        (Some("auto"), _) => Ok(ToolChoice::Auto),
        (Some("required"), _) => Ok(ToolChoice::Required),
        (None, Some(name)) if tools.iter().any(|t| t.name == name) => {
            Ok(ToolChoice::Named(name.to_string()))
        }
        (None, Some(name)) => Err(bad(
            "tool_choice",
            format!("`tool_choice` names `{name}`, which is not in `tools`"),
        )),
        _ => Err(bad(
            "tool_choice",
            format!("`tool_choice` must be none, auto, required or {{\"type\": \"function\", \"function\": {{\"name\": …}}}}, not {v}"),
        )),
    }
}

fn parse_stream_options(value: Option<&Value>, stream: bool) -> Result<bool, BadRequest> {
    let Some(v) = value else {
        return Ok(false);
    };
    if !stream {
        return Err(bad(
            "stream_options",
            "`stream_options` is only allowed when `stream` is true",
        ));
    }
    match v.get("include_usage") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(x) => Err(bad(
            "stream_options.include_usage",
            format!("`stream_options.include_usage` must be true or false, not {x}"),
        )),
    }
}

/// The text cut into tokens: each word with the whitespace before it, so
/// the tokens concatenate to the text.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    // A token ends where whitespace follows a word.
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if in_word && c.is_whitespace() {
            out.push(&text[start..i]);
            start = i;
        }
        in_word = !c.is_whitespace();
    }
    if start < text.len() {
        // Trailing whitespace belongs to the last word.
        match out.pop() {
            Some(last) if text[start..].trim().is_empty() => {
                out.push(&text[start - last.len()..]);
            }
            last => {
                out.extend(last);
                out.push(&text[start..]);
            }
        }
    }
    out
}

/// A tool call the simulated assistant makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// A JSON object, as a string (as OpenAI sends it).
    pub arguments: String,
}

/// One choice of the answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceAnswer {
    Text {
        content: String,
        /// `stop` or `length`.
        finish_reason: &'static str,
    },
    ToolCall(ToolCall),
}

impl ChoiceAnswer {
    /// The tokens it counts in `usage`: the content's, or the arguments'.
    pub(crate) fn token_count(&self) -> u64 {
        match self {
            ChoiceAnswer::Text { content, .. } => tokens(content).len() as u64,
            ChoiceAnswer::ToolCall(c) => tokens(&c.arguments).len() as u64,
        }
    }
}

/// The tool the assistant calls, if any: the named one; for `required`,
/// the first whose name the last user message contains, else the first;
/// for `auto`, only when the last message is the user's and contains a
/// tool's name or the word "weather" (any case; then the first tool).
pub fn chosen_tool(opts: &ChatOptions) -> Option<&Tool> {
    let last = opts
        .messages
        .last()
        .map(|m| m.content.to_lowercase())
        .unwrap_or_default();
    let named = || {
        opts.tools
            .iter()
            .find(|t| last.contains(&t.name.to_lowercase()))
    };
    match &opts.tool_choice {
        ToolChoice::None => None,
        ToolChoice::Named(name) => opts.tools.iter().find(|t| &t.name == name),
        ToolChoice::Required => named().or(opts.tools.first()),
        ToolChoice::Auto if !opts.last_is_user => None,
        ToolChoice::Auto => named().or_else(|| {
            last.split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "weather")
                .then(|| opts.tools.first())
                .flatten()
        }),
    }
}

/// One choice from the model's `text`: a tool call when [`chosen_tool`]
/// says so (`call_id` its id), else the text in the asked format, cut
/// before the first `stop` string, then to `max_tokens` tokens.
pub fn build_choice(opts: &ChatOptions, text: String, call_id: String) -> ChoiceAnswer {
    if let Some(tool) = chosen_tool(opts) {
        let last = opts
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let arguments = fill_object(&tool.parameters, last, None).to_string();
        return ChoiceAnswer::ToolCall(ToolCall {
            id: call_id,
            name: tool.name.clone(),
            arguments,
        });
    }
    let text = match &opts.format {
        Format::Text => text,
        Format::JsonObject => json!({ "answer": text }).to_string(),
        Format::JsonSchema(schema) => fill_object(schema, &text, Some("answer")).to_string(),
    };
    let (content, finish_reason) = cut(text, &opts.stop, opts.max_tokens);
    ChoiceAnswer::Text {
        content,
        finish_reason,
    }
}

/// `text` cut before the earliest `stop` string, then to `max` tokens:
/// `length` when the token cut happened, else `stop`.
fn cut(mut text: String, stop: &[String], max: Option<u64>) -> (String, &'static str) {
    if let Some(at) = stop.iter().filter_map(|s| text.find(s.as_str())).min() {
        text.truncate(at);
    }
    let toks = tokens(&text);
    match max {
        Some(m) if toks.len() as u64 > m => {
            let keep: usize = toks[..m as usize].iter().map(|t| t.len()).sum();
            text.truncate(keep);
            (text, "length")
        }
        _ => (text, "stop"),
    }
}

/// An object for a JSON schema: each top-level property a value of its
/// type (an `enum`'s first value; the first string property holds `text`).
/// A schema without properties gives `{fallback: text}`, or `{}`.
fn fill_object(schema: &Value, text: &str, fallback: Option<&str>) -> Value {
    let mut out = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let mut text_used = false;
    for (name, prop) in props.into_iter().flatten() {
        let value = if let Some(first) = prop
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            first.clone()
        } else {
            match prop.get("type").and_then(Value::as_str) {
                Some("string") if !text_used => {
                    text_used = true;
                    Value::String(text.to_string())
                }
                Some("string") => Value::String(String::new()),
                Some("integer") | Some("number") => json!(0),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                Some("object") => fill_object(prop, "", None),
                _ => Value::String(text.to_string()),
            }
        };
        out.insert(name.clone(), value);
    }
    if out.is_empty() {
        if let Some(key) = fallback {
            out.insert(key.to_string(), Value::String(text.to_string()));
        }
    }
    Value::Object(out)
}

/// Common words offered as the less likely alternatives in `top_logprobs`.
const ALTERNATIVES: [&str; 20] = [
    " the", " a", " and", " of", " to", " in", " is", " it", " that", " for", " on", " with",
    " as", " this", " be", " at", " by", " or", " an", " so",
];

/// `logprobs.content` for `text`: one entry per token, with a plausible
/// (deterministic, negative) log probability and `top` alternatives, the
/// token itself first.
pub(crate) fn logprobs_content(text: &str, top: u32) -> Value {
    let entries: Vec<Value> = tokens(text)
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let u =
                SplitMix64::new(Fnv::new().u64(i as u64).bytes(t.as_bytes()).finish()).next_f64();
            let lp = -(u * u * 2.0);
            let mut alts = vec![entry(t, lp)];
            alts.extend(
                ALTERNATIVES
                    .iter()
                    .filter(|a| *a != t)
                    .take(top.saturating_sub(1) as usize)
                    .enumerate()
                    .map(|(j, a)| entry(a, lp - 1.5 - j as f64 * 0.5)),
            );
            alts.truncate(top as usize);
            let mut e = entry(t, lp);
            e["top_logprobs"] = Value::Array(alts);
            e
        })
        .collect();
    Value::Array(entries)
}

fn entry(token: &str, logprob: f64) -> Value {
    json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()})
}

/// What every response or chunk of one request shares.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub system_fingerprint: String,
}

/// `usage`: `prompt_tokens` the tokens of the messages' text,
/// `completion_tokens` those of every choice.
pub fn usage(opts: &ChatOptions, choices: &[ChoiceAnswer]) -> Value {
    let prompt: u64 = opts
        .messages
        .iter()
        .map(|m| tokens(&m.content).len() as u64)
        .sum();
    let completion: u64 = choices.iter().map(ChoiceAnswer::token_count).sum();
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    })
}

fn tool_call_json(c: &ToolCall) -> Value {
    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
}

fn choice_logprobs(opts: &ChatOptions, answer: &ChoiceAnswer) -> Value {
    match (opts.logprobs, answer) {
        (Some(top), ChoiceAnswer::Text { content, .. }) => {
            json!({"content": logprobs_content(content, top), "refusal": null})
        }
        _ => Value::Null,
    }
}

/// The whole `chat.completion` object.
pub fn completion_body(meta: &Meta, opts: &ChatOptions, choices: &[ChoiceAnswer]) -> Value {
    let list: Vec<Value> = choices
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (message, finish) = match a {
                ChoiceAnswer::Text {
                    content,
                    finish_reason,
                } => (
                    json!({"role": "assistant", "content": content, "refusal": null}),
                    *finish_reason,
                ),
                ChoiceAnswer::ToolCall(c) => (
                    json!({"role": "assistant", "content": null, "refusal": null,
                        "tool_calls": [tool_call_json(c)]}),
                    "tool_calls",
                ),
            };
            json!({"index": i, "message": message, "logprobs": choice_logprobs(opts, a),
                "finish_reason": finish})
        })
        .collect();
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": meta.system_fingerprint,
        "choices": list,
        "usage": usage(opts, choices),
        "service_tier": "default",
    })
}

/// One server-sent event: its JSON, and the tokens it carries (which the
/// server waits `token_ms` for, each, before sending it).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub data: Value,
    pub tokens: u64,
}

/// The `chat.completion.chunk` events of the answer, choice after choice:
/// a first delta with the role (and `content: ""`, or the tool call's id,
/// type and name with empty arguments), then pieces of a few tokens of
/// content (or of the arguments), then an empty delta with the
/// `finish_reason`; with `include_usage`, every chunk has `usage: null` and
/// a last chunk has no choices and the usage. `data: [DONE]` is not among
/// them.
pub fn stream_events(meta: &Meta, opts: &ChatOptions, choices: &[ChoiceAnswer]) -> Vec<Event> {
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut c = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": meta.system_fingerprint,
            "service_tier": "default",
            "choices": choices,
        });
        if opts.include_usage {
            c["usage"] = usage.unwrap_or(Value::Null);
        }
        c
    };
    let one = |i: usize, delta: Value, logprobs: Value, finish: Value| {
        chunk(
            json!([{"index": i, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]),
            None,
        )
    };
    let mut events = Vec::new();
    for (i, answer) in choices.iter().enumerate() {
        let (first, body, finish) = match answer {
            ChoiceAnswer::Text {
                content,
                finish_reason,
            } => (
                json!({"role": "assistant", "content": "", "refusal": null}),
                content.as_str(),
                *finish_reason,
            ),
            ChoiceAnswer::ToolCall(c) => (
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                    "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}]}),
                c.arguments.as_str(),
                "tool_calls",
            ),
        };
        events.push(Event {
            data: one(i, first, Value::Null, Value::Null),
            tokens: 0,
        });
        let toks = tokens(body);
        for piece in toks.chunks(PIECE_TOKENS) {
            let text: String = piece.concat();
            let (delta, logprobs) = match (answer, opts.logprobs) {
                (ChoiceAnswer::ToolCall(_), _) => (
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}),
                    Value::Null,
                ),
                (_, Some(top)) => (
                    json!({"content": text}),
                    json!({"content": logprobs_content(&text, top), "refusal": null}),
                ),
                (_, None) => (json!({"content": text}), Value::Null),
            };
            events.push(Event {
                data: one(i, delta, logprobs, Value::Null),
                tokens: piece.len() as u64,
            });
        }
        events.push(Event {
            data: one(i, json!({}), Value::Null, json!(finish)),
            tokens: 0,
        });
    }
    if opts.include_usage {
        events.push(Event {
            data: chunk(json!([]), Some(usage(opts, choices))),
            tokens: 0,
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(body: Value) -> ChatOptions {
        ChatOptions::parse(&body).unwrap()
    }

    fn user(text: &str) -> Value {
        json!([{"role": "user", "content": text}])
    }

    #[test]
    fn tokens_concatenate_to_the_text() {
        for t in ["", "a", " a b", "Hello,  world!\nNext", "x "] {
            assert_eq!(tokens(t).concat(), t);
        }
        assert_eq!(tokens("Hello,  world! x"), vec!["Hello,", "  world!", " x"]);
        assert_eq!(tokens("x y \n"), vec!["x", " y \n"]);
        assert_eq!(tokens("  "), vec!["  "]);
    }

    #[test]
    fn stop_then_max_tokens() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            cut("a b c d".into(), &[], Some(2)),
            ("a b".into(), "length")
        );
        assert_eq!(
            cut("a b c d".into(), &[], Some(4)),
            ("a b c d".into(), "stop")
        );
        assert_eq!(
            cut("a b. c d".into(), &s(&["d", "."]), None),
            ("a b".into(), "stop")
        );
        assert_eq!(
            cut("a b c. d".into(), &s(&["."]), Some(2)),
            ("a b".into(), "length")
        );
    }

    #[test]
    fn errors_name_the_field() {
        let err = |body: Value| ChatOptions::parse(&body).unwrap_err().param;
        assert_eq!(err(json!({"messages": []})), "messages");
        assert_eq!(
            err(json!({"messages": [{"role": "robot", "content": "x"}]})),
            "messages[0].role"
        );
        assert_eq!(err(json!({"messages": user("x"), "n": 0})), "n");
        assert_eq!(
            err(json!({"messages": user("x"), "max_tokens": -1})),
            "max_tokens"
        );
        assert_eq!(
            err(json!({"messages": user("x"), "stop": ["a", "b", "c", "d", "e"]})),
            "stop"
        );
        assert_eq!(
            err(json!({"messages": user("x"), "tool_choice": "auto"})),
            "tool_choice"
        );
        assert_eq!(
            err(json!({"messages": user("x"), "stream_options": {"include_usage": true}})),
            "stream_options"
        );
        assert_eq!(
            err(json!({"messages": user("x"), "top_logprobs": 2})),
            "top_logprobs"
        );
        assert_eq!(
            err(json!({"messages": user("x"), "response_format": {"type": "yaml"}})),
            "response_format.type"
        );
    }

    #[test]
    fn tools_are_called_by_rule() {
        let tools = json!([
            {"type": "function", "function": {"name": "get_weather", "parameters":
                {"type": "object", "properties": {"city": {"type": "string"},
                 "unit": {"type": "string", "enum": ["c", "f"]}}}}},
            {"type": "function", "function": {"name": "lookup"}}
        ]);
        let call = |msgs: Value, choice: Value| {
            let mut body = json!({"messages": msgs, "tools": tools});
            if !choice.is_null() {
                body["tool_choice"] = choice;
            }
            chosen_tool(&opts(body)).map(|t| t.name.clone())
        };
        assert_eq!(
            call(user("What is the Weather?"), Value::Null).as_deref(),
            Some("get_weather")
        );
        assert_eq!(
            call(user("please lookup x"), Value::Null).as_deref(),
            Some("lookup")
        );
        assert_eq!(call(user("hello"), Value::Null), None);
        assert_eq!(
            call(user("hello"), json!("required")).as_deref(),
            Some("get_weather")
        );
        assert_eq!(call(user("weather"), json!("none")), None);
        let named = json!({"type": "function", "function": {"name": "lookup"}});
        assert_eq!(call(user("weather"), named).as_deref(), Some("lookup"));
        let after_tool = json!([{"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "sunny"}]);
        assert_eq!(call(after_tool, Value::Null), None);
        let o = opts(json!({"messages": user("weather in Paris"), "tools": tools}));
        let ChoiceAnswer::ToolCall(c) = build_choice(&o, "x".into(), "call_1".into()) else {
            panic!("no tool call")
        };
        let args: Value = serde_json::from_str(&c.arguments).unwrap();
        assert_eq!(args, json!({"city": "weather in Paris", "unit": "c"}));
    }

    #[test]
    fn json_formats_answer_objects() {
        let o = opts(json!({"messages": user("x"), "response_format": {"type": "json_object"}}));
        let ChoiceAnswer::Text { content, .. } = build_choice(&o, "Hi there".into(), String::new())
        else {
            panic!()
        };
        assert_eq!(
            serde_json::from_str::<Value>(&content).unwrap(),
            json!({"answer": "Hi there"})
        );
        let o = opts(
            json!({"messages": user("x"), "response_format": {"type": "json_schema",
            "json_schema": {"name": "a", "schema": {"type": "object", "properties":
                {"ok": {"type": "boolean"}, "reply": {"type": "string"}}}}}}),
        );
        let ChoiceAnswer::Text { content, .. } = build_choice(&o, "Hi".into(), String::new())
        else {
            panic!()
        };
        assert_eq!(
            serde_json::from_str::<Value>(&content).unwrap(),
            json!({"ok": false, "reply": "Hi"})
        );
    }

    #[test]
    fn logprobs_have_one_entry_per_token() {
        let lp = logprobs_content("Hello big world", 3);
        let lp = lp.as_array().unwrap();
        assert_eq!(lp.len(), 3);
        assert_eq!(lp[1]["token"], " big");
        assert!(lp[1]["logprob"].as_f64().unwrap() <= 0.0);
        assert_eq!(lp[1]["top_logprobs"].as_array().unwrap().len(), 3);
        assert_eq!(lp[1]["top_logprobs"][0]["token"], " big");
    }
}
