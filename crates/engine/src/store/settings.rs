//! The settings a run was made with, as stored beside it (the `settings`
//! column): what is needed to analyse its tensor again exactly as it was
//! analysed when it ran.

use probity_core::cost::RunPrices;
use probity_core::monitor::{Baseline, WatchSettings};
use probity_core::{Aggregate, AnalysisOptions, Input, Strategy};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a run's tensor is analysed (§2.2.3, §3.3, §3.4, §4.2.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Confidence, interval method, error policy, verdict mode.
    pub options: AnalysisOptions,
    /// Which slice a validator's success percentage is broken down by.
    pub strategy: Strategy,
    /// How checks combine into one figure.
    pub aggregate: Aggregate,
    /// Target probability for the retry plan's m.
    pub retry_target: f64,
    /// The input field whose number weights each input in the aggregate
    /// (§3.6.7); every input weighs the same without it.
    pub weight_field: Option<String>,
}

impl Analysis {
    /// The per-input weights `W_i` read from `weight_field`: `None`
    /// without one; an error naming the input when its field is missing,
    /// not a number, negative or not finite.
    pub fn input_weights(&self, inputs: &[Input]) -> Result<Option<Vec<f64>>, String> {
        let Some(field) = &self.weight_field else {
            return Ok(None);
        };
        let weights = inputs
            .iter()
            .map(|input| {
                let value = input.fields.get(field).ok_or_else(|| {
                    format!("weight_field = {field:?}: input {:?} has no field {field:?}", input.id)
                })?;
                let w = match &value {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse::<f64>().ok(),
                    _ => None,
                }
                .filter(|w| w.is_finite() && *w >= 0.0);
                w.ok_or_else(|| {
                    format!(
                        "weight_field = {field:?}: input {:?} has {field} = {value}, not a finite number ≥ 0",
                        input.id
                    )
                })
            })
            .collect::<Result<Vec<f64>, String>>()?;
        if weights.iter().all(|w| *w == 0.0) {
            return Err(format!(
                "weight_field = {field:?}: every input's weight is 0"
            ));
        }
        Ok(Some(weights))
    }
}

impl Default for Analysis {
    fn default() -> Self {
        StoredSettings::default().analysis_settings()
    }
}

/// How a run's tensor is analysed, and the retry policy it was run with
/// (flat, as stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSettings {
    pub analysis: AnalysisOptions,
    /// Which slice a validator's success percentage is broken down by (§2.2.3).
    pub strategy: Strategy,
    /// How validators combine into one figure (§3.3).
    pub aggregate: Aggregate,
    /// Target probability for the retry plan's m (§4.2.2).
    pub retry_target: f64,
    /// The retry policy, for a run of the guarded system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<StoredRetry>,
    /// The input field weighting inputs in the aggregate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_field: Option<String>,
    /// A sequential run (`[experiment] sequential`): the seed of its input
    /// order, so `--resume` replays the same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<StoredSequential>,
    /// A run of `probity serve`: how its traffic is watched (its verdicts
    /// are then its sequences', `Summary::with_live`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<StoredLive>,
    /// Per column, what a calibrated verifier's judge answered on its
    /// labelled set (`None` for other checks; empty when no verifier is
    /// calibrated): measured when the run began, so its reports correct
    /// the rate as it did (`Summary::with_calibration`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<Option<probity_core::stats::LabelCounts>>,
    /// The prices its calls were made at (`price = {…}` on the system's
    /// and the judges' provider tables): a later report prices the run as
    /// it was priced. Empty: none set.
    #[serde(default, skip_serializing_if = "is_unpriced")]
    pub prices: RunPrices,
}

fn is_unpriced(p: &RunPrices) -> bool {
    !p.any()
}

/// How a serve run's traffic is watched: the `[monitor]` settings and the
/// baseline's interval per check (by column; none without a baseline), as
/// the server used them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredLive {
    pub watch: WatchSettings,
    #[serde(default)]
    pub baselines: Vec<Option<Baseline>>,
}

/// How a sequential run was made: the seed of its input order
/// (`probity_core::sequential::input_order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSequential {
    pub seed: u64,
}

impl Default for StoredSettings {
    fn default() -> Self {
        StoredSettings {
            analysis: AnalysisOptions::default(),
            strategy: Strategy::All,
            aggregate: Aggregate::Min,
            retry_target: 0.99,
            retry: None,
            weight_field: None,
            sequential: None,
            live: None,
            calibration: Vec::new(),
            prices: RunPrices::default(),
        }
    }
}

impl StoredSettings {
    /// `analysis` with `retry`, as stored.
    pub fn new(analysis: &Analysis, retry: Option<StoredRetry>) -> Self {
        StoredSettings {
            analysis: analysis.options,
            strategy: analysis.strategy,
            aggregate: analysis.aggregate,
            retry_target: analysis.retry_target,
            retry,
            weight_field: analysis.weight_field.clone(),
            sequential: None,
            live: None,
            calibration: Vec::new(),
            prices: RunPrices::default(),
        }
    }

    /// The analysis part.
    pub(crate) fn analysis_settings(&self) -> Analysis {
        Analysis {
            options: self.analysis,
            strategy: self.strategy,
            aggregate: self.aggregate,
            retry_target: self.retry_target,
            weight_field: self.weight_field.clone(),
        }
    }
}

/// The retry policy a run was made with: `m` and the deciding columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRetry {
    pub attempts: u32,
    pub columns: Vec<usize>,
}
