//! Confidence intervals for a binomial proportion. (TO BE IMPLEMENTED)

use serde::{Deserialize, Serialize};

/// Interval method (DESIGN.md, Statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// The paper's §3.4 formula p ± z·sqrt(p(1−p)/n), clamped to [0, 1].
    Wald,
    #[default]
    Wilson,
    ClopperPearson,
    Jeffreys,
    AgrestiCoull,
}

/// A closed interval within [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

impl Interval {
    /// The uninformative interval, used when nothing was observed.
    pub const EMPTY: Interval = Interval {
        lower: 0.0,
        upper: 1.0,
    };
}

/// z = Φ⁻¹(1 − α/2) for a two-sided interval at `confidence` = 1 − α.
pub fn z_value(confidence: f64) -> f64 {
    let _ = confidence;
    todo!()
}

/// The two-sided interval for a proportion with `x` successes in `n` trials
/// (real-valued so effective sample sizes can be used), `0 ≤ x ≤ n`.
/// `n == 0` gives [`Interval::EMPTY`].
pub fn proportion_interval(x: f64, n: f64, confidence: f64, method: IntervalMethod) -> Interval {
    let _ = (x, n, confidence, method);
    todo!()
}
