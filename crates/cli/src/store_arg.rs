//! The `--store` option shared by every command that reads or writes runs.

use crate::failure::Failure;
use clap::Args;
use probity_engine::config::StoreTable;
use probity_engine::store::{Store, StoreLocation};

/// Where runs are kept when nothing says otherwise.
const DEFAULT_STORE: &str = ".probity/runs.db";

#[derive(Args, Clone)]
pub struct StoreArg {
    /// The run store: a SQLite file (created on first use), or a
    /// PostgreSQL database shared by a team (`postgres://user@host/db`;
    /// the password from the URL or PGPASSWORD, never printed). Default: the
    /// configuration's `[store] url`, else .probity/runs.db.
    #[arg(
        long,
        env = "PROBITY_STORE",
        hide_env_values = true,
        global = true,
        value_name = "PATH|URL"
    )]
    pub store: Option<String>,
}

impl StoreArg {
    /// The store named by `--store` or `PROBITY_STORE`, else by the
    /// configuration's `[store]` table, else the default file.
    pub fn location(&self, table: Option<&StoreTable>) -> Result<StoreLocation, Failure> {
        if let Some(s) = self.store.as_deref().filter(|s| !s.is_empty()) {
            return StoreLocation::parse(s).map_err(Failure::usage);
        }
        match table {
            Some(table) => table.location().map_err(Failure::usage),
            None => Ok(StoreLocation::Sqlite(DEFAULT_STORE.into())),
        }
    }

    /// Open the store (`--store`, `PROBITY_STORE` or the default).
    pub fn open(&self) -> Result<Store, Failure> {
        self.open_for(None)
    }

    /// Open the store for a command that read a configuration, whose
    /// `[store]` table applies when no flag or variable is given.
    pub fn open_for(&self, table: Option<&StoreTable>) -> Result<Store, Failure> {
        let location = self.location(table)?;
        if let Some(path) = location.sqlite_path() {
            crate::protected::protect_sqlite(path);
        }
        Store::connect(&location).map_err(|e| match e {
            probity_engine::store::StoreError::BadUrl { .. } => Failure::usage(e.to_string()),
            e => Failure::incomplete(e.to_string()),
        })
    }

    /// Resolve a run given by id, or by name (its latest run).
    pub fn resolve(&self, store: &Store, run: &str) -> Result<i64, Failure> {
        if let Ok(id) = run.parse::<i64>() {
            // An id that names no run is the command's mistake (exit 2),
            // never a fresh run's cue to call the system for everything.
            return match store.run(id) {
                Ok(_) => Ok(id),
                Err(e @ probity_engine::store::StoreError::NoSuchRun { .. }) => {
                    Err(Failure::usage(format!("{e} (`probity runs` lists them)")))
                }
                Err(e) => Err(Failure::incomplete(e.to_string())),
            };
        }
        store
            .latest_named(run)
            .map_err(|e| Failure::incomplete(e.to_string()))?
            .ok_or_else(|| Failure::usage(format!("no run named {run:?} in {}", store.location())))
    }
}
