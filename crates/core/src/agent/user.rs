//! The simulated user as an instrument (issue 34 item 7): a trial can fail
//! because the user misbehaved — left the scenario, revealed what it
//! should not know, stopped early — not because the agent did. User checks
//! find those episodes; [`super::stats`] leaves them out of the agent's
//! rate and says what that does to the interval.

use super::transcript::{Ending, Party, Transcript};
use crate::model::Input;
use crate::validator::Validator;
use crate::verdict::Verdict;

/// What the user must do for an episode to count.
#[derive(Debug, Clone)]
pub enum UserCheck {
    /// Every user message satisfies the validator (e.g. `not_contains`
    /// what the user must not reveal, a regex for staying on scenario).
    EveryMessage(Validator),
    /// The user did not end the episode before the agent's `min_turns`-th
    /// turn (a user that hangs up early leaves the agent nothing to do).
    NoEarlyStop { min_turns: u32 },
}

/// Why an episode was spoiled by its user: the check's name, the turn,
/// what happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Spoiled {
    pub check: String,
    pub turn: u32,
    pub reason: String,
}

/// How a spoiled episode's cause begins, in the run's errors and the
/// store ([`Spoiled::cause`]).
pub const SPOILED_CAUSE: &str = "the simulated user spoiled the episode";

impl Spoiled {
    /// The episode's error cause: "the simulated user spoiled the episode:
    /// CHECK at turn T: REASON".
    pub fn cause(&self) -> String {
        format!(
            "{SPOILED_CAUSE}: {} at turn {}: {}",
            self.check, self.turn, self.reason
        )
    }
}

/// Whether a sample's error is a spoiled episode's ([`Spoiled::cause`]):
/// the system was measured — its user misbehaved — so the episode is kept
/// out of the agent's rate but is no failed call: it does not count
/// against a run's error budget (docs/agents.md).
pub fn is_spoiled_cause(error: &str) -> bool {
    error.starts_with(SPOILED_CAUSE)
}

impl UserCheck {
    /// `Some` when the user of episode `t` broke this check. A check that
    /// cannot be evaluated (an expression error) spoils the episode too:
    /// an episode is counted for the agent only when its user is known to
    /// have behaved.
    pub fn spoiled(&self, name: &str, task: &Input, t: &Transcript) -> Option<Spoiled> {
        let at = |turn: u32, reason: String| Spoiled {
            check: name.to_string(),
            turn,
            reason,
        };
        match self {
            UserCheck::EveryMessage(v) => {
                t.user_messages()
                    .find_map(|(turn, m)| match v.evaluate(task, &m.content) {
                        Verdict::Pass => None,
                        Verdict::Fail => Some(at(turn, v.message.clone())),
                        Verdict::Error { reason } => {
                            Some(at(turn, format!("could not check: {reason}")))
                        }
                    })
            }
            UserCheck::NoEarlyStop { min_turns } => {
                let n = t.turn_count();
                (t.ending == Ending::Stop { by: Party::User } && n < *min_turns).then(|| {
                    at(
                        n,
                        format!("the user stopped after {n} agent turns (fewer than {min_turns})"),
                    )
                })
            }
        }
    }
}

/// The first user check (name, check) that episode `t` broke.
pub fn first_spoiled(
    checks: &[(String, UserCheck)],
    task: &Input,
    t: &Transcript,
) -> Option<Spoiled> {
    checks.iter().find_map(|(n, c)| c.spoiled(n, task, t))
}
