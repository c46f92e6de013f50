//! What the guard answers for an outcome: the published output as one
//! `chat.completion`, or as `chat.completion.chunk` server-sent events
//! ending in `data: [DONE]`; or an error body when nothing passed.
//! Everything here is the upstream's own (model, finish reason, tool
//! calls, logprobs, and every other field of its message, choice and
//! answer as sent: a refusal, annotations, audio, `service_tier`, …), with
//! usage summed over the attempts, its details included.
//!
//! Each answer names its outcome (`x-probity-outcome`): `published`;
//! `nothing-passed` (the checks failed every output); `check-error` (no
//! check failed the last output, but one or more could not judge it — a
//! broken expression, a judge that did not answer: the guard's fault, not
//! the model's, so a refusal is an HTTP 500 `guard_check_error` naming the
//! checks); `upstream-error` (no attempt produced an output).

use super::config::NothingPassed;
use super::failure::{self, tally, Retry};
use crate::provider::openai_wire::error_body;
use crate::provider::redact::one_line;
use crate::provider::types::AnswerMeta;
use crate::retry::guard::{Attempt, GuardOutcome, Stop};
use axum::http::StatusCode;
use probity_core::Cell;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// How a request's answer came about (module docs): its
/// `x-probity-outcome` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Published,
    NothingPassed,
    CheckError,
    UpstreamError,
}

impl Outcome {
    /// The header's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Published => "published",
            Outcome::NothingPassed => "nothing-passed",
            Outcome::CheckError => "check-error",
            Outcome::UpstreamError => "upstream-error",
        }
    }
}

/// The output to send, and how it came about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Publish {
    /// `content` as the upstream sent it (`None`: null beside tool calls).
    pub content: Option<String>,
    pub tool_calls: Option<Value>,
    pub finish_reason: String,
    pub model: Option<String>,
    pub logprobs: Option<Value>,
    pub system_fingerprint: Option<String>,
    /// What else the upstream said, passed on as sent: the message's,
    /// choice's and answer's other fields, its headers
    /// ([`AnswerMeta`]); `None` from a provider without a chat protocol.
    pub meta: Option<Arc<AnswerMeta>>,
    /// `Published`, or by policy the last output: `NothingPassed` or
    /// `CheckError`.
    pub outcome: Outcome,
}

impl Publish {
    /// The upstream's headers passed to the client (`x-request-id`,
    /// `x-ratelimit-*`).
    pub fn headers(&self) -> &[(String, String)] {
        self.meta.as_deref().map_or(&[], |m| &m.headers)
    }

    fn fields(
        &self,
        pick: impl Fn(&AnswerMeta) -> &Map<String, Value>,
    ) -> Option<&Map<String, Value>> {
        self.meta.as_deref().map(pick)
    }
}

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Publish(Publish),
    /// An error: its HTTP status, body and outcome (module docs), and
    /// whether the client should ask again.
    Refuse {
        status: StatusCode,
        body: Value,
        outcome: Outcome,
        retry: Retry,
    },
}

/// The checks a guard decides with: their names in column order, and the
/// deciding columns.
pub struct Deciding<'a> {
    pub names: &'a [String],
    pub columns: &'a [usize],
}

impl Deciding<'_> {
    /// The deciding checks that could not judge `a`'s output, when none
    /// failed it: `(name, why)`; empty when a check failed it or none
    /// erred.
    pub fn unjudged(&self, a: &Attempt) -> Vec<(String, String)> {
        let cell = |k: usize| a.cells.get(k).copied().unwrap_or(Cell::Missing);
        if a.output.is_none() || self.columns.iter().any(|&k| cell(k) == Cell::Fail) {
            return Vec::new();
        }
        self.columns
            .iter()
            .filter(|&&k| cell(k) == Cell::Error)
            .map(|&k| {
                let why = a
                    .reasons
                    .iter()
                    .find(|(kk, _)| *kk == k)
                    .map_or_else(|| "no reason given".to_string(), |(_, r)| r.clone());
                let name = self
                    .names
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("#{k}"));
                (name, why)
            })
            .collect()
    }
}

