//! A simulated tool-using agent and a simulated user with known error
//! rates (issue 34 item 8), for the demo without a key and for tests that
//! check probity's statistics against the truth.
//!
//! [`GoldAgent`] follows its task's gold actions (the scenario's
//! `gold_actions`), one tool call per turn, then says it is done — except
//! that, independently per episode, with the rates of [`AgentErrors`]
//! (each multiplied by the task's `difficulty` field, default 1, capped at
//! 1: hard tasks among easy ones):
//!
//! * **wrong_tool** — its first write action calls `wrong_tool` instead
//!   (a read tool, same arguments);
//! * **wrong_argument** — its first write action has every top-level
//!   string argument changed (an id that does not exist);
//! * **forbidden_write** — after its plan it makes one more write, the
//!   input's `forbidden_action` (`{name, arguments}`) or the configured
//!   one;
//! * **stop_early** — it stops before its last write action.
//!
//! A write action is one whose tool is in `writes`. On a task whose gold
//! actions include a write that changes the state, each event makes the
//! final state differ from the gold state, so the episode passes the
//! state check with probability Π_e (1 − min(1, d·q_e)), d the task's
//! difficulty.
//!
//! [`SimUser`] plays the user: it says the scenario's `instructions`,
//! then, after the agent's reply, the stop signal. Independently per
//! episode, with probability `stop_early` it hangs up at once (its first
//! message is the stop signal: the agent never gets to act), and with
//! probability `leak` its first message also reveals the input's `secret`
//! field. Both spoil the episode; neither depends on the agent.
//!
//! Both are pure functions of `(seed, task id, repetition)` and the
//! conversation, stable across platforms (`rng.rs`).

use super::rng::{Fnv, SplitMix64};
use crate::provider::types::{
    AnswerMeta, Completion, Provider, ProviderError, Request, WireAnswer, WireRequest,
};
use probity_core::agent::CallPattern;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Per-episode error rates of [`GoldAgent`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentErrors {
    pub wrong_tool: f64,
    pub wrong_argument: f64,
    pub forbidden_write: f64,
    pub stop_early: f64,
}

impl AgentErrors {
    /// The probability an episode of a task of difficulty `d` has none of
    /// the events: Π_e (1 − min(1, d·q_e)).
    pub fn clean_probability(&self, d: f64) -> f64 {
        [
            self.wrong_tool,
            self.wrong_argument,
            self.forbidden_write,
            self.stop_early,
        ]
        .iter()
        .map(|q| 1.0 - (d * q).min(1.0))
        .product()
    }
}

/// Which events fired in one episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fired {
    pub wrong_tool: bool,
    pub wrong_argument: bool,
    pub forbidden_write: bool,
    pub stop_early: bool,
}

/// The simulated agent.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldAgent {
    pub seed: u64,
    pub errors: AgentErrors,
    /// Tools that change the state.
    pub writes: Vec<String>,
    /// The tool called instead of a write (wrong_tool).
    pub wrong_tool: String,
    /// The extra write of forbidden_write, unless the input names one.
    pub forbidden_action: Option<CallPattern>,
}

fn rng_for(seed: u64, salt: &str, task: &str, repetition: u32) -> SplitMix64 {
    let h = Fnv::new()
        .u64(seed)
        .bytes(salt.as_bytes())
        .bytes(task.as_bytes())
        .u64(u64::from(repetition))
        .finish();
    SplitMix64::new(h)
}

fn difficulty(input: &probity_core::Input) -> f64 {
    input
        .fields
        .get("difficulty")
        .and_then(|v| v.as_f64())
        .filter(|d| d.is_finite() && *d >= 0.0)
        .unwrap_or(1.0)
}

fn bad(message: String) -> ProviderError {
    ProviderError::BadResponse(message)
}

impl GoldAgent {
    /// The events of episode `repetition` of `input`.
    pub fn fired(&self, input: &probity_core::Input, repetition: u32) -> Fired {
        let mut r = rng_for(self.seed, "agent", &input.id, repetition);
        let d = difficulty(input);
        let e = &self.errors;
        Fired {
            wrong_tool: r.chance((d * e.wrong_tool).min(1.0)),
            wrong_argument: r.chance((d * e.wrong_argument).min(1.0)),
            forbidden_write: r.chance((d * e.forbidden_write).min(1.0)),
            stop_early: r.chance((d * e.stop_early).min(1.0)),
        }
    }

