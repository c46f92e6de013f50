//! One episode (issue 34 item 2): the agent under test, a user and tools,
//! turn by turn, until the stop signal, the turn limit or an error; the
//! transcript is the output of one cell, and the checks judge it.
//!
//! The loop: the conversation starts with the agent's system prompt and
//! the scenario's messages; unless they end with a user message, the user
//! speaks first. Then each agent reply is one turn: its tool calls are run
//! in order (each result added as a tool message) and the agent is called
//! again; a reply without tool calls either carries the stop signal (the
//! agent ends the episode) or is answered by the user (whose message may
//! carry the stop signal). A tool the agent names that does not exist is
//! answered with an error message (the agent's mistake); a tool that
//! cannot answer, a failing upstream or user simulator end the episode as
//! an error, counted apart.

use super::blackbox::BlackBox;
use super::environment::Environment;
use super::user::{User, UserTurn};
use crate::agent::config::{CheckSpec, Scenario, ScenarioError};
use crate::checks::check::{Checked, Checks, Judging};
use crate::provider::call::Caller;
use crate::provider::types::{Message as WireMessage, Provider, Request, WireRequest};
use crate::tools::{EpisodeId, Toolbox};
use probity_core::agent::{
    first_spoiled, AgentCheck, Ending, Outcome, Party, Spoiled, ToolOutcome, Transcript, Turn,
    UserCheck,
};
use probity_core::conversation::{to_openai, Message, Role};
use probity_core::tensor::Cell;
use probity_core::validator::PreparedInput;
use probity_core::Input;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The agent under test.
#[derive(Clone)]
pub enum AgentUnderTest {
    /// A model called with the toolbox's tools (Chat Completions
    /// `tools`), its system prompt first, `params` (temperature, …) sent
    /// with each call.
    Model {
        provider: Arc<dyn Provider>,
        system: Option<String>,
        params: Map<String, Value>,
    },
    /// An agent that runs the episode itself and hands back its
    /// transcript.
    BlackBox(BlackBox),
}

/// Everything one episode needs; [`Episode::run`] runs one, [`Episode::judge`]
/// turns its transcript into cells. Cheap to share across cells.
pub struct Episode {
    pub agent: AgentUnderTest,
    pub user: User,
    pub tools: Toolbox,
    pub environment: Option<Arc<dyn Environment>>,
    /// Defaults for scenarios that do not say.
    pub max_turns: u32,
    pub stop: String,
    pub checks: Vec<(String, CheckSpec)>,
    pub user_checks: Vec<(String, UserCheck)>,
    /// The run's caller: the agent's and the simulated user's model calls
    /// go through it — counted in the run's calls and tokens, held to its
    /// rate limits and timeout, and retried on transient errors (a rate
    /// limit, a 5xx, a timeout) up to its `call_attempts` — so a transient
    /// upstream error in turn 3 is retried rather than ending the episode.
    /// `None`: each call made once, directly.
    pub caller: Option<Arc<Caller>>,
    gold: Mutex<HashMap<String, Result<Value, String>>>,
}

/// An episode judged: one outcome per check, in order, and whether the
/// user spoiled it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub outcomes: Vec<(String, Outcome)>,
    pub spoiled: Option<Spoiled>,
}

/// A judged episode's row: one cell per agent check, and the failures'
/// reasons by column ("turn T: …").
pub(crate) type JudgedRow = (Vec<Cell>, Vec<(usize, String)>);

impl Judged {
    /// The episode's cell over all its checks
    /// ([`probity_core::agent::episode_cell`]).
    pub fn cell(&self) -> Cell {
        probity_core::agent::episode_cell(self.outcomes.iter().map(|(_, o)| o.cell))
    }

    /// The row of a judged episode `t`: one cell per agent check with the
    /// failures' reasons ("turn T: …", by column), or the cause that keeps
    /// it from being judged — an episode that ended on an error (the
    /// upstream, a tool, the user simulator, a black box's harness) or
    /// that the simulated user spoiled. Neither is the agent's failure:
    /// their cells are errors, counted apart (docs/agents.md).
    pub fn row(&self, t: &Transcript) -> Result<JudgedRow, String> {
        if let Ending::Error { by, message } = &t.ending {
            return Err(format!("the episode broke ({by:?}): {message}"));
        }
        if let Some(s) = &self.spoiled {
            return Err(s.cause());
        }
        let cells = self.outcomes.iter().map(|(_, o)| o.cell).collect();
        let reasons = self
            .outcomes
            .iter()
            .enumerate()
            .filter(|(_, (_, o))| o.cell != Cell::Pass)
            .map(|(k, (_, o))| (k, o.describe()))
            .collect();
        Ok((cells, reasons))
    }

