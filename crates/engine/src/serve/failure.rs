//! What a client is told when the upstream produced no output, and
//! whether it should ask again (docs/serve.md, "When the upstream fails").
//!
//! - HTTP 429: passed on as a 429 with `Retry-After` (and
//!   `retry-after-ms`), the upstream's wait or [`DEFAULT_WAIT`], and the
//!   upstream's `x-ratelimit-*` and `x-request-id` headers
//!   ([`upstream_headers`]): the client backs off and asks again; the
//!   guard never retried it.
//! - Any other 4xx but 401/403: the upstream's status and its error object
//!   (`message`, `type`, `param`, `code`) as it sent them: the request is
//!   the client's to fix.
//! - 401/403: a 502 about the guard's own key (the client neither sent nor
//!   can fix it; the upstream's words may quote part of the key).
//! - 5xx, a timeout (504), an unreachable or unreadable upstream: a 502
//!   saying which of these happened, never an address, a URL or the
//!   upstream's body (those go to the operator's log).
//!
//! Retries never multiply: an answer after which asking again cannot
//! help, or for which the guard already spent its retries, carries
//! `x-should-retry: false` (the official OpenAI SDKs honour it).

use crate::provider::openai_wire::error_body;
use crate::provider::types::ProviderError;
use crate::retry::guard::{Attempt, Stop};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

/// The wait a 429 names when the upstream named none.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(1);

/// Whether a client should ask again after an error answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// After this long (`Retry-After`, `retry-after-ms`): a 429.
    After(Duration),
    /// The client's own policy decides (no header): the guard made one
    /// call and retried nothing.
    Client,
    /// `x-should-retry: false`: asking again cannot help, or the guard
    /// already retried.
    Never,
}

impl Retry {
    /// The response headers that say it.
    pub fn headers(self) -> Vec<(&'static str, String)> {
        match self {
            Retry::After(d) => vec![
                ("retry-after", d.as_secs_f64().ceil().max(1.0).to_string()),
                ("retry-after-ms", d.as_millis().to_string()),
            ],
            Retry::Client => Vec::new(),
            Retry::Never => vec![("x-should-retry", "false".into())],
        }
    }
}

/// An error answer for a request the upstream did not answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub status: StatusCode,
    pub body: Value,
    pub retry: Retry,
}

/// The last upstream error among `attempts`: the one a client is told of.
fn last_error(attempts: &[Attempt]) -> Option<&ProviderError> {
    attempts
        .iter()
        .rev()
        .find_map(|a| a.upstream_error.as_ref())
}

/// The upstream's headers passed on with an error answer for `attempts`
/// (those of the error [`upstream_failure`] reads: a 429's `x-ratelimit-*`
/// and `x-request-id`, as sent).
pub fn upstream_headers(attempts: &[Attempt]) -> &[(String, String)] {
    last_error(attempts).map_or(&[], ProviderError::headers)
}

