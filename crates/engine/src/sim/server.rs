//! The simulator served as an OpenAI-compatible HTTP endpoint (`probity sim
//! serve`), with fault injection, for integration tests and benchmarks.
//!
//! Routes:
//! * `POST /v1/chat/completions` — the [`SimModel`]'s answer in the OpenAI
//!   Chat Completions shape, whole or streamed (`"stream": true`), honouring
//!   the fields [`ChatOptions`] reads (`max_tokens`, `stop`, `n`, `tools`,
//!   `response_format`, `logprobs`, …; see `protocol.rs`). The body's
//!   `seed` is the repetition (so the `openai` provider's `seed +
//!   repetition` reproduces a run); without a seed a per-server counter is
//!   used. Choice i is the model's attempt i. A field of the wrong type is
//!   HTTP 400 naming it; unknown fields are ignored.
//! * `GET /v1/models`, `GET /health`.
//! * `GET /stats` — [`ServerStats`] as JSON: requests to the completions
//!   route, injected faults in total and by kind, requests whose client
//!   went away before the answer was complete, the top-level fields of the
//!   request bodies received.
//! * `GET /stats/last_request` — the last completions request's body as
//!   received (a JSON string when it was not JSON; null before any).
//!
//! Faults ([`FaultConfig`]) are drawn before the model runs, at most one per
//! request, from a generator seeded by the fault seed and the request's
//! arrival number.

use super::model::SimModel;
use super::protocol::{
    build_choice, completion_body, stream_events, BadRequest, ChatOptions, ChoiceAnswer, Event,
    Meta,
};
use super::rng::{Fnv, SplitMix64};
use crate::provider::error::ConfigError;
use crate::provider::openai_wire::error_body;
use crate::provider::types::{Provider, ProviderError};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

/// Faults the server injects, each a per-request probability. At most one
/// fault per request; the probabilities must sum to at most 1.
///
/// ```toml
/// seed = 0
/// rate_limit = 0.05          # HTTP 429 with `Retry-After: <retry_after_s>`
/// retry_after_s = 1          # seconds (`retry_after_secs`, the older name, is accepted)
/// retry_after_ms = 250       # optional: also send `retry-after-ms` (as OpenAI does)
/// server_error = 0.02        # HTTP 500
/// timeout = 0.01             # hang for timeout_ms, then answer normally
/// timeout_ms = 30000
/// malformed = 0.01           # HTTP 200 with truncated JSON
/// require_key = "sk-test"     # like a real API: 401 without this bearer key
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    pub seed: u64,
    pub rate_limit: f64,
    /// Seconds sent in `Retry-After`; written `retry_after_s` (one name
    /// for seconds across configuration tables), `retry_after_secs` is
    /// still accepted.
    #[serde(rename = "retry_after_s", alias = "retry_after_secs")]
    pub retry_after_secs: u64,
    pub retry_after_ms: Option<u64>,
    pub server_error: f64,
    pub timeout: f64,
    pub timeout_ms: u64,
    pub malformed: f64,
    /// Answer HTTP 401 (as OpenAI does for a wrong key) to every request
    /// without `Authorization: Bearer <require_key>`.
    pub require_key: Option<String>,
    /// Requests answered at once; the rest wait their turn, first come
    /// first served, and their wait is part of their latency — a
    /// llama.cpp server with `--parallel N` slots (llama-cpp-python's
    /// server: 1). A streamed answer frees its slot as it starts sending.
    /// `None`: every request at once.
    pub slots: Option<u32>,
}

impl Default for FaultConfig {
    /// No faults; `retry_after_s = 1`, `timeout_ms = 30000`.
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            rate_limit: 0.0,
            retry_after_secs: 1,
            retry_after_ms: None,
            server_error: 0.0,
            timeout: 0.0,
            timeout_ms: 30_000,
            malformed: 0.0,
            require_key: None,
            slots: None,
        }
    }
}

