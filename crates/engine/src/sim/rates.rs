//! What the simulator gets wrong, and how often: the true rates of an
//! input and the events of one output.

use serde::{Deserialize, Serialize};

/// The true per-call probabilities of each misbehaviour for one input
/// (its messages), and whether the input triggers the conditional ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrueRates {
    /// P(more than three apostrophes in the reply).
    pub contractions: f64,
    /// P(no "You're welcome" | thanked); applies only when `thanked`.
    pub omit_welcome: f64,
    /// P(the JSON reply does not parse | JSON requested); applies only when
    /// `json_requested`.
    pub invalid_json: f64,
    /// P(the call fails with a simulated server error).
    pub error_rate: f64,
    /// The last user message contains `Thank you`.
    pub thanked: bool,
    /// The last user message contains `JSON`.
    pub json_requested: bool,
}

impl TrueRates {
    /// True pass rate of the paper's contraction validator
    /// (`count(output, "'") <= 3`) among successful calls.
    pub fn pass_no_contractions(&self) -> f64 {
        1.0 - self.contractions
    }

    /// True pass rate of the politeness validator (thanked ⇒ "You're
    /// welcome" in the output) among successful calls.
    pub fn pass_politeness(&self) -> f64 {
        if self.thanked {
            1.0 - self.omit_welcome
        } else {
            1.0
        }
    }

    /// True pass rate of a valid-JSON validator among successful calls to a
    /// JSON-requesting input (1 when JSON was not requested: the check does
    /// not apply).
    pub fn pass_valid_json(&self) -> f64 {
        if self.json_requested {
            1.0 - self.invalid_json
        } else {
            1.0
        }
    }
}

/// Which misbehaviours fired for one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SimEvents {
    pub contractions: bool,
    pub omitted_welcome: bool,
    pub invalid_json: bool,
}