    /// The first failed check: "name: turn T: reason".
    pub fn first_failure(&self) -> Option<String> {
        self.outcomes
            .iter()
            .find(|(_, o)| o.cell != Cell::Pass)
            .map(|(n, o)| format!("{n}: {}", o.describe()))
    }
}

/// The conversation for providers that read [`Request::messages`]: whole
/// (a provider's `Message` is the conversation's, tool calls included).
fn flat(messages: &[Message]) -> Vec<WireMessage> {
    messages.to_vec()
}

/// What a judge (`[[verifier]]`) of an agent's run is shown: the task
/// with the episode's whole conversation as its `messages` (every role,
/// each tool call with its arguments, each tool result, in order), and as
/// the output the agent's last reply — the conversation stops before that
/// reply when it is the last message, so it is not shown twice. The
/// judge's preamble quotes and escapes both (`checks::judge_prompt`).
pub fn judge_view(task: &Input, t: &Transcript) -> (Input, String) {
    let last = t.turns.last().map(|turn| turn.message);
    let end = match last {
        Some(i) if i + 1 == t.messages.len() => i,
        _ => t.messages.len(),
    };
    let mut view = task.clone();
    let conversation = if end == 0 {
        // An episode with no message before the reply: the reply alone.
        to_openai(&t.messages)
    } else {
        to_openai(&t.messages[..end])
    };
    view.fields.insert("messages".into(), conversation);
    (view, t.last_text().to_string())
}

/// The validator and verifier columns of episode `t` of task `input`: the
/// validators read the agent's last reply, the verifiers the whole
/// transcript ([`judge_view`]).
pub(crate) async fn check_columns(
    checks: &Arc<Checks>,
    caller: &Caller,
    judging: &Judging,
    input: &PreparedInput<'_>,
    t: &Transcript,
    repetition: u32,
) -> Checked {
    let reply = t.last_text();
    let view = (!checks.verifiers.is_empty()).then(|| judge_view(input.input(), t));
    let judged = match &view {
        Some((task, text)) => (task, text.as_str()),
        None => (input.input(), reply),
    };
    checks
        .check_judged_as(caller, judging, input, reply, judged, repetition, 0)
        .await
}

struct Run<'a> {
    episode: &'a Episode,
    task: &'a Input,
    repetition: u32,
    scenario: Scenario,
    id: EpisodeId,
    t: Transcript,
    state: Value,
    user_said: usize,
}

fn stop_in(text: &str, stop: &str) -> bool {
    text.contains(stop)
}

impl Episode {
    /// An episode of `agent` with a scripted user, no tools, no
    /// environment and no checks; set the fields to add them.
    pub fn new(agent: AgentUnderTest) -> Episode {
        Episode {
            agent,
            user: User::Scripted,
            tools: Toolbox::new(),
            environment: None,
            max_turns: crate::agent::config::DEFAULT_MAX_TURNS,
            stop: crate::agent::config::DEFAULT_STOP.to_string(),
            checks: Vec::new(),
            user_checks: Vec::new(),
            caller: None,
            gold: Mutex::new(HashMap::new()),
        }
    }

    /// The scenario of `input` under this episode's defaults.
    pub fn scenario(&self, input: &Input) -> Result<Scenario, ScenarioError> {
        Scenario::from_input(input, self.max_turns, &self.stop)
    }

    /// Run one episode of task `input` (repetition `repetition`: each is
    /// independent, from a fresh state). Never fails on what happens in
    /// the episode — that is in the transcript's [`Ending`]; only a
    /// scenario that cannot be read is an error (a configuration error,
    /// not a cell).
    pub async fn run(&self, input: &Input, repetition: u32) -> Result<Transcript, ScenarioError> {
        let scenario = self.scenario(input)?;
        if let AgentUnderTest::BlackBox(b) = &self.agent {
            return Ok(b.run(input, &scenario, repetition).await);
        }
        let id = EpisodeId {
            task: input.id.clone(),
            repetition,
        };
        let mut run = Run {
            episode: self,
            task: input,
            repetition,
            scenario,
            id,
            t: Transcript::from_messages(Vec::new(), Ending::UserDone),
            state: Value::Null,
            user_said: 0,
        };
        run.t.ending = run.play().await;
        if let Some(env) = &self.environment {
            match env.end(&run.id, std::mem::take(&mut run.state)).await {
                Ok(s) => run.t.final_state = Some(s),
                Err(message) if !run.t.ending.is_error() => {
                    run.t.ending = Ending::Error {
                        by: Party::Tool,
                        message: format!("the environment's final state: {message}"),
                    }
                }
                Err(_) => {}
            }
        }
        Ok(run.t)
    }

