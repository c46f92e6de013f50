//! What a run reports while it goes on ([`Progress`]) and when it ends
//! ([`RunOutcome`]): the tensor and its summary, built once, with the
//! run's counts.

use crate::store::{RunStatus, RunTotals, SampleRow};
use probity_core::causes::Causes;
use probity_core::stats::Decision;
use probity_core::{CheckSummary, ReliabilityTensor, Summary};
use std::time::Duration;

/// Progress reported while a run goes on.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Samples decided (from the store, the cache or a call).
    pub done: u64,
    pub total: u64,
    pub model_calls: u64,
    /// Samples served from an identical stored request.
    pub cached: u64,
    /// Later attempts of guarded samples served from an identical stored
    /// attempt (no call).
    pub attempts_cached: u64,
    pub errors: u64,
    /// Per check: (passes, evaluated cells).
    pub passes: Vec<(u64, u64)>,
}

/// Why a run stopped before its samples were all taken, with no verdict:
/// failed calls say nothing about the system's behaviour, and a check that
/// cannot judge outputs says nothing either.
#[derive(Debug, Clone, PartialEq)]
pub enum Halt {
    /// The first calls of the session all failed with one cause (a wrong
    /// key, an unreachable server, a command that exits non-zero).
    FirstCallsFailed { calls: u64, cause: String },
    /// More calls failed than the error budget allows.
    ErrorBudget {
        errors: u64,
        samples: u64,
        /// The budget, a share of the samples.
        share: f64,
        /// The most common cause.
        cause: String,
    },
    /// Checks erred on every one of the first outputs they saw: broken
    /// checks (a configuration error), found before the run spent its
    /// samples on them.
    BrokenChecks {
        /// Outputs checked when the run stopped.
        outputs: u64,
        /// `(check name, its most common cause)`, in column order.
        checks: Vec<(String, String)>,
    },
    /// A shared run's inputs claimed [`crate::store::CLAIM_TRIES`] times
    /// and never finished — every worker that took them died: given up
    /// (dead letters), their cells missing, so the run has no verdict.
    GivenUp {
        /// The inputs' ids.
        inputs: Vec<String>,
    },
}

impl Halt {
    /// A configuration error (exit 2), not a run that could not complete
    /// (exit 3): a broken check.
    pub fn is_configuration(&self) -> bool {
        matches!(self, Halt::BrokenChecks { .. })
    }
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::FirstCallsFailed { calls, cause } => write!(
                f,
                "the first {calls} calls to the system all failed with the same cause, so nothing was measured: {cause}"
            ),
            Halt::ErrorBudget {
                errors,
                samples,
                share,
                cause,
            } => write!(
                f,
                "{errors} call{} failed, more than the error budget of {:.0}% of {samples} samples (error_budget = {share}); most common cause: {cause}",
                if *errors == 1 { "" } else { "s" },
                share * 100.0
            ),
            Halt::BrokenChecks { outputs, checks } => {
                let named: Vec<String> = checks
                    .iter()
                    .map(|(name, cause)| format!("`{name}`: {cause}"))
                    .collect();
                write!(
                    f,
                    "{} erred on every one of the first {outputs} outputs, so {} broken and cannot judge the system: {}",
                    if checks.len() == 1 { "a check" } else { "checks" },
                    if checks.len() == 1 { "it is" } else { "they are" },
                    named.join("; ")
                )
            }
            Halt::GivenUp { inputs } => write!(
                f,
                "{} given up after {} claims whose workers all died before finishing {}: {} (their outputs are missing; find why a worker dies on {}, then run again)",
                if inputs.len() == 1 { "an input was" } else { "inputs were" },
                crate::store::CLAIM_TRIES,
                if inputs.len() == 1 { "it" } else { "them" },
                inputs.join(", "),
                if inputs.len() == 1 { "it" } else { "them" },
            ),
        }
    }
}

/// The result of a run.
#[derive(Debug)]
pub struct RunOutcome {
    /// The experiment's name.
    pub name: String,
    /// The run's id in the store; `None` for a run kept in memory.
    pub run_id: Option<i64>,
    pub tensor: ReliabilityTensor,
    pub summary: Summary,
    pub status: RunStatus,
    /// Why the run stopped early with no verdict, if it did.
    pub halt: Option<Halt>,
    /// The causes of every error cell, grouped (system, per check).
    pub causes: Causes,
    /// Calls, judge calls and tokens over all sessions of the run.
    pub totals: RunTotals,
    /// The stored run whose outputs were reused, if any.
    pub reused_from: Option<i64>,
    /// Calls made to the model by this invocation (retries included).
    pub model_calls: u64,
    /// Samples served from an identical stored request.
    pub cached: u64,
    /// With a retry policy: attempts (after the first, or a first attempt
    /// not found up front) served from an identical stored attempt — the
    /// same provider, messages (feedback included), repetition and attempt
    /// index — without a call.
    pub attempts_cached: u64,
    /// Samples already stored in the resumed run.
    pub resumed: u64,
    /// Samples whose call failed.
    pub errors: u64,
    /// Of `model_calls`, the calls made to judges (retries included).
    pub judge_calls: u64,
    /// Judgements served from the judge cache (no call).
    pub judge_cached: u64,
    pub duration: Duration,
    /// Input ids, index `i`.
    pub input_ids: Vec<String>,
    /// Every sample, in input then repetition order, for a run kept in
    /// memory; empty for a stored run (read them from the store).
    pub samples: Vec<SampleRow>,
}

