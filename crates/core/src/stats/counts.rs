//! Cell counts and the policy that turns them into successes over trials.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// How error cells enter a rate (docs/architecture.md, Design decisions):
/// by default an error is not measured — it leaves the denominator, and the
/// run's error budget bounds how many there may be, so failures cannot hide
/// behind a flaky provider; `AsFailure` counts it as a failure, for systems
/// whose errors are failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "kebab-case")]
pub enum ErrorPolicy {
    AsFailure,
    #[default]
    Exclude,
}

/// Counts of the four cell states over some slice of the tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    pub pass: u64,
    pub fail: u64,
    pub error: u64,
    /// Cells never filled (the run stopped before they were evaluated).
    /// Missing cells never enter a rate.
    pub missing: u64,
}

impl Counts {
    /// `(successes, trials)` under `policy`.
    pub fn successes_of(&self, policy: ErrorPolicy) -> (u64, u64) {
        match policy {
            ErrorPolicy::AsFailure => (self.pass, self.pass + self.fail + self.error),
            ErrorPolicy::Exclude => (self.pass, self.pass + self.fail),
        }
    }

    /// Total cells, missing included.
    pub fn total(&self) -> u64 {
        self.pass + self.fail + self.error + self.missing
    }
}

impl Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            pass: self.pass + o.pass,
            fail: self.fail + o.fail,
            error: self.error + o.error,
            missing: self.missing + o.missing,
        }
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        *self = *self + o;
    }
}
