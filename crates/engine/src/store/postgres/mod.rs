//! The PostgreSQL store: one database shared by a team's machines, CI
//! jobs, `probity serve` replicas and the workers of one run (`probity
//! work`). Run ids come from an identity column; leases and claims use
//! the server's clock (`now()`); claims are taken with `FOR UPDATE SKIP
//! LOCKED`. The schema is applied as numbered migrations (`schema`).
//!
//! Operations live beside the job they do (`runs`, `samples`, `lease`,
//! `claims`, `cache`, `writer`); the [`Backend`] implementation below names
//! them.

mod cache;
mod claims;
mod conn;
mod db;
mod lease;
mod runs;
mod samples;
mod schema;
mod writer;

#[doc(hidden)]
pub mod testing;

use super::backend::{Backend, CacheReader, RunEnd, WriterFactory};
use super::error::StoreError;
use super::location::PostgresUrl;
use super::records::{
    AttemptCounts, AttemptRow, CachedOutput, JudgementRow, NewRun, RunRecord, SampleRow,
};
use super::schema::SCHEMA_VERSION;
use conn::Conn;
pub use db::Postgres;
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::{Cell, Input, ReliabilityTensor};
use std::collections::HashMap;
use std::ops::Range;

impl Postgres {
    /// Connect to the database at `url` (which must exist) and apply the
    /// migrations it lacks.
    pub fn connect(url: &PostgresUrl) -> Result<Postgres, StoreError> {
        let conn = Conn::open(url)?;
        let store = Postgres {
            url: url.clone(),
            conn,
        };
        store.migrate()?;
        Ok(store)
    }

    /// Apply the numbered migrations not yet recorded, in order, each in
    /// its own transaction, all under one advisory lock (a second process
    /// opening a new database waits, then finds them applied). Refused
    /// when the database records a migration this version does not know.
    fn migrate(&self) -> Result<(), StoreError> {
        let found = self.conn.call(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1)",
                &[&schema::MIGRATION_LOCK],
            )?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            )?;
            let found: i64 = tx
                .query_one(
                    "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                    &[],
                )?
                .get(0);
            if found > SCHEMA_VERSION {
                return Ok(found);
            }
            for &(number, sql) in schema::MIGRATIONS {
                if number > found {
                    tx.batch_execute(sql)?;
                    tx.execute(
                        "INSERT INTO schema_migrations (version) VALUES ($1)",
                        &[&number],
                    )?;
                }
            }
            tx.commit()?;
            Ok(found)
        })?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                store: self.location(),
                found,
            });
        }
        Ok(())
    }
}

impl Backend for Postgres {
    fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        Postgres::create_run(self, run)
    }
    fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        Postgres::resumable_run(self, config_hash)
    }
    fn finish_run(&self, run: i64, end: &RunEnd<'_>) -> Result<(), StoreError> {
        Postgres::finish_run(self, run, end)
    }
    fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        Postgres::set_sequential(self, run, outcome)
    }
    fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        Postgres::runs(self, name)
    }
    fn run(&self, run: i64) -> Result<Option<RunRecord>, StoreError> {
        Postgres::run(self, run)
    }
    fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        Postgres::latest_named(self, name)
    }
    fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        Postgres::inputs(self, run)
    }
    fn samples(
        &self,
        run: i64,
        inputs: Option<Range<usize>>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        Postgres::samples(self, run, inputs)
    }
    fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        Postgres::sample_count(self, run)
    }
    fn samples_at(&self, run: i64, at: &[(usize, usize)]) -> Result<Vec<SampleRow>, StoreError> {
        Postgres::samples_at(self, run, at)
    }
    fn each_sample_cells(
        &self,
        run: i64,
        f: &mut dyn FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        Postgres::each_sample_cells(self, run, f)
    }
    fn each_sample_error(&self, run: i64, f: &mut dyn FnMut(&SampleRow)) -> Result<(), StoreError> {
        Postgres::each_sample_error(self, run, f)
    }
    fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        Postgres::attempts(self, run)
    }
    fn live_cells(
        &self,
        run: i64,
        from: usize,
        limit: usize,
    ) -> Result<Vec<super::backend::LiveCells>, StoreError> {
        Postgres::live_cells(self, run, from, limit)
    }
    fn each_attempt_counts(
        &self,
        run: i64,
        f: &mut dyn FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        Postgres::each_attempt_counts(self, run, f)
    }
    fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        Postgres::cached_outputs(self, from, keys)
    }
    fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        Postgres::put_snapshot(self, run, tensor, causes)
    }
    fn snapshot(&self, run: i64) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        Postgres::snapshot(self, run)
    }
    fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        Postgres::take_lease(self, run)
    }
    fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        Postgres::lease_holder(self, run)
    }
    fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        Postgres::refresh_lease(self, run)
    }
    fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        Postgres::release_lease(self, run)
    }
    fn interrupt_abandoned(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        Postgres::interrupt_abandoned(self, name, keep)
    }
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError> {
        Postgres::claim_inputs(self, run, count, ttl)
    }
    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError> {
        Postgres::refresh_claims(self, run, ttl)
    }
    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        Postgres::finish_inputs(self, run, inputs)
    }
    fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError> {
        Postgres::open_inputs(self, run)
    }
    fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError> {
        Postgres::stored_cells_of(self, run, inputs)
    }
    fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        let key = key.to_string();
        self.conn.call(move |c| cache::lookup_judgement(c, &key))
    }
    fn judgement_count(&self) -> Result<u64, StoreError> {
        self.conn.call(|c| {
            c.query_one("SELECT COUNT(*) FROM judgements", &[])
                .map(|r| r.get::<_, i64>(0) as u64)
        })
    }
    fn reader(&self) -> Result<Box<dyn CacheReader>, StoreError> {
        Ok(Box::new(cache::Reader::open(&self.url)?))
    }
    fn batch_writer(&self, run: i64, recheck: bool) -> Result<WriterFactory, StoreError> {
        Ok(writer::factory(self.url.clone(), run, recheck))
    }
}
