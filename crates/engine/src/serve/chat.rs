//! `POST /v1/chat/completions`: read the request (the body within
//! `body_timeout_s`), guard it, record it, answer — as one JSON object or
//! as server-sent events. The guard runs in its own task, cancelled when
//! the client goes away (its upstream call is dropped with it). A streamed
//! answer is held until every check has passed: not one byte of a failing
//! attempt is ever sent.

use super::answer::{self, Cost, Header, Outcome, Publish, Verdict, DONE, KEEPALIVE};
use super::request::{self, ClientRequest, Reply};
use super::state::{AttemptLabel, CostLabels, ServeState};
use crate::provider::openai_wire::error_body;
use crate::provider::types::Api;
use crate::retry::guard::GuardOutcome;
use crate::store::LiveRecord;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use probity_core::Input;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;
use subtle::ConstantTimeEq;
use tokio::task::JoinHandle;

/// An error answer in the OpenAI shape.
pub(crate) fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    (status, Json(error_body(status.as_u16(), kind, message))).into_response()
}

/// Whether the request presents the expected bearer token, compared in
/// constant time (`subtle`).
pub(crate) fn authorized(expected: &Option<String>, headers: &HeaderMap) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    // The scheme is case-insensitive (RFC 7235): `Bearer`, `bearer`, `BEARER`.
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim_start())
        .unwrap_or("");
    expected.as_bytes().ct_eq(presented.as_bytes()).into()
}

/// Aborts the guard's task when dropped: a client that goes away cancels
/// its request's upstream calls.
struct AbortOnDrop(JoinHandle<GuardOutcome>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts a request cancelled by its client unless disarmed (answered).
struct CancelCount {
    st: Arc<ServeState>,
    armed: bool,
}

impl CancelCount {
    /// The request was answered: nothing to count.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelCount {
    fn drop(&mut self) {
        if self.armed {
            self.st.metrics.cancelled.inc();
        }
    }
}

/// `POST /v1/chat/completions`.
pub async fn chat(State(st): State<Arc<ServeState>>, headers: HeaderMap, body: Body) -> Response {
    handle(st, headers, body, Api::Chat).await
}

/// `POST /v1/responses` ([`super::responses`]).
pub async fn responses(
    State(st): State<Arc<ServeState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(st, headers, body, Api::Responses).await
}

/// A request of `api`: read, guarded, recorded, answered.
async fn handle(st: Arc<ServeState>, headers: HeaderMap, body: Body, api: Api) -> Response {
    if !authorized(&st.token, &headers) {
        st.metrics.unauthorized.inc();
        return error_response(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or wrong bearer token",
        );
    }
    let started = Instant::now();
    // A body declared larger than the limit is refused before it is read
    // (not after body_timeout_s of waiting for bytes that will be refused).
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.max_body_bytes as u64) {
        st.metrics.malformed.inc();
        return too_large(&st);
    }
    let bytes = match read_body(&st, body).await {
        Ok(b) => b,
        Err(resp) => {
            st.metrics.malformed.inc();
            return resp;
        }
    };
    let parsed = match api {
        Api::Chat => request::parse(&bytes, &st.pin, st.guard.provider()),
        Api::Responses => super::responses::parse(&bytes, &st.pin, st.guard.provider()),
    };
    let req = match parsed {
        Ok(r) => r,
        Err(message) => {
            st.metrics.malformed.inc();
            return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &message);
        }
    };
    // requests_per_minute: wait for a turn at most queue_wait_s, else a
    // 429 the client backs off from.
    if let Err(wait) = st.admission.acquire_request_within(st.queue_wait).await {
        st.metrics.queue_full.inc();
        let wait = wait.max(super::failure::DEFAULT_WAIT);
        let mut resp = error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            &format!(
                "the guard's requests_per_minute is reached and a turn is more than queue_wait_s = {} s away; retry after {:.1} s",
                st.queue_wait.as_secs_f64(),
                wait.as_secs_f64()
            ),
        );
        for (name, value) in super::failure::Retry::After(wait).headers() {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        return resp;
    }
    let idx = st.next_index();
    st.metrics.requests.inc();
    let attempts = st
        .classes
        .as_ref()
        .and_then(|c| c.attempts_for(&headers, req.wire.params.get("metadata")));
    let reply = req.reply.clone();
    let task = AbortOnDrop(tokio::spawn(guard(st.clone(), idx, req, attempts)));
    let cancel = CancelCount {
        st: st.clone(),
        armed: true,
    };
    let header = Header {
        id: match api {
            Api::Chat => format!("chatcmpl-probity-{}-{}", st.run_id, idx + 1),
            Api::Responses => format!("resp_probity_{}_{}", st.run_id, idx + 1),
        },
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: st.model.clone(),
    };
    if reply.stream {
        st.metrics.streamed.inc();
        return stream(st, task, cancel, header, reply, started).await;
    }
    let mut cancel = cancel;
    let joined = await_task(task).await;
    respond(
        &st,
        joined,
        &mut cancel,
        started,
        &reply,
        |p, usage| match api {
            Api::Chat => Json(answer::completion(&header, p, usage)).into_response(),
            Api::Responses => Json(super::responses::body(&header, p, usage)).into_response(),
        },
    )
}

