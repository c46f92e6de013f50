//! What a sequential run did ([`SequentialOutcome`]): why it stopped,
//! after how many inputs and samples, and each check's confidence
//! sequence at the stop. Stored with the run, shown by every report.

use serde::{Deserialize, Serialize};

/// Why a sequential run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum StopReason {
    /// Every check's verdict is established.
    Settled,
    /// Every input of the budget was sampled.
    BudgetSpent,
    /// Every check not yet settled is projected not to settle within the
    /// budget (see [`CheckSequence::needed_inputs`]).
    Futile,
}

/// What a round of a sequential run adds (`crates/core/STATISTICS.md`,
/// *Sequential testing*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum RoundDesign {
    /// Rounds of whole inputs (each with all M outputs), in a seeded
    /// random order: the sequence is for the mean over the population of
    /// inputs. For many inputs (more than
    /// [`OUTPUT_ROUNDS_MAX_INPUTS`](crate::sequential::OUTPUT_ROUNDS_MAX_INPUTS)).
    #[default]
    Inputs,
    /// Rounds of one more output of every input: the sequence is for the
    /// mean rate of **these** inputs (scope "these inputs"), which few
    /// inputs can settle while a claim about inputs in general cannot.
    Outputs,
}

/// Where one check's confidence sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum SequenceState {
    /// Established pass: the sequence's lower bound ≥ the threshold.
    Pass,
    /// Established fail: the sequence's upper bound < the threshold.
    Fail,
    /// Not settled; may still settle within the budget.
    Open,
    /// Not settled and projected not to within the budget.
    Futile,
}

/// One check's confidence sequence at the stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSequence {
    pub name: String,
    pub threshold: f64,
    /// Mean over the observed inputs of their pass shares.
    pub estimate: f64,
    /// The confidence sequence's interval at the stop (anytime-valid at
    /// the run's confidence).
    pub lower: f64,
    pub upper: f64,
    /// Inputs that contributed (those with at least one judged output).
    pub inputs: u64,
    pub state: SequenceState,
    /// Inputs in all at which the verdict is projected to settle, from the
    /// current estimate and spread (`None`: never, e.g. an estimate on the
    /// threshold, or beyond ten times the budget); `Some(inputs)` when
    /// settled.
    pub needed_inputs: Option<u64>,
    /// With output rounds: outputs per input at which the verdict is
    /// projected to settle (`needed_inputs` is then `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_outputs: Option<u64>,
}

/// What a sequential run did, stored with it and shown by every report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialOutcome {
    /// The seed of the input order.
    pub seed: u64,
    /// What a round adds: inputs (population scope) or an output of every
    /// input (these inputs).
    #[serde(default)]
    pub design: RoundDesign,
    /// Why it stopped; `None` while unfinished (interrupted).
    pub stop: Option<StopReason>,
    /// Inputs sampled (in full with input rounds; every input with output
    /// rounds) and samples taken.
    pub inputs: u64,
    pub samples: u64,
    /// The budget: N inputs, N × M samples (with output rounds M is the
    /// design's maximum outputs per input, see `fixed_samples`).
    pub budget_inputs: u64,
    pub budget_samples: u64,
    /// With output rounds: the samples of the fixed run the design stands
    /// for (N × the configured M). The group-sequential design may sample
    /// up to `budget_samples` (a few more outputs per input; 20 × 20 at 0.95: 24) so that its chance of a
    /// verdict is at least the fixed run's; `None` for input rounds and
    /// runs stored before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_samples: Option<u64>,
    /// Rounds completed.
    pub rounds: u64,
    /// The confidence of every sequence (two-sided, 1 − α).
    pub confidence: f64,
    pub checks: Vec<CheckSequence>,
}

impl SequentialOutcome {
    /// The samples savings are counted against: the fixed run's
    /// (`fixed_samples`) when the design may go past it, else the budget.
    pub fn reference_samples(&self) -> u64 {
        self.fixed_samples.unwrap_or(self.budget_samples)
    }

    /// Samples of [`SequentialOutcome::reference_samples`] not taken (0
    /// when the run went past the fixed run's size).
    pub fn samples_saved(&self) -> u64 {
        self.reference_samples().saturating_sub(self.samples)
    }

    /// Checks that are futile.
    pub fn futile(&self) -> impl Iterator<Item = &CheckSequence> {
        self.checks
            .iter()
            .filter(|c| c.state == SequenceState::Futile)
    }
}