impl FaultConfig {
    /// Checks that each probability lies in [0, 1] and that they sum to at most 1.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ps = [
            ("rate_limit", self.rate_limit),
            ("server_error", self.server_error),
            ("timeout", self.timeout),
            ("malformed", self.malformed),
        ];
        for (name, p) in ps {
            if !(0.0..=1.0).contains(&p) {
                return Err(ConfigError::Invalid(format!(
                    "fault {name} must be a probability in [0, 1], got {p}"
                )));
            }
        }
        if self.timeout_ms > super::model::MAX_SIM_MS {
            return Err(ConfigError::Invalid(format!(
                "fault timeout_ms = {} is more than {} (an hour)",
                self.timeout_ms,
                super::model::MAX_SIM_MS
            )));
        }
        if self.slots == Some(0) {
            return Err(ConfigError::Invalid(
                "slots must be at least 1 (leave it out for no limit)".into(),
            ));
        }
        let total: f64 = ps.iter().map(|(_, p)| p).sum();
        if total > 1.0 + 1e-12 {
            return Err(ConfigError::Invalid(format!(
                "fault probabilities sum to {total}, more than 1"
            )));
        }
        Ok(())
    }
}

/// Request and fault counts (`GET /stats`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerStats {
    /// Requests to `POST /v1/chat/completions`.
    pub requests: u64,
    /// Faults injected (the sum of `by_kind`).
    pub faults_injected: u64,
    /// Faults by kind: `rate_limit`, `server_error`, `timeout`, `malformed`.
    pub by_kind: BTreeMap<String, u64>,
    /// Simulated model errors (`SimConfig::error_rate`), not counted as faults.
    pub model_errors: u64,
    /// Requests whose client went away before the answer was complete
    /// (during the latency, or mid-stream).
    #[serde(default)]
    pub cancelled: u64,
    /// Tokens the simulated model generated: every token of a whole
    /// answer; of a streamed one, those sent (a client that stops reading
    /// early spares the model the rest).
    #[serde(default)]
    pub generated_tokens: u64,
    /// How many request bodies had each top-level field (`model`,
    /// `messages`, `temperature`, `tools`, …), whatever its value.
    #[serde(default)]
    pub fields: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    RateLimit,
    ServerError,
    Timeout,
    Malformed,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    rate_limit: AtomicU64,
    server_error: AtomicU64,
    timeout: AtomicU64,
    malformed: AtomicU64,
    model_errors: AtomicU64,
    cancelled: AtomicU64,
    generated_tokens: AtomicU64,
    /// Repetition source for requests without a seed.
    unseeded: AtomicU64,
}

#[derive(Debug)]
struct ServerState {
    model: SimModel,
    faults: FaultConfig,
    counters: Counters,
    any_fault: bool,
    /// `system_fingerprint`: a hash of the model's fingerprint.
    fingerprint: String,
    fields: Mutex<BTreeMap<String, u64>>,
    last_request: Mutex<Value>,
    /// [`FaultConfig::slots`]: the places of requests being answered.
    slots: Option<tokio::sync::Semaphore>,
}

