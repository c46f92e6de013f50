//! A calibrated verifier in the JSON report (`checks[].calibration`, added
//! within `probity.report.v1`; `crates/report/SCHEMA.md`): the judge's
//! sensitivity and specificity on its labelled set, the corrected rate
//! beside the raw one, and why the judge is too weak or the rate could not
//! be corrected.

use crate::facts::calibration::{lines, warning};
use probity_core::stats::{
    Calibrated, CalibrationError, Interval, JudgeAccuracy, Measured, Weakness,
};
use probity_core::CheckSummary;
use serde::Serialize;

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[derive(Debug, Serialize)]
pub struct WireMeasured {
    pub estimate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    /// Labelled pairs of the class the judge agreed with.
    pub agreed: u64,
    /// Labelled pairs of the class.
    pub of: u64,
}

impl WireMeasured {
    fn new(m: &Measured) -> Self {
        WireMeasured {
            estimate: finite(m.estimate),
            lower: finite(m.interval.lower),
            upper: finite(m.interval.upper),
            agreed: m.agreed,
            of: m.of,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireInterval {
    pub estimate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

impl WireInterval {
    fn new(estimate: f64, iv: &Interval) -> Self {
        WireInterval {
            estimate: finite(estimate),
            lower: finite(iv.lower),
            upper: finite(iv.upper),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireJudge {
    /// Labelled pairs judged (asked, or read back: `reused`), those the
    /// judge could not judge included.
    pub labelled: u64,
    /// Pairs the judge could not judge (left out of both measures).
    pub errors: u64,
    /// Of `labelled`, the verdicts read back from the run store (the same
    /// judge asked the same question before) instead of asked.
    pub reused: u64,
    /// P(judge PASS | human PASS), Wilson interval.
    pub sensitivity: WireMeasured,
    /// P(judge FAIL | human FAIL), Wilson interval.
    pub specificity: WireMeasured,
    /// Se + Sp − 1 with its MOVER interval.
    pub youden: WireInterval,
}

impl WireJudge {
    fn new(a: &JudgeAccuracy) -> Self {
        WireJudge {
            labelled: a.sensitivity.of + a.specificity.of + a.counts.errors,
            errors: a.counts.errors,
            reused: a.counts.reused,
            sensitivity: WireMeasured::new(&a.sensitivity),
            specificity: WireMeasured::new(&a.specificity),
            youden: WireInterval::new(a.youden, &a.youden_interval),
        }
    }
}

/// `checks[].calibration`: `null` for a check whose judge was not
/// calibrated.
#[derive(Debug, Serialize)]
pub struct WireCalibration {
    /// `corrected` or `unusable` (no corrected rate: see `problem`).
    pub state: &'static str,
    pub judge: Option<WireJudge>,
    /// The judge's own pass rate over the run (= `rate.estimate`).
    pub raw: Option<f64>,
    /// The corrected rate (Rogan–Gladen) and its interval: the verdict's.
    pub corrected: Option<WireInterval>,
    /// The interval were the run's rate known exactly.
    pub labels_only: Option<WireInterval>,
    /// Why the judge is too weak (`chance` or `threshold`, with figures).
    pub weak: Option<Weakness>,
    /// Why there is no corrected rate (`reason`, figures and `text`).
    pub problem: Option<WireProblem>,
    /// The warning line every format shows, or null.
    pub warning: Option<String>,
    /// The calibration's lines as the text report says them.
    pub text: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct WireProblem {
    #[serde(flatten)]
    pub reason: CalibrationError,
    pub text: String,
}

impl WireCalibration {
    /// The calibration of check `c` (in a sequential run: `sequential`),
    /// or `None`.
    pub fn of(c: &CheckSummary, sequential: bool) -> Option<Self> {
        let cal = c.calibration.as_ref()?;
        let (state, raw, corrected, labels_only, weak, problem) = match cal {
            Calibrated::Corrected(r) => (
                "corrected",
                finite(r.raw),
                Some(WireInterval::new(r.estimate, &r.interval)),
                Some(WireInterval::new(r.estimate, &r.labels_only)),
                r.weak,
                None,
            ),
            Calibrated::Unusable { problem, .. } => (
                "unusable",
                finite(c.rate.estimate),
                None,
                None,
                None,
                Some(WireProblem {
                    reason: problem.clone(),
                    text: problem.to_string(),
                }),
            ),
        };
        Some(WireCalibration {
            state,
            judge: cal.judge().map(WireJudge::new),
            raw,
            corrected,
            labels_only,
            weak,
            problem,
            warning: warning(c),
            text: lines(c, sequential),
        })
    }
}
