//! Leases in PostgreSQL, by the server's clock: one `now()` for every
//! machine, so a lease goes stale after [`LEASE_STALE_S`] however the
//! machines' clocks disagree.

use super::db::Postgres;
use crate::store::backend::Leases;
use crate::store::error::StoreError;
use crate::store::identity::{me, process_gone};
use crate::store::lease::LEASE_STALE_S;

/// Refresh this process's lease on `run`.
pub(super) fn refresh_lease_on(c: &mut postgres::Client, run: i64) -> Result<(), postgres::Error> {
    c.execute(
        "UPDATE leases SET refreshed_at = now() WHERE run_id = $1 AND holder = $2",
        &[&run, &me().token],
    )
    .map(|_| ())
}

/// What `take_lease` found: taken, or held by another live process.
enum Taken {
    Yes,
    Held {
        pid: i64,
        host: String,
        since: String,
        seen_s: f64,
    },
}

impl Leases for Postgres {
    fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        let taken = self.conn.call(move |c| {
            let mut tx = c.transaction()?;
            // The run's row, locked: two takers of one run queue here, and
            // the second sees the first's lease.
            tx.execute("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", &[&run])?;
            let held = tx.query_opt(
                "SELECT pid, host, holder, started_at,
                    EXTRACT(EPOCH FROM now() - refreshed_at)::DOUBLE PRECISION
                 FROM leases WHERE run_id = $1",
                &[&run],
            )?;
            if let Some(r) = held {
                let (pid, host, holder, since, seen_s): (i64, String, Option<String>, String, f64) =
                    (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
                let mine = holder.as_deref() == Some(me().token.as_str());
                let stale = seen_s > LEASE_STALE_S || process_gone(&host, pid);
                if !mine && !stale {
                    return Ok(Taken::Held {
                        pid,
                        host,
                        since,
                        seen_s: seen_s.max(0.0),
                    });
                }
            }
            tx.execute(
                "INSERT INTO leases (run_id, pid, host, holder, refreshed_at) VALUES ($1, $2, $3, $4, now())
                 ON CONFLICT (run_id) DO UPDATE SET pid = EXCLUDED.pid, host = EXCLUDED.host,
                    holder = EXCLUDED.holder, refreshed_at = now(), started_at = EXCLUDED.started_at",
                &[&run, &me().pid, &me().host, &me().token],
            )?;
            // Taken to be written again: its stored verdicts and snapshot
            // would go stale.
            tx.execute(
                "UPDATE runs SET verdicts = NULL, sequential = NULL WHERE id = $1",
                &[&run],
            )?;
            tx.execute("DELETE FROM snapshots WHERE run_id = $1", &[&run])?;
            tx.commit()?;
            Ok(Taken::Yes)
        })?;
        match taken {
            Taken::Yes => Ok(()),
            Taken::Held {
                pid,
                host,
                since,
                seen_s,
            } => Err(StoreError::Leased {
                store: self.location(),
                run,
                pid,
                host,
                since,
                seen_s,
            }),
        }
    }

    fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.conn.call(move |c| {
            Ok(
                c.query_opt("SELECT pid FROM leases WHERE run_id = $1", &[&run])?
                    .map(|r| r.get(0)),
            )
        })
    }

    fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn.call(move |c| refresh_lease_on(c, run))
    }

    fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn.call(move |c| {
            c.execute(
                "DELETE FROM leases WHERE run_id = $1 AND holder = $2",
                &[&run, &me().token],
            )
            .map(|_| ())
        })
    }

    fn interrupt_abandoned(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        let name = name.map(str::to_string);
        self.conn.call(move |c| {
            // (run, holder's pid, host, seconds since refreshed): no lease, None.
            type Held = (i64, Option<i64>, Option<String>, Option<f64>);
            let running: Vec<Held> = c
                .query(
                    "SELECT runs.id, leases.pid, leases.host,
                        EXTRACT(EPOCH FROM now() - leases.refreshed_at)::DOUBLE PRECISION
                     FROM runs LEFT JOIN leases ON leases.run_id = runs.id
                     WHERE ($1::TEXT IS NULL OR runs.name = $1) AND runs.status = 'running'
                        AND ($2::BIGINT IS NULL OR runs.id != $2)
                        AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.run_id = runs.id
                            AND NOT claims.done AND claims.holder IS NOT NULL
                            AND claims.expires_at >= now())",
                    &[&name, &keep],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect();
            let mut n = 0;
            for (run, pid, host, seen_s) in running {
                let gone = match (pid, host, seen_s) {
                    (Some(pid), Some(host), Some(seen_s)) => {
                        seen_s > LEASE_STALE_S || process_gone(&host, pid)
                    }
                    _ => true,
                };
                if gone {
                    let mut tx = c.transaction()?;
                    n += tx.execute(
                        "UPDATE runs SET status = 'interrupted' WHERE id = $1 AND status = 'running'",
                        &[&run],
                    )? as usize;
                    tx.execute("DELETE FROM leases WHERE run_id = $1", &[&run])?;
                    tx.commit()?;
                }
            }
            Ok(n)
        })
    }
}
