//! The SQLite store's handle (its path and connection), how a connection
//! is opened, and how its rows are read ([`RowRead`]); the operations are
//! in the sibling modules.

use crate::store::error::StoreError;
use crate::store::location::StoreLocation;
use crate::store::rows::RowRead;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// A SQLite run store.
pub struct Sqlite {
    pub(super) path: PathBuf,
    pub(super) conn: Connection,
}

impl Sqlite {
    pub(super) fn location(&self) -> StoreLocation {
        StoreLocation::Sqlite(self.path.clone())
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
        err_at(&self.path, source)
    }
}

pub(super) fn err_at(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        store: StoreLocation::Sqlite(path.to_path_buf()),
        source,
    }
}

impl RowRead for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn opt_real(&self, i: usize) -> rusqlite::Result<Option<f64>> {
        self.get(i)
    }
    fn bytes(&self, i: usize) -> rusqlite::Result<Vec<u8>> {
        self.get(i)
    }
    fn flag(&self, i: usize) -> rusqlite::Result<bool> {
        self.get(i)
    }
}

/// How long a statement waits for another connection's lock before the
/// store reports it locked: long enough that workers of a shared run on a
/// loaded machine wait for each other's commits rather than end (5 s was
/// exceeded under CI load).
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Put the file in WAL mode. Turning a new file to WAL takes its
/// exclusive lock, and SQLite answers "busy" at once, without its busy
/// wait, when two connections ask for that together (deadlock
/// avoidance), as processes creating the same store at one moment do
/// (pytest-xdist workers, parallel CI jobs). So the ask is retried here
/// for up to [`BUSY_WAIT`]; once the file is WAL it is a read and never busy.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.execute_batch("PRAGMA journal_mode = WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < BUSY_WAIT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

pub(super) fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let err = |source| err_at(path, source);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Writer {
            store: StoreLocation::Sqlite(path.to_path_buf()),
            what: format!("cannot create {}: {e}", dir.display()),
        })?;
    }
    let conn = Connection::open(path).map_err(err)?;
    conn.busy_timeout(BUSY_WAIT).map_err(err)?;
    // WAL: readers never block the writer; NORMAL sync: a committed
    // transaction survives the process being killed (not a power cut).
    wal(&conn).map_err(err)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
        .map_err(err)?;
    Ok(conn)
}
