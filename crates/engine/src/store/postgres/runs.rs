//! Runs in PostgreSQL: created (id from the identity column, inputs in one
//! statement), finished, listed and read back.

use super::db::Postgres;
use super::schema::NOW_TEXT;
use crate::store::backend::{Leases, RunEnd, Runs};
use crate::store::error::StoreError;
use crate::store::identity::me;
use crate::store::records::{NewRun, RunRecord, SessionCalls};
use crate::store::rows::{run_from_row, variant_text, RUN_COLUMNS, USAGE_NONE};
use probity_core::cost::RunUsage;
use probity_core::sequential::SequentialOutcome;

impl Runs for Postgres {
    fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        let row = (
            run.name.to_string(),
            run.config_hash.to_string(),
            run.config.to_string(),
            run.system.to_string(),
            run.inputs.len() as i64,
            run.outputs_per_input as i64,
            serde_json::to_string(run.checks).unwrap_or_default(),
            serde_json::to_string(run.settings).unwrap_or_default(),
            (run.parent_run, run.reused_from, run.outputs_from),
            variant_text(run.variant),
        );
        let idx: Vec<i64> = (0..run.inputs.len() as i64).collect();
        let ids: Vec<Vec<u8>> = run
            .inputs
            .iter()
            .map(|i| i.id.clone().into_bytes())
            .collect();
        let fields: Vec<String> = run
            .inputs
            .iter()
            .map(|i| i.fields.as_json().to_string())
            .collect();
        // This call's tag: a try made again after its COMMIT's answer was
        // lost finds the run its first try made (it committed) and hands
        // that back instead of making a second.
        let tag: i64 = rand::random();
        self.conn.call(move |c| {
            let (
                name,
                hash,
                config,
                system,
                n,
                m,
                checks,
                settings,
                (parent, reused, from),
                (variant, group, starts_group),
            ) = &row;
            let mut tx = c.transaction()?;
            if let Some(made) = tx.query_opt("SELECT id FROM runs WHERE create_tag = $1", &[&tag])? {
                tx.commit()?;
                return Ok(made.get(0));
            }
            let id: i64 = tx
                .query_one(
                    "INSERT INTO runs (name, status, config_hash, config, system, inputs, outputs_per_input,
                        checks, settings, parent_run, reused_from, outputs_from, variant, variant_group, usage,
                        create_tag)
                     VALUES ($1, 'running', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                     RETURNING id",
                    &[
                        name, hash, config, system, n, m, checks, settings, parent, reused, from,
                        variant, group, &USAGE_NONE, &tag,
                    ],
                )?
                .get(0);
            if *starts_group {
                tx.execute("UPDATE runs SET variant_group = id WHERE id = $1", &[&id])?;
            }
            // The new run is this process's from the start.
            tx.execute(
                "INSERT INTO leases (run_id, pid, host, holder, refreshed_at) VALUES ($1, $2, $3, $4, now())",
                &[&id, &me().pid, &me().host, &me().token],
            )?;
            tx.execute(
                "INSERT INTO inputs (run_id, idx, input_id, fields)
                 SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BYTEA[], $4::TEXT[])",
                &[&id, &idx, &ids, &fields],
            )?;
            tx.commit()?;
            Ok(id)
        })
    }

    fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        let hash = config_hash.to_string();
        self.conn.call(move |c| {
            Ok(c.query_opt(
                "SELECT id FROM runs WHERE config_hash = $1 AND status != 'complete' ORDER BY id DESC LIMIT 1",
                &[&hash],
            )?
            .map(|r| r.get(0)))
        })
    }

    fn finish_run(&self, run: i64, end: &RunEnd<'_>) -> Result<(), StoreError> {
        let status = <&str>::from(end.status).to_string();
        let (cached, duration) = (end.cached as i64, end.duration_s);
        let verdicts = end.verdicts.and_then(|v| serde_json::to_string(v).ok());
        let totals = end.totals.map(|t| {
            (
                t.model_calls as i64,
                t.judge_calls as i64,
                t.tokens as i64,
                serde_json::to_string(&t.judge_calls_by_check).unwrap_or_default(),
                serde_json::to_string(&t.usage).unwrap_or_default(),
                t.calls_ended as i64,
            )
        });
        self.conn.call(move |c| {
            let mut tx = c.transaction()?;
            tx.execute(
                &format!(
                    "UPDATE runs SET status = $2, finished_at = {NOW_TEXT}, cached = cached + $3,
                     duration_s = COALESCE(duration_s, 0) + $4, verdicts = $5 WHERE id = $1"
                ),
                &[&run, &status, &cached, &duration, &verdicts],
            )?;
            if let Some((calls, judge, tokens, by_check, usage, ended)) = &totals {
                // The whole run's counts: the writers' rows are in them. A
                // usage not known (a run stored before schema 15) stays so.
                tx.execute(
                    "UPDATE runs SET model_calls = $2, judge_calls = $3, tokens = $4,
                     judge_calls_by_check = $5,
                     usage = CASE WHEN usage IS NULL THEN NULL ELSE $6 END,
                     calls_ended = $7 WHERE id = $1",
                    &[&run, calls, judge, tokens, by_check, usage, ended],
                )?;
                tx.execute("DELETE FROM run_counts WHERE run_id = $1", &[&run])?;
            }
            tx.commit()
        })?;
        // Finished or interrupted, the run is no longer this process's.
        self.release_lease(run)
    }

    fn record_calls(&self, run: i64, calls: &SessionCalls) -> Result<(), StoreError> {
        let upstream = serde_json::to_string(&calls.upstream).ok();
        let (call_s, queued_s, elapsed_s) = (calls.call_s, calls.queued_s, calls.elapsed_s);
        // The server's clock: machines' clocks need not agree. A plain
        // UPDATE (no key column) waits for no writer's key-share lock.
        self.conn.call(move |c| {
            c.execute(
                "UPDATE runs SET processes = COALESCE(processes, 0) + 1,
                 call_s = COALESCE(call_s, 0) + $2, queued_s = COALESCE(queued_s, 0) + $3,
                 process_s = COALESCE(process_s, 0) + $4,
                 span_start_s = LEAST(span_start_s, EXTRACT(EPOCH FROM clock_timestamp())::float8 - $4),
                 span_end_s = GREATEST(span_end_s, EXTRACT(EPOCH FROM clock_timestamp())::float8),
                 upstream = $5 WHERE id = $1",
                &[&run, &call_s, &queued_s, &elapsed_s, &upstream],
            )
            .map(|_| ())
        })
    }

    fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        let text = serde_json::to_string(outcome).ok();
        self.conn.call(move |c| {
            c.execute(
                "UPDATE runs SET sequential = $2 WHERE id = $1",
                &[&run, &text],
            )
            .map(|_| ())
        })
    }

    fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        let name = name.map(str::to_string);
        self.conn.call(move |c| {
            c.query(
                &format!(
                    "{RUN_COLUMNS} WHERE ($1::TEXT IS NULL OR strpos(name, $1) > 0) ORDER BY id DESC"
                ),
                &[&name],
            )?
            .iter()
            .map(run_from_row)
            .collect::<Result<Vec<_>, _>>()
            .and_then(|mut runs| add_writers_counts(c, &mut runs).map(|()| runs))
        })
    }

    fn run(&self, run: i64) -> Result<Option<RunRecord>, StoreError> {
        self.conn.call(move |c| {
            let mut found = c
                .query_opt(&format!("{RUN_COLUMNS} WHERE id = $1"), &[&run])?
                .as_ref()
                .map(run_from_row)
                .transpose()?;
            if let Some(r) = found.as_mut() {
                add_writers_counts(c, std::slice::from_mut(r))?;
            }
            Ok(found)
        })
    }

    fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        let name = name.to_string();
        self.conn.call(move |c| {
            Ok(c.query_opt(
                "SELECT id FROM runs WHERE name = $1 ORDER BY id DESC LIMIT 1",
                &[&name],
            )?
            .map(|r| r.get(0)))
        })
    }
}

