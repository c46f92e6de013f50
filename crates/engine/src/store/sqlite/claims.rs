//! Claims in SQLite: workers on one machine sharing a run (`probity
//! work`). An immediate transaction serialises claimers (SQLite has no
//! `SKIP LOCKED`; one writer at a time is the same guarantee). A worker
//! never takes an input it holds itself, even once its claim has expired:
//! it may still be sampling it. An input claimed [`CLAIM_TRIES`] times
//! without being finished is given up (a dead letter).

use super::db::Sqlite;
use super::schema::NOW_S;
use crate::store::backend::Claims;
use crate::store::error::StoreError;
use crate::store::identity::me;
use crate::store::lease::CLAIM_TRIES;
use rusqlite::params;

/// Extend this process's claims on `run` to `ttl` from now (also in the
/// writer's transactions: a claim lives `ttl` past the last progress).
pub(super) fn refresh_claims_on(
    conn: &rusqlite::Connection,
    run: i64,
    ttl: std::time::Duration,
) -> rusqlite::Result<usize> {
    conn.execute(
        &format!(
            "UPDATE claims SET expires_at = {NOW_S} + ?3
             WHERE run_id = ?1 AND holder = ?2 AND done = 0"
        ),
        params![run, me().token, ttl.as_secs_f64()],
    )
}

/// Mark `inputs` of `run` done and drop their claims (in the writer's
/// transaction that stores their last samples: done means stored).
pub(super) fn finish_inputs_on(
    conn: &rusqlite::Connection,
    run: i64,
    inputs: &[usize],
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "UPDATE claims SET done = 1, given_up = 0, holder = NULL, expires_at = NULL
         WHERE run_id = ?1 AND input_idx = ?2",
    )?;
    for &i in inputs {
        stmt.execute(params![run, i as i64])?;
    }
    Ok(())
}

impl Claims for Sqlite {
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError> {
        let claim = || -> rusqlite::Result<Vec<usize>> {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            // A run's claims are made on first use: one per input.
            self.conn.execute(
                "INSERT OR IGNORE INTO claims (run_id, input_idx)
                 SELECT run_id, idx FROM inputs WHERE run_id = ?1
                 AND NOT EXISTS (SELECT 1 FROM claims WHERE run_id = ?1)",
                params![run],
            )?;
            // Inputs whose every try was spent by workers that died on
            // them: given up, not handed to the next worker.
            self.conn.execute(
                &format!(
                    "UPDATE claims SET done = 1, given_up = 1, holder = NULL, expires_at = NULL
                     WHERE run_id = ?1 AND done = 0 AND tries >= ?2
                     AND (holder IS NULL OR expires_at < {NOW_S})"
                ),
                params![run, CLAIM_TRIES],
            )?;
            let mut stmt = self.conn.prepare(&format!(
                "UPDATE claims SET holder = ?2, pid = ?3, host = ?4, expires_at = {NOW_S} + ?5,
                    tries = tries + 1, claim_tag = ?7
                 WHERE run_id = ?1 AND input_idx IN (
                    SELECT input_idx FROM claims WHERE run_id = ?1 AND done = 0
                    AND (holder IS NULL OR (expires_at < {NOW_S} AND holder <> ?2))
                    ORDER BY input_idx LIMIT ?6)
                 RETURNING input_idx"
            ))?;
            let mut got: Vec<usize> = stmt
                .query_map(
                    params![
                        run,
                        me().token,
                        me().pid,
                        me().host,
                        ttl.as_secs_f64(),
                        count as i64,
                        // Kept as PostgreSQL keeps it; a local file's
                        // COMMIT answers in-process, never lost.
                        rand::random::<i64>()
                    ],
                    |r| r.get::<_, i64>(0).map(|i| i as usize),
                )?
                .collect::<rusqlite::Result<_>>()?;
            drop(stmt);
            self.conn.execute_batch("COMMIT")?;
            got.sort_unstable();
            Ok(got)
        };
        claim().map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.err(e)
        })
    }

    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError> {
        refresh_claims_on(&self.conn, run, ttl)
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The holder goes with the try, as on PostgreSQL (where a release
    /// may be tried again after its answer was lost).
    fn release_claims(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE claims SET holder = NULL, expires_at = NULL, tries = MAX(tries - 1, 0)
                 WHERE run_id = ?1 AND holder = ?2 AND done = 0",
                params![run, me().token],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        let mark = || -> rusqlite::Result<()> {
            let tx = self.conn.unchecked_transaction()?;
            finish_inputs_on(&tx, run, inputs)?;
            tx.commit()
        };
        mark().map_err(|e| self.err(e))
    }

    fn given_up(&self, run: i64) -> Result<Vec<usize>, StoreError> {
        let read = || -> rusqlite::Result<Vec<usize>> {
            let mut stmt = self.conn.prepare_cached(
                "SELECT input_idx FROM claims WHERE run_id = ?1 AND given_up = 1 ORDER BY input_idx",
            )?;
            let rows = stmt.query_map(params![run], |r| r.get::<_, i64>(0))?;
            rows.map(|i| i.map(|i| i as usize)).collect()
        };
        read().map_err(|e| self.err(e))
    }

    fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT COUNT(*), COALESCE(SUM(holder IS NOT NULL AND expires_at >= {NOW_S}), 0)
                     FROM claims WHERE run_id = ?1 AND done = 0"
                ),
                params![run],
                |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize)),
            )
            .map_err(|e| self.err(e))
    }

    fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError> {
        let read = || -> rusqlite::Result<Vec<(usize, usize)>> {
            let mut stmt = self.conn.prepare_cached(
                "SELECT repetition FROM samples WHERE run_id = ?1 AND input_idx = ?2",
            )?;
            let mut out = Vec::new();
            for &i in inputs {
                for j in stmt.query_map(params![run, i as i64], |r| r.get::<_, i64>(0))? {
                    out.push((i, j? as usize));
                }
            }
            Ok(out)
        };
        read().map_err(|e| self.err(e))
    }
}

impl Sqlite {
    /// Whether a live worker holds an input of `run` (a shared run whose
    /// creator is gone is still being worked on).
    pub(super) fn claims_alive(&self, run: i64) -> Result<bool, StoreError> {
        self.open_inputs(run).map(|(_, held)| held > 0)
    }
}
