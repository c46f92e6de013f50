//! Runs: created, finished, listed and read back by id or name.

use super::db::Sqlite;
use super::schema::NOW_S;
use crate::store::backend::{Leases, RunEnd, Runs};
use crate::store::error::StoreError;
use crate::store::identity::me;
use crate::store::records::{NewRun, RunRecord, SessionCalls};
use crate::store::rows::{run_from_row, variant_text, RUN_COLUMNS, USAGE_NONE};
use probity_core::sequential::SequentialOutcome;
use rusqlite::{params, OptionalExtension};

impl Runs for Sqlite {
    /// Create a run and store its inputs; returns its id.
    fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let err = |source| super::db::err_at(&path, source);
        let (variant, group, starts_group) = variant_text(run.variant);
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO runs (name, status, config_hash, config, system, inputs, outputs_per_input, checks, settings, parent_run, reused_from, outputs_from, variant, variant_group, usage)
             VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                run.name,
                run.config_hash,
                run.config,
                run.system,
                run.inputs.len() as i64,
                run.outputs_per_input as i64,
                serde_json::to_string(run.checks).unwrap_or_default(),
                serde_json::to_string(run.settings).unwrap_or_default(),
                run.parent_run,
                run.reused_from,
                run.outputs_from,
                variant,
                group,
                USAGE_NONE,
            ],
        )
        .map_err(err)?;
        let id = tx.last_insert_rowid();
        if starts_group {
            tx.execute(
                "UPDATE runs SET variant_group = id WHERE id = ?1",
                params![id],
            )
            .map_err(err)?;
        }
        // The new run is this process's from the start.
        tx.execute(
            &format!("INSERT OR REPLACE INTO leases (run_id, pid, host, holder, refreshed_at) VALUES (?1, ?2, ?3, ?4, {NOW_S})"),
            params![id, me().pid, me().host, me().token],
        )
        .map_err(err)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO inputs (run_id, idx, input_id, fields) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for (idx, input) in run.inputs.iter().enumerate() {
                stmt.execute(params![id, idx as i64, input.id, input.fields.as_json()])
                    .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(id)
    }

    /// The most recent unfinished run with this configuration hash.
    fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE config_hash = ?1 AND status != 'complete' ORDER BY id DESC LIMIT 1",
                params![config_hash],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn finish_run(&self, run: i64, end: &RunEnd<'_>) -> Result<(), StoreError> {
        let write = || -> rusqlite::Result<()> {
            let tx = self.conn.unchecked_transaction()?;
            tx.execute(
                "UPDATE runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
                 cached = cached + ?3, duration_s = COALESCE(duration_s, 0) + ?4, verdicts = ?5
                 WHERE id = ?1",
                params![
                    run,
                    <&str>::from(end.status),
                    end.cached as i64,
                    end.duration_s,
                    end.verdicts.and_then(|v| serde_json::to_string(v).ok())
                ],
            )?;
            if let Some(t) = end.totals {
                tx.execute(
                    // A usage not known (a run stored before schema 15)
                    // stays so.
                    "UPDATE runs SET model_calls = ?2, judge_calls = ?3, tokens = ?4,
                     judge_calls_by_check = ?5,
                     usage = CASE WHEN usage IS NULL THEN NULL ELSE ?6 END,
                     calls_ended = ?7 WHERE id = ?1",
                    params![
                        run,
                        t.model_calls as i64,
                        t.judge_calls as i64,
                        t.tokens as i64,
                        serde_json::to_string(&t.judge_calls_by_check).unwrap_or_default(),
                        serde_json::to_string(&t.usage).unwrap_or_default(),
                        t.calls_ended as i64,
                    ],
                )?;
            }
            tx.commit()
        };
        write().map_err(|e| self.err(e))?;
        // Finished or interrupted, the run is no longer this process's.
        self.release_lease(run)
    }

    /// Store a sequential run's outcome with it (when it finishes).
    fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET sequential = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(outcome).ok()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn record_calls(&self, run: i64, calls: &SessionCalls) -> Result<(), StoreError> {
        let upstream = serde_json::to_string(&calls.upstream).ok();
        self.conn
            .execute(
                &format!(
                    "UPDATE runs SET processes = COALESCE(processes, 0) + 1,
                     call_s = COALESCE(call_s, 0) + ?2, queued_s = COALESCE(queued_s, 0) + ?3,
                     process_s = COALESCE(process_s, 0) + ?4,
                     span_start_s = MIN(COALESCE(span_start_s, {NOW_S} - ?4), {NOW_S} - ?4),
                     span_end_s = MAX(COALESCE(span_end_s, {NOW_S}), {NOW_S}),
                     upstream = ?5 WHERE id = ?1"
                ),
                params![run, calls.call_s, calls.queued_s, calls.elapsed_s, upstream],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Every run, newest first, optionally only those whose name contains
    /// `name`.
    fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        self.query_all(
            &format!("{RUN_COLUMNS} WHERE (?1 IS NULL OR instr(name, ?1) > 0) ORDER BY id DESC"),
            params![name],
            |r| run_from_row(r),
        )
    }

    /// One run's header.
    fn run(&self, run: i64) -> Result<Option<RunRecord>, StoreError> {
        self.conn
            .query_row(&format!("{RUN_COLUMNS} WHERE id = ?1"), params![run], |r| {
                run_from_row(r)
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The latest run whose name is exactly `name`.
    fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }
}