    /// One cell of a run: episode `repetition` of task `input`, run and
    /// judged. What the runner calls per (input, repetition): the
    /// transcript is the stored output (`serde_json` of it; its
    /// [`Transcript::last_text`] is what single-output validators read),
    /// `judged.outcomes[k]` is check k's cell with the turn and reason, and
    /// `judged.spoiled` marks an episode the user spoiled (kept out of the
    /// agent's rate: [`probity_core::agent::AgentStats`]). An error is a
    /// scenario that cannot be read: a configuration error naming the
    /// input and field, not a cell.
    pub async fn cell(
        &self,
        input: &Input,
        repetition: u32,
    ) -> Result<(Transcript, Judged), ScenarioError> {
        let t = self.run(input, repetition).await?;
        let j = self.judge(input, &t).await;
        Ok((t, j))
    }

    /// The state the task's gold actions reach from a fresh environment
    /// (computed once per task): τ²'s expected database. Episode id: the
    /// task's id with `#gold`, repetition 0.
    pub async fn gold_state(&self, input: &Input) -> Result<Value, String> {
        if let Some(v) = self.gold.lock().expect("gold cache").get(&input.id) {
            return v.clone();
        }
        let r = self.replay_gold(input).await;
        self.gold
            .lock()
            .expect("gold cache")
            .insert(input.id.clone(), r.clone());
        r
    }

    async fn replay_gold(&self, input: &Input) -> Result<Value, String> {
        let scenario = self.scenario(input).map_err(|e| e.to_string())?;
        let env = self
            .environment
            .as_ref()
            .ok_or("a gold state needs an [environment]")?;
        let id = EpisodeId {
            task: format!("{}#gold", input.id),
            repetition: 0,
        };
        let mut state = env.begin(&id).await?;
        for a in &scenario.gold_actions {
            let tool = self
                .tools
                .get(&a.name)
                .ok_or_else(|| format!("gold action `{}`: no such tool", a.name))?;
            let args = a.arguments.clone().unwrap_or_else(|| json!({}));
            tool.call(&a.name, &args, &mut state, &id)
                .await
                .map_err(|e| format!("gold action `{}`: {e}", a.name))?;
        }
        env.end(&id, state).await
    }

    /// The checks of task `input`, the gold state filled in.
    pub(crate) async fn checks_for(
        &self,
        input: &Input,
    ) -> Vec<(String, Result<AgentCheck, String>)> {
        let mut out = Vec::with_capacity(self.checks.len());
        for (name, spec) in &self.checks {
            let c = match spec {
                CheckSpec::Ready(c) => Ok(c.clone()),
                CheckSpec::GoldState => self.gold_state(input).await.map(AgentCheck::FinalState),
            };
            out.push((name.clone(), c));
        }
        out
    }

    /// Judge episode `t` of task `input`: one [`Outcome`] per check (a
    /// check that cannot be built — the gold replay failed — is an `Error`
    /// cell naming why), and the user check it broke, if any.
    pub async fn judge(&self, input: &Input, t: &Transcript) -> Judged {
        let outcomes = self
            .checks_for(input)
            .await
            .into_iter()
            .map(|(name, c)| {
                let o = match c {
                    Ok(c) => c.evaluate(input, t),
                    Err(reason) => Outcome {
                        cell: Cell::Error,
                        turn: None,
                        reason: Some(format!("the check could not be built: {reason}")),
                    },
                };
                (name, o)
            })
            .collect();
        Judged {
            outcomes,
            spoiled: first_spoiled(&self.user_checks, input, t),
        }
    }
}