/// The answer once the guard's task is done: the published output rendered
/// by `publish` (one JSON object, or events), or the refusal as a plain
/// HTTP error; with the outcome headers either way.
fn respond(
    st: &ServeState,
    joined: Result<GuardOutcome, tokio::task::JoinError>,
    cancel: &mut CancelCount,
    started: Instant,
    req: &Reply,
    publish: impl FnOnce(&Publish, serde_json::Value) -> Response,
) -> Response {
    let Ok(outcome) = joined else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            GUARD_STOPPED,
        );
    };
    cancel.disarm();
    let (verdict, usage) = finish(st, &outcome, started, req.api);
    let attempts = outcome.attempts();
    let (mut resp, name) = match verdict {
        Verdict::Publish(p) => {
            let mut resp = publish(&p, usage);
            // The upstream's request id and rate-limit state, as sent.
            pass_on(&mut resp, p.headers());
            (resp, p.outcome)
        }
        Verdict::Refuse {
            status,
            body,
            outcome,
            retry,
        } => {
            let mut resp = (status, Json(body)).into_response();
            if outcome == Outcome::UpstreamError {
                // A 429's rate-limit state, as the upstream sent it.
                pass_on(&mut resp, super::failure::upstream_headers(attempts));
            }
            for (name, value) in retry.headers() {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    resp.headers_mut().insert(name, v);
                }
            }
            (resp, outcome)
        }
    };
    set_headers(&mut resp, &Cost::of(attempts), name, &req.pinned);
    resp
}

/// Set the upstream's `headers` ([`crate::provider::types::passed_header`])
/// on `resp`, as sent.
fn pass_on(resp: &mut Response, headers: &[(String, String)]) {
    for (name, value) in headers {
        if let (Ok(k), Ok(v)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            resp.headers_mut().insert(k, v);
        }
    }
}

/// What a client is told when the guard's task itself failed.
const GUARD_STOPPED: &str = "the guard stopped unexpectedly";

/// The guard's task, awaited; its handle aborts it if this future is
/// dropped first.
async fn await_task(mut task: AbortOnDrop) -> Result<GuardOutcome, tokio::task::JoinError> {
    (&mut task.0).await
}

/// 413: the body is over `max_body_mb`.
fn too_large(st: &ServeState) -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_request_error",
        &format!(
            "the request body is larger than {} bytes (max_body_mb)",
            st.max_body_bytes
        ),
    )
}

/// The body, read within `body_timeout_s` and `max_body_mb`.
async fn read_body(st: &ServeState, body: Body) -> Result<Bytes, Response> {
    match tokio::time::timeout(
        st.body_timeout,
        axum::body::to_bytes(body, st.max_body_bytes),
    )
    .await
    {
        Err(_) => Err(error_response(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            &format!(
                "the request body did not arrive within {} s (body_timeout_s)",
                st.body_timeout.as_secs_f64()
            ),
        )),
        Ok(Err(e)) => {
            // axum reports the limit only in its message ("length limit
            // exceeded"); its error type is not public.
            let too_big = e.to_string().contains("length limit");
            Err(if too_big {
                too_large(st)
            } else {
                error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    &format!("cannot read the request body: {e}"),
                )
            })
        }
        Ok(Ok(b)) => Ok(b),
    }
}

