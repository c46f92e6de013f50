//! The transcript of one episode: everything an agent under test, its user
//! and its tools said and did, in order, with the turn each belongs to,
//! token counts, latencies, the environment's final state and how the
//! episode ended.
//!
//! A *turn* is one reply of the agent under test (one assistant message),
//! numbered from 1; a tool call belongs to the turn of the assistant
//! message that made it, and a user message to the turn it answers (0 for
//! what was said before the agent's first reply).

use crate::conversation::{Message, Role, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who ended the episode, or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Party {
    /// The agent under test.
    Agent,
    /// The user (scripted or simulated).
    User,
    /// A tool's implementation (a command, an MCP server).
    Tool,
    /// The model or endpoint behind the agent: rate limits, 5xx, dead
    /// servers — the road to the agent, not the agent.
    Upstream,
}

/// How an episode ended. Only [`Ending::Error`] keeps the episode from
/// being judged: its checks are `Error` cells, counted apart from the
/// agent's failures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Ending {
    /// A party said the stop signal (the agent finished, the user said
    /// goodbye).
    Stop { by: Party },
    /// The agent answered without a tool call and a scripted user had no
    /// turn left.
    UserDone,
    /// `max_turns` agent turns were taken without a stop.
    TurnLimit { max_turns: u32 },
    /// Something other than the agent's behaviour broke the episode: the
    /// upstream, a tool's implementation, the user simulator, or a
    /// black-box agent that crashed or handed back no transcript.
    Error { by: Party, message: String },
}

impl Ending {
    /// Whether the episode ended on an error (not judged).
    pub fn is_error(&self) -> bool {
        matches!(self, Ending::Error { .. })
    }
}

/// One reply of the agent: which message it is, what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Turn {
    /// Index of the assistant message in [`Transcript::messages`].
    pub message: usize,
    /// Wall time of the call that produced it, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}

/// What a tool answered to one call (the tool message carries the text;
/// this says whether it was an error and how long it took).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// The call answered ([`ToolCall::id`]).
    pub call_id: String,
    /// Index of the tool message in [`Transcript::messages`].
    pub message: usize,
    /// The tool reported an error (a refused argument, an unknown
    /// reservation): the agent's business, not an infrastructure failure.
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
}

/// The stop signal an episode ends on unless its configuration names
/// another: said by the agent (it is done) or the user (goodbye).
pub const DEFAULT_STOP: &str = "###STOP###";

/// One episode, whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Every message in order: the initial messages, the user's, the
    /// agent's (with their tool calls) and the tools' results.
    pub messages: Vec<Message>,
    /// The agent's replies, in order (turn t is `turns[t − 1]`).
    pub turns: Vec<Turn>,
    /// The tools' answers, in order.
    #[serde(default)]
    pub tool_outcomes: Vec<ToolOutcome>,
    /// The environment's state when the episode ended (`None` without an
    /// environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_state: Option<Value>,
    pub ending: Ending,
}

/// A tool call with the turn that made it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallAt<'a> {
    /// The agent turn (from 1).
    pub turn: u32,
    pub call: &'a ToolCall,
}

impl Transcript {
    /// A transcript of `messages` that ended as `ending`, its turns read
    /// off the assistant messages (no latency or tokens known: a black-box
    /// agent's transcript).
    pub fn from_messages(messages: Vec<Message>, ending: Ending) -> Transcript {
        let turns = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, _)| Turn {
                message: i,
                ..Turn::default()
            })
            .collect();
        Transcript {
            messages,
            turns,
            tool_outcomes: Vec::new(),
            final_state: None,
            ending,
        }
    }

    /// One answer in its conversation, as `probity serve` sees it (issue
    /// 34 item 9c): the request's `history` is context only — its
    /// assistant messages are not turns, their tool calls already happened
    /// — and `answer` is the one turn, so a check over tool calls judges
    /// what this answer calls. The episode "ended" with the answer
    /// ([`Ending::UserDone`]).
    pub fn answer(mut history: Vec<Message>, answer: Message) -> Transcript {
        history.push(answer);
        Transcript {
            turns: vec![Turn {
                message: history.len() - 1,
                ..Turn::default()
            }],
            messages: history,
            tool_outcomes: Vec::new(),
            final_state: None,
            ending: Ending::UserDone,
        }
    }

    /// The number of agent turns.
    pub fn turn_count(&self) -> u32 {
        u32::try_from(self.turns.len()).unwrap_or(u32::MAX)
    }

    /// The turn message `index` belongs to: the number of assistant
    /// messages at or before it (a user message before the first reply is
    /// turn 0; a tool result belongs to the turn that called it).
    pub fn turn_of(&self, index: usize) -> u32 {
        let n = self.turns.partition_point(|t| t.message <= index);
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The agent's tool calls in order, each with its turn.
    pub fn tool_calls(&self) -> impl Iterator<Item = CallAt<'_>> + '_ {
        self.turns.iter().enumerate().flat_map(move |(t, turn)| {
            let turn_no = u32::try_from(t + 1).unwrap_or(u32::MAX);
            self.messages[turn.message]
                .tool_calls
                .iter()
                .map(move |call| CallAt {
                    turn: turn_no,
                    call,
                })
        })
    }

    /// The agent's messages in order, with their turn.
    pub fn assistant_messages(&self) -> impl Iterator<Item = (u32, &Message)> + '_ {
        self.turns.iter().enumerate().map(move |(t, turn)| {
            (
                u32::try_from(t + 1).unwrap_or(u32::MAX),
                &self.messages[turn.message],
            )
        })
    }

    /// The user's messages in order, with the turn each answers.
    pub fn user_messages(&self) -> impl Iterator<Item = (u32, &Message)> + '_ {
        self.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User)
            .map(move |(i, m)| (self.turn_of(i), m))
    }

    /// The text of the agent's last message (what a single-output check
    /// reads: empty when the agent never spoke).
    pub fn last_text(&self) -> &str {
        self.turns
            .last()
            .map(|t| self.messages[t.message].content.as_str())
            .unwrap_or("")
    }

    /// Tokens in and out summed over the turns that reported them.
    pub fn tokens(&self) -> (u64, u64) {
        self.turns.iter().fold((0, 0), |(i, o), t| {
            (
                i + t.input_tokens.unwrap_or(0),
                o + t.output_tokens.unwrap_or(0),
            )
        })
    }

    /// The transcript as data for expressions and Python predicates:
    /// `{messages: [OpenAI-shaped message], tool_calls: [{turn, id, name,
    /// arguments, result, is_error}], turns, final_state, ending}`.
    pub fn to_value(&self) -> Value {
        let results: std::collections::HashMap<&str, (&str, bool)> = self
            .tool_outcomes
            .iter()
            .map(|o| {
                (
                    o.call_id.as_str(),
                    (self.messages[o.message].content.as_str(), o.is_error),
                )
            })
            .collect();
        let calls: Vec<Value> = self
            .tool_calls()
            .map(|c| {
                let (result, is_error) = results
                    .get(c.call.id.as_str())
                    .map(|(r, e)| (Value::String((*r).to_string()), *e))
                    .unwrap_or((Value::Null, false));
                serde_json::json!({
                    "turn": c.turn, "id": c.call.id, "name": c.call.name,
                    "arguments": c.call.arguments, "result": result, "is_error": is_error,
                })
            })
            .collect();
        serde_json::json!({
            "messages": crate::conversation::to_openai(&self.messages),
            "tool_calls": calls,
            "turns": self.turn_count(),
            "final_state": self.final_state,
            "ending": self.ending,
        })
    }
}
