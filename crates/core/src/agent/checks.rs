//! Checks over what an agent did (issue 34 item 5), as data: each judges
//! one [`Transcript`] and gives one cell of the tensor — Pass, Fail (with
//! the turn where it failed and why) or Error (the episode ended on an
//! error, or the check itself could not be evaluated). An episode that
//! ended on an error is never judged: its cells are `Error`, counted apart
//! from the agent's failures (paper §3.6's error policy).

use super::matching::{first_difference, is_subset};
use super::transcript::{CallAt, Transcript};
use crate::model::Input;
use crate::tensor::Cell;
use crate::validator::Validator;
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call to look for: its name and, optionally, arguments it must
/// contain ([`is_subset`]: per key, recursively).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallPattern {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl CallPattern {
    /// A pattern on the name alone.
    pub fn named(name: impl Into<String>) -> Self {
        CallPattern {
            name: name.into(),
            arguments: None,
        }
    }

    /// Whether `call` matches.
    pub fn matches(&self, call: &crate::conversation::ToolCall) -> bool {
        call.name == self.name
            && self
                .arguments
                .as_ref()
                .is_none_or(|a| is_subset(a, &call.arguments))
    }

    fn describe(&self) -> String {
        match &self.arguments {
            Some(a) => format!("`{}` with {a}", self.name),
            None => format!("`{}`", self.name),
        }
    }
}

/// How a list of expected calls must appear among the agent's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Exactly these calls, in this order, and no others.
    Exact,
    /// These calls in this order, others allowed between them.
    InOrder,
    /// Each expected call matched by a distinct call, in any order.
    AnyOrder,
}

/// Inclusive bounds; `None` is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Bounds {
    pub min: Option<u32>,
    pub max: Option<u32>,
}

impl Bounds {
    fn holds(&self, n: u32) -> bool {
        self.min.is_none_or(|m| n >= m) && self.max.is_none_or(|m| n <= m)
    }
}

/// What a check asks of a transcript.
#[derive(Debug, Clone)]
pub enum AgentCheck {
    /// A call matching the pattern was made, a number of times within
    /// `times` (default: at least once).
    ToolCalled { call: CallPattern, times: Bounds },
    /// No call matching the pattern was made.
    ToolNotCalled(CallPattern),
    /// The calls appear as `order` says.
    Calls {
        calls: Vec<CallPattern>,
        order: Order,
    },
    /// The number of agent turns is within bounds.
    Turns(Bounds),
    /// The number of tool calls is within bounds.
    ToolCallCount(Bounds),
    /// The environment's final state equals this one (τ²'s DB check, the
    /// expected state being the one the task's gold actions reach).
    FinalState(Value),
    /// A validator over the final state: it reads the state as its output
    /// (JSON text) and as the input field `state`.
    StatePredicate(Validator),
    /// Every agent message satisfies the validator (its text as output).
    EveryAssistantTurn(Validator),
    /// A validator over the whole transcript: the input carries the
    /// task's fields and `transcript` ([`Transcript::to_value`]); the
    /// output is the agent's last text.
    Transcript(Validator),
}

/// A check with its name.
#[derive(Debug, Clone)]
pub struct NamedCheck {
    pub name: String,
    pub check: AgentCheck,
}

/// One check's verdict on one episode: its cell, and for a failure or an
/// error, the turn it is about (when there is one) and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub cell: Cell,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Outcome {
    pub fn pass() -> Self {
        Outcome {
            cell: Cell::Pass,
            turn: None,
            reason: None,
        }
    }

    fn fail(turn: Option<u32>, reason: String) -> Self {
        Outcome {
            cell: Cell::Fail,
            turn,
            reason: Some(reason),
        }
    }

    fn error(turn: Option<u32>, reason: String) -> Self {
        Outcome {
            cell: Cell::Error,
            turn,
            reason: Some(reason),
        }
    }

    fn of_verdict(v: Verdict, turn: Option<u32>, what: &str) -> Self {
        match v {
            Verdict::Pass => Outcome::pass(),
            Verdict::Fail => Outcome::fail(turn, what.to_string()),
            Verdict::Error { reason } => Outcome::error(turn, reason),
        }
    }

    /// "turn T: reason" (or the reason alone), for reports.
    pub fn describe(&self) -> String {
        let r = self.reason.as_deref().unwrap_or("passed");
        match self.turn {
            Some(t) => format!("turn {t}: {r}"),
            None => r.to_string(),
        }
    }
}