/// The answer for `outcome` under `policy`.
pub fn decide(outcome: &GuardOutcome, policy: NothingPassed, checks: &Deciding<'_>) -> Verdict {
    match outcome {
        GuardOutcome::Published { output, attempts } => {
            Verdict::Publish(publish(output, attempts.last(), Outcome::Published))
        }
        GuardOutcome::NothingPassed { attempts, stop } => {
            let last = attempts.iter().rev().find(|a| a.output.is_some());
            // What "last" publishes: the last whole output. A cut attempt's
            // is a prefix, not an answer (the final attempt is kept whole
            // under "last", but a deadline may stop the attempts first).
            let publishable = match policy {
                NothingPassed::Last => attempts.iter().rev().find(|a| a.output.is_some() && !a.cut),
                NothingPassed::Error => None,
            };
            let unjudged = last.map(|a| checks.unjudged(a)).unwrap_or_default();
            match (publishable, last) {
                (Some(a), _) => Verdict::Publish(publish(
                    a.output.as_deref().unwrap_or_default(),
                    Some(a),
                    if unjudged.is_empty() {
                        Outcome::NothingPassed
                    } else {
                        Outcome::CheckError
                    },
                )),
                (None, Some(_)) if !unjudged.is_empty() => {
                    let status = StatusCode::INTERNAL_SERVER_ERROR;
                    let which: Vec<String> = unjudged
                        .iter()
                        .map(|(name, why)| format!("{name} ({})", one_line(why)))
                        .collect();
                    let body = refusal(
                        status,
                        "guard_check_error",
                        format!(
                            "the guard could not check the output: no check failed it, but {} could not judge it ({}); fix the check — this is not a verdict on the output",
                            which.join(", "),
                            tally(attempts, *stop)
                        ),
                        attempts,
                    );
                    Verdict::Refuse {
                        status,
                        body,
                        outcome: Outcome::CheckError,
                        retry: Retry::Never,
                    }
                }
                (None, Some(_)) => {
                    let body = refusal(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "guard_rejected",
                        format!(
                            "no output passed the guard's checks ({})",
                            tally(attempts, *stop)
                        ),
                        attempts,
                    );
                    Verdict::Refuse {
                        status: StatusCode::UNPROCESSABLE_ENTITY,
                        body,
                        outcome: Outcome::NothingPassed,
                        retry: Retry::Never,
                    }
                }
                (None, None) => upstream_failure(attempts, *stop),
            }
        }
    }
}

/// No attempt produced an output: what the client is told
/// ([`super::failure`]), with every attempt.
fn upstream_failure(attempts: &[Attempt], stop: Stop) -> Verdict {
    let f = failure::upstream_failure(attempts, stop);
    let mut body = f.body;
    body["error"]["attempts"] = attempts.iter().map(attempt_json).collect();
    Verdict::Refuse {
        status: f.status,
        body,
        outcome: Outcome::UpstreamError,
        retry: f.retry,
    }
}

fn refusal(status: StatusCode, kind: &str, message: String, attempts: &[Attempt]) -> Value {
    let mut body = error_body(status.as_u16(), kind, &message);
    body["error"]["attempts"] = attempts.iter().map(attempt_json).collect();
    body
}

/// One attempt as a client sees it: an upstream error named by its kind
/// ([`failure::what_failed`]), never by the address or words it came
/// with.
fn attempt_json(a: &Attempt) -> Value {
    let error = match &a.upstream_error {
        Some(e) => Some(format!("the upstream {}", failure::what_failed(e))),
        None => a.error.clone(),
    };
    json!({
        "attempt": a.number,
        "passed": a.passed,
        "error": error,
        "reasons": a.feedback,
    })
}

