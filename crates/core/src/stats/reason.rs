//! Why a verdict is not established, and what would settle it — as data,
//! so that every report format can say it (`crates/core/STATISTICS.md`,
//! *Why not established*).

use serde::{Deserialize, Serialize};

/// Why a [`ThresholdVerdict`](super::decision::ThresholdVerdict) is not
/// established, each reason with what would settle it. `None` on the
/// verdict when it is established.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotEstablished {
    /// No output was judged: nothing to decide from. Settled by running
    /// the check (at least [`MIN_INPUTS`](super::rate::MIN_INPUTS) inputs).
    NothingObserved,
    /// Fewer than [`MIN_INPUTS`](super::rate::MIN_INPUTS) inputs: the
    /// interval is about these inputs only and cannot speak about inputs
    /// in general, however many outputs each has. Settled only by more
    /// inputs: at least `inputs_needed` in all.
    TooFewInputs { inputs: u64, inputs_needed: u64 },
    /// The rate was computed without clustering by input
    /// ([`ClusterMethod::Binomial`](super::rate::ClusterMethod::Binomial)):
    /// its interval is about these `inputs` only. Settled by the clustered
    /// analysis (the default `cluster` method).
    Unclustered { inputs: u64 },
    /// The interval [`lower`, `upper`] contains the minimum. Settled, if
    /// the estimate stays where it is, by `samples_needed` samples in all
    /// (`None`: the estimate is on the minimum, or more than
    /// [`MAX_SAMPLES`](super::decision::MAX_SAMPLES) would be needed — no
    /// sample size settles it).
    Straddles {
        lower: f64,
        upper: f64,
        samples_needed: Option<u64>,
    },
    /// The default clustered interval [`lower`, `upper`] contains the
    /// minimum. Settled — if every input seen were seen again in the same
    /// proportions, by that same interval ([`super::projection`]) — by
    /// `inputs_needed` inputs in all, `samples_needed` samples at the
    /// outputs per input observed (`None`: not within 10⁷ inputs, or the
    /// estimate is on the minimum); `outputs_settle`: whether more outputs
    /// of these same inputs could settle it at all.
    Unsettled {
        lower: f64,
        upper: f64,
        inputs_needed: Option<u64>,
        samples_needed: Option<u64>,
        outputs_settle: bool,
    },
    /// A sequential run sampled its whole budget and the confidence
    /// sequence still contains the minimum. Settled, if the estimate
    /// stays, by `inputs_needed` inputs in all (`None`: not within ten
    /// times the budget).
    BudgetSpent {
        inputs_needed: Option<u64>,
        /// With output rounds: outputs per input in all instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outputs_needed: Option<u64>,
    },
    /// A sequential run stopped because this check was projected not to
    /// settle within its budget. Settled by a budget of `inputs_needed`
    /// inputs (`None`: not within ten times the budget).
    Futile {
        inputs_needed: Option<u64>,
        /// With output rounds: outputs per input in all instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outputs_needed: Option<u64>,
    },
    /// The minimum is not a fraction in [0, 1] (95 for 95 %): fix the
    /// check's `minimum_success_percentage`.
    InvalidThreshold,
    /// The interval's end on the estimate's side is where a minority of
    /// inputs the sample may not have seen could move the mean
    /// ([`super::unseen`]): with `inputs` inputs, a share of up to `share`
    /// of the population whose inputs fail every output (`failing`; pass
    /// every output otherwise) is absent from the sample with probability
    /// at least α/2. Settled only by more inputs — `inputs_needed` in all
    /// (`None`: not within 10¹⁵) — never by more outputs of these.
    /// `these_inputs` is the verdict about these inputs only, which needs
    /// no model of the population.
    UnseenMinority {
        inputs: u64,
        share: f64,
        failing: bool,
        inputs_needed: Option<u64>,
        these_inputs: TheseInputs,
    },
}

/// A rate's interval and verdict about the inputs observed only (their
/// mean rate): Clopper–Pearson on all their outputs, which are independent
/// given the inputs, so no model of how inputs differ is needed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TheseInputs {
    pub lower: f64,
    pub upper: f64,
    /// The interval lies wholly on the estimate's side of the minimum.
    pub established: bool,
}

impl NotEstablished {
    /// Samples in all that would settle it, when that is the remedy.
    pub fn samples_needed(&self) -> Option<u64> {
        match self {
            NotEstablished::Straddles { samples_needed, .. }
            | NotEstablished::Unsettled { samples_needed, .. } => *samples_needed,
            _ => None,
        }
    }

    /// Inputs in all that would settle it, when that is the remedy.
    pub fn inputs_needed(&self) -> Option<u64> {
        match self {
            NotEstablished::TooFewInputs { inputs_needed, .. } => Some(*inputs_needed),
            NotEstablished::BudgetSpent { inputs_needed, .. }
            | NotEstablished::Futile { inputs_needed, .. }
            | NotEstablished::UnseenMinority { inputs_needed, .. }
            | NotEstablished::Unsettled { inputs_needed, .. } => *inputs_needed,
            _ => None,
        }
    }
}