impl AgentCheck {
    /// Judge the episode of `task` recorded in `t`.
    pub fn evaluate(&self, task: &Input, t: &Transcript) -> Outcome {
        if let super::transcript::Ending::Error { by, message } = &t.ending {
            let who = match by {
                super::transcript::Party::Agent => "the agent's harness",
                super::transcript::Party::User => "the user simulator",
                super::transcript::Party::Tool => "a tool",
                super::transcript::Party::Upstream => "the upstream",
            };
            return Outcome::error(
                Some(t.turn_count()),
                format!("the episode ended on an error of {who}: {message}"),
            );
        }
        let calls: Vec<CallAt<'_>> = t.tool_calls().collect();
        match self {
            AgentCheck::ToolCalled { call, times } => {
                let hits: Vec<&CallAt> = calls.iter().filter(|c| call.matches(c.call)).collect();
                let n = u32::try_from(hits.len()).unwrap_or(u32::MAX);
                if times.holds(n) {
                    return Outcome::pass();
                }
                let near = calls
                    .iter()
                    .find(|c| c.call.name == call.name)
                    .map(|c| format!("; it was called with {}", c.call.arguments))
                    .unwrap_or_default();
                let turn = match times.max {
                    Some(m) if n > m => hits.get(m as usize).map(|c| c.turn),
                    _ => None,
                };
                Outcome::fail(turn, format!("{} called {n} times{near}", call.describe()))
            }
            AgentCheck::ToolNotCalled(call) => match calls.iter().find(|c| call.matches(c.call)) {
                None => Outcome::pass(),
                Some(c) => Outcome::fail(
                    Some(c.turn),
                    format!("{} was called, with {}", call.describe(), c.call.arguments),
                ),
            },
            AgentCheck::Calls { calls: want, order } => in_order(&calls, want, *order),
            AgentCheck::Turns(b) => {
                let n = t.turn_count();
                if b.holds(n) {
                    Outcome::pass()
                } else {
                    Outcome::fail(Some(n), format!("{n} turns, outside {}", show_bounds(b)))
                }
            }
            AgentCheck::ToolCallCount(b) => {
                let n = u32::try_from(calls.len()).unwrap_or(u32::MAX);
                if b.holds(n) {
                    return Outcome::pass();
                }
                let turn = b
                    .max
                    .filter(|m| n > *m)
                    .and_then(|m| calls.get(m as usize).map(|c| c.turn));
                Outcome::fail(turn, format!("{n} tool calls, outside {}", show_bounds(b)))
            }
            AgentCheck::FinalState(expected) => match &t.final_state {
                None => Outcome::error(None, "the episode kept no final state".into()),
                Some(s) => match first_difference(expected, s) {
                    None => Outcome::pass(),
                    Some(d) => Outcome::fail(None, format!("the final state differs {d}")),
                },
            },
            AgentCheck::StatePredicate(v) => match &t.final_state {
                None => Outcome::error(None, "the episode kept no final state".into()),
                Some(s) => {
                    let mut input = task.clone();
                    input.fields.insert("state".into(), s.clone());
                    let verdict = v.evaluate(&input, &s.to_string());
                    Outcome::of_verdict(
                        verdict,
                        None,
                        &format!("the final state fails {}", v.message),
                    )
                }
            },
            AgentCheck::EveryAssistantTurn(v) => {
                for (turn, m) in t.assistant_messages() {
                    let verdict = v.evaluate(task, &m.content);
                    if verdict != Verdict::Pass {
                        return Outcome::of_verdict(verdict, Some(turn), &v.message);
                    }
                }
                Outcome::pass()
            }
            AgentCheck::Transcript(v) => {
                let input = transcript_input(task, t);
                Outcome::of_verdict(v.evaluate(&input, t.last_text()), None, &v.message)
            }
        }
    }
}