fn publish(output: &str, attempt: Option<&Attempt>, outcome: Outcome) -> Publish {
    let meta = attempt.and_then(|a| a.meta.clone());
    match meta.as_deref() {
        Some(m) => Publish {
            content: m.content.clone(),
            tool_calls: m.tool_calls.clone(),
            finish_reason: m.finish_reason.clone().unwrap_or_else(|| "stop".into()),
            model: m.model.clone(),
            logprobs: m.logprobs.clone(),
            system_fingerprint: m.system_fingerprint.clone(),
            meta,
            outcome,
        },
        None => Publish {
            content: Some(output.to_string()),
            tool_calls: None,
            finish_reason: "stop".into(),
            model: None,
            logprobs: None,
            system_fingerprint: None,
            meta: None,
            outcome,
        },
    }
}

/// Token usage over every attempt (the cost of the answer): each numeric
/// field of the upstream's `usage` objects summed over the attempts,
/// nested details included (`prompt_tokens_details.cached_tokens`,
/// `completion_tokens_details.reasoning_tokens`, …); `prompt_tokens` and
/// `completion_tokens` are the attempts' counts summed (a cut attempt's
/// estimated, `provider::openai`) and `total_tokens` their sum. With one
/// attempt whose usage the upstream reported, this is that usage as sent.
pub fn usage(attempts: &[Attempt]) -> Value {
    usage_as(attempts, ("prompt_tokens", "completion_tokens"))
}

/// [`usage`] with the input and output counts named `names` (the
/// Responses API's `input_tokens`, `output_tokens`).
pub(crate) fn usage_as(attempts: &[Attempt], names: (&str, &str)) -> Value {
    let (p, c) = attempts.iter().fold((0, 0), |(p, c), a| {
        (
            p + a.input_tokens.unwrap_or(0),
            c + a.output_tokens.unwrap_or(0),
        )
    });
    let mut sum = Map::new();
    for u in attempts
        .iter()
        .filter_map(|a| a.meta.as_deref()?.usage.as_ref()?.as_object())
    {
        add_counts(&mut sum, u);
    }
    sum.insert(names.0.into(), json!(p));
    sum.insert(names.1.into(), json!(c));
    sum.insert("total_tokens".into(), json!(p + c));
    Value::Object(sum)
}

/// Add `more`'s counts into `sum`: integers summed, objects recursively,
/// any other value kept as first seen.
fn add_counts(sum: &mut Map<String, Value>, more: &Map<String, Value>) {
    for (k, v) in more {
        match (sum.get_mut(k), v) {
            (None, v) => {
                sum.insert(k.clone(), v.clone());
            }
            (Some(Value::Object(s)), Value::Object(m)) => add_counts(s, m),
            (Some(s), v) => {
                if let (Some(a), Some(b)) = (s.as_u64(), v.as_u64()) {
                    *s = json!(a.saturating_add(b));
                }
            }
        }
    }
}

/// What one answer cost (issue 20, the cost of reliability): every
/// attempt's tokens (prompt + completion, as the upstream reported them),
/// the calls made (to the system, retries on errors included, and to
/// judges), and the tokens spent on attempts after the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cost {
    pub attempts: usize,
    pub calls: u64,
    /// Per attempt, in order.
    pub attempt_tokens: Vec<u64>,
    pub retry_tokens: u64,
    /// Of the tokens, those of attempts cut short on a failing prefix:
    /// estimated where the upstream reported none (its usage comes at the
    /// end of a stream; `provider::openai`).
    pub cut_tokens: u64,
}

impl Cost {
    pub fn of(attempts: &[Attempt]) -> Cost {
        let attempt_tokens: Vec<u64> = attempts
            .iter()
            .map(|a| a.input_tokens.unwrap_or(0) + a.output_tokens.unwrap_or(0))
            .collect();
        Cost {
            attempts: attempts.len(),
            calls: attempts
                .iter()
                .map(|a| a.call_attempts as u64 + a.judge_calls)
                .sum(),
            retry_tokens: attempt_tokens.iter().skip(1).sum(),
            cut_tokens: attempts
                .iter()
                .zip(&attempt_tokens)
                .filter(|(a, _)| a.cut)
                .map(|(_, t)| t)
                .sum(),
            attempt_tokens,
        }
    }

