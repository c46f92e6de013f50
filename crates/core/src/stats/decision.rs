//! Verdicts against a minimum success percentage. (TO BE IMPLEMENTED)

use super::RateEstimate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictMode {
    #[default]
    Point,
    LowerBound,
    ThreeWay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Pass,
    Fail,
    Inconclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThresholdVerdict {
    pub decision: Decision,
    pub threshold: f64,
    pub established: bool,
    pub samples_needed: Option<u64>,
}

pub fn judge(
    rate: &RateEstimate,
    threshold: f64,
    mode: VerdictMode,
    method: super::IntervalMethod,
) -> ThresholdVerdict {
    let _ = (rate, threshold, mode, method);
    todo!()
}
