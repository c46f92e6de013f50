//! The guard as an OpenAI-compatible endpoint (`probity serve`).
//!
//! `POST /v1/chat/completions` forwards the request's messages to the
//! configured upstream, applies the [`Guard`] (validators, verifiers, retry
//! policy) and answers with the first output that passes. When nothing
//! passes, `on_nothing_passed` chooses between an error response (HTTP 422,
//! with every attempt's reasons) and the last output, flagged by the
//! `x-probity-outcome: nothing-passed` header. Every response carries
//! `x-probity-attempts` and `x-probity-outcome`.
//!
//! Every request is recorded in the run store as one input of a run named
//! after the configuration (M = 1: the sample is the first attempt, and
//! every attempt is kept), so live traffic feeds the same tensor, reports
//! and history as test runs. A request is answered without waiting for
//! its record to be committed: the store's writer commits at least every
//! [`COMMIT_EVERY`], so a server killed outright loses at most the records
//! of the requests it answered in that window (a graceful stop loses none).
//!
//! Streaming (`"stream": true`) is refused with HTTP 400 and an explanation:
//! a guard must see the whole output before it can publish it. The upstream
//! model and sampling parameters are those of `[upstream]`; the request's
//! `model`, `temperature`, … are not forwarded.
//!
//! `GET /health` and `GET /metrics` need no token. `/metrics` is Prometheus
//! text with counts only — requests, attempts, published, nothing passed,
//! rejected, unauthorized, pass rate, total latency — never a request, an
//! output, a reason or a header; bind to localhost (the default) or put it
//! behind your network's access control if even the counts are private.
//!
//! The run: created `running` when the server starts, marked `complete`
//! when it shuts down gracefully (the shutdown future completes: Ctrl-C or
//! SIGTERM in `probity serve`), after every recorded request is flushed.
//! The run's lease is refreshed by the store's writer while the server
//! lives, so replicas with the same configuration and store each record
//! their own run side by side. A server killed outright leaves its run
//! `running` with a lease that goes stale; the next server with the same
//! name marks such runs `interrupted` when it starts (they keep every
//! request and attempt they recorded), never a live replica's. Judge calls go through the
//! judge cache of the store, as in `probity run`.
//!
//! ```toml
//! name = "guarded-assistant"
//! listen = "127.0.0.1:8090"       # the default binds to localhost only
//! token_env = "PROBITY_TOKEN"     # optional: require `Authorization: Bearer <token>`
//! on_nothing_passed = "error"     # error | last
//! timeout_s = 60                  # per upstream call
//! call_attempts = 3               # tries per call on 429 / 5xx / timeouts
//!
//! [upstream]                      # any provider table, as [system]
//! provider = "openai"
//! base_url = "http://127.0.0.1:8089/v1"
//! model = "gpt-4o-mini"
//!
//! [retry]
//! attempts = 3
//!
//! [[validator]]
//! name = "contraction_validator"
//! check = '''count(output, "'") <= 3'''
//! ```

use crate::call::{CallSettings, Caller};
use crate::check::Checks;
use crate::guard::{Attempt, Guard, GuardOutcome, Stop};
use crate::openai_wire::{error_body, ChatRequest, ChatResponse, Usage, WireMessage};
use crate::provider::config::ProviderConfig;
use crate::provider::types::Provider;
use crate::provider::types::{Message, Role};
use crate::recording::Recording;
use crate::retry_policy::RetryPolicy;
use crate::settings::{StoredRetry, StoredSettings};
use crate::store::{NewRun, RunStatus, RunTotals, Store, StoreError, Writer};
use crate::validator_table::ValidatorTable;
use crate::verifier::VerifierSpec;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use probity_core::Input;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// What to answer when no attempt passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NothingPassed {
    /// HTTP 422 with every attempt's reasons.
    #[default]
    Error,
    /// HTTP 200 with the last output, flagged `x-probity-outcome: nothing-passed`.
    Last,
}

fn d_listen() -> String {
    "127.0.0.1:8090".into()
}
fn d_timeout() -> f64 {
    60.0
}
fn d_call_attempts() -> u32 {
    3
}

