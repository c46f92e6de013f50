//! Tools and black-box agents implemented by the program that embeds the
//! engine — the Python package's functions (`probity.AgentExperiment`'s
//! `tools` and `agent`). A configuration names them (`[[tool]] python =
//! "…"`, `[agent] python = "…"`); the embedding program hands the engine
//! their implementations ([`HostedFunctions`]) before the run. They speak
//! the command protocols, as JSON in and text out: a tool is sent
//! [`super::CommandTool`]'s request and answers as a command does,
//! an agent is sent [`crate::agent::blackbox`]'s request and answers its
//! transcript.
//!
//! A function that raises, or does not answer within its timeout, is a
//! harness failure (the episode ends as an error, counted apart); a tool
//! that wants the agent to read its error answers `is_error` instead (the
//! Python package does so for an exception unless the tool says
//! otherwise).

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A function of the embedding program: one JSON request in, its answer
/// as text out, or why it has none (an exception's type and message).
/// Dropping the future abandons the call.
#[async_trait::async_trait]
pub trait Hosted: Send + Sync {
    async fn call(&self, request: Value) -> Result<String, String>;
}

/// A hosted function, with the name the configuration gives it.
#[derive(Clone)]
pub struct HostedFn {
    /// What the configuration calls it (a Python function's qualified
    /// name): named in messages.
    pub name: String,
    pub function: Arc<dyn Hosted>,
}

impl std::fmt::Debug for HostedFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedFn")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl PartialEq for HostedFn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.function, &other.function)
    }
}

impl HostedFn {
    /// Call it with `request`, abandoning the call after `timeout`.
    pub async fn call(&self, request: Value, timeout: Duration) -> Result<String, String> {
        match tokio::time::timeout(timeout, self.function.call(request)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "the Python function `{}` did not answer within {timeout:?}",
                self.name
            )),
        }
    }
}

/// The implementations the embedding program gives: the tools' by tool
/// name, and the black-box agent's.
#[derive(Debug, Clone, Default)]
pub struct HostedFunctions {
    pub tools: BTreeMap<String, HostedFn>,
    pub agent: Option<HostedFn>,
}

/// Why a configuration's Python function has no implementation: it was
/// run from outside the Python package.
pub fn missing(what: &str, function: &str) -> String {
    format!(
        "{what} is the Python function `{function}`: run it from the Python package \
         (probity.AgentExperiment), which supplies the function"
    )
}