    /// The calls the agent makes in episode `repetition` of `input`.
    pub fn plan(
        &self,
        input: &probity_core::Input,
        repetition: u32,
    ) -> Result<Vec<CallPattern>, String> {
        let gold: Vec<CallPattern> = match input
            .fields
            .get("scenario")
            .and_then(|s| s.get("gold_actions").cloned())
        {
            None => Vec::new(),
            Some(v) => serde_json::from_value(v)
                .map_err(|e| format!("input `{}`: `scenario.gold_actions`: {e}", input.id))?,
        };
        let f = self.fired(input, repetition);
        let is_write = |c: &CallPattern| self.writes.contains(&c.name);
        let mut plan = gold;
        if f.stop_early {
            if let Some(last) = plan.iter().rposition(is_write) {
                plan.truncate(last);
            }
        }
        if let Some(first) = plan.iter().position(is_write) {
            if f.wrong_argument {
                if let Some(Value::Object(args)) = plan[first].arguments.as_mut() {
                    for v in args.values_mut() {
                        if let Value::String(s) = v {
                            s.push_str("_WRONG");
                        }
                    }
                }
            }
            if f.wrong_tool {
                plan[first].name = self.wrong_tool.clone();
            }
        }
        if f.forbidden_write {
            let own = input
                .fields
                .get("forbidden_action")
                .map(serde_json::from_value::<CallPattern>)
                .transpose()
                .map_err(|e| format!("input `{}`: `forbidden_action`: {e}", input.id))?;
            if let Some(a) = own.or_else(|| self.forbidden_action.clone()) {
                plan.push(a);
            }
        }
        Ok(plan)
    }
}

/// The number of tool calls the assistant has made in `messages`.
fn calls_made(messages: &[Value]) -> usize {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["tool_calls"].as_array().map_or(0, Vec::len))
        .sum()
}

#[async_trait::async_trait]
impl Provider for GoldAgent {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        self.complete_wire(request, &WireRequest::default())
            .await
            .map(|a| a.completion)
    }

    fn fingerprint(&self) -> String {
        format!(
            "sim-agent:{}:{:?}:{:?}:{}",
            self.seed, self.errors, self.writes, self.wrong_tool
        )
    }

    fn forwards(&self, field: &str) -> bool {
        field == "tools"
    }

    async fn complete_wire(
        &self,
        request: &Request,
        wire: &WireRequest,
    ) -> Result<WireAnswer, ProviderError> {
        let plan = self.plan(&request.input, request.repetition).map_err(bad)?;
        let k = calls_made(&wire.messages);
        let (content, calls) = match plan.get(k) {
            Some(c) => {
                let args = c.arguments.clone().unwrap_or_else(|| json!({}));
                let call = json!([{"id": format!("call_{k}"), "type": "function",
                    "function": {"name": c.name, "arguments": args.to_string()}}]);
                (None, Some(call))
            }
            None => (Some("All done.".to_string()), None),
        };
        let text = AnswerMeta::checked_text(content.as_deref(), calls.as_ref());
        Ok(WireAnswer {
            completion: Completion {
                text,
                input_tokens: Some(wire.messages.len() as u64 * 20),
                output_tokens: Some(12),
            },
            meta: Some(AnswerMeta {
                finish_reason: Some(
                    if calls.is_some() {
                        "tool_calls"
                    } else {
                        "stop"
                    }
                    .into(),
                ),
                content,
                tool_calls: calls,
                model: Some("sim-agent".into()),
                ..AnswerMeta::default()
            }),
            cut: false,
        })
    }
}

/// Per-episode misbehaviour rates of [`SimUser`].
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UserErrors {
    pub stop_early: f64,
    pub leak: f64,
}

/// The simulated user.
#[derive(Debug, Clone, PartialEq)]
pub struct SimUser {
    pub seed: u64,
    pub errors: UserErrors,
    pub stop: String,
}

