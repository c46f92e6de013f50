//! Claims in PostgreSQL: the inputs of a shared run, taken by workers on
//! any machine with `FOR UPDATE SKIP LOCKED` (two claimers never wait for
//! each other nor take the same input), expiring by the server's clock.

use super::db::Postgres;
use crate::store::backend::Claims;
use crate::store::error::StoreError;
use crate::store::identity::me;

impl Claims for Postgres {
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError> {
        let (ttl, count) = (ttl.as_secs_f64(), count as i64);
        self.conn.call(move |c| {
            let mut tx = c.transaction()?;
            // A run's claims are made on first use: one per input.
            tx.execute(
                "INSERT INTO claims (run_id, input_idx)
                 SELECT run_id, idx FROM inputs WHERE run_id = $1
                    AND NOT EXISTS (SELECT 1 FROM claims WHERE run_id = $1)
                 ON CONFLICT DO NOTHING",
                &[&run],
            )?;
            let mut got: Vec<usize> = tx
                .query(
                    // The picked rows in a CTE, evaluated once: as an
                    // `IN (SELECT … LIMIT n)` the planner may scan the
                    // subquery again and update more than n rows.
                    "WITH picked AS MATERIALIZED (
                        SELECT input_idx FROM claims WHERE run_id = $1 AND NOT done
                            AND (holder IS NULL OR expires_at < now())
                        ORDER BY input_idx LIMIT $6 FOR UPDATE SKIP LOCKED)
                     UPDATE claims c SET holder = $2, pid = $3, host = $4,
                        expires_at = now() + make_interval(secs => $5)
                     FROM picked WHERE c.run_id = $1 AND c.input_idx = picked.input_idx
                     RETURNING c.input_idx",
                    &[&run, &me().token, &me().pid, &me().host, &ttl, &count],
                )?
                .iter()
                .map(|r| r.get::<_, i64>(0) as usize)
                .collect();
            tx.commit()?;
            got.sort_unstable();
            Ok(got)
        })
    }

    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError> {
        let ttl = ttl.as_secs_f64();
        self.conn.call(move |c| {
            c.execute(
                "UPDATE claims SET expires_at = now() + make_interval(secs => $3)
                 WHERE run_id = $1 AND holder = $2 AND NOT done",
                &[&run, &me().token, &ttl],
            )
            .map(|_| ())
        })
    }

    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        let inputs: Vec<i64> = inputs.iter().map(|&i| i as i64).collect();
        self.conn.call(move |c| {
            c.execute(
                "UPDATE claims SET done = true, holder = NULL, expires_at = NULL
                 WHERE run_id = $1 AND input_idx = ANY($2)",
                &[&run, &inputs],
            )
            .map(|_| ())
        })
    }

    fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError> {
        self.conn.call(move |c| {
            let r = c.query_one(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE holder IS NOT NULL AND expires_at >= now())
                 FROM claims WHERE run_id = $1 AND NOT done",
                &[&run],
            )?;
            Ok((r.get::<_, i64>(0) as usize, r.get::<_, i64>(1) as usize))
        })
    }

    fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError> {
        let inputs: Vec<i64> = inputs.iter().map(|&i| i as i64).collect();
        self.conn.call(move |c| {
            Ok(c
                .query(
                    "SELECT input_idx, repetition FROM samples WHERE run_id = $1 AND input_idx = ANY($2)",
                    &[&run, &inputs],
                )?
                .iter()
                .map(|r| (r.get::<_, i64>(0) as usize, r.get::<_, i64>(1) as usize))
                .collect())
        })
    }
}