/// What the client is told when no attempt produced an output (module
/// docs): by the last attempt's upstream error.
pub(crate) fn upstream_failure(attempts: &[Attempt], stop: Stop) -> Failure {
    let calls: u32 = attempts.iter().map(|a| a.call_attempts).sum();
    let last = last_error(attempts);
    let Some(e) = last else {
        // Timed out by the guard's own limits (attempt_timeout_s,
        // deadline_s): no upstream error to pass on.
        let status = StatusCode::GATEWAY_TIMEOUT;
        return Failure {
            status,
            body: error_body(
                status.as_u16(),
                "upstream_error",
                &format!(
                    "the upstream produced no output in time ({})",
                    tally(attempts, stop)
                ),
            ),
            retry: Retry::Never,
        };
    };
    match e {
        ProviderError::RateLimited { retry_after, .. } => {
            let wait = retry_after.unwrap_or(DEFAULT_WAIT);
            Failure {
                status: StatusCode::TOO_MANY_REQUESTS,
                body: json!({"error": {
                    "message": format!(
                        "the upstream is rate limiting requests (HTTP 429); retry after {:.1} s",
                        wait.as_secs_f64()
                    ),
                    "type": "rate_limit_error",
                    "param": null,
                    "code": "rate_limit_exceeded",
                }}),
                retry: Retry::After(wait),
            }
        }
        ProviderError::Rejected { status, .. } if matches!(status, 401 | 403) => {
            let status_code = StatusCode::BAD_GATEWAY;
            Failure {
                status: status_code,
                body: error_body(
                    status_code.as_u16(),
                    "upstream_error",
                    &format!(
                        "the upstream refused the guard's credentials (HTTP {status}): the guard's [upstream] key is wrong or lacks access; the operator must fix it"
                    ),
                ),
                retry: Retry::Never,
            }
        }
        ProviderError::Rejected { status, body } if (400..500).contains(status) => Failure {
            status: StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST),
            body: passed_on(body),
            retry: Retry::Never,
        },
        other => {
            let status = if matches!(other, ProviderError::Timeout(_)) {
                StatusCode::GATEWAY_TIMEOUT
            } else {
                StatusCode::BAD_GATEWAY
            };
            Failure {
                status,
                body: error_body(
                    status.as_u16(),
                    "upstream_error",
                    &format!(
                        "the upstream {} ({})",
                        what_failed(other),
                        tally(attempts, stop)
                    ),
                ),
                // One call, nothing retried: the client's retry is the
                // only one. More: the guard retried already.
                retry: if calls <= 1 {
                    Retry::Client
                } else {
                    Retry::Never
                },
            }
        }
    }
}

/// A 4xx body as the client receives it: the upstream's `error` object as
/// it is when the body is one (its `message`, `type`, `param`, `code`),
/// else the body's text as the message.
fn passed_on(body: &str) -> Value {
    match serde_json::from_str::<Value>(body) {
        Ok(v) if v.get("error").is_some_and(Value::is_object) => json!({"error": v["error"]}),
        _ => json!({"error": {
            "message": format!("the upstream refused the request: {body}"),
            "type": "invalid_request_error",
            "param": null,
            "code": null,
        }}),
    }
}

/// What went wrong, for a client: the kind of failure and the status,
/// never where the upstream is or what it said.
pub fn what_failed(e: &ProviderError) -> String {
    match e {
        ProviderError::RateLimited { .. } => "rate limited the request (HTTP 429)".into(),
        ProviderError::Server { status, .. } => format!("failed (HTTP {status})"),
        ProviderError::Rejected { status, .. } => format!("refused the request (HTTP {status})"),
        ProviderError::Timeout(d) => {
            format!("did not answer within {:.1} s", d.as_secs_f64())
        }
        ProviderError::Transport(_) => "could not be reached".into(),
        // An answer of a kind the checks cannot read (audio without a
        // transcript, …): the message names its fields only (ours).
        ProviderError::BadResponse(m) if m.starts_with(crate::provider::types::NO_TEXT) => {
            format!("sent an answer the guard cannot check, so it is not passed on ({m})")
        }
        ProviderError::BadResponse(_) => "sent an answer that could not be read".into(),
        ProviderError::Command(_) | ProviderError::Raised(_) => "failed".into(),
        ProviderError::Unsendable(_) => "cannot be sent this conversation".into(),
    }
}