/// Add to each of `runs` the counts its writers keep on rows of their own
/// (`run_counts`, migration 13): a run's counts are its row's plus every
/// writer's.
fn add_writers_counts(
    c: &mut postgres::Client,
    runs: &mut [RunRecord],
) -> Result<(), postgres::Error> {
    if runs.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    let rows = c.query(
        "SELECT run_id, model_calls, judge_calls, tokens, judge_calls_by_check, usage, calls_ended
         FROM run_counts WHERE run_id = ANY($1)",
        &[&ids],
    )?;
    for row in rows {
        let id: i64 = row.get(0);
        let Some(run) = runs.iter_mut().find(|r| r.id == id) else {
            continue;
        };
        run.model_calls += row.get::<_, i64>(1) as u64;
        run.judge_calls += row.get::<_, i64>(2) as u64;
        run.tokens += row.get::<_, i64>(3) as u64;
        // A writer's row of schema 16 knows its calls ended; one written
        // before does not: the run's count then stays unknown.
        run.calls_ended = match (run.calls_ended, row.get::<_, Option<i64>>(6)) {
            (known, Some(n)) => Some(known.unwrap_or(0) + n.max(0) as u64),
            _ => None,
        };
        let by_check: Vec<u64> = row
            .get::<_, Option<String>>(4)
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        if run.judge_calls_by_check.len() < by_check.len() {
            run.judge_calls_by_check.resize(by_check.len(), 0);
        }
        for (total, n) in run.judge_calls_by_check.iter_mut().zip(by_check) {
            *total += n;
        }
        // A writer's usage counts only into a run whose usage is known.
        if let Some(usage) = &mut run.usage {
            let theirs: RunUsage = row
                .get::<_, Option<String>>(5)
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default();
            *usage = usage.plus(&theirs);
        }
    }
    Ok(())
}
