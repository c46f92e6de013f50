//! The outcome of one check on one output.

use serde::{Deserialize, Serialize};

/// The result of applying one validator (or verifier) to one output: the
/// cell `R[i][j][k]` of the reliability tensor before it is packed.
///
/// An `Error` is neither a pass nor a failure: the predicate could not be
/// evaluated (a provider failure, a judge that answered nonsense, a script
/// that ran out of operations). Statistics count errors apart and an
/// [`ErrorPolicy`](crate::stats::ErrorPolicy) decides how they enter rates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Error { reason: String },
}

impl Verdict {
    /// `Pass` when `ok`, `Fail` otherwise.
    pub fn from_bool(ok: bool) -> Self {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }

    /// Build an `Error` verdict from anything printable.
    pub fn error(reason: impl Into<String>) -> Self {
        Verdict::Error {
            reason: reason.into(),
        }
    }

    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass)
    }
}