impl SimUser {
    /// (stopped early, leaked) in episode `repetition` of `task`.
    pub fn fired(&self, task: &str, repetition: u32) -> (bool, bool) {
        let mut r = rng_for(self.seed, "user", task, repetition);
        (r.chance(self.errors.stop_early), r.chance(self.errors.leak))
    }
}

#[async_trait::async_trait]
impl Provider for SimUser {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        let input = &request.input;
        // Its own earlier messages come back as the assistant's.
        let spoken = request
            .messages
            .iter()
            .filter(|m| m.role == crate::provider::types::Role::Assistant)
            .count();
        let (early, leak) = self.fired(&input.id, request.repetition);
        let text = if spoken > 0 {
            format!("Thank you. {}", self.stop)
        } else if early {
            format!("Never mind. {}", self.stop)
        } else {
            let ask = input
                .fields
                .get("scenario")
                .and_then(|s| {
                    s.get("instructions")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .ok_or_else(|| {
                    bad(format!(
                        "input `{}` has no `scenario.instructions`",
                        input.id
                    ))
                })?;
            match (leak, input.fields.get("secret")) {
                (true, Some(Value::String(s))) => format!("{ask} (My password is {s}.)"),
                _ => ask,
            }
        };
        Ok(Completion {
            text,
            input_tokens: None,
            output_tokens: None,
        })
    }

    fn fingerprint(&self) -> String {
        format!("sim-user:{}:{:?}", self.seed, self.errors)
    }
}

/// `provider = "sim-agent"` (an `[agent]` table): the simulated agent of
/// `probity init agent`, on the built-in shop unless told otherwise.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimAgentConfig {
    /// Pin it to repeat a run to the digit; drawn afresh for each run
    /// otherwise, as a real model samples afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Its per-episode error rates (docs/agents.md has the truth they make).
    #[serde(default)]
    pub errors: AgentErrors,
    /// Tools that change the state (default: the shop's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<Vec<String>>,
    /// The read tool called instead of a write (default `get_order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoy: Option<String>,
    /// Its forbidden write (default: the shop's refund of order A5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbidden_action: Option<CallPattern>,
}

impl SimAgentConfig {
    /// The agent, its rates checked (each a probability).
    pub fn build(&self) -> Result<GoldAgent, String> {
        let e = &self.errors;
        for (name, q) in [
            ("wrong_tool", e.wrong_tool),
            ("wrong_argument", e.wrong_argument),
            ("forbidden_write", e.forbidden_write),
            ("stop_early", e.stop_early),
        ] {
            if !(0.0..=1.0).contains(&q) {
                return Err(format!(
                    "errors.{name} = {q} must be a probability from 0 to 1"
                ));
            }
        }
        Ok(GoldAgent {
            seed: self.seed.unwrap_or_else(rand::random),
            errors: self.errors,
            writes: self
                .writes
                .clone()
                .unwrap_or_else(|| super::shop::WRITES.iter().map(|s| s.to_string()).collect()),
            wrong_tool: self.decoy.clone().unwrap_or_else(|| "get_order".into()),
            forbidden_action: Some(
                self.forbidden_action
                    .clone()
                    .unwrap_or_else(super::shop::forbidden_action),
            ),
        })
    }
}

/// `provider = "sim-user"` (a `[user]` table): the simulated user, who
/// may spoil an episode (hang up at once, leak a secret) at known rates.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimUserConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub errors: UserErrors,
    /// Its stop signal (default the episode's default, `###STOP###`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

impl SimUserConfig {
    /// The user, its rates checked.
    pub fn build(&self) -> Result<SimUser, String> {
        let e = &self.errors;
        for (name, q) in [("stop_early", e.stop_early), ("leak", e.leak)] {
            if !(0.0..=1.0).contains(&q) {
                return Err(format!(
                    "errors.{name} = {q} must be a probability from 0 to 1"
                ));
            }
        }
        Ok(SimUser {
            seed: self.seed.unwrap_or_else(rand::random),
            errors: self.errors,
            stop: self
                .stop
                .clone()
                .unwrap_or_else(|| probity_core::agent::DEFAULT_STOP.into()),
        })
    }
}
