//! The PostgreSQL store: one database shared by a team's machines, CI
//! jobs, `probity serve` replicas and the workers of one run (`probity
//! work`). Run ids come from an identity column; leases and claims use
//! the server's clock (`now()`); claims are taken with `FOR UPDATE SKIP
//! LOCKED`. The schema is applied as numbered migrations (`schema`).
//!
//! Operations live beside the job they do, each file implementing that
//! job's trait of [`super::backend`] (`runs`, `samples`, `lease`,
//! `claims`, `cache`, `writer`).

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

use super::error::StoreError;
use super::location::PostgresUrl;
use super::schema::SCHEMA_VERSION;
use conn::Conn;
pub use db::Postgres;

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
    ///
    /// A database already at this version is only read (the recorded
    /// version), so a role that may only read it, or a read replica,
    /// serves every command that only reads.
    fn migrate(&self) -> Result<(), StoreError> {
        let recorded = self.conn.call(|c| {
            let exists: bool = c
                .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])?
                .get(0);
            if !exists {
                return Ok(0);
            }
            c.query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .map(|r| r.get::<_, i64>(0))
        })?;
        if recorded == SCHEMA_VERSION {
            return Ok(());
        }
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