    pub fn tokens(&self) -> u64 {
        self.attempt_tokens.iter().sum()
    }

    /// The answer's headers: `x-probity-attempts`, `x-probity-calls`,
    /// `x-probity-tokens` (summed), `x-probity-attempt-tokens` (per
    /// attempt, comma-separated), `x-probity-retry-tokens` and
    /// `x-probity-cut-tokens` (of cut attempts, estimated).
    pub fn headers(&self) -> [(&'static str, String); 6] {
        [
            ("x-probity-attempts", self.attempts.to_string()),
            ("x-probity-calls", self.calls.to_string()),
            ("x-probity-tokens", self.tokens().to_string()),
            (
                "x-probity-attempt-tokens",
                self.attempt_tokens
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ("x-probity-retry-tokens", self.retry_tokens.to_string()),
            ("x-probity-cut-tokens", self.cut_tokens.to_string()),
        ]
    }

    /// The same as one server-sent-events comment (`: probity …`), for a
    /// stream whose headers left before the outcome was known; clients
    /// ignore comments.
    pub fn comment(&self) -> String {
        let fields: Vec<String> = self
            .headers()
            .iter()
            .map(|(k, v)| format!("{}={}", &k["x-probity-".len()..], v.replace(", ", ",")))
            .collect();
        format!(": probity {}\n\n", fields.join(" "))
    }
}

/// Identity of one answer: `id`, `created`, the model named.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub id: String,
    pub created: u64,
    pub model: String,
}

/// `fields` added to the object `v` (a key `v` already has is kept).
fn with_fields(mut v: Value, fields: Option<&Map<String, Value>>) -> Value {
    if let (Value::Object(obj), Some(fields)) = (&mut v, fields) {
        for (k, f) in fields {
            obj.entry(k.clone()).or_insert_with(|| f.clone());
        }
    }
    v
}

/// The answer as one `chat.completion` object: the guard's `id`, and
/// everything else the upstream's as sent.
pub fn completion(h: &Header, p: &Publish, usage: Value) -> Value {
    let mut message = json!({"role": "assistant", "content": p.content});
    if let Some(calls) = &p.tool_calls {
        message["tool_calls"] = calls.clone();
    }
    let message = with_fields(message, p.fields(|m| &m.message_fields));
    let choice = with_fields(
        json!({
            "index": 0,
            "message": message,
            "logprobs": p.logprobs,
            "finish_reason": p.finish_reason,
        }),
        p.fields(|m| &m.choice_fields),
    );
    let mut body = json!({
        "id": h.id,
        "object": "chat.completion",
        "created": h.created,
        "model": p.model.as_deref().unwrap_or(&h.model),
        "choices": [choice],
        "usage": usage,
    });
    if let Some(f) = &p.system_fingerprint {
        body["system_fingerprint"] = json!(f);
    }
    with_fields(body, p.fields(|m| &m.response_fields))
}

/// Longest piece of content in one chunk, in bytes (cut at a character
/// boundary after whitespace where one is near).
const PIECE: usize = 64;

/// The answer as the data of `chat.completion.chunk` events, as OpenAI
/// streams them: the role first, the content in pieces, a refusal in
/// pieces (`delta.refusal`), each tool call (id, name and arguments in one
/// delta), the message's other fields (annotations, audio, …) whole in one
/// delta, the finish reason in a last chunk with an empty delta (and the
/// choice's other fields), and with `include_usage` a chunk with no
/// choices and the usage. Every chunk carries the answer's other top-level
/// fields (`service_tier`, …). Accumulated as the SDKs accumulate a stream,
/// the chunks give back [`completion`]'s message. The caller frames each
/// as `data: …` and ends with `data: [DONE]`.
pub fn chunks(h: &Header, p: &Publish, usage: Value, include_usage: bool) -> Vec<Value> {
    let model = p.model.as_deref().unwrap_or(&h.model);
    let chunk = |choices: Value| {
        let mut c = json!({
            "id": h.id,
            "object": "chat.completion.chunk",
            "created": h.created,
            "model": model,
            "choices": choices,
        });
        c = with_fields(c, p.fields(|m| &m.response_fields));
        if let Some(f) = &p.system_fingerprint {
            c["system_fingerprint"] = json!(f);
        }
        if include_usage {
            c["usage"] = Value::Null;
        }
        c
    };
    let delta =
        |d: Value| json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": null}]);
    let mut out = vec![chunk(delta(json!({"role": "assistant", "content": ""})))];
    for piece in pieces(p.content.as_deref().unwrap_or(""), PIECE) {
        out.push(chunk(delta(json!({"content": piece}))));
    }
    let mut others = p.fields(|m| &m.message_fields).cloned().unwrap_or_default();
    if let Some(Value::String(refusal)) = others.remove("refusal") {
        for piece in pieces(&refusal, PIECE) {
            out.push(chunk(delta(json!({"refusal": piece}))));
        }
    }
    if let Some(calls) = p.tool_calls.as_ref().and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let mut c = call.clone();
            c["index"] = json!(i);
            out.push(chunk(delta(json!({"tool_calls": [c]}))));
        }
    }
    others.retain(|_, v| !v.is_null());
    if !others.is_empty() {
        out.push(chunk(delta(Value::Object(others))));
    }
    out.push(chunk(json!([with_fields(
        json!({
            "index": 0,
            "delta": {},
            "logprobs": p.logprobs,
            "finish_reason": p.finish_reason,
        }),
        p.fields(|m| &m.choice_fields),
    )])));
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = json!(usage);
        out.push(last);
    }
    out
}

