//! Leases in SQLite: the holder's token, pid and host, refreshed by
//! SQLite's clock (one machine's: the file is that machine's).

use super::db::Sqlite;
use super::schema::NOW_S;
use crate::store::backend::Leases;
use crate::store::error::StoreError;
use crate::store::identity::{me, process_gone};
use crate::store::lease::LEASE_STALE_S;
use rusqlite::{params, Connection, OptionalExtension};

/// Refresh this process's lease on `run` on `conn`.
pub(super) fn refresh_lease_on(conn: &Connection, run: i64) -> rusqlite::Result<()> {
    conn.execute(
        &format!("UPDATE leases SET refreshed_at = {NOW_S} WHERE run_id = ?1 AND holder = ?2"),
        params![run, me().token],
    )
    .map(|_| ())
}

impl Leases for Sqlite {
    fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        let path = self.path.clone();
        let location = self.location();
        let err = |source| super::db::err_at(&path, source);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        // (pid, host, holder, since, seconds since refreshed)
        type Held = (i64, String, Option<String>, String, f64);
        let held: Option<Held> = tx
            .query_row(
                &format!(
                    "SELECT pid, host, holder, started_at, {NOW_S} - refreshed_at FROM leases WHERE run_id = ?1"
                ),
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(err)?;
        if let Some((pid, host, holder, since, seen_s)) = held {
            let mine = holder.as_deref() == Some(me().token.as_str());
            let stale = seen_s > LEASE_STALE_S || process_gone(&host, pid);
            if !mine && !stale {
                return Err(StoreError::Leased {
                    store: location,
                    run,
                    pid,
                    host,
                    since,
                    seen_s: seen_s.max(0.0),
                });
            }
        }
        tx.execute(
            &format!("INSERT OR REPLACE INTO leases (run_id, pid, host, holder, refreshed_at) VALUES (?1, ?2, ?3, ?4, {NOW_S})"),
            params![run, me().pid, me().host, me().token],
        )
        .map_err(err)?;
        // Taken to be written again: its stored verdicts and snapshot would
        // go stale.
        tx.execute(
            "UPDATE runs SET verdicts = NULL, sequential = NULL WHERE id = ?1",
            params![run],
        )
        .map_err(err)?;
        tx.execute("DELETE FROM snapshots WHERE run_id = ?1", params![run])
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT pid FROM leases WHERE run_id = ?1",
                params![run],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        refresh_lease_on(&self.conn, run).map_err(|e| self.err(e))
    }

    fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "DELETE FROM leases WHERE run_id = ?1 AND holder = ?2",
                params![run, me().token],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn interrupt_abandoned(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        // (run, lease holder's pid, host, seconds since refreshed) — no
        // lease: None.
        type Held = (i64, Option<i64>, Option<String>, Option<f64>);
        let running: Vec<Held> = self.query_all(
            &format!(
                "SELECT runs.id, leases.pid, leases.host, {NOW_S} - leases.refreshed_at FROM runs
                 LEFT JOIN leases ON leases.run_id = runs.id
                 WHERE (?1 IS NULL OR runs.name = ?1) AND runs.status = 'running' AND (?2 IS NULL OR runs.id != ?2)"
            ),
            params![name, keep],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let mut n = 0;
        for (run, pid, host, seen_s) in running {
            let gone = match (pid, host, seen_s) {
                (Some(pid), Some(host), Some(seen_s)) => {
                    seen_s > LEASE_STALE_S || process_gone(&host, pid)
                }
                _ => true,
            };
            if gone && !self.claims_alive(run)? {
                n += self
                    .conn
                    .execute(
                        "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                        params![run],
                    )
                    .map_err(|e| self.err(e))?;
                self.conn
                    .execute("DELETE FROM leases WHERE run_id = ?1", params![run])
                    .map_err(|e| self.err(e))?;
            }
        }
        Ok(n)
    }
}
