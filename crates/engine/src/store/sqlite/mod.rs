//! The SQLite store: one file in WAL mode, the embedded default. Opening
//! it creates or migrates it ([`Sqlite::open`]); the operations live
//! beside the job they do, each file implementing that job's trait of
//! [`super::backend`] (`runs`, `samples`, `lease`, `claims`, `cache`,
//! `writer`).

mod cache;
mod claims;
mod db;
mod lease;
mod runs;
mod samples;
pub(super) mod schema;
mod writer;

use super::error::StoreError;
use super::schema::SCHEMA_VERSION;
use db::open_connection;
pub use db::Sqlite;
use rusqlite::Connection;
use schema::{
    has_column, LATE_INDEXES, MIGRATION_10, MIGRATION_11, MIGRATION_12, MIGRATION_13, SCHEMA,
};
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
            store.migrate(9, |conn| {
                conn.execute_batch(SCHEMA)?;
                add_missing_columns(conn)?;
                conn.execute_batch(LATE_INDEXES)
            })?;
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
        if version < 11 {
            store.migrate(11, |conn| {
                // A store whose version was set back by hand may have them.
                for (column, ty) in [("variant", "TEXT"), ("variant_group", "INTEGER")] {
                    if !has_column(conn, "runs", column)? {
                        conn.execute_batch(&format!("ALTER TABLE runs ADD COLUMN {column} {ty}"))?;
                    }
                }
                conn.execute_batch(MIGRATION_11)
            })?;
        }
        if version < 12 {
            store.migrate(12, |conn| conn.execute_batch(MIGRATION_12))?;
        }
        if version < 13 {
            store.migrate(13, |conn| {
                if has_column(conn, "claims", "tries")? {
                    return Ok(());
                }
                conn.execute_batch(MIGRATION_13)
            })?;
        }
        if version < 14 {
            store.migrate(14, |conn| {
                if has_column(conn, "runs", "call_s")? {
                    return Ok(());
                }
                conn.execute_batch(crate::store::schema::RUN_CALLS)
            })?;
        }
        if version < 15 {
            store.migrate(15, |conn| {
                if has_column(conn, "runs", "usage")? {
                    return Ok(());
                }
                conn.execute_batch(crate::store::schema::RUN_USAGE)
            })?;
        }
        if version < 16 {
            store.migrate(16, |conn| {
                if has_column(conn, "runs", "calls_ended")? {
                    return Ok(());
                }
                conn.execute_batch(crate::store::schema::CALLS_ENDED)
            })?;
        }
        if version < 17 {
            store.migrate(17, |conn| {
                // Each column added when missing (a store set back by hand
                // may have one).
                for (table, column) in [("claims", "claim_tag"), ("runs", "create_tag")] {
                    if !has_column(conn, table, column)? {
                        conn.execute_batch(&format!(
                            "ALTER TABLE {table} ADD COLUMN {column} INTEGER"
                        ))?;
                    }
                }
                Ok(())
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
}

/// Add the columns a store older than the baseline lacks (schema 4:
/// `attempts.cache_key`; 5: the runs' judge calls, tokens and the run
/// outputs were reused from; 7: the runs' verdicts; 8: the run whose
/// outputs a revalidated run re-checks; 9: a sequential run's outcome).
fn add_missing_columns(conn: &Connection) -> rusqlite::Result<()> {
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
        if !has_column(conn, table, column)? {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {ty}"))?;
        }
    }
    Ok(())
}
