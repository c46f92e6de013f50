//! What a caller hands the runner: where samples go ([`Sink`]), how the run
//! is steered while it goes on ([`Control`]), and why it can fail
//! ([`RunError`]).

use crate::checks::calibration::LabelAnswers;
use crate::run::outcome::Progress;
use crate::store::{Store, StoreError};
use probity_core::stats::LabelNeeds;
use thiserror::Error;
use tokio::sync::watch;

#[derive(Debug, Error)]
pub enum RunError {
    /// The experiment or the command is wrong (the message names the file
    /// and field).
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the run could not complete: {0}")]
    Aborted(String),
    /// `--resume` with no unfinished run of this experiment in the store.
    #[error("nothing to resume: the store holds no unfinished run of this configuration (run without --resume to start one)")]
    NothingToResume,
}

/// What an error means for whoever ran the run: the one table behind the
/// CLI's exit codes and the Python package's exception classes
/// (docs/architecture.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The command or the configuration must change: exit 2, Python's
    /// `ConfigError`.
    Configuration,
    /// Another process holds the run or the store (a live lease, SQLite's
    /// lock): wait, or stop the other process. Exit 2, `StoreLockedError`.
    Held,
    /// The store failed: exit 3, `StoreError`.
    Store,
    /// The run could not complete (no verdict; resumable): exit 3,
    /// `RunError`.
    Incomplete,
}

impl ErrorClass {
    /// The class of a store error.
    pub fn of_store(e: &StoreError) -> ErrorClass {
        let locked = match e {
            StoreError::Leased { .. } => true,
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            _ => false,
        };
        match e {
            _ if locked => ErrorClass::Held,
            StoreError::BadUrl { .. } => ErrorClass::Configuration,
            _ => ErrorClass::Store,
        }
    }

    /// The process's exit code: 2 for what the user must change or wait
    /// for, 3 for a run that could not complete.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorClass::Configuration | ErrorClass::Held => 2,
            ErrorClass::Store | ErrorClass::Incomplete => 3,
        }
    }
}

impl RunError {
    /// What this error means (see [`ErrorClass`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            RunError::Config(_) | RunError::NothingToResume => ErrorClass::Configuration,
            RunError::Store(e) => ErrorClass::of_store(e),
            RunError::Aborted(_) => ErrorClass::Incomplete,
        }
    }
}

/// Where a run's samples go.
pub enum Sink<'a> {
    /// The run store: the run gets an id, survives the process, can be
    /// resumed, reported, compared; identical stored requests are reused.
    Store(&'a mut Store),
    /// Memory only: the outcome carries every sample; nothing is reused.
    Memory,
}

/// A callback told about progress after every sample.
pub type OnProgress<'a> = Box<dyn FnMut(&Progress) + 'a>;

/// A callback told, once the calibrated verifiers' judges have answered
/// their labelled sets and before the run's first output, how many labels
/// of each kind each judge needs for a pass at its check's minimum
/// (`(check name, needs)`, calibrated verifiers only).
pub type OnLabels<'a> = Box<dyn FnMut(&[(String, LabelNeeds)]) + 'a>;

/// How a run is steered while it goes on.
#[derive(Default)]
pub struct Control<'a> {
    /// Continue the latest unfinished run with the same configuration
    /// instead of starting a new one (store only).
    pub resume: bool,
    /// Set to `true` to stop: no new calls start, calls in flight are
    /// abandoned (not stored), and the run is marked interrupted.
    pub cancel: Option<watch::Receiver<bool>>,
    /// Called after every sample.
    pub on_progress: Option<OnProgress<'a>>,
    /// Serve the first answer of a sample from this stored run's output
    /// for an identical request, instead of calling (store only). A new
    /// run otherwise calls the system for every sample.
    pub reuse: Option<i64>,
    /// Share the run with other processes through the store's claims
    /// (`probity run --shared`): this one takes inputs a batch at a time,
    /// and `probity work` processes on any machine may join (store only;
    /// not sequential, not with `reuse`).
    pub shared: bool,
    /// Join this stored run as one more of its workers (`probity work`):
    /// no new run, no lease taken; implies `shared`.
    pub join: Option<i64>,
    /// Whether calibrated verifiers' judges' verdicts the store keeps for
    /// the same questions are read, or every labelled pair asked again
    /// (`--fresh-labels`).
    pub label_answers: LabelAnswers,
    /// Called before the first output with the calibrated verifiers'
    /// label needs ([`OnLabels`]).
    pub on_labels: Option<OnLabels<'a>>,
}

impl Control<'_> {
    /// This process works a run shared through the store's claims.
    pub(super) fn is_shared(&self) -> bool {
        self.shared || self.join.is_some()
    }
}

/// A configuration error of `experiment`, prefixed with its file when it
/// was loaded from one.
pub(super) fn config_error(
    experiment: &crate::run::experiment::Experiment,
    what: impl std::fmt::Display,
) -> RunError {
    RunError::Config(match &experiment.source {
        Some(s) => format!("{}: {what}", s.path.display()),
        None => what.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreLocation;

    fn at() -> StoreLocation {
        StoreLocation::parse("runs.db").unwrap()
    }

    /// Every error kind, its class, and its exit code: the one table the
    /// CLI and the Python package read.
    #[test]
    fn every_run_error_has_one_class_and_exit_code() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let cases: Vec<(RunError, ErrorClass, u8)> = vec![
            (RunError::Config("x".into()), ErrorClass::Configuration, 2),
            (RunError::NothingToResume, ErrorClass::Configuration, 2),
            (RunError::Aborted("x".into()), ErrorClass::Incomplete, 3),
            (
                RunError::Store(StoreError::Leased {
                    store: at(),
                    run: 1,
                    pid: 2,
                    host: "h".into(),
                    since: "now".into(),
                    seen_s: 1.0,
                }),
                ErrorClass::Held,
                2,
            ),
            (
                RunError::Store(StoreError::Sqlite {
                    store: at(),
                    source: busy,
                }),
                ErrorClass::Held,
                2,
            ),
            (
                RunError::Store(StoreError::BadUrl {
                    store: at(),
                    what: "port".into(),
                }),
                ErrorClass::Configuration,
                2,
            ),
            (
                RunError::Store(StoreError::Unreachable {
                    store: at(),
                    what: "down".into(),
                }),
                ErrorClass::Store,
                3,
            ),
            (
                RunError::Store(StoreError::Writer {
                    store: at(),
                    what: "stopped".into(),
                }),
                ErrorClass::Store,
                3,
            ),
        ];
        for (e, class, code) in cases {
            assert_eq!(e.class(), class, "{e}");
            assert_eq!(e.class().exit_code(), code, "{e}");
        }
    }
}
