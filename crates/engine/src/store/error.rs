//! What can go wrong with the store, each naming the store's path.

use super::schema::SCHEMA_VERSION;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("run store {path}: written by a newer probity (schema {found}, this one knows {SCHEMA_VERSION})")]
    TooNew { path: PathBuf, found: i64 },
    #[error("run store {path}: no run {run}")]
    NoSuchRun { path: PathBuf, run: i64 },
    #[error("run store {path}: run {run} is damaged: {what}")]
    Damaged {
        path: PathBuf,
        run: i64,
        what: String,
    },
    #[error("run store {path}: the writer stopped: {what}")]
    Writer { path: PathBuf, what: String },
    /// Another live process owns the run (`--resume` twice at once).
    #[error("run store {path}: run {run} is being run by process {pid} on {host} (since {since}, last seen {seen_s:.0} s ago); wait for it to finish or stop it, then resume")]
    Leased {
        path: PathBuf,
        run: i64,
        pid: i64,
        host: String,
        since: String,
        seen_s: f64,
    },
}
