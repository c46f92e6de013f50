//! The guard as an OpenAI-compatible endpoint (`probity serve`).
//!
//! `POST /v1/chat/completions` forwards the request to the configured
//! upstream, applies the [`Guard`] (validators, verifiers, retry policy)
//! and answers with the first output that passes. When nothing passes,
//! `on_nothing_passed` chooses between an error response (HTTP 422, with
//! every attempt's reasons) and the last output, flagged by the
//! `x-probity-outcome: nothing-passed` header. Every response carries
//! `x-probity-outcome` and what it cost ([`answer::Cost`]): attempts,
//! calls, tokens summed and per attempt, tokens on retries.
//!
//! Faithful to the protocol (docs/serve.md): the client's messages reach
//! the upstream as sent (roles, content parts, tool calls), and every
//! request field is forwarded or refused with HTTP 400 naming it, never
//! dropped ([`request`]); the answer's model, finish reason, tool calls and
//! logprobs are the upstream's, usage summed over attempts ([`answer`]).
//! `"stream": true` is answered as `chat.completion.chunk` events once the
//! output has passed every check ([`chat`]); `GET /v1/models` lists the
//! upstream's model.
//!
//! Every request is recorded in the run store as one input of a run named
//! after the configuration (M = 1: the sample is the first attempt, and
//! every attempt is kept), so live traffic feeds the same tensor, reports
//! and history as test runs. A request is answered without waiting for
//! its record to be committed: the store's writer commits at least every
//! [`COMMIT_EVERY`], so a server killed outright loses at most the records
//! of the requests it answered in that window (a graceful stop loses none).
//!
//! `GET /health` and `GET /metrics` need no token. `/metrics` is
//! OpenMetrics text (`prometheus-client`) with counts only, per check among
//! them; bind to localhost (the default) or put it behind your network's
//! access control if even the counts are private.
//!
//! The run: created `running` when the server starts, marked `complete`
//! when it shuts down gracefully (the shutdown future completes: Ctrl-C or
//! SIGTERM in `probity serve`), after every recorded request is flushed.
//! The run's lease is refreshed by the store's writer while the server
//! lives, so replicas with the same configuration and store each record
//! their own run side by side. A server killed outright leaves its run
//! `running` with a lease that goes stale; the next server with the same
//! name marks such runs `interrupted` when it starts (they keep every
//! request and attempt they recorded), never a live replica's. Judge calls
//! go through the judge cache of the store, as in `probity run`.
//!
//! A calibrated verifier (`calibration = …`) has its judge answer its
//! labelled set before the guard listens ([`calibrate`]); the counts are
//! stored with the run, and every reading of its rate — `/metrics`, the
//! alarms, `probity monitor`, the run's report — is corrected for the
//! judge's errors with an interval valid however often it is read
//! (`probity_core::monitor::LiveJudge`).

mod answer;
mod calibrate;
mod chat;
pub mod classes;
mod config;
mod failure;
mod metrics;
pub(crate) mod monitor;
mod request;
mod responses;
mod state;

pub use config::{load, Loaded, NothingPassed, ServeConfig};

use crate::checks::calibration::LabelAnswers;
use crate::provider::call::{CallSettings, Caller};
use crate::retry::guard::Guard;
use crate::run::recording::Recording;
use crate::store::settings::{StoredLive, StoredSettings};
use crate::store::{NewRun, RunStatus, Store, StoreError, StoreLocation};
use axum::routing::{get, post};
use axum::Router;
use state::{Metrics, ServeState};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the store's write transaction for live traffic stays open:
/// a request is answered without waiting for its commit, so a server
/// killed outright (`kill -9`) loses at most the records of the requests
/// answered in the last this-long (a graceful stop loses nothing).
pub const COMMIT_EVERY: Duration = Duration::from_millis(50);

/// A running guard server's handle for the caller: the run it records into.
pub struct Served {
    pub run_id: i64,
    /// Requests taken (guarded; their clients may have gone away).
    pub requests: u64,
    /// Of them, those recorded in the run (every record handed to the
    /// store's writer, all committed by the graceful stop).
    pub recorded: u64,
    /// Answered but not recorded: the store did not keep up.
    pub unrecorded: u64,
    /// Earlier runs of the same name left `running` (a killed server),
    /// marked interrupted at start.
    pub stale_interrupted: usize,
    /// What its calls cost (the upstream's and the judges'), when priced.
    pub cost: probity_core::cost::RunCost,
}