/// The `--config` file of `probity serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "d_listen")]
    pub listen: String,
    /// The environment variable holding the bearer token clients must send.
    #[serde(default)]
    pub token_env: Option<String>,
    #[serde(default)]
    pub on_nothing_passed: NothingPassed,
    #[serde(default = "d_timeout")]
    pub timeout_s: f64,
    #[serde(default = "d_call_attempts")]
    pub call_attempts: u32,
    #[serde(default)]
    pub requests_per_minute: Option<f64>,
    #[serde(default)]
    pub upstream: ProviderConfig,
    #[serde(default)]
    pub retry: RetryPolicy,
    #[serde(default, rename = "validator")]
    pub validators: Vec<ValidatorTable>,
    #[serde(default, rename = "verifier")]
    pub verifiers: Vec<VerifierSpec>,
}

/// A loaded guard configuration.
pub struct Loaded {
    pub config: ServeConfig,
    pub name: String,
    pub text: String,
    pub hash: String,
    pub checks: Checks,
    /// The bearer token, read from `token_env` (never logged or stored).
    pub token: Option<String>,
    /// The upstream provider, built (its key variables read).
    pub upstream: Arc<dyn Provider>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("name", &self.name)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Read and check a guard configuration; errors name the file.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = |m: String| format!("{}: {m}", path.display());
    let mut config: ServeConfig = toml::from_str(&text).map_err(|e| at(e.to_string()))?;
    // Relative paths in provider tables resolve against the file's directory.
    let dir = path.parent().unwrap_or(Path::new("."));
    config.upstream.resolve_paths(dir);
    for v in &mut config.validators {
        v.resolve_paths(dir);
    }
    for v in &mut config.verifiers {
        v.resolve_paths(dir);
    }
    if config.validators.is_empty() && config.verifiers.is_empty() {
        return Err(at(
            "no [[validator]] or [[verifier]] tables: the guard needs at least one check".into(),
        ));
    }
    config
        .retry
        .validate()
        .map_err(|m| at(format!("[retry] {m}")))?;
    crate::bounds::seconds("timeout_s", config.timeout_s).map_err(at)?;
    let validators = config
        .validators
        .iter()
        .map(|s| {
            s.compile()
                .map_err(|e| at(format!("[[validator]] {}: {e}", s.name())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let verifiers = config
        .verifiers
        .iter()
        .map(|s| {
            s.compile(&config.upstream)
                .map_err(|e| at(format!("[[verifier]] {}: {e}", s.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let token = match &config.token_env {
        Some(var) => Some(
            std::env::var(var)
                .ok()
                .filter(|t| !t.is_empty())
                .inspect(|t| crate::redact::register(t))
                .ok_or_else(|| {
                    at(format!(
                        "token_env: environment variable `{var}` is not set"
                    ))
                })?,
        ),
        None => None,
    };
    let name = config.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "guard".into())
    });
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let upstream = config
        .upstream
        .build()
        .map_err(|e| at(format!("[upstream] {e}")))?;
    // The feedback template compiles (checked by `validate` above too).
    Guard::new(
        upstream.clone(),
        Arc::new(Checks::default()),
        config.retry.clone(),
        Arc::new(Caller::default()),
    )
    .map_err(|e| at(format!("[retry] {e}")))?;
    Ok(Loaded {
        config,
        name,
        text,
        hash,
        checks: Checks {
            validators,
            verifiers,
        },
        token,
        upstream,
    })
}

/// How long the store's write transaction for live traffic stays open:
/// a request is answered without waiting for its commit, so a server
/// killed outright (`kill -9`) loses at most the records of the requests
/// answered in the last this-long (a graceful stop loses nothing).
pub const COMMIT_EVERY: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
struct Metrics {
    requests: AtomicU64,
    published: AtomicU64,
    nothing_passed: AtomicU64,
    attempts: AtomicU64,
    attempt_errors: AtomicU64,
    rejected: AtomicU64,
    unauthorized: AtomicU64,
    latency_us: AtomicU64,
}

struct ServeState {
    guard: Guard,
    policy: NothingPassed,
    token: Option<String>,
    writer: Writer,
    run_id: i64,
    next_input: AtomicU64,
    metrics: Metrics,
}

/// A running guard server's handle for the caller: the run it records into.
pub struct Served {
    pub run_id: i64,
    pub requests: u64,
    /// Earlier runs of the same name left `running` (a killed server),
    /// marked interrupted at start.
    pub stale_interrupted: usize,
}

/// A guard server ready to listen: its run created in the store, its guard
/// built. Everything that can be wrong with the configuration or the store
/// is found by [`open`], before anything listens.
pub struct Server {
    state: Arc<ServeState>,
    store_path: PathBuf,
    stale_interrupted: usize,
    started: Instant,
}

/// Open the store at `store_path` and create the run `loaded` records into.
pub fn open(loaded: Loaded, store_path: &Path) -> Result<Server, String> {
    let store_err = |e: StoreError| e.to_string();
    let mut store = Store::open(store_path).map_err(store_err)?;
    let c = &loaded.config;
    let upstream = loaded.upstream;
    let checks = Arc::new(loaded.checks);
    let infos = checks.infos();
    let settings = StoredSettings {
        retry: Some(StoredRetry::of(
            &c.retry,
            checks.validators.len(),
            checks.verifiers.len(),
        )),
        ..StoredSettings::default()
    };
    let recording = Recording::create_live(
        &mut store,
        &NewRun {
            name: &loaded.name,
            config_hash: &loaded.hash,
            config: &loaded.text,
            system: &upstream.fingerprint(),
            inputs: &[],
            outputs_per_input: 1,
            checks: &infos,
            settings: &settings,
            parent_run: None,
            reused_from: None,
            outputs_from: None,
        },
        COMMIT_EVERY,
    )
    .map_err(store_err)?;
    let run_id = recording.run_id;
    // Runs of this name still marked running whose server is gone (killed:
    // its lease went stale or its process is gone) are not running any
    // more; a replica's live run is left alone.
    let stale_interrupted = store
        .interrupt_abandoned(&loaded.name, Some(run_id))
        .map_err(store_err)?;
    let calls = CallSettings {
        timeout: Duration::from_secs_f64(c.timeout_s),
        call_attempts: c.call_attempts,
        requests_per_minute: c.requests_per_minute,
        tokens_per_minute: None,
    };
    let guard = Guard::new(upstream, checks, c.retry.clone(), calls.caller())
        .map_err(|e| format!("[retry] {e}"))?
        .with_judging(recording.judging(true, true));
    let state = Arc::new(ServeState {
        guard,
        policy: c.on_nothing_passed,
        token: loaded.token,
        writer: recording.writer,
        run_id,
        next_input: AtomicU64::new(0),
        metrics: Metrics::default(),
    });
    Ok(Server {
        state,
        store_path: store_path.to_path_buf(),
        stale_interrupted,
        started: Instant::now(),
    })
}

impl Server {
    /// The run requests are recorded into.
    pub fn run_id(&self) -> i64 {
        self.state.run_id
    }

    /// Earlier runs of the same name left `running`, marked interrupted.
    pub fn stale_interrupted(&self) -> usize {
        self.stale_interrupted
    }

    /// Serve on `listener` until `shutdown` completes; then the run is
    /// marked complete.
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Served, String> {
        let store_err = |e: StoreError| e.to_string();
        let state = self.state;
        let run_id = state.run_id;
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/health", get(health))
            .route("/metrics", get(metrics))
            .with_state(state.clone());
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
        let n = state.next_input.load(Ordering::Relaxed);
        let totals = RunTotals {
            judge_calls_by_check: state.guard.checks().judge_calls(),
            ..state.guard.caller().totals()
        };
        // Flush every recorded request before the run is closed.
        state.writer.close().map_err(store_err)?;
        let store = Store::open(&self.store_path).map_err(store_err)?;
        store
            .finish_run(
                run_id,
                RunStatus::Complete,
                totals,
                0,
                self.started.elapsed().as_secs_f64(),
                // Live traffic has no verdict of its own until analysed.
                None,
            )
            .map_err(store_err)?;
        result.map_err(|e| format!("server: {e}"))?;
        Ok(Served {
            run_id,
            requests: n,
            stale_interrupted: self.stale_interrupted,
        })
    }
}

/// Serve `loaded` on `listener`, recording into the store at `store_path`,
/// until `shutdown` completes ([`open`] then [`Server::run`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    loaded: Loaded,
    store_path: &Path,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Served, String> {
    open(loaded, store_path)?.run(listener, shutdown).await
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn error_response(status: StatusCode, kind: &str, message: &str) -> Response {
    json_response(status, error_body(status.as_u16(), kind, message))
}

/// Whether the request presents the expected bearer token, compared in
/// constant time (`subtle`).
fn authorized(expected: &Option<String>, headers: &HeaderMap) -> bool {
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

fn attempt_json(a: &Attempt) -> Value {
    json!({
        "attempt": a.number,
        "passed": a.passed,
        "error": a.error,
        "reasons": a.feedback,
    })
}

async fn chat(State(st): State<Arc<ServeState>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&st.token, &headers) {
        st.metrics.unauthorized.fetch_add(1, Ordering::Relaxed);
        return error_response(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or wrong bearer token",
        );
    }
    let started = Instant::now();
    let request = match ChatRequest::parse(&body) {
        Ok(r) => r,
        Err(message) => {
            return error_response(StatusCode::BAD_REQUEST, "invalid_request_error", &message)
        }
    };
    if request.stream == Some(true) {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "streaming is not supported by the probity guard: it must check the whole output before publishing it; send \"stream\": false",
        );
    }
    if let Some(n) = request.n.filter(|&n| n > 1) {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!("n = {n}: the probity guard answers one checked output per request; send n = 1 or leave it out"),
        );
    }
    let messages: Vec<Message> = request
        .messages
        .into_iter()
        .map(WireMessage::into_message)
        .collect();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let idx = st.next_input.fetch_add(1, Ordering::Relaxed) as usize;
    st.metrics.requests.fetch_add(1, Ordering::Relaxed);
    let input = Input::text(format!("request-{}", idx + 1), last_user);
    let outcome = st.guard.run(&messages, &input, idx as u32).await;
    // Queued, not awaited: the writer commits within COMMIT_EVERY.
    record(&st, idx, input, &outcome);
    let attempts = outcome.attempts();
    let m = &st.metrics;
    m.attempts
        .fetch_add(attempts.len() as u64, Ordering::Relaxed);
    m.attempt_errors.fetch_add(
        attempts.iter().filter(|a| a.error.is_some()).count() as u64,
        Ordering::Relaxed,
    );
    m.latency_us
        .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    let model = request.model.as_deref().unwrap_or("probity-guard");
    let (status, text, outcome_name) = match &outcome {
        GuardOutcome::Published { output, .. } => {
            m.published.fetch_add(1, Ordering::Relaxed);
            (StatusCode::OK, output.clone(), "published")
        }
        GuardOutcome::NothingPassed { attempts, stop } => {
            m.nothing_passed.fetch_add(1, Ordering::Relaxed);
            let last = attempts.iter().rev().find_map(|a| a.output.clone());
            match (st.policy, last) {
                (NothingPassed::Last, Some(last)) => (StatusCode::OK, last, "nothing-passed"),
                (_, last) => {
                    m.rejected.fetch_add(1, Ordering::Relaxed);
                    let (status, kind, msg) = if last.is_none() {
                        (
                            StatusCode::BAD_GATEWAY,
                            "upstream_error",
                            "the upstream produced no output in any attempt",
                        )
                    } else {
                        (
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "guard_rejected",
                            "no output passed the guard's checks",
                        )
                    };
                    let body = json!({"error": {
                        "message": format!("{msg} ({} attempt{}, stopped: {})", attempts.len(),
                            if attempts.len() == 1 { "" } else { "s" },
                            match stop { Stop::Exhausted => "attempts exhausted", Stop::Deadline => "deadline" }),
                        "type": kind,
                        "code": status.as_u16(),
                        "attempts": attempts.iter().map(attempt_json).collect::<Vec<_>>(),
                    }});
                    let mut resp = json_response(status, body);
                    set_headers(&mut resp, attempts.len(), "nothing-passed");
                    return resp;
                }
            }
        }
    };
    let (pt, ct) = attempts.iter().fold((0, 0), |(p, c), a| {
        (
            p + a.input_tokens.unwrap_or(0),
            c + a.output_tokens.unwrap_or(0),
        )
    });
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let body = ChatResponse::single(
        format!("chatcmpl-probity-{}-{}", st.run_id, idx + 1),
        created,
        model,
        text,
        Usage::of(pt, ct),
    );
    let mut resp = (status, Json(body)).into_response();
    set_headers(&mut resp, attempts.len(), outcome_name);
    resp
}

fn set_headers(resp: &mut Response, attempts: usize, outcome: &'static str) {
    let h = resp.headers_mut();
    h.insert("x-probity-attempts", HeaderValue::from(attempts as u64));
    h.insert("x-probity-outcome", HeaderValue::from_static(outcome));
}

/// Store the request as input `idx` with its attempts; the sample is the
/// first attempt.
fn record(st: &ServeState, idx: usize, input: Input, outcome: &GuardOutcome) {
    let attempts = outcome.attempts();
    let Some(first) = attempts.first() else {
        return;
    };
    let published = outcome.published().is_some();
    let _ = st.writer.send_input(idx, input);
    for a in attempts {
        // Live traffic is always asked: it does not feed the cache.
        let last = a.number as usize == attempts.len();
        let _ = st
            .writer
            .send_attempt(a.row(idx, 0, published && last, false));
    }
    let _ = st.writer.send(first.sample_row(idx, 0, String::new()));
}

async fn health() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

async fn metrics(State(st): State<Arc<ServeState>>) -> Response {
    let m = &st.metrics;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (requests, published) = (get(&m.requests), get(&m.published));
    let done = published + get(&m.nothing_passed);
    let pass_rate = if done == 0 {
        0.0
    } else {
        published as f64 / done as f64
    };
    let text = format!(
        "# HELP probity_requests_total Chat completion requests guarded.\n# TYPE probity_requests_total counter\nprobity_requests_total {requests}\n\
# HELP probity_published_total Requests answered with an output that passed.\n# TYPE probity_published_total counter\nprobity_published_total {published}\n\
# HELP probity_nothing_passed_total Requests where no attempt passed.\n# TYPE probity_nothing_passed_total counter\nprobity_nothing_passed_total {}\n\
# HELP probity_rejected_total Requests answered with an error because nothing passed.\n# TYPE probity_rejected_total counter\nprobity_rejected_total {}\n\
# HELP probity_attempts_total Attempts (upstream generations) made.\n# TYPE probity_attempts_total counter\nprobity_attempts_total {}\n\
# HELP probity_attempt_errors_total Attempts whose upstream call failed.\n# TYPE probity_attempt_errors_total counter\nprobity_attempt_errors_total {}\n\
# HELP probity_unauthorized_total Requests refused for a missing or wrong token.\n# TYPE probity_unauthorized_total counter\nprobity_unauthorized_total {}\n\
# HELP probity_pass_rate Share of finished requests that published an output.\n# TYPE probity_pass_rate gauge\nprobity_pass_rate {pass_rate}\n\
# HELP probity_request_latency_seconds Time spent guarding requests.\n# TYPE probity_request_latency_seconds summary\nprobity_request_latency_seconds_sum {}\nprobity_request_latency_seconds_count {done}\n",
        get(&m.nothing_passed),
        get(&m.rejected),
        get(&m.attempts),
        get(&m.attempt_errors),
        get(&m.unauthorized),
        get(&m.latency_us) as f64 / 1e6,
    );
    let mut resp = (StatusCode::OK, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    resp
}