impl Run<'_> {
    fn push(&mut self, m: Message) -> usize {
        self.t.messages.push(m);
        self.t.messages.len() - 1
    }

    /// The user's next message; `Some(ending)` when the episode ends.
    async fn user_speaks(&mut self) -> Option<Ending> {
        let said = self
            .episode
            .user
            .next(
                self.task,
                self.repetition,
                &self.scenario,
                &self.t.messages,
                self.user_said,
                self.episode.caller.as_deref(),
            )
            .await;
        match said {
            Err(message) => Some(Ending::Error {
                by: Party::User,
                message,
            }),
            Ok(UserTurn::Done) => Some(Ending::UserDone),
            Ok(UserTurn::Says(text)) => {
                self.user_said += 1;
                let stop = stop_in(&text, &self.scenario.stop);
                self.push(Message::text(Role::User, text));
                stop.then_some(Ending::Stop { by: Party::User })
            }
        }
    }

    async fn play(&mut self) -> Ending {
        let AgentUnderTest::Model {
            provider,
            system,
            params,
        } = &self.episode.agent
        else {
            unreachable!("black-box agents are run before the loop");
        };
        if let Some(env) = &self.episode.environment {
            match env.begin(&self.id).await {
                Ok(s) => self.state = s,
                Err(message) => {
                    return Ending::Error {
                        by: Party::Tool,
                        message: format!("the environment could not start: {message}"),
                    }
                }
            }
        }
        if let Some(s) = system {
            self.push(Message::text(Role::System, s.clone()));
        }
        for m in self.scenario.messages.clone() {
            self.push(m);
        }
        if self.t.messages.last().is_none_or(|m| m.role != Role::User) {
            if let Some(end) = self.user_speaks().await {
                return end;
            }
        }
        let mut params = params.clone();
        if !self.episode.tools.is_empty() {
            params.insert("tools".into(), self.episode.tools.to_openai());
        }
        loop {
            if self.t.turn_count() >= self.scenario.max_turns {
                return Ending::TurnLimit {
                    max_turns: self.scenario.max_turns,
                };
            }
            let reply = match self.agent_turn(provider.as_ref(), &params).await {
                Ok(m) => m,
                Err(end) => return end,
            };
            if !reply.tool_calls.is_empty() {
                if let Err(end) = self.run_tools(&reply).await {
                    return end;
                }
                continue;
            }
            if stop_in(&reply.content, &self.scenario.stop) {
                return Ending::Stop { by: Party::Agent };
            }
            if let Some(end) = self.user_speaks().await {
                return end;
            }
        }
    }

    /// Call the agent once; its message is added as the next turn.
    async fn agent_turn(
        &mut self,
        provider: &dyn Provider,
        params: &Map<String, Value>,
    ) -> Result<Message, Ending> {
        let request = Request {
            messages: flat(&self.t.messages),
            repetition: self.repetition,
            attempt: 0,
            input: self.task.clone(),
        };
        let wire = WireRequest {
            messages: match to_openai(&self.t.messages) {
                Value::Array(a) => a,
                _ => Vec::new(),
            },
            params: params.clone(),
        };
        let start = Instant::now();
        let upstream = |message: String| Ending::Error {
            by: Party::Upstream,
            message,
        };
        let answer = match &self.episode.caller {
            Some(caller) => caller
                .call_wire(provider, &request, &wire, None)
                .await
                .map_err(|(e, tries)| {
                    upstream(match tries {
                        1 => e.to_string(),
                        n => format!("{e} (after {n} tries)"),
                    })
                })?,
            None => {
                let a = provider
                    .complete_wire(&request, &wire)
                    .await
                    .map_err(|e| upstream(e.to_string()))?;
                crate::provider::call::Answer {
                    text: a.completion.text,
                    latency_ms: None,
                    input_tokens: a.completion.input_tokens,
                    output_tokens: a.completion.output_tokens,
                    attempts: 1,
                    meta: a.meta.map(Arc::new),
                    cut: a.cut,
                }
            }
        };
        let latency_ms = start.elapsed().as_secs_f64() * 1e3;
        let reply = match &answer.meta {
            None => Message::text(Role::Assistant, answer.text.clone()),
            Some(meta) => {
                let v = json!({"role": "assistant", "content": meta.content,
                    "tool_calls": meta.tool_calls.clone().unwrap_or(Value::Null)});
                let v = match v {
                    Value::Object(mut o) => {
                        if o["tool_calls"].is_null() {
                            o.remove("tool_calls");
                        }
                        Value::Object(o)
                    }
                    other => other,
                };
                Message::from_openai(self.t.messages.len(), &v).map_err(|e| Ending::Error {
                    by: Party::Upstream,
                    message: format!("the agent's answer cannot be read: {e}"),
                })?
            }
        };
        let index = self.push(reply.clone());
        self.t.turns.push(Turn {
            message: index,
            latency_ms: Some(latency_ms),
            input_tokens: answer.input_tokens,
            output_tokens: answer.output_tokens,
        });
        Ok(reply)
    }

    async fn run_tools(&mut self, reply: &Message) -> Result<(), Ending> {
        for call in &reply.tool_calls {
            let start = Instant::now();
            let (text, is_error) = match self.episode.tools.get(&call.name) {
                None => (
                    format!("error: there is no tool named `{}`", call.name),
                    true,
                ),
                Some(tool) => {
                    let r = tool
                        .call(&call.name, &call.arguments, &mut self.state, &self.id)
                        .await
                        .map_err(|e| Ending::Error {
                            by: Party::Tool,
                            message: e.to_string(),
                        })?;
                    (r.text, r.is_error)
                }
            };
            let index = self.push(Message::tool_result(call.id.clone(), text));
            self.t.tool_outcomes.push(ToolOutcome {
                call_id: call.id.clone(),
                message: index,
                is_error,
                latency_ms: Some(start.elapsed().as_secs_f64() * 1e3),
            });
        }
        Ok(())
    }
}