/// `N attempts, M calls, stopped: why`.
pub fn tally(attempts: &[Attempt], stop: Stop) -> String {
    let calls: u32 = attempts.iter().map(|a| a.call_attempts).sum();
    format!(
        "{} attempt{}, {calls} upstream call{}, stopped: {}",
        attempts.len(),
        if attempts.len() == 1 { "" } else { "s" },
        if calls == 1 { "" } else { "s" },
        match stop {
            Stop::Exhausted => "attempts exhausted",
            Stop::Deadline => "deadline",
            Stop::Refused => "the upstream refused the request",
            Stop::Unjudged => "a check could not judge the output",
            Stop::Unreadable => "the answer is of a kind the checks cannot read",
            Stop::RateLimited => "the upstream is rate limiting",
            Stop::UpstreamFailed => "the upstream failed and its retries were spent",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(e: ProviderError, tries: u32) -> Attempt {
        Attempt {
            number: 1,
            output: None,
            error: Some(e.to_string()),
            latency_ms: None,
            input_tokens: None,
            output_tokens: None,
            call_attempts: tries,
            judge_calls: 0,
            cells: Vec::new(),
            reasons: Vec::new(),
            passed: false,
            feedback: Vec::new(),
            cache_key: None,
            meta: None,
            upstream_status: e.status(),
            upstream_error: Some(e),
            cut: false,
        }
    }

    #[test]
    fn a_429_is_a_429_with_its_wait() {
        let limit = (
            "x-ratelimit-remaining-requests".to_string(),
            "0".to_string(),
        );
        let e = ProviderError::RateLimited {
            retry_after: Some(Duration::from_millis(2500)),
            headers: vec![limit.clone()],
        };
        let attempts = [failed(e, 1)];
        assert_eq!(upstream_headers(&attempts), [limit]);
        let f = upstream_failure(&attempts, Stop::RateLimited);
        assert_eq!(f.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(f.retry, Retry::After(Duration::from_millis(2500)));
        assert_eq!(
            f.retry.headers(),
            [
                ("retry-after", "3".to_string()),
                ("retry-after-ms", "2500".to_string())
            ]
        );
        assert_eq!(f.body["error"]["code"], "rate_limit_exceeded");
        let none = ProviderError::RateLimited {
            retry_after: None,
            headers: Vec::new(),
        };
        let f = upstream_failure(&[failed(none, 1)], Stop::RateLimited);
        assert_eq!(f.retry, Retry::After(DEFAULT_WAIT));
    }

    #[test]
    fn a_400s_error_object_passes_through_and_a_bare_body_is_named() {
        let body = r#"{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let e = ProviderError::Rejected {
            status: 400,
            body: body.into(),
        };
        let f = upstream_failure(&[failed(e, 1)], Stop::Refused);
        assert_eq!(f.status, StatusCode::BAD_REQUEST);
        assert_eq!(f.body["error"]["code"], "context_length_exceeded");
        assert_eq!(f.body["error"]["param"], "messages");
        assert_eq!(
            f.body["error"]["message"],
            "maximum context length is 8192 tokens"
        );
        assert_eq!(f.retry, Retry::Never);
        let e = ProviderError::Rejected {
            status: 422,
            body: "no".into(),
        };
        let f = upstream_failure(&[failed(e, 1)], Stop::Refused);
        assert_eq!(f.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(f.body["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with(": no"));
    }

    #[test]
    fn transport_and_5xx_errors_name_no_address_and_retried_ones_say_so() {
        let e = ProviderError::Transport(
            "error sending request: connection refused (http://10.1.2.3:8000)".into(),
        );
        let f = upstream_failure(&[failed(e, 3)], Stop::UpstreamFailed);
        let text = f.body.to_string();
        assert_eq!(f.status, StatusCode::BAD_GATEWAY);
        assert!(!text.contains("10.1.2.3"), "{text}");
        assert!(text.contains("could not be reached"), "{text}");
        assert!(text.contains("3 upstream calls"), "{text}");
        assert_eq!(f.retry, Retry::Never);
        let e = ProviderError::Server {
            status: 503,
            body: "upstream connect error to 10.0.0.9".into(),
        };
        let f = upstream_failure(&[failed(e, 1)], Stop::UpstreamFailed);
        assert!(!f.body.to_string().contains("10.0.0.9"));
        assert_eq!(f.retry, Retry::Client, "one call: the client may retry");
        let f = upstream_failure(
            &[failed(ProviderError::Timeout(Duration::from_secs(5)), 1)],
            Stop::UpstreamFailed,
        );
        assert_eq!(f.status, StatusCode::GATEWAY_TIMEOUT);
    }
}
