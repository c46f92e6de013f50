//! Claims in PostgreSQL: the inputs of a shared run, taken by workers on
//! any machine with `FOR UPDATE SKIP LOCKED` (two claimers never wait for
//! each other nor take the same input), expiring by the server's clock.
//! A worker never takes an input it holds itself, even once its claim has
//! expired: it may still be sampling it. An input claimed
//! [`CLAIM_TRIES`] times without being finished is given up (a dead
//! letter): marked done and `given_up`, and named by [`Claims::given_up`].
//! Each claim is tagged, so one tried again after its COMMIT's answer was
//! lost hands back what its first try took instead of taking more.

use super::db::Postgres;
use crate::store::backend::Claims;
use crate::store::error::StoreError;
use crate::store::identity::me;
use crate::store::lease::CLAIM_TRIES;
use postgres::{GenericClient, Transaction};

/// Extend this process's claims on `run` to `ttl` from now (also in the
/// writer's transactions: a claim lives `ttl` past the last progress).
pub(super) fn refresh_claims_on(
    c: &mut impl GenericClient,
    run: i64,
    ttl: std::time::Duration,
) -> Result<u64, postgres::Error> {
    c.execute(
        "UPDATE claims SET expires_at = now() + make_interval(secs => $3)
         WHERE run_id = $1 AND holder = $2 AND NOT done",
        &[&run, &me().token, &ttl.as_secs_f64()],
    )
}

/// Mark `inputs` of `run` done and drop their claims (in the writer's
/// transaction that stores their last samples: done means stored).
pub(super) fn finish_inputs_on(
    c: &mut impl GenericClient,
    run: i64,
    inputs: &[usize],
) -> Result<u64, postgres::Error> {
    let inputs: Vec<i64> = inputs.iter().map(|&i| i as i64).collect();
    c.execute(
        "UPDATE claims SET done = true, given_up = false, holder = NULL, expires_at = NULL
         WHERE run_id = $1 AND input_idx = ANY($2)",
        &[&run, &inputs],
    )
}

/// The inputs of `run` that the claim tagged `tag` holds: those a try of
/// it took before its COMMIT's answer was lost (empty on its first try).
fn taken_by(tx: &mut Transaction<'_>, run: i64, tag: i64) -> Result<Vec<usize>, postgres::Error> {
    Ok(tx
        .query(
            "SELECT input_idx FROM claims
             WHERE run_id = $1 AND claim_tag = $2 AND holder = $3 AND NOT done",
            &[&run, &tag, &me().token],
        )?
        .iter()
        .map(|r| r.get::<_, i64>(0) as usize)
        .collect())
}

/// Take up to `count` inputs of `run` for `ttl` seconds under `tag`: the
/// claims made on first use, the inputs whose tries are spent given up,
/// then the lowest inputs nobody holds (or another holder let expire).
fn take(
    tx: &mut Transaction<'_>,
    run: i64,
    count: i64,
    ttl: f64,
    tag: i64,
) -> Result<Vec<usize>, postgres::Error> {
    // A run's claims are made on first use: one per input.
    tx.execute(
        "INSERT INTO claims (run_id, input_idx)
         SELECT run_id, idx FROM inputs WHERE run_id = $1
            AND NOT EXISTS (SELECT 1 FROM claims WHERE run_id = $1)
         ON CONFLICT DO NOTHING",
        &[&run],
    )?;
    // Inputs whose every try was spent by workers that died on them:
    // given up, not handed to the next worker.
    tx.execute(
        "WITH spent AS MATERIALIZED (
            SELECT input_idx FROM claims WHERE run_id = $1 AND NOT done AND tries >= $2
                AND (holder IS NULL OR expires_at < now())
            FOR UPDATE SKIP LOCKED)
         UPDATE claims c SET done = true, given_up = true, holder = NULL, expires_at = NULL
         FROM spent WHERE c.run_id = $1 AND c.input_idx = spent.input_idx",
        &[&run, &CLAIM_TRIES],
    )?;
    Ok(tx
        .query(
            // The picked rows in a CTE, evaluated once: as an `IN (SELECT
            // … LIMIT n)` the planner may scan the subquery again and
            // update more than n rows.
            "WITH picked AS MATERIALIZED (
                SELECT input_idx FROM claims WHERE run_id = $1 AND NOT done
                    AND (holder IS NULL OR (expires_at < now() AND holder <> $2))
                ORDER BY input_idx LIMIT $6 FOR UPDATE SKIP LOCKED)
             UPDATE claims c SET holder = $2, pid = $3, host = $4,
                expires_at = now() + make_interval(secs => $5), tries = c.tries + 1, claim_tag = $7
             FROM picked WHERE c.run_id = $1 AND c.input_idx = picked.input_idx
             RETURNING c.input_idx",
            &[&run, &me().token, &me().pid, &me().host, &ttl, &count, &tag],
        )?
        .iter()
        .map(|r| r.get::<_, i64>(0) as usize)
        .collect())
}

impl Claims for Postgres {
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError> {
        let (ttl, count) = (ttl.as_secs_f64(), count as i64);
        // This call's tag: a try made again after its COMMIT's answer was
        // lost finds what the first took (it committed) and hands that back.
        let tag: i64 = rand::random();
        self.conn.call(move |c| {
            let mut tx = c.transaction()?;
            let mut got = taken_by(&mut tx, run, tag)?;
            if got.is_empty() {
                got = take(&mut tx, run, count, ttl, tag)?;
            }
            tx.commit()?;
            got.sort_unstable();
            Ok(got)
        })
    }

    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError> {
        self.conn
            .call(move |c| refresh_claims_on(c, run, ttl).map(|_| ()))
    }

    /// Drops the holder with the try, so a release tried again after its
    /// answer was lost finds nothing of this process's left to give back
    /// (a second decrement would hand an input one try too many).
    fn release_claims(&self, run: i64) -> Result<(), StoreError> {
        self.conn.call(move |c| {
            c.execute(
                "UPDATE claims SET holder = NULL, expires_at = NULL,
                    tries = GREATEST(tries - 1, 0)
                 WHERE run_id = $1 AND holder = $2 AND NOT done",
                &[&run, &me().token],
            )
            .map(|_| ())
        })
    }

    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        let inputs = inputs.to_vec();
        self.conn
            .call(move |c| finish_inputs_on(c, run, &inputs).map(|_| ()))
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

    fn given_up(&self, run: i64) -> Result<Vec<usize>, StoreError> {
        self.conn.call(move |c| {
            Ok(c.query(
                "SELECT input_idx FROM claims WHERE run_id = $1 AND given_up ORDER BY input_idx",
                &[&run],
            )?
            .iter()
            .map(|r| r.get::<_, i64>(0) as usize)
            .collect())
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
