//! An agent's episode drawn as a conversation (issue 34 item 4): each
//! message with its role and turn, the agent's tool calls (name, arguments
//! as pretty JSON), the tools' results (marked when the tool answered with
//! an error), the failed checks named at the turn they failed, how the
//! episode ended and its final state. Shared by the HTML report's failing
//! outputs and `probity view`'s outputs page.
//!
//! Everything here is untrusted text (the agent's and the user's words,
//! tool arguments and results): it is plain data for the templates, which
//! escape every value they print (`template.rs`); nothing is markup. Each
//! piece is cut at [`PIECE_MAX_CHARS`] and the whole at
//! [`MESSAGES_SHOWN`] messages, saying so, so a huge argument or a
//! thousand-turn episode cannot make a page unreadable.

use crate::sanitize::truncate_chars;
use probity_core::agent::{Ending, Party, Transcript};
use probity_core::conversation::Role;
use serde::Serialize;
use std::collections::HashMap;

/// Characters of one piece (a message's text, a call's arguments, a
/// result, the final state) shown before it is cut.
pub(crate) const PIECE_MAX_CHARS: usize = 4000;

/// Messages of one episode shown; the rest are counted.
pub(crate) const MESSAGES_SHOWN: usize = 400;

/// An episode as the page draws it.
#[derive(Debug, Serialize)]
pub(crate) struct ShownTranscript {
    /// "3 turns · ended: stop by the agent".
    pub summary: String,
    pub messages: Vec<ShownMessage>,
    /// "… 12 more messages not shown", when cut.
    pub more: Option<String>,
    /// The environment's final state as pretty JSON, when there is one.
    pub final_state: Option<String>,
    /// Failed checks whose turn is not one of the shown messages' (no
    /// turn, or past the cut).
    pub failures_elsewhere: Vec<String>,
}

/// One message of the conversation.
#[derive(Debug, Serialize)]
pub(crate) struct ShownMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// The agent turn it belongs to (0 before the agent's first reply).
    pub turn: u32,
    pub content: String,
    pub tool_calls: Vec<ShownCall>,
    /// A tool result: the call it answers, and whether the tool answered
    /// with an error.
    pub answers: Option<String>,
    pub is_error: bool,
    /// On an agent message: the checks that failed at its turn, "name:
    /// reason".
    pub failed: Vec<String>,
}

/// One tool call of an agent message.
#[derive(Debug, Serialize)]
pub(crate) struct ShownCall {
    pub id: String,
    pub name: String,
    /// The arguments as pretty JSON, cut at [`PIECE_MAX_CHARS`].
    pub arguments: String,
}

/// A check's failure at a turn, as the report stores it: `(check name,
/// reason)` where an agent check's reason reads "turn T: …"
/// (`probity_core::agent::Outcome::describe`).
pub(crate) type Failure = (String, String);

/// The turn a stored reason names ("turn T: …"), if any.
fn turn_of_reason(reason: &str) -> Option<u32> {
    let rest = reason.strip_prefix("turn ")?;
    let (n, _) = rest.split_once(':')?;
    n.parse().ok()
}

fn cut(s: &str) -> String {
    let n = s.chars().count();
    if n <= PIECE_MAX_CHARS {
        s.to_string()
    } else {
        format!(
            "{}\n… cut at {PIECE_MAX_CHARS} of {n} characters",
            truncate_chars(s, PIECE_MAX_CHARS)
        )
    }
}

/// `v` with every string longer than [`PIECE_MAX_CHARS`] cut (saying
/// so), so one huge value does not hide the keys after it.
fn shorten(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) if s.chars().count() > PIECE_MAX_CHARS => Value::String(cut(s)),
        Value::Array(a) => Value::Array(a.iter().map(shorten).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), shorten(v))).collect()),
        other => other.clone(),
    }
}

