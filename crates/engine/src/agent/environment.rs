//! The environment of an episode: a JSON state (τ²'s database, a shop's
//! orders) that tools read and change. Each episode starts from a fresh
//! state and its final state is kept in the transcript for the checks.

use crate::tools::EpisodeId;
use serde_json::Value;

/// Where an episode's state comes from and where its final state is read.
#[async_trait::async_trait]
pub trait Environment: Send + Sync {
    /// A fresh state for `episode` (an error ends the episode as a tool
    /// error, before the agent is called).
    async fn begin(&self, episode: &EpisodeId) -> Result<Value, String>;

    /// The final state, given the state the tools left in memory (an
    /// environment living outside — an MCP server's database — reads its
    /// own).
    async fn end(&self, episode: &EpisodeId, state: Value) -> Result<Value, String>;
}

/// A JSON document copied fresh for each episode; the tools change the
/// copy in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonEnvironment {
    pub initial: Value,
}

#[async_trait::async_trait]
impl Environment for JsonEnvironment {
    async fn begin(&self, _episode: &EpisodeId) -> Result<Value, String> {
        Ok(self.initial.clone())
    }

    async fn end(&self, _episode: &EpisodeId, state: Value) -> Result<Value, String> {
        Ok(state)
    }
}