/// The lock's value, also after a panic elsewhere poisoned it (the
/// counters stay meaningful).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ServerState {
    fn stats(&self) -> ServerStats {
        let c = &self.counters;
        let by_kind: BTreeMap<String, u64> = [
            ("rate_limit", &c.rate_limit),
            ("server_error", &c.server_error),
            ("timeout", &c.timeout),
            ("malformed", &c.malformed),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.load(Ordering::Relaxed)))
        .collect();
        ServerStats {
            requests: c.requests.load(Ordering::Relaxed),
            faults_injected: by_kind.values().sum(),
            by_kind,
            model_errors: c.model_errors.load(Ordering::Relaxed),
            cancelled: c.cancelled.load(Ordering::Relaxed),
            generated_tokens: c.generated_tokens.load(Ordering::Relaxed),
            fields: lock(&self.fields).clone(),
        }
    }

    /// Keeps the body as the last request and counts its top-level fields.
    fn record(&self, parsed: Option<&Value>, raw: &[u8]) {
        if let Some(Value::Object(map)) = parsed {
            let mut fields = lock(&self.fields);
            for key in map.keys() {
                *fields.entry(key.clone()).or_insert(0) += 1;
            }
        }
        *lock(&self.last_request) = match parsed {
            Some(v) => v.clone(),
            None => Value::String(String::from_utf8_lossy(raw).into_owned()),
        };
    }

    /// HTTP 401 when a key is required and not presented.
    fn check_key(&self, headers: &HeaderMap) -> Option<Response> {
        let key = self.faults.require_key.as_ref()?;
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        (presented != Some(key.as_str())).then(|| {
            error_response(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "Incorrect API key provided. You can find your API key in your account settings.",
            )
        })
    }

    /// The fault drawn for request `n`, as its response; a timeout fault
    /// sleeps and then lets the request be answered.
    async fn inject_fault(&self, n: u64) -> Option<Response> {
        match self.draw_fault(n)? {
            Fault::RateLimit => {
                let mut resp = error_response(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limit_error",
                    "simulated rate limit",
                );
                let h = resp.headers_mut();
                h.insert(header::RETRY_AFTER, HeaderValue::from(self.faults.retry_after_secs));
                if let Some(ms) = self.faults.retry_after_ms {
                    h.insert("retry-after-ms", HeaderValue::from(ms));
                }
                Some(resp)
            }
            Fault::ServerError => Some(error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "simulated server error",
            )),
            Fault::Malformed => Some(json_response(
                StatusCode::OK,
                b"{\"id\": \"chatcmpl-sim\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assist".to_vec(),
            )),
            Fault::Timeout => {
                tokio::time::sleep(Duration::from_millis(self.faults.timeout_ms)).await;
                None
            }
        }
    }

    /// The `n` choices of request `n`: choice i is the model's attempt i.
    fn choices(
        &self,
        opts: &ChatOptions,
        repetition: u64,
        n: u64,
    ) -> Result<Vec<ChoiceAnswer>, ProviderError> {
        (0..u64::from(opts.n))
            .map(|i| {
                let out = self.model.generate(&opts.messages, repetition, i)?;
                Ok(build_choice(
                    opts,
                    out.text,
                    format!("call_sim{n:06}{i:03}"),
                ))
            })
            .collect()
    }

    /// A simulated model error, counted, as its response.
    fn model_error(&self, e: ProviderError) -> Response {
        self.counters.model_errors.fetch_add(1, Ordering::Relaxed);
        let status = match &e {
            ProviderError::Server { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        error_response(status, "server_error", &e.to_string())
    }

    fn draw_fault(&self, n: u64) -> Option<Fault> {
        if !self.any_fault {
            return None;
        }
        let f = &self.faults;
        let mut u = SplitMix64::new(Fnv::new().u64(f.seed).u64(n).finish()).next_f64();
        for (p, fault, counter) in [
            (f.rate_limit, Fault::RateLimit, &self.counters.rate_limit),
            (
                f.server_error,
                Fault::ServerError,
                &self.counters.server_error,
            ),
            (f.timeout, Fault::Timeout, &self.counters.timeout),
            (f.malformed, Fault::Malformed, &self.counters.malformed),
        ] {
            if u < p {
                counter.fetch_add(1, Ordering::Relaxed);
                return Some(fault);
            }
            u -= p;
        }
        None
    }
}

/// Serves `model` with `faults` on `listener` until `shutdown` completes
/// (then finishes in-flight requests). Invalid fault settings are an
/// `InvalidInput` error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    model: SimModel,
    faults: FaultConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let state = new_state(model, faults)?;
    run(listener, state, shutdown).await
}

