//! Leases: one process writes a run at a time. A lease records the
//! holder's process and host and when it was last refreshed; one not
//! refreshed for [`LEASE_STALE_S`] (or whose process is gone on this host)
//! may be taken over.

use super::error::StoreError;
use super::sqlite::Store;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// A lease not refreshed for this long is stale: its holder is taken to be
/// gone and the run may be taken over.
pub const LEASE_STALE_S: f64 = 60.0;

/// How often a process holding a lease refreshes it.
pub const LEASE_REFRESH_S: f64 = 10.0;

pub(super) fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// This machine's name, as leases record it.
pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether process `pid` on this machine is gone (known only where
/// `/proc` exists; elsewhere a lease goes stale by time alone).
fn process_gone(pid: i64) -> bool {
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Refresh this process's lease on `run` on `conn` (the writer's own
/// connection).
pub(super) fn refresh_lease_on(conn: &Connection, run: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE leases SET refreshed_at = ?2 WHERE run_id = ?1 AND pid = ?3 AND host = ?4",
        params![run, now_s(), i64::from(std::process::id()), host_name()],
    )
    .map(|_| ())
}

impl Store {
    /// Take run `run` for this process, in one transaction: refused with
    /// [`StoreError::Leased`] naming the holder when another live process
    /// holds it; a lease whose process is gone (same host) or that was not
    /// refreshed for [`LEASE_STALE_S`] is taken over.
    pub fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let (me, host, now) = (i64::from(std::process::id()), host_name(), now_s());
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        let held: Option<(i64, String, String, f64)> = tx
            .query_row(
                "SELECT pid, host, started_at, refreshed_at FROM leases WHERE run_id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(err)?;
        if let Some((pid, holder, since, seen)) = held {
            let mine = pid == me && holder == host;
            let stale = now - seen > LEASE_STALE_S || (holder == host && process_gone(pid));
            if !mine && !stale {
                return Err(StoreError::Leased {
                    path: self.path.clone(),
                    run,
                    pid,
                    host: holder,
                    since,
                    seen_s: (now - seen).max(0.0),
                });
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO leases (run_id, pid, host, refreshed_at) VALUES (?1, ?2, ?3, ?4)",
            params![run, me, host, now],
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

    /// The process id holding run `run`'s lease, if any (live or not).
    pub fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT pid FROM leases WHERE run_id = ?1",
                params![run],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Refresh this process's lease on `run` (still alive).
    pub fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE leases SET refreshed_at = ?2 WHERE run_id = ?1 AND pid = ?3",
                params![run, now_s(), i64::from(std::process::id())],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Give up this process's lease on `run`.
    pub fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "DELETE FROM leases WHERE run_id = ?1 AND pid = ?2",
                params![run, i64::from(std::process::id())],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Mark runs named `name` still marked running whose writer is gone as
    /// interrupted, except `keep`; returns how many. A writer is gone when
    /// its run has no lease, when the lease was not refreshed for
    /// [`LEASE_STALE_S`], or when its process no longer exists on this
    /// host. Runs whose lease is alive — another `probity serve` replica
    /// recording the same configuration — are left running.
    pub fn interrupt_abandoned(&self, name: &str, keep: Option<i64>) -> Result<usize, StoreError> {
        self.interrupt_abandoned_named(Some(name), keep)
    }

    /// [`Store::interrupt_abandoned`] for every run, whatever its name: a
    /// `probity run` or `probity revalidate` killed outright (`kill -9`, a
    /// crash) reads as interrupted once its process is gone, instead of
    /// running for ever. A run marked so can still be resumed
    /// (`--resume` takes any unfinished run).
    pub fn interrupt_all_abandoned(&self) -> Result<usize, StoreError> {
        self.interrupt_abandoned_named(None, None)
    }

    /// Runs still marked running whose writer is gone, named `name` (any
    /// name: `None`), except `keep`, marked interrupted; how many.
    fn interrupt_abandoned_named(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        let (now, host) = (now_s(), host_name());
        // (run, lease holder's pid, host, last refresh) — no lease: None.
        type Held = (i64, Option<i64>, Option<String>, Option<f64>);
        let running: Vec<Held> = self.query_all(
            "SELECT runs.id, leases.pid, leases.host, leases.refreshed_at FROM runs
             LEFT JOIN leases ON leases.run_id = runs.id
             WHERE (?1 IS NULL OR runs.name = ?1) AND runs.status = 'running' AND (?2 IS NULL OR runs.id != ?2)",
            params![name, keep],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let mut n = 0;
        for (run, pid, holder, seen) in running {
            let gone = match (pid, holder, seen) {
                (Some(pid), Some(holder), Some(seen)) => {
                    now - seen > LEASE_STALE_S || (holder == host && process_gone(pid))
                }
                _ => true,
            };
            if gone {
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
