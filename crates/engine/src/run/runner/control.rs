//! What a caller hands the runner: where samples go ([`Sink`]), how the run
//! is steered while it goes on ([`Control`]), and why it can fail
//! ([`RunError`]).

use crate::checks::calibration::LabelAnswers;
use crate::run::outcome::Progress;
use crate::store::{Store, StoreError};
use thiserror::Error;
use tokio::sync::watch;

#[derive(Debug, Error)]
pub enum RunError {
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