fn new_state(model: SimModel, faults: FaultConfig) -> io::Result<Arc<ServerState>> {
    faults
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let any_fault =
        faults.rate_limit + faults.server_error + faults.timeout + faults.malformed > 0.0;
    let fingerprint = format!(
        "fp_{:012x}",
        Fnv::new().bytes(model.fingerprint().as_bytes()).finish() >> 16
    );
    let slots = faults
        .slots
        .map(|n| tokio::sync::Semaphore::new(n as usize));
    Ok(Arc::new(ServerState {
        slots,
        model,
        faults,
        counters: Counters::default(),
        any_fault,
        fingerprint,
        fields: Mutex::new(BTreeMap::new()),
        last_request: Mutex::new(Value::Null),
    }))
}

async fn run(
    listener: tokio::net::TcpListener,
    state: Arc<ServerState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/stats", get(stats))
        .route("/stats/last_request", get(last_request))
        .with_state(state);
    crate::http_server::serve(listener, app, shutdown).await
}

/// A simulator server on an ephemeral port of 127.0.0.1, for tests.
/// Dropping it stops the server.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    state: Arc<ServerState>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<io::Result<()>>,
}

impl TestServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for an OpenAI-compatible client: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Current counts (the same as `GET /stats`).
    pub fn stats(&self) -> ServerStats {
        self.state.stats()
    }

    /// The last completions request's body (as `GET /stats/last_request`).
    pub fn last_request(&self) -> Value {
        lock(&self.state.last_request).clone()
    }

    /// Stops accepting, waits for in-flight requests, returns the server's result.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match (&mut self.task).await {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds 127.0.0.1:0 and serves `model` with `faults` on a spawned task
/// (requires a Tokio runtime). Returns the address and the handle.
pub async fn spawn_test_server(
    model: SimModel,
    faults: FaultConfig,
) -> io::Result<(SocketAddr, TestServer)> {
    let state = new_state(model, faults)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(listener, state.clone(), async move {
        let _ = rx.await;
    }));
    Ok((
        addr,
        TestServer {
            addr,
            state,
            shutdown: Some(tx),
            task,
        },
    ))
}

/// A body sent as it is (the injected malformed answer).
fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    (status, Json(error_body(status.as_u16(), kind, message))).into_response()
}

/// Counts its request as cancelled when dropped before [`CancelGuard::done`]:
/// the handler's future, or a stream's body, dropped because the client
/// went away before the answer was complete.
#[derive(Debug)]
struct CancelGuard(Option<Arc<ServerState>>);

impl CancelGuard {
    fn new(st: &Arc<ServerState>) -> Self {
        CancelGuard(Some(st.clone()))
    }

