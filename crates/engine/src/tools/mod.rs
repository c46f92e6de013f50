//! Tools an agent under test may call (issue 34 item 3): each declared
//! with a name, a description and a JSON schema for its arguments, and
//! implemented by a mock in the configuration, a command, an MCP server
//! ([`mcp`]) or a Python function ([`hosted`]). A tool may read and change
//! the episode's state (a JSON document, [`crate::agent::environment`]).
//!
//! Two ways a call can go wrong are kept apart: a tool that answers with
//! an error (an unknown order, a refused argument) answers the agent — its
//! business, recorded as a tool message with `is_error` — while a tool
//! that cannot answer at all (a command that crashed, an MCP server that
//! died) is a [`ToolFailure`], which ends the episode as an error, never
//! as the agent's failure.

pub mod hosted;
pub mod mcp;

use probity_core::agent::matching::is_subset;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A tool as the agent is told of it (OpenAI's function declaration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON schema of the arguments (an object schema).
    #[serde(default = "empty_schema")]
    pub parameters: Value,
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

impl ToolSpec {
    /// The declaration in the shape of Chat Completions' `tools`.
    pub fn to_openai(&self) -> Value {
        json!({"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters,
        }})
    }
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The result as text (what the agent reads).
    pub text: String,
    /// The tool reported an error to the agent.
    pub is_error: bool,
}

/// A tool that could not answer: ends the episode as a tool error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tool `{tool}`: {message}")]
pub struct ToolFailure {
    pub tool: String,
    pub message: String,
}

/// Which episode a call belongs to: the task's id and the repetition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeId {
    pub task: String,
    pub repetition: u32,
}

/// A tool's implementation. `state` is the episode's environment state
/// (`Null` without one), which the tool may change.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        state: &mut Value,
        episode: &EpisodeId,
    ) -> Result<ToolReply, ToolFailure>;
}

/// One answer of a mock tool: chosen when the call's arguments contain
/// `when` (a JSON subset, per key; no `when` matches any call). The first
/// matching answer is given; `set` writes values into the state at JSON
/// pointers (`/orders/A1/status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockAnswer {
    #[serde(default)]
    pub when: Option<Value>,
    /// A string is given as is; any other JSON as its text.
    pub answer: Value,
    #[serde(default)]
    pub error: bool,
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
}

/// A tool answered from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MockTool {
    pub answers: Vec<MockAnswer>,
}

/// Set `value` at JSON pointer `pointer` in `state`, creating objects on
/// the way; an error names the pointer when a step is not an object.
pub(crate) fn set_pointer(state: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    if pointer.is_empty() {
        *state = value;
        return Ok(());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "`{pointer}` is not a JSON pointer (it must start with `/`)"
        ));
    };
    let keys: Vec<String> = rest
        .split('/')
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut at = state;
    for (i, k) in keys.iter().enumerate() {
        if at.is_null() {
            *at = Value::Object(Map::new());
        }
        let last = i + 1 == keys.len();
        at = match at {
            Value::Object(m) => {
                if last {
                    m.insert(k.clone(), value);
                    return Ok(());
                }
                m.entry(k.clone()).or_insert(Value::Null)
            }
            Value::Array(a) => match k.parse::<usize>().ok().filter(|&i| i < a.len()) {
                Some(i) if last => {
                    a[i] = value;
                    return Ok(());
                }
                Some(i) => &mut a[i],
                None => return Err(format!("`{pointer}`: no element `{k}`")),
            },
            _ => {
                return Err(format!(
                    "`{pointer}`: `{k}` is inside a value that is not an object"
                ))
            }
        };
    }
    Ok(())
}

/// A result value as the text an agent reads.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl Tool for MockTool {
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        state: &mut Value,
        _episode: &EpisodeId,
    ) -> Result<ToolReply, ToolFailure> {
        let Some(a) = self
            .answers
            .iter()
            .find(|a| a.when.as_ref().is_none_or(|w| is_subset(w, arguments)))
        else {
            return Ok(ToolReply {
                text: format!("error: no answer of `{name}` matches the arguments {arguments}"),
                is_error: true,
            });
        };
        for (pointer, value) in &a.set {
            set_pointer(state, pointer, value.clone()).map_err(|message| ToolFailure {
                tool: name.to_string(),
                message,
            })?;
        }
        Ok(ToolReply {
            text: as_text(&a.answer),
            is_error: a.error,
        })
    }
}

