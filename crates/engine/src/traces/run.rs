//! A run of traced spans: created in the store with the configuration's
//! checks, written by the store's writer (batch mode for `probity traces
//! import`, which never drops a span; live mode for `probity collect`,
//! which commits at least every `serve::COMMIT_EVERY` and never makes an
//! exporter wait), closed `complete` once every record is flushed. As a
//! `probity serve` run, it carries its live-monitoring settings, so
//! `report`, `monitor`, `compare` and `revalidate` read it like traffic.

use super::config::Loaded;
use super::ingest::Ingest;
use crate::provider::call::CallSettings;
use crate::run::recording::Recording;
use crate::store::settings::{StoredLive, StoredSettings};
use crate::store::{NewRun, RunStatus, Store, StoreLocation};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The system a trace run records: no system was called by probity.
pub(crate) const SYSTEM: &str = "otlp-traces";

/// An open run of traced spans.
pub struct TraceRun {
    pub ingest: Arc<Ingest>,
    location: StoreLocation,
    started: Instant,
    /// Earlier runs of the same name left running (a collector killed
    /// outright), marked interrupted.
    pub stale_interrupted: usize,
}

/// How the run's writer commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Offline: a full queue is waited on, nothing is dropped.
    Import,
    /// Live: commits at least every `serve::COMMIT_EVERY`; a record the
    /// queue has no room for is refused (and counted).
    Live,
}

/// Create the run `loaded` describes in the store at `location`.
pub fn open(loaded: &Loaded, location: &StoreLocation, mode: Mode) -> Result<TraceRun, String> {
    let err = |e: crate::store::StoreError| e.to_string();
    let mut store = Store::connect(location).map_err(err)?;
    let checks = Arc::new(loaded.checks.clone());
    let infos = checks.infos();
    let c = &loaded.config;
    let baselines = match &c.monitor.baseline {
        Some(spec) => crate::serve::baselines(&store, spec, &infos)?,
        None => Vec::new(),
    };
    let settings = StoredSettings {
        live: Some(StoredLive {
            watch: c.monitor.watch_settings(c.confidence),
            baselines: baselines.clone(),
        }),
        ..StoredSettings::default()
    };
    let header = NewRun {
        name: &loaded.name,
        config_hash: &loaded.hash,
        config: &loaded.text,
        system: SYSTEM,
        inputs: &[],
        outputs_per_input: 1,
        checks: &infos,
        settings: &settings,
        parent_run: None,
        reused_from: None,
        outputs_from: None,
        variant: None,
    };
    let recording = match mode {
        Mode::Import => Recording::create(&mut store, &header),
        Mode::Live => Recording::create_live(&mut store, &header, crate::serve::COMMIT_EVERY),
    }
    .map_err(err)?;
    let run_id = recording.run_id;
    let stale_interrupted = match mode {
        Mode::Live => store
            .interrupt_abandoned(&loaded.name, Some(run_id))
            .map_err(err)?,
        Mode::Import => 0,
    };
    let calls = CallSettings {
        timeout: Duration::from_secs(60),
        call_attempts: 3,
        requests_per_minute: None,
        tokens_per_minute: None,
    };
    let ingest = Ingest::new(
        loaded,
        checks,
        calls.caller(),
        recording.judging(true, true),
        recording.writer,
        run_id,
        baselines,
    )?;
    Ok(TraceRun {
        ingest: Arc::new(ingest),
        location: location.clone(),
        started: Instant::now(),
        stale_interrupted,
    })
}

impl TraceRun {
    pub fn run_id(&self) -> i64 {
        self.ingest.run_id
    }

    /// Flush every record and mark the run complete.
    pub fn close(&self) -> Result<(), String> {
        let i = &self.ingest;
        i.writer.close().map_err(|e| {
            format!(
                "{} spans checked, not all of them stored (those held when the store stopped are lost): {e}",
                i.recorded()
            )
        })?;
        let store = Store::connect(&self.location).map_err(|e| e.to_string())?;
        store
            .finish_run(
                i.run_id,
                RunStatus::Complete,
                Some(i.totals()),
                0,
                self.started.elapsed().as_secs_f64(),
                None,
            )
            .map_err(|e| e.to_string())
    }
}