    /// The answer is complete: dropping the guard counts nothing.
    fn done(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(st) = self.0.take() {
            st.counters.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn chat(State(st): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    let mut guard = CancelGuard::new(&st);
    let resp = answer(&st, &headers, &body).await;
    guard.done();
    resp
}

/// The answer to one request: auth, then a fault, then the request read,
/// the latency slept, the model's choices, whole or streamed.
async fn answer(st: &Arc<ServerState>, headers: &HeaderMap, body: &[u8]) -> Response {
    let n = st.counters.requests.fetch_add(1, Ordering::Relaxed);
    let parsed: Result<Value, _> = serde_json::from_slice(body);
    st.record(parsed.as_ref().ok(), body);
    if let Some(resp) = st.check_key(headers) {
        return resp;
    }
    if let Some(resp) = st.inject_fault(n).await {
        return resp;
    }
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            return bad_request(&BadRequest {
                param: String::new(),
                message: format!("the body is not JSON: {e}"),
            })
        }
    };
    let opts = match ChatOptions::parse(&value) {
        Ok(o) => o,
        Err(e) => return bad_request(&e),
    };
    let repetition = match opts.seed {
        Some(s) => s,
        None => st.counters.unseeded.fetch_add(1, Ordering::Relaxed),
    };
    // A request waits for a slot (FIFO: tokio's semaphore is fair), and
    // holds it while it is served.
    let _slot = match &st.slots {
        Some(s) => s.acquire().await.ok(),
        None => None,
    };
    let latency = st.model.latency(&opts.messages, repetition, 0);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let choices = match st.choices(&opts, repetition, n) {
        Ok(c) => c,
        Err(e) => return st.model_error(e),
    };
    let meta = Meta {
        id: format!("chatcmpl-sim-{n}"),
        created: unix_now(),
        model: opts.model.clone(),
        system_fingerprint: st.fingerprint.clone(),
    };
    if opts.stream {
        let token = Duration::from_millis(st.model.config().token_ms);
        sse_response(st, stream_events(&meta, &opts, &choices), token)
    } else {
        let tokens: u64 = choices.iter().map(|c| c.token_count()).sum();
        // A whole answer comes once all its tokens are generated.
        let per_token = Duration::from_millis(st.model.config().token_ms);
        let generation = per_token.saturating_mul(u32::try_from(tokens).unwrap_or(u32::MAX));
        if !generation.is_zero() {
            tokio::time::sleep(generation).await;
        }
        st.counters
            .generated_tokens
            .fetch_add(tokens, Ordering::Relaxed);
        Json(completion_body(&meta, &opts, &choices)).into_response()
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// HTTP 400 in OpenAI's shape, `param` naming the field.
fn bad_request(e: &BadRequest) -> Response {
    let param = if e.param.is_empty() {
        Value::Null
    } else {
        Value::String(e.param.clone())
    };
    let body = json!({"error": {"message": e.message, "type": "invalid_request_error",
        "param": param, "code": null}});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// The events as `text/event-stream`, each `data: {json}` and a last
/// `data: [DONE]`, an event carrying k tokens sent `k × token` after the
/// one before it.
fn sse_response(st: &Arc<ServerState>, events: Vec<Event>, token: Duration) -> Response {
    let mut queue: VecDeque<(Bytes, Duration, u64)> = events
        .into_iter()
        .map(|e| {
            let line = format!("data: {}\n\n", e.data);
            let delay = token.saturating_mul(u32::try_from(e.tokens).unwrap_or(u32::MAX));
            (Bytes::from(line), delay, e.tokens)
        })
        .collect();
    queue.push_back((Bytes::from_static(b"data: [DONE]\n\n"), Duration::ZERO, 0));
    let body = SseBody {
        queue,
        sleep: None,
        guard: CancelGuard::new(st),
        st: st.clone(),
    };
    let mut resp = Body::from_stream(body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A streamed answer: its events, each after its delay; dropped before
/// the last one (the client went away), it counts as cancelled.
struct SseBody {
    /// Each event, the wait before it, and the tokens it carries.
    queue: VecDeque<(Bytes, Duration, u64)>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    guard: CancelGuard,
    st: Arc<ServerState>,
}

impl futures_util::Stream for SseBody {
    type Item = Result<Bytes, io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(&(_, delay, _)) = this.queue.front() else {
            this.guard.done();
            return Poll::Ready(None);
        };
        if !delay.is_zero() {
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        let next = this.queue.pop_front().map(|(bytes, _, tokens)| {
            let sent = &this.st.counters.generated_tokens;
            sent.fetch_add(tokens, Ordering::Relaxed);
            Ok(bytes)
        });
        if this.queue.is_empty() {
            this.guard.done();
        }
        Poll::Ready(next)
    }
}

async fn models() -> Response {
    Json(json!({"object": "list", "data": [{"id": "probity-sim", "object": "model", "created": 0, "owned_by": "probity"}]}))
        .into_response()
}

async fn health() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

async fn stats(State(st): State<Arc<ServerState>>) -> Response {
    Json(st.stats()).into_response()
}

async fn last_request(State(st): State<Arc<ServerState>>) -> Response {
    Json(lock(&st.last_request).clone()).into_response()
}