/// Each check's rate in the tested run `spec` (an id, or a name: its
/// latest complete run), by check name; `None` for a check it lacks.
pub(crate) fn baselines(
    store: &Store,
    spec: &str,
    checks: &[probity_core::CheckInfo],
) -> Result<Vec<Option<probity_core::monitor::Baseline>>, String> {
    let id = match spec.parse::<i64>() {
        Ok(id) => id,
        Err(_) => store
            .runs(Some(spec))
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|r| r.name == spec && r.status == RunStatus::Complete)
            .map(|r| r.id)
            .ok_or_else(|| {
                format!(
                    "[monitor] baseline = {spec:?}: no complete run of that name in {}",
                    store.location()
                )
            })?,
    };
    let run = crate::run::stored::load(store, id)
        .map_err(|e| format!("[monitor] baseline = {spec:?}: {e}"))?;
    Ok(checks
        .iter()
        .map(|c| {
            run.summary
                .checks
                .iter()
                .find(|s| s.info.name == c.name)
                .map(|s| probity_core::monitor::Baseline {
                    rate: s.rate.estimate,
                    interval: s.rate.interval,
                })
        })
        .collect())
}

/// A guard server ready to listen: its run created in the store, its guard
/// built. Everything that can be wrong with the configuration or the store
/// is found by [`open`], before anything listens.
pub struct Server {
    state: Arc<ServeState>,
    store: StoreLocation,
    stale_interrupted: usize,
    started: Instant,
    warnings: Vec<String>,
}

