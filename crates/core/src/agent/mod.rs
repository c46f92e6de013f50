//! Agents (issue 34): a task runs as an episode — the agent under test, a
//! user and tools, over several turns — whose [`Transcript`] is the
//! output; [`AgentCheck`]s judge it into cells; [`AgentStats`] gives per
//! task the pass rate, pass^k with its interval and the task's class, and
//! across tasks the clustered rate, mean pass^k and what the simulated
//! user's spoiled episodes do to the interval. Pure: the engine runs the
//! episodes (`probity_engine::agent`).

pub mod checks;
pub mod matching;
pub mod stats;
pub mod transcript;
pub mod user;

pub use checks::{transcript_input, AgentCheck, Bounds, CallPattern, NamedCheck, Order, Outcome};
pub use stats::{episode_cell, AgentStats, EpisodeResult, TaskCounts, TaskStats, UserEffect};
pub use transcript::{CallAt, Ending, Party, ToolOutcome, Transcript, Turn, DEFAULT_STOP};
pub use user::{first_spoiled, is_spoiled_cause, Spoiled, UserCheck, SPOILED_CAUSE};