/// Guard one request and queue its record (not awaited: the writer
/// commits within `COMMIT_EVERY`).
async fn guard(
    st: Arc<ServeState>,
    idx: usize,
    req: ClientRequest,
    attempts: Option<u32>,
) -> GuardOutcome {
    let last_user = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == crate::provider::types::Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    // The request as a test input (`probity export`): its last user
    // message as `text`, its messages whole as the client sent them
    // (roles, content parts, tool calls and results), registered secrets
    // masked in every text.
    let mask = crate::provider::redact::redact_owned;
    let mut input = Input::text(format!("request-{}", idx + 1), mask(last_user));
    let messages = req.wire.messages.iter().cloned().map(masked).collect();
    input
        .fields
        .insert("messages".into(), serde_json::Value::Array(messages));
    let outcome = st
        .guard
        .run_api_with(
            &req.messages,
            &input,
            idx as u32,
            (&req.wire, req.reply.api),
            attempts,
        )
        .await;
    record(&st, idx, input, &outcome);
    outcome
}

/// `v` with registered secrets masked in every string in it.
fn masked(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(crate::provider::redact::redact_owned(s)),
        Value::Array(items) => Value::Array(items.into_iter().map(masked).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, masked(v))).collect()),
        other => other,
    }
}

/// Store the request as input `idx` with its attempts; the sample is the
/// first attempt. The record is queued whole, never waited for: one the
/// writer refuses is counted (`probity_unrecorded_total`) and logged at
/// the 1st, 2nd, 4th, … time, with the store's reason.
fn record(st: &ServeState, idx: usize, input: Input, outcome: &GuardOutcome) {
    let attempts = outcome.attempts();
    let Some(first) = attempts.first() else {
        return;
    };
    let published = outcome.published().is_some();
    let record = LiveRecord {
        input: (idx, input),
        // Live traffic is always asked: it does not feed the cache.
        attempts: attempts
            .iter()
            .map(|a| {
                a.row(
                    idx,
                    0,
                    published && a.number as usize == attempts.len(),
                    false,
                )
            })
            .collect(),
        sample: first.sample_row(idx, 0, String::new()),
        // The session's counts so far: the writer adds what is new with
        // the next commit, so the run's calls and tokens are current while
        // it serves (the run's close sets them once more).
        totals: st.guard.checks().totals(st.guard.totals()),
    };
    match st.writer.send_record(record) {
        Ok(()) => {
            st.recorded
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Err(e) => {
            let n = st.metrics.unrecorded.inc() + 1;
            if n.is_power_of_two() {
                crate::stderr::line(format_args!(
                    "warning: request {} answered but not recorded ({n} so far): {e}",
                    idx + 1
                ));
            }
        }
    }
}

/// Count the outcome and decide the answer.
fn finish(
    st: &ServeState,
    outcome: &GuardOutcome,
    started: Instant,
    api: Api,
) -> (Verdict, serde_json::Value) {
    let attempts = outcome.attempts();
    let m = &st.metrics;
    m.attempts.inc_by(attempts.len() as u64);
    m.attempt_errors
        .inc_by(attempts.iter().filter(|a| a.error.is_some()).count() as u64);
    m.latency.observe(started.elapsed().as_secs_f64());
    for a in attempts {
        for line in st.check_errors.note(&st.check_names, a) {
            crate::stderr::line(format_args!("warning: {line}"));
        }
        let used = a.input_tokens.unwrap_or(0) + a.output_tokens.unwrap_or(0);
        let attempt = if a.number == 1 { "first" } else { "retry" };
        m.tokens
            .get_or_create(&AttemptLabel {
                attempt: attempt.into(),
            })
            .inc_by(used);
        if let (Some(price), Some(_)) = (&st.prices.system, &a.output) {
            m.cost
                .get_or_create(&CostLabels {
                    attempt: attempt.into(),
                    currency: price.currency.clone(),
                })
                .inc_by(price.cost(&probity_core::cost::Usage::of_call(
                    a.input_tokens,
                    a.output_tokens,
                )));
        }
    }
    // An attempt without an output (the upstream failed) is no verdict of
    // any check: its Error cells are the upstream's, not the checks'.
    if let Some(first) = attempts.first().filter(|a| a.output.is_some()) {
        m.count_cells(&st.check_names, "first", &first.cells);
        st.live.announce(st.live.observe(0, &first.cells));
    }
    // The final attempt: published, or the last tried when none passed (a
    // request that got no passing answer counts against the checks its
    // last attempt failed).
    if let Some(last) = attempts.last().filter(|a| a.output.is_some()) {
        m.count_cells(&st.check_names, "published", &last.cells);
        st.live.announce(st.live.observe(1, &last.cells));
    }
    let deciding = answer::Deciding {
        names: &st.check_names,
        columns: st.guard.columns(),
    };
    let verdict = answer::decide(outcome, st.policy, &deciding);
    let answered = match &verdict {
        Verdict::Publish(p) => p.outcome,
        Verdict::Refuse { outcome, .. } => {
            m.rejected.inc();
            *outcome
        }
    };
    match answered {
        Outcome::Published => {
            m.published.inc();
        }
        Outcome::NothingPassed => {
            m.nothing_passed.inc();
        }
        Outcome::CheckError => {
            m.unjudged.inc();
        }
        Outcome::UpstreamError => {
            let n = m.upstream_failed.inc() + 1;
            // The client is told the kind of failure only; the operator
            // reads the whole (redacted) error here, 1st, 2nd, 4th … time.
            let last = attempts.iter().rev().find_map(|a| a.error.as_deref());
            if let (true, Some(e)) = (n.is_power_of_two(), last) {
                crate::stderr::line(format_args!(
                    "warning: the upstream produced no output for a request ({n} so far): {}",
                    crate::provider::redact::one_line(e)
                ));
            }
        }
    };
    m.update_pass_rate();
    let usage = match api {
        Api::Chat => answer::usage(attempts),
        Api::Responses => super::responses::usage(attempts),
    };
    (verdict, usage)
}

fn set_headers(resp: &mut Response, cost: &Cost, outcome: Outcome, pinned: &[String]) {
    let h = resp.headers_mut();
    for (name, value) in cost.headers() {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    h.insert(
        "x-probity-outcome",
        HeaderValue::from_static(outcome.as_str()),
    );
    if !pinned.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&pinned.join(", ")) {
            h.insert("x-probity-pinned", v);
        }
    }
}

