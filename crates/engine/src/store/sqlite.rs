//! The SQLite store: one file, opened (created and migrated to
//! [`SCHEMA_VERSION`](super::schema::SCHEMA_VERSION) if needed); its other
//! methods live beside the job they do (`runs`, `samples`, `lease`,
//! `writer`, `cache`).

use super::error::StoreError;
use super::schema::{has_column, LATE_INDEXES, SCHEMA, SCHEMA_VERSION};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// The run store.
pub struct Store {
    pub(super) path: PathBuf,
    pub(super) conn: Connection,
}

impl Store {
    /// Open (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = open_connection(path)?;
        let store = Store {
            path: path.to_path_buf(),
            conn,
        };
        let version: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| store.err(e))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: version,
            });
        }
        store.conn.execute_batch(SCHEMA).map_err(|e| store.err(e))?;
        store.migrate().map_err(|e| store.err(e))?;
        store
            .conn
            .execute_batch(LATE_INDEXES)
            .map_err(|e| store.err(e))?;
        store
            .conn
            .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(|e| store.err(e))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Add the columns an older store lacks (schema 4: `attempts.cache_key`;
    /// schema 5: the runs' judge calls, tokens and the run outputs were
    /// reused from; schema 7: the runs' verdicts; schema 8: the run whose
    /// outputs a revalidated run re-checks; schema 9: a
    /// sequential run's outcome).
    pub(super) fn migrate(&self) -> rusqlite::Result<()> {
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

    /// Every row of `sql` with `params`, read by `row`.
    pub(super) fn query_all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, row).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    pub(super) fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }
}

pub(super) fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let err = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Writer {
            path: path.to_path_buf(),
            what: format!("cannot create {}: {e}", dir.display()),
        })?;
    }
    let conn = Connection::open(path).map_err(err)?;
    // WAL: readers never block the writer; NORMAL sync: a committed
    // transaction survives the process being killed (not a power cut).
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
    )
    .map_err(err)?;
    Ok(conn)
}