/// `text` cut into pieces of at most about `max` bytes, at character
/// boundaries, preferring to cut after whitespace; joined they are `text`.
pub fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(space) = rest[..cut].rfind(char::is_whitespace) {
            if space > max / 2 {
                cut = space + rest[space..].chars().next().map_or(1, char::len_utf8);
            }
        }
        if cut == 0 {
            // A single character longer than `max` bytes cannot happen
            // (max ≥ 4), but never loop forever.
            cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// One server-sent event carrying `data`.
pub fn event(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The event that ends a stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// A comment line that keeps a held stream open.
pub(crate) const KEEPALIVE: &str = ": probity is checking the answer\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_to_the_text_and_respect_the_size() {
        let text = "Je ne sais pas — naïve café, déjà vu. ".repeat(9);
        let p = pieces(&text, 16);
        assert_eq!(p.concat(), text);
        assert!(p.iter().all(|s| s.len() <= 16 && !s.is_empty()), "{p:?}");
        assert!(pieces("", 16).is_empty());
        assert_eq!(pieces("short", 16), ["short"]);
    }

    #[test]
    fn chunks_carry_role_content_finish_and_usage_in_order() {
        let h = Header {
            id: "chatcmpl-x".into(),
            created: 7,
            model: "m".into(),
        };
        let p = Publish {
            content: Some("hello there".into()),
            tool_calls: None,
            finish_reason: "length".into(),
            model: Some("up".into()),
            logprobs: None,
            system_fingerprint: None,
            meta: None,
            outcome: Outcome::Published,
        };
        let c = chunks(
            &h,
            &p,
            json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
            true,
        );
        assert_eq!(c[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = c
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "hello there");
        let finish = &c[c.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "length");
        let last = c.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["total_tokens"], 5);
        assert!(c.iter().all(|c| c["model"] == "up"));
    }
}
