//! What can go wrong with the store, each naming the store (its password
//! masked, [`StoreLocation`]'s `Display`).

use super::location::StoreLocation;
use super::schema::SCHEMA_VERSION;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("run store {store}: {source}")]
    Sqlite {
        store: StoreLocation,
        source: rusqlite::Error,
    },
    #[cfg(feature = "postgres")]
    #[error("run store {store}: {}", describe(source))]
    Postgres {
        store: StoreLocation,
        source: postgres::Error,
    },
    /// The URL cannot be read (a port that is no number, an unknown
    /// parameter): the command's mistake, not the server's.
    #[error("run store {store}: not a valid PostgreSQL URL: {what}")]
    BadUrl { store: StoreLocation, what: String },
    /// The store cannot be reached or opened at all (a dead server, a
    /// build without PostgreSQL support).
    #[error("run store {store}: {what}")]
    Unreachable { store: StoreLocation, what: String },
    #[error("run store {store}: written by a newer probity (schema {found}, this one knows {SCHEMA_VERSION})")]
    TooNew { store: StoreLocation, found: i64 },
    #[error("run store {store}: no run {run}")]
    NoSuchRun { store: StoreLocation, run: i64 },
    #[error("run store {store}: run {run} is damaged: {what}")]
    Damaged {
        store: StoreLocation,
        run: i64,
        what: String,
    },
    #[error("run store {store}: the writer stopped: {what}")]
    Writer { store: StoreLocation, what: String },
    /// Another live process owns the run (`--resume` twice at once).
    #[error("run store {store}: run {run} is being run by process {pid} on {host} (since {since}, last seen {seen_s:.0} s ago); wait for it to finish or stop it, then resume")]
    Leased {
        store: StoreLocation,
        run: i64,
        pid: i64,
        host: String,
        since: String,
        seen_s: f64,
    },
    /// What this kind of store cannot do (`probity work` on a SQLite file).
    #[error("run store {store}: {what}")]
    Unsupported { store: StoreLocation, what: String },
}

/// What went wrong in PostgreSQL, as a user reads it: the server's own
/// message (with its detail and hint) for an error it reported, else the
/// client's with its cause. Neither ever holds the password.
#[cfg(feature = "postgres")]
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        // The client's message, with its cause when it does not say it
        // ("error communicating with the server: Network is unreachable").
        None => {
            let text = e.to_string();
            match std::error::Error::source(e).map(|s| s.to_string()) {
                Some(cause) if !text.contains(&cause) => format!("{text}: {cause}"),
                _ => text,
            }
        }
    }
}
