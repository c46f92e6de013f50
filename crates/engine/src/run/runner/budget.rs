//! When errors stop a run with no verdict: failed calls say nothing about
//! the system's behaviour, and a check that cannot judge outputs says
//! nothing either.

use crate::run::outcome::Halt;
use probity_core::causes::Causes;

/// Calls whose failure with one cause, before any success, stops a run:
/// the system cannot be measured (a wrong key, a dead server).
pub const FIRST_CALLS: u64 = 10;

/// Outputs on every one of which a check must err, from the run's first,
/// for the run to stop as soon as it has seen them: the check is broken
/// (the same number as [`FIRST_CALLS`], the same idea for checks).
pub const FIRST_OUTPUTS: u64 = FIRST_CALLS;

/// When errors stop a run with no verdict: failed calls — more than
/// `share` of its samples, or the first calls of this session all failing
/// with one cause — or checks that erred on every one of the run's first
/// [`FIRST_OUTPUTS`] outputs ([`Causes::broken`], the definition the
/// finished run's report uses too).
pub(super) struct ErrorBudget {
    pub share: f64,
    pub samples: u64,
    pub first_calls: u64,
    /// The checks' names, in column order.
    pub checks: Vec<String>,
}

impl ErrorBudget {
    /// Whether the run must stop now, after `session` samples of this
    /// process (`session_errors` of them failed calls), `errors` failed
    /// calls in all, with these causes.
    pub fn exceeded(
        &self,
        session: u64,
        session_errors: u64,
        errors: u64,
        causes: &Causes,
    ) -> Option<Halt> {
        if self.first_calls > 0
            && session == self.first_calls
            && session_errors == session
            && causes.system.causes.len() == 1
        {
            return Some(Halt::FirstCallsFailed {
                calls: session,
                cause: causes.system.causes[0].message.clone(),
            });
        }
        if errors as f64 > self.share * self.samples as f64 {
            return Some(Halt::ErrorBudget {
                errors,
                samples: self.samples,
                share: self.share,
                cause: causes
                    .system
                    .top()
                    .map(|c| c.message.clone())
                    .unwrap_or_default(),
            });
        }
        self.broken_checks(causes)
    }

    /// The checks that erred on every output of the run so far, once it
    /// has checked at least [`FIRST_OUTPUTS`].
    fn broken_checks(&self, causes: &Causes) -> Option<Halt> {
        if causes.outputs < FIRST_OUTPUTS {
            return None;
        }
        let checks: Vec<(String, String)> = causes
            .broken()
            .into_iter()
            .map(|(k, cause)| {
                let name = self
                    .checks
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("#{k}"));
                (name, cause.message.clone())
            })
            .collect();
        (!checks.is_empty()).then_some(Halt::BrokenChecks {
            outputs: causes.outputs,
            checks,
        })
    }
}
