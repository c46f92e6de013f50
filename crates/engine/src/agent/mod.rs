//! Agents under test (issue 34): an [`Episode`] runs a task — the agent
//! (a model with tools, or a black box), a user (scripted or simulated),
//! tools (mock, command, MCP, Python) and an environment holding JSON state —
//! into a [`probity_core::agent::Transcript`], and judges it with the
//! checks of [`probity_core::agent`]. docs/agents.md describes the model.

pub(crate) mod blackbox;
pub mod build;
pub mod config;
pub(crate) mod environment;
pub(crate) mod episode;
pub(crate) mod user;

pub use environment::{Environment, JsonEnvironment};
pub use episode::{AgentUnderTest, Episode, Judged};
pub use user::User;
