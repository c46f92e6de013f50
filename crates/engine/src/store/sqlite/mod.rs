//! The SQLite store: one file in WAL mode, the embedded default. Opening
//! it creates or migrates it ([`Sqlite::open`]); the operations live
//! beside the job they do (`runs`, `samples`, `lease`, `claims`, `cache`,
//! `writer`), each an inherent method the [`Backend`] implementation
//! below names.

mod cache;
mod claims;
mod db;
mod lease;
mod runs;
mod samples;
pub(super) mod schema;
mod writer;

use super::backend::{Backend, CacheReader, RunEnd, WriterFactory};
use super::error::StoreError;
use super::records::{
    AttemptCounts, AttemptRow, CachedOutput, JudgementRow, NewRun, RunRecord, SampleRow,
};
use super::schema::SCHEMA_VERSION;
use db::open_connection;
pub use db::Sqlite;
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::{Cell, Input, ReliabilityTensor};
use rusqlite::Connection;
use schema::{has_column, LATE_INDEXES, MIGRATION_10, SCHEMA};
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

impl Sqlite {
    /// Open (creating if needed) the store at `path`, and apply the
    /// migrations it lacks: the baseline (schema 9, which also brings a
    /// store of schema 2–8 to 9 in place), then each numbered one after.
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        let conn = open_connection(path)?;
        let store = Sqlite {
            path: path.to_path_buf(),
            conn,
        };
        let version: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| store.err(e))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                store: store.location(),
                found: version,
            });
        }
        if version < 9 {
            store.conn.execute_batch(SCHEMA).map_err(|e| store.err(e))?;
            store.add_missing_columns().map_err(|e| store.err(e))?;
            store
                .conn
                .execute_batch(LATE_INDEXES)
                .map_err(|e| store.err(e))?;
            store.set_version(9)?;
        }
        if version < 10 {
            store.migrate(10, |conn| {
                // A store brought to the baseline by hand may have it.
                if !has_column(conn, "leases", "holder")? {
                    conn.execute_batch("ALTER TABLE leases ADD COLUMN holder TEXT")?;
                }
                conn.execute_batch(MIGRATION_10)
            })?;
        }
        Ok(store)
    }

    /// Apply migration `number` (`apply`) and record it, in one immediate
    /// transaction; a process that applied it first wins, the other skips.
    fn migrate(
        &self,
        number: i64,
        apply: impl Fn(&Connection) -> rusqlite::Result<()>,
    ) -> Result<(), StoreError> {
        let run = || -> rusqlite::Result<()> {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            let current: i64 = self
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if current < number {
                apply(&self.conn)?;
                self.conn
                    .execute_batch(&format!("PRAGMA user_version = {number}"))?;
            }
            self.conn.execute_batch("COMMIT")
        };
        run().map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.err(e)
        })
    }

    fn set_version(&self, number: i64) -> Result<(), StoreError> {
        self.conn
            .execute_batch(&format!("PRAGMA user_version = {number}"))
            .map_err(|e| self.err(e))
    }

    /// Add the columns a store older than the baseline lacks (schema 4:
    /// `attempts.cache_key`; 5: the runs' judge calls, tokens and the run
    /// outputs were reused from; 7: the runs' verdicts; 8: the run whose
    /// outputs a revalidated run re-checks; 9: a sequential run's outcome).
    fn add_missing_columns(&self) -> rusqlite::Result<()> {
        for (table, column, ty) in [
            ("attempts", "cache_key", "TEXT"),
            ("runs", "judge_calls", "INTEGER NOT NULL DEFAULT 0"),
            ("runs", "tokens", "INTEGER NOT NULL DEFAULT 0"),
            ("runs", "reused_from", "INTEGER"),
            ("runs", "judge_calls_by_check", "TEXT"),
            ("runs", "verdicts", "TEXT"),
            ("runs", "outputs_from", "INTEGER"),
            ("runs", "sequential", "TEXT"),
        ] {
            if has_column(&self.conn, table, column)? {
                continue;
            }
            match self
                .conn
                .execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {ty}"))
            {
                Ok(()) => {}
                // Another process opening the same store added it first.
                Err(_) if has_column(&self.conn, table, column)? => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Backend for Sqlite {
    fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        Sqlite::create_run(self, run)
    }
    fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        Sqlite::resumable_run(self, config_hash)
    }
    fn finish_run(&self, run: i64, end: &RunEnd<'_>) -> Result<(), StoreError> {
        Sqlite::finish_run(self, run, end)
    }
    fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        Sqlite::set_sequential(self, run, outcome)
    }
    fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        Sqlite::runs(self, name)
    }
    fn run(&self, run: i64) -> Result<Option<RunRecord>, StoreError> {
        Sqlite::run(self, run)
    }
    fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        Sqlite::latest_named(self, name)
    }
    fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        Sqlite::inputs(self, run)
    }
    fn samples(
        &self,
        run: i64,
        inputs: Option<Range<usize>>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        Sqlite::samples(self, run, inputs)
    }
    fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        Sqlite::sample_count(self, run)
    }
    fn samples_at(&self, run: i64, at: &[(usize, usize)]) -> Result<Vec<SampleRow>, StoreError> {
        Sqlite::samples_at(self, run, at)
    }
    fn each_sample_cells(
        &self,
        run: i64,
        f: &mut dyn FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        Sqlite::each_sample_cells(self, run, f)
    }
    fn each_sample_error(&self, run: i64, f: &mut dyn FnMut(&SampleRow)) -> Result<(), StoreError> {
        Sqlite::each_sample_error(self, run, f)
    }
    fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        Sqlite::attempts(self, run)
    }
    fn live_cells(
        &self,
        run: i64,
        from: usize,
        limit: usize,
    ) -> Result<Vec<super::backend::LiveCells>, StoreError> {
        Sqlite::live_cells(self, run, from, limit)
    }
    fn each_attempt_counts(
        &self,
        run: i64,
        f: &mut dyn FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        Sqlite::each_attempt_counts(self, run, f)
    }
    fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        Sqlite::cached_outputs(self, from, keys)
    }
    fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        Sqlite::put_snapshot(self, run, tensor, causes)
    }
    fn snapshot(&self, run: i64) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        Sqlite::snapshot(self, run)
    }
    fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        Sqlite::take_lease(self, run)
    }
    fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        Sqlite::lease_holder(self, run)
    }
    fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        Sqlite::refresh_lease(self, run)
    }
    fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        Sqlite::release_lease(self, run)
    }
    fn interrupt_abandoned(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        Sqlite::interrupt_abandoned(self, name, keep)
    }
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError> {
        Sqlite::claim_inputs(self, run, count, ttl)
    }
    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError> {
        Sqlite::refresh_claims(self, run, ttl)
    }
    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        Sqlite::finish_inputs(self, run, inputs)
    }
    fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError> {
        Sqlite::open_inputs(self, run)
    }
    fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError> {
        Sqlite::stored_cells_of(self, run, inputs)
    }
    fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        cache::lookup_judgement(&self.conn, key).map_err(|e| self.err(e))
    }
    fn judgement_count(&self) -> Result<u64, StoreError> {
        Sqlite::judgement_count(self)
    }
    fn reader(&self) -> Result<Box<dyn CacheReader>, StoreError> {
        Ok(Box::new(cache::Reader::open(&self.path)?))
    }
    fn batch_writer(&self, run: i64, recheck: bool) -> Result<WriterFactory, StoreError> {
        Ok(writer::factory(self.path.clone(), run, recheck))
    }
}