/// Open the store at `location`, measure the calibrated verifiers' judges
/// on their labelled sets ([`calibrate`]; `answers`: whether verdicts the
/// store keeps are read or every pair asked again) and create the run
/// `loaded` records into.
pub async fn open(
    loaded: Loaded,
    location: &StoreLocation,
    answers: LabelAnswers,
) -> Result<Server, String> {
    let store_err = |e: StoreError| e.to_string();
    let mut store = Store::connect(location).map_err(store_err)?;
    let c = &loaded.config;
    let upstream = loaded.upstream;
    let loaded_warnings = loaded.warnings;
    let checks = Arc::new(loaded.checks);
    let infos = checks.infos();
    let check_names: Vec<String> = infos.iter().map(|c| c.name.clone()).collect();
    let check_count = check_names.len();
    let baselines = match &c.monitor.baseline {
        Some(spec) => baselines(&store, spec, &infos)?,
        None => Vec::new(),
    };
    let calls = CallSettings {
        timeout: Duration::from_secs_f64(c.timeout_s),
        call_attempts: c.call_attempts,
        requests_per_minute: c.requests_per_minute,
        tokens_per_minute: None,
    };
    // One caller for the labelled sets and the traffic: the judges' calls
    // on their labels count in the run's totals, as the verifiers'.
    let caller = calls.caller();
    let calibration =
        calibrate::calibrate(&checks, &caller, Some(&mut store), answers, c.confidence).await?;
    let settings = StoredSettings {
        calibration: calibration.labels,
        retry: Some(c.retry.stored(&checks)),
        live: Some(StoredLive {
            watch: c.monitor.watch_settings(c.confidence),
            baselines: baselines.clone(),
        }),
        prices: checks.prices(loaded.config.upstream.price.as_ref()),
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
            variant: None,
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
    // The upstream's calls: one try each, its transient failures retried
    // at most `call_attempts − 1` times per request in all, a 429 passed
    // to the client (`Guard::bounding_upstream_retries`; the judges keep
    // `call_attempts` tries per call). The rate limit is shared.
    let system = Arc::new(Caller::new(caller.limiter.clone(), calls.timeout, 1));
    let mut guard = Guard::new(upstream, checks, c.retry.clone(), caller)
        .map_err(|e| format!("[retry] {e}"))?
        .with_judging(recording.judging(true, true))
        .bounding_upstream_retries(system, c.call_attempts.saturating_sub(1));
    if c.stream_upstream {
        guard = guard.cutting_streams();
        if c.on_nothing_passed == NothingPassed::Last {
            // The last output may be published: it must be whole.
            guard = guard.keeping_the_last_attempt_whole();
        }
    }
    let state = Arc::new(ServeState {
        guard,
        policy: c.on_nothing_passed,
        token: loaded.token,
        pin: c.pin.clone(),
        body_timeout: Duration::from_secs_f64(c.body_timeout_s),
        max_body_bytes: (c.max_body_mb * 1024.0 * 1024.0) as usize,
        keepalive: Duration::from_secs_f64(c.stream_keepalive_s),
        model: c.upstream.model_name().unwrap_or(&loaded.name).to_string(),
        live: monitor::Monitor::new(
            &infos,
            c.confidence,
            &c.monitor,
            &baselines,
            &settings.calibration,
            run_id,
        )?,
        classes: loaded.classes,
        check_names,
        writer: recording.writer,
        run_id,
        next_input: AtomicU64::new(0),
        metrics: Metrics::default(),
        check_errors: state::CheckErrors::new(check_count),
        admission: crate::provider::limits::RateLimiter::new(c.requests_per_minute, None),
        queue_wait: Duration::from_secs_f64(c.queue_wait_s),
        recorded: AtomicU64::new(0),
        prices: settings.prices.clone(),
    });
    state
        .metrics
        .set_judges(&state.check_names, &settings.calibration);
    Ok(Server {
        state,
        store: location.clone(),
        stale_interrupted,
        started: Instant::now(),
        warnings: [loaded_warnings, calibration.warnings].concat(),
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

    /// What the operator should know before traffic comes (a calibrated
    /// verifier's judge that missed labelled pairs, or is no better than
    /// chance; [`calibrate`]).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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
            .route("/v1/chat/completions", post(chat::chat))
            .route("/chat/completions", post(chat::chat))
            .route("/v1/responses", post(chat::responses))
            .route("/responses", post(chat::responses))
            .route("/v1/embeddings", post(metrics::embeddings))
            .route("/embeddings", post(metrics::embeddings))
            .route("/v1/models", get(metrics::models))
            .route("/models", get(metrics::models))
            .route("/v1/models/{id}", get(metrics::model))
            .route("/models/{id}", get(metrics::model))
            .route("/health", get(metrics::health))
            .route("/metrics", get(metrics::metrics))
            .fallback(metrics::not_found)
            .method_not_allowed_fallback(metrics::wrong_method)
            .with_state(state.clone());
        let watcher = tokio::spawn(watch_store(state.clone()));
        let result = crate::http_server::serve(listener, app, shutdown).await;
        watcher.abort();
        let n = state.next_input.load(Ordering::Relaxed);
        let totals = state.guard.checks().totals(state.guard.totals());
        let cost = probity_core::cost::RunCost::of(Some(&totals.usage), &state.prices);
        // Flush every recorded request before the run is closed.
        state.writer.close().map_err(|e| {
            format!(
                "{n} requests answered, not all of them stored (those held when the store stopped are lost; {} were refused before): {e}",
                state.metrics.unrecorded.get()
            )
        })?;
        let store = Store::connect(&self.store).map_err(store_err)?;
        store
            .finish_run(
                run_id,
                RunStatus::Complete,
                Some(totals),
                0,
                self.started.elapsed().as_secs_f64(),
                // Live traffic has no verdict of its own until analysed.
                None,
            )
            .map_err(store_err)?;
        result.map_err(|e| format!("server: {e}"))?;
        Ok(Served {
            cost,
            run_id,
            requests: n,
            recorded: state.recorded.load(Ordering::Relaxed),
            unrecorded: state.metrics.unrecorded.get(),
            stale_interrupted: self.stale_interrupted,
        })
    }
}

/// How often the store's health is looked at.
const STORE_CHECK: Duration = Duration::from_secs(1);

/// Tell the operator as soon as the store's commits stall (a commit under
/// way longer than `writer::STALL`: slow, or down and tried again every
/// second) and when they resume: a log line each way, the gauge
/// `probity_store_stalled` and `/health`'s `store`. Runs until aborted.
async fn watch_store(state: Arc<ServeState>) {
    let health = state.writer.health();
    let mut since: Option<Instant> = None;
    let mut tick = tokio::time::interval(STORE_CHECK);
    loop {
        tick.tick().await;
        match (health.stalled(), since) {
            (true, None) => {
                since = Some(Instant::now());
                state.metrics.store_stalled.set(1);
                crate::stderr::line(format_args!(
                    "warning: the store's commits have stalled (one has been under way for over {} s): answers go on; their records are held in memory and, past the writer's queue, counted in probity_unrecorded_total",
                    crate::store::writer::STALL.as_secs_f64()
                ));
            }
            (false, Some(t)) => {
                since = None;
                state.metrics.store_stalled.set(0);
                crate::stderr::line(format_args!(
                    "the store is committing again after a stall of about {:.0} s ({} requests answered but not recorded so far)",
                    t.elapsed().as_secs_f64(),
                    state.metrics.unrecorded.get()
                ));
            }
            _ => {}
        }
    }
}

/// Serve `loaded` on `listener`, recording into the store at `location`,
/// until `shutdown` completes ([`open`] then [`Server::run`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    loaded: Loaded,
    location: &StoreLocation,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Served, String> {
    open(loaded, location, LabelAnswers::Reuse)
        .await?
        .run(listener, shutdown)
        .await
}
