//! The simulator served as an OpenAI-compatible HTTP endpoint (`probity sim
//! serve`), with fault injection, for integration tests and benchmarks.
//!
//! Routes:
//! * `POST /v1/chat/completions` — the [`SimModel`]'s answer in the OpenAI
//!   chat-completions shape. The body's `seed` is the repetition (so the
//!   `openai` provider's `seed + repetition` reproduces a run); without a
//!   seed a per-server counter is used. The attempt is always 0.
//! * `GET /v1/models`, `GET /health`.
//! * `GET /stats` — [`ServerStats`] as JSON: requests to the completions
//!   route, injected faults in total and by kind.
//!
//! Faults ([`FaultConfig`]) are drawn before the model runs, at most one per
//! request, from a generator seeded by the fault seed and the request's
//! arrival number.

use super::model::SimModel;
use super::rng::{Fnv, SplitMix64};
use crate::openai_wire::{error_body, ChatRequest, ChatResponse, Usage, WireMessage};
use crate::provider::error::ConfigError;
use crate::provider::types::{Message, ProviderError};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
    /// Repetition source for requests without a seed.
    unseeded: AtomicU64,
}

#[derive(Debug)]
struct ServerState {
    model: SimModel,
    faults: FaultConfig,
    counters: Counters,
    any_fault: bool,
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
        }
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
    Ok(Arc::new(ServerState {
        model,
        faults,
        counters: Counters::default(),
        any_fault,
    }))
}

async fn run(
    listener: tokio::net::TcpListener,
    state: Arc<ServerState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    use axum::serve::ListenerExt;
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/stats", get(stats))
        .with_state(state);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
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

async fn chat(State(st): State<Arc<ServerState>>, headers: HeaderMap, body: Bytes) -> Response {
    let n = st.counters.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(key) = &st.faults.require_key {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if presented != Some(key.as_str()) {
            return error_response(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "Incorrect API key provided. You can find your API key in your account settings.",
            );
        }
    }
    match st.draw_fault(n) {
        Some(Fault::RateLimit) => {
            let mut resp = error_response(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "simulated rate limit",
            );
            let h = resp.headers_mut();
            h.insert(header::RETRY_AFTER, HeaderValue::from(st.faults.retry_after_secs));
            if let Some(ms) = st.faults.retry_after_ms {
                h.insert("retry-after-ms", HeaderValue::from(ms));
            }
            return resp;
        }
        Some(Fault::ServerError) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "simulated server error",
            )
        }
        Some(Fault::Malformed) => {
            return json_response(
                StatusCode::OK,
                b"{\"id\": \"chatcmpl-sim\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assist".to_vec(),
            )
        }
        Some(Fault::Timeout) => {
            tokio::time::sleep(Duration::from_millis(st.faults.timeout_ms)).await;
        }
        None => {}
    }
    let req: ChatRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!("invalid chat completions request: {e}"),
            )
        }
    };
    let messages: Vec<Message> = req
        .messages
        .into_iter()
        .map(WireMessage::into_message)
        .collect();
    let repetition = match req.seed {
        Some(s) => s,
        None => st.counters.unseeded.fetch_add(1, Ordering::Relaxed),
    };
    let latency = st.model.latency(&messages, repetition, 0);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match st.model.generate(&messages, repetition, 0) {
        Ok(out) => Json(ChatResponse::single(
            format!("chatcmpl-sim-{n}"),
            0,
            req.model.as_deref().unwrap_or("probity-sim"),
            out.text,
            Usage::of(out.input_tokens, out.output_tokens),
        ))
        .into_response(),
        Err(e) => {
            st.counters.model_errors.fetch_add(1, Ordering::Relaxed);
            let status = match &e {
                ProviderError::Server { status, .. } => {
                    StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
                }
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            error_response(status, "server_error", &e.to_string())
        }
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