/// The task's input with its transcript as the field `transcript`
/// ([`Transcript::to_value`]): what expressions and Python predicates over
/// a whole episode read (`input.transcript.tool_calls[0].name`).
pub fn transcript_input(task: &Input, t: &Transcript) -> Input {
    let mut input = task.clone();
    input.fields.insert("transcript".into(), t.to_value());
    input
}

fn show_bounds(b: &Bounds) -> String {
    match (b.min, b.max) {
        (Some(a), Some(z)) => format!("[{a}, {z}]"),
        (Some(a), None) => format!("≥ {a}"),
        (None, Some(z)) => format!("≤ {z}"),
        (None, None) => "any".into(),
    }
}

fn in_order(calls: &[CallAt<'_>], want: &[CallPattern], order: Order) -> Outcome {
    let last_turn = calls.last().map(|c| c.turn);
    match order {
        Order::Exact => {
            for (i, w) in want.iter().enumerate() {
                match calls.get(i) {
                    Some(c) if w.matches(c.call) => {}
                    Some(c) => {
                        return Outcome::fail(
                            Some(c.turn),
                            format!(
                                "call {} was `{}` with {}, expected {}",
                                i + 1,
                                c.call.name,
                                c.call.arguments,
                                w.describe()
                            ),
                        )
                    }
                    None => {
                        return Outcome::fail(
                            last_turn,
                            format!(
                                "only {} calls; call {} should be {}",
                                calls.len(),
                                i + 1,
                                w.describe()
                            ),
                        )
                    }
                }
            }
            match calls.get(want.len()) {
                None => Outcome::pass(),
                Some(c) => Outcome::fail(
                    Some(c.turn),
                    format!(
                        "an extra call `{}` after the {} expected",
                        c.call.name,
                        want.len()
                    ),
                ),
            }
        }
        Order::InOrder => {
            let mut at = 0;
            for w in want {
                match calls[at..].iter().position(|c| w.matches(c.call)) {
                    Some(p) => at += p + 1,
                    None => {
                        let after = at.checked_sub(1).map(|i| calls[i].turn);
                        return Outcome::fail(
                            after.or(last_turn),
                            format!("no call {} after the calls matched before it", w.describe()),
                        );
                    }
                }
            }
            Outcome::pass()
        }
        Order::AnyOrder => match unmatched(calls, want) {
            None => Outcome::pass(),
            Some(w) => Outcome::fail(
                last_turn,
                format!("no call left to match {}", want[w].describe()),
            ),
        },
    }
}

/// A maximum matching of expected calls to distinct actual calls (Kuhn's
/// augmenting paths: a greedy match can miss one when patterns overlap);
/// the first expected call left unmatched, if any.
fn unmatched(calls: &[CallAt<'_>], want: &[CallPattern]) -> Option<usize> {
    fn augment(
        w: usize,
        want: &[CallPattern],
        calls: &[CallAt<'_>],
        owner: &mut [Option<usize>],
        seen: &mut [bool],
    ) -> bool {
        for (c, call) in calls.iter().enumerate() {
            if seen[c] || !want[w].matches(call.call) {
                continue;
            }
            seen[c] = true;
            if owner[c].is_none_or(|o| augment(o, want, calls, owner, seen)) {
                owner[c] = Some(w);
                return true;
            }
        }
        false
    }
    let mut owner = vec![None; calls.len()];
    (0..want.len()).find(|&w| {
        let mut seen = vec![false; calls.len()];
        !augment(w, want, calls, &mut owner, &mut seen)
    })
}