/// A streamed answer. The outcome is awaited for up to
/// `stream_keepalive_s`: if it comes first, the answer is sent whole as
/// events (or as a plain HTTP error when nothing passed). Otherwise the
/// stream opens with keep-alive comments until it comes; an answer that is
/// then refused is sent as an `error` event (the OpenAI SDKs raise it).
async fn stream(
    st: Arc<ServeState>,
    mut task: AbortOnDrop,
    mut cancel: CancelCount,
    header: Header,
    req: Reply,
    started: Instant,
) -> Response {
    let early = tokio::time::timeout(st.keepalive, &mut task.0).await;
    if let Ok(joined) = early {
        return respond(&st, joined, &mut cancel, started, &req, |p, usage| {
            sse_response(Body::from(published_events(&header, p, usage, &req)))
        });
    }
    // Held longer than the keep-alive interval: open the stream now.
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        // The first tick is at once: the stream opens with a comment.
        let mut tick = tokio::time::interval(st.keepalive);
        let outcome = loop {
            tokio::select! {
                joined = &mut task.0 => break joined,
                _ = tick.tick() => {
                    if tx.send(Bytes::from_static(KEEPALIVE.as_bytes())).await.is_err() {
                        // The client went away: `task` aborts on drop.
                        return;
                    }
                }
                _ = tx.closed() => return,
            }
        };
        let text = match outcome {
            Ok(outcome) => {
                cancel.disarm();
                let (verdict, usage) = finish(&st, &outcome, started, req.api);
                // The headers left with the first keep-alive: the cost
                // goes in a comment before the answer.
                let cost = Cost::of(outcome.attempts()).comment();
                match verdict {
                    Verdict::Publish(p) => {
                        cost + published_events(&header, &p, usage, &req).as_str()
                    }
                    Verdict::Refuse { body, .. } => cost + answer::event(&body).as_str() + DONE,
                }
            }
            Err(_) => answer::event(&error_body(500, "server_error", GUARD_STOPPED)) + DONE,
        };
        let _ = tx.send(Bytes::from(text)).await;
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    sse_response(Body::from_stream(body))
}

fn published_events(h: &Header, p: &Publish, usage: serde_json::Value, req: &Reply) -> String {
    if req.api == Api::Responses {
        return super::responses::events(&super::responses::body(h, p, usage));
    }
    let mut text: String = answer::chunks(h, p, usage, req.include_usage)
        .iter()
        .map(answer::event)
        .collect();
    text.push_str(DONE);
    text
}

fn sse_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}
