//! The `--store` option shared by every command that reads or writes runs.

use crate::failure::Failure;
use clap::Args;
use probity_engine::store::Store;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct StoreArg {
    /// The run store (SQLite). Created on first use.
    #[arg(
        long,
        env = "PROBITY_STORE",
        default_value = ".probity/runs.db",
        global = true
    )]
    pub store: PathBuf,
}

impl StoreArg {
    pub fn open(&self) -> Result<Store, Failure> {
        Store::open(&self.store).map_err(|e| Failure::incomplete(e.to_string()))
    }

    /// Resolve a run given by id, or by name (its latest run).
    pub fn resolve(&self, store: &Store, run: &str) -> Result<i64, Failure> {
        if let Ok(id) = run.parse::<i64>() {
            return Ok(id);
        }
        store
            .latest_named(run)
            .map_err(|e| Failure::incomplete(e.to_string()))?
            .ok_or_else(|| {
                Failure::usage(format!("no run named {run:?} in {}", self.store.display()))
            })
    }
}