impl RunOutcome {
    /// The stored run's id.
    ///
    /// # Panics
    /// For a run kept in memory, which has none.
    pub fn stored_id(&self) -> i64 {
        self.run_id
            .expect("a run kept in memory (Sink::Memory) has no store id")
    }

    /// Every check's verdict is Pass, every sample was taken, and no check
    /// is broken.
    pub fn passed(&self) -> bool {
        self.status == RunStatus::Complete && self.broken().is_empty() && self.summary.passed()
    }

    /// Checks that erred on every output they saw: `(name, first message)`.
    /// A configuration error, not a verdict about the system.
    pub fn broken(&self) -> Vec<(String, String)> {
        self.causes
            .broken()
            .into_iter()
            .map(|(k, c)| {
                let name = self
                    .summary
                    .checks
                    .get(k)
                    .map_or_else(|| format!("#{k}"), |c| c.info.name.clone());
                (name, c.message.clone())
            })
            .collect()
    }

    /// The lines a failing run is explained by: one per check that does
    /// not pass, as the text report prints it (decision, name, rate,
    /// interval, threshold, whether the sample size established it), the
    /// check's message, and a failing output of a run kept in memory.
    pub fn failure_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(h) = &self.halt {
            out.push(format!("NO VERDICT: {h}"));
        }
        for (name, message) in self.broken() {
            out.push(format!(
                "BROKEN {name}: it could not judge any output: {message}"
            ));
        }
        if self.status != RunStatus::Complete && self.halt.is_none() {
            out.push(format!(
                "INCOMPLETE: the run stopped before every sample was taken ({:?})",
                self.status
            ));
        }
        for (k, c) in self.summary.checks.iter().enumerate() {
            if c.verdict.decision == Decision::Pass {
                continue;
            }
            out.push(check_line(c));
            if !c.info.message.is_empty() {
                out.push(format!("     {}", c.info.message));
            }
            if let Some((s, reason)) = self.example(k) {
                let id = self.input_ids.get(s.input_idx).map_or("?", String::as_str);
                let what = s.output.as_deref().map_or_else(
                    || {
                        format!(
                            "no output: {}",
                            s.error.as_deref().unwrap_or("unknown error")
                        )
                    },
                    |o| format!("{:?}", truncate(o, 200)),
                );
                out.push(format!(
                    "     e.g. input {id} · output #{}: {what}",
                    s.repetition
                ));
                if let Some(r) = reason {
                    out.push(format!("          {}", truncate(r, 200)));
                }
            }
        }
        out
    }

    /// Why the run did not pass, as one message — a heading naming the
    /// test and its shape, then [`RunOutcome::failure_lines`] — or `None`
    /// when it passed. What [`RunOutcome::assert_passed`] panics with, and
    /// what other test frameworks (pytest) fail with.
    pub fn failure_message(&self) -> Option<String> {
        if self.passed() {
            return None;
        }
        let (n, m, k) = self.summary.shape;
        Some(format!(
            "reliability test `{}` failed ({n} inputs × {m} outputs × {k} checks):\n{}",
            self.name,
            self.failure_lines().join("\n")
        ))
    }

    /// Panic unless the run passed, with [`RunOutcome::failure_message`]
    /// as the message: for `cargo test`.
    #[track_caller]
    pub fn assert_passed(&self) {
        if let Some(message) = self.failure_message() {
            panic!("{message}");
        }
    }

    /// The first sample failing (or erring on) check `k`, with its reason.
    fn example(&self, k: usize) -> Option<(&SampleRow, Option<&str>)> {
        use probity_core::Cell;
        self.samples.iter().find_map(|s| {
            matches!(s.cells.get(k), Some(Cell::Fail | Cell::Error)).then(|| {
                let reason = s
                    .reasons
                    .iter()
                    .find(|(kk, _)| *kk == k)
                    .map(|(_, r)| r.as_str());
                (s, reason)
            })
        })
    }
}

/// `FAIL contraction_validator  87.8%  [84.2, 90.6]  ≥ 95%  established`.
fn check_line(c: &CheckSummary) -> String {
    let word = match c.verdict.decision {
        Decision::Pass => "PASS",
        Decision::Fail => "FAIL",
        Decision::Inconclusive => "INCONCLUSIVE",
    };
    let pct = |p: f64| format!("{:.1}", p * 100.0);
    let (rate, interval) = if c.rate.n == 0 {
        ("–".to_string(), "no outputs judged".to_string())
    } else {
        (
            format!("{}%", pct(c.rate.estimate)),
            format!(
                "[{}, {}]",
                pct(c.rate.interval.lower),
                pct(c.rate.interval.upper)
            ),
        )
    };
    let established = if c.verdict.established {
        "established".to_string()
    } else {
        match c.verdict.samples_needed.map(|s| s.saturating_sub(c.rate.n)) {
            Some(more) if more > 0 => {
                format!("not established: ~{more} more samples would settle it")
            }
            _ => "not established".to_string(),
        }
    };
    let threshold = format!("{:.4}", c.info.minimum_success_percentage * 100.0);
    let threshold = threshold.trim_end_matches('0').trim_end_matches('.');
    format!(
        "{word} {}  {rate}  {interval}  ≥ {threshold}%  {established}",
        c.info.name
    )
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
