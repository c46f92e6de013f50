//! The run store: SQLite in WAL mode, the source of truth (docs/architecture.md,
//! Architecture).
//!
//! Every sample is written with its verdicts as it completes, in batched
//! transactions from a dedicated writer thread, so a run killed at any
//! moment keeps everything committed before the kill, and a later run with
//! the same requests is served from here instead of the model (the cache is
//! keyed by provider fingerprint, messages and repetition index; a guarded
//! attempt's also by its attempt index, in `attempts.cache_key`).
//!
//! Nothing secret is stored: the configuration names the environment
//! variable that holds an API key, never the key.

pub mod cache;
pub mod error;
pub mod lease;
pub mod records;
pub mod runs;
pub mod samples;
pub mod schema;
pub mod settings;
pub mod sqlite;
pub mod writer;

pub use cache::{
    JudgementCache, MemoryJudgements, MemoryOutputs, OutputCache, StoreJudgements, StoreOutputs,
};
pub use error::StoreError;
pub use lease::{LEASE_REFRESH_S, LEASE_STALE_S};
pub use records::{
    AttemptCounts, AttemptRow, CachedOutput, JudgementRow, NewRun, RunRecord, RunStatus, RunTotals,
    SampleRow,
};
pub use schema::SCHEMA_VERSION;
pub use sqlite::Store;
pub use writer::{JudgementSink, Writer};