/// `v` as pretty JSON, each long string cut, the whole cut at four
/// pieces' length.
fn pretty(v: &serde_json::Value) -> String {
    let v = shorten(v);
    let text = serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string());
    let n = text.chars().count();
    if n <= 4 * PIECE_MAX_CHARS {
        text
    } else {
        format!(
            "{}\n… cut at {} of {n} characters",
            truncate_chars(&text, 4 * PIECE_MAX_CHARS),
            4 * PIECE_MAX_CHARS
        )
    }
}

fn party(p: Party) -> &'static str {
    match p {
        Party::Agent => "the agent",
        Party::User => "the user",
        Party::Tool => "a tool",
        Party::Upstream => "the upstream",
    }
}

fn ending(e: &Ending) -> String {
    match e {
        Ending::Stop { by } => format!("stop by {}", party(*by)),
        Ending::UserDone => "the scripted user had nothing left to say".into(),
        Ending::TurnLimit { max_turns } => format!("the turn limit ({max_turns})"),
        Ending::Error { by, message } => {
            format!("an error by {} (not judged): {}", party(*by), cut(message))
        }
    }
}

/// Output `output` drawn as a conversation, when it is an episode's
/// transcript (the JSON an agent run stores); `None` for any other output.
/// `failures` are the sample's failed checks with their reasons: each is
/// shown on the agent message of the turn its reason names.
pub(crate) fn transcript(output: &str, failures: &[Failure]) -> Option<ShownTranscript> {
    if !output.trim_start().starts_with('{') {
        return None;
    }
    let t: Transcript = serde_json::from_str(output).ok()?;
    let mut at_turn: HashMap<u32, Vec<String>> = HashMap::new();
    let mut elsewhere = Vec::new();
    for (name, reason) in failures {
        let line = format!("{name}: {}", cut(reason));
        match turn_of_reason(reason) {
            Some(turn) if turn >= 1 && turn <= t.turn_count() => {
                at_turn.entry(turn).or_default().push(line)
            }
            _ => elsewhere.push(line),
        }
    }
    let errors: HashMap<usize, bool> = t
        .tool_outcomes
        .iter()
        .map(|o| (o.message, o.is_error))
        .collect();
    let shown = t.messages.len().min(MESSAGES_SHOWN);
    let messages: Vec<ShownMessage> = t.messages[..shown]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let turn = t.turn_of(i);
            let is_turn = m.role == Role::Assistant && turn >= 1;
            ShownMessage {
                role: m.role.as_str(),
                turn,
                content: cut(&m.content),
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| ShownCall {
                        id: truncate_chars(&c.id, 200).into_owned(),
                        name: truncate_chars(&c.name, 200).into_owned(),
                        arguments: pretty(&c.arguments),
                    })
                    .collect(),
                answers: m
                    .tool_call_id
                    .as_deref()
                    .map(|id| truncate_chars(id, 200).into_owned()),
                is_error: errors.get(&i).copied().unwrap_or(false),
                failed: if is_turn && t.turns.get(turn as usize - 1).map(|x| x.message) == Some(i) {
                    at_turn.remove(&turn).unwrap_or_default()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    let mut rest: Vec<(u32, Vec<String>)> = at_turn.into_iter().collect();
    rest.sort_by_key(|(turn, _)| *turn);
    elsewhere.extend(rest.into_iter().flat_map(|(_, v)| v));
    let turns = t.turn_count();
    Some(ShownTranscript {
        summary: format!(
            "{turns} turn{} · ended: {}",
            if turns == 1 { "" } else { "s" },
            ending(&t.ending)
        ),
        messages,
        more: (t.messages.len() > shown)
            .then(|| format!("… {} more messages not shown", t.messages.len() - shown)),
        final_state: t.final_state.as_ref().map(pretty),
        failures_elsewhere: elsewhere,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_names_its_turn() {
        assert_eq!(turn_of_reason("turn 3: `refund` was called"), Some(3));
        assert_eq!(turn_of_reason("the final state differs"), None);
        assert_eq!(turn_of_reason("turn x: no"), None);
    }

    #[test]
    fn an_output_that_is_not_a_transcript_is_left_alone() {
        assert!(transcript("hello", &[]).is_none());
        assert!(transcript("{\"answer\": 4}", &[]).is_none());
    }
}