/// A tool run as a command: it reads `{"tool", "arguments", "state",
/// "task", "repetition"}` as JSON on stdin and writes either
/// `{"result": …, "is_error": bool, "state": …}` (`state` optional: the new
/// state) or plain text (the result) on stdout. A non-zero exit, a
/// timeout or output that is neither is a [`ToolFailure`] naming the
/// command's stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandTool {
    pub argv: Vec<String>,
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl Tool for CommandTool {
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        state: &mut Value,
        episode: &EpisodeId,
    ) -> Result<ToolReply, ToolFailure> {
        use tokio::io::AsyncWriteExt;
        let fail = |message: String| ToolFailure {
            tool: name.to_string(),
            message,
        };
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| fail("the command is empty".into()))?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(format!("cannot start `{program}`: {e}")))?;
        let payload = tool_request(name, arguments, state, episode);
        let mut stdin = child.stdin.take().expect("stdin was piped");
        let body = payload.to_string();
        let write = async move {
            let r = stdin.write_all(body.as_bytes()).await;
            drop(stdin);
            r
        };
        let run = async {
            // A command that exits without reading its input is not an
            // error of the write: its exit status says what happened.
            let _ = write.await;
            child.wait_with_output().await
        };
        let out = tokio::time::timeout(self.timeout, run)
            .await
            .map_err(|_| fail(format!("no answer within {:?}", self.timeout)))?
            .map_err(|e| fail(e.to_string()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(fail(format!(
                "`{program}` exited with {}: {}",
                out.status,
                err.trim().chars().take(500).collect::<String>()
            )));
        }
        Ok(read_reply(&String::from_utf8_lossy(&out.stdout), state))
    }
}

/// A command's (or a hosted function's) answer `text` as the reply:
/// `{"result": …, "is_error": bool, "state": …}` (`state`, when given,
/// replaces the episode's), or plain text, the result as it is.
pub(crate) fn read_reply(text: &str, state: &mut Value) -> ToolReply {
    let text = text.trim();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) if o.contains_key("result") => {
            if let Some(s) = o.get("state") {
                *state = s.clone();
            }
            ToolReply {
                text: as_text(&o["result"]),
                is_error: o.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }
        }
        _ => ToolReply {
            text: text.to_string(),
            is_error: false,
        },
    }
}

/// The request a command or hosted tool is sent for one call.
fn tool_request(name: &str, arguments: &Value, state: &Value, episode: &EpisodeId) -> Value {
    json!({"tool": name, "arguments": arguments, "state": state,
        "task": episode.task, "repetition": episode.repetition})
}

/// A tool implemented by the embedding program (a Python function:
/// [`super::hosted`]), sent a command tool's request and answering as a
/// command does. A function that raises or outlives `timeout` is a
/// [`ToolFailure`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostedTool {
    pub function: hosted::HostedFn,
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl Tool for HostedTool {
    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        state: &mut Value,
        episode: &EpisodeId,
    ) -> Result<ToolReply, ToolFailure> {
        let request = tool_request(name, arguments, state, episode);
        let text = self
            .function
            .call(request, self.timeout)
            .await
            .map_err(|message| ToolFailure {
                tool: name.to_string(),
                message,
            })?;
        Ok(read_reply(&text, state))
    }
}

/// The tools of an episode: declarations offered to the agent and their
/// implementations, by name.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<(ToolSpec, Arc<dyn Tool>)>,
}

impl Toolbox {
    pub fn new() -> Self {
        Toolbox::default()
    }

    /// Add a tool; an error when its name is taken.
    pub fn add(&mut self, spec: ToolSpec, tool: Arc<dyn Tool>) -> Result<(), String> {
        if self.get(&spec.name).is_some() {
            return Err(format!("two tools are named `{}`", spec.name));
        }
        self.tools.push((spec, tool));
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, t)| t)
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|(s, _)| s)
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The declarations as Chat Completions' `tools`.
    pub fn to_openai(&self) -> Value {
        Value::Array(self.specs().map(ToolSpec::to_openai).collect())
    }
}
