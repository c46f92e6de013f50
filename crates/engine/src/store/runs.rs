//! Runs: created, finished, listed and read back by id or name.

use super::error::StoreError;
use super::lease::{host_name, now_s};
use super::records::{run_from_row, NewRun, RunRecord, RunStatus, RunTotals, RUN_COLUMNS};
use super::sqlite::Store;
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::Decision;
use rusqlite::{params, OptionalExtension};

impl Store {
    /// Create a run and store its inputs; returns its id.
    pub fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO runs (name, status, config_hash, config, system, inputs, outputs_per_input, checks, settings, parent_run, reused_from, outputs_from)
             VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
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
            ],
        )
        .map_err(err)?;
        let id = tx.last_insert_rowid();
        // The new run is this process's from the start.
        tx.execute(
            "INSERT OR REPLACE INTO leases (run_id, pid, host, refreshed_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, i64::from(std::process::id()), host_name(), now_s()],
        )
        .map_err(err)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO inputs (run_id, idx, input_id, fields) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for (idx, input) in run.inputs.iter().enumerate() {
                stmt.execute(params![
                    id,
                    idx as i64,
                    input.id,
                    serde_json::Value::Object(input.fields.clone()).to_string()
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(id)
    }

    /// The most recent unfinished run with this configuration hash.
    pub fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE config_hash = ?1 AND status != 'complete' ORDER BY id DESC LIMIT 1",
                params![config_hash],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Mark a run finished (or interrupted): its counts over all sessions
    /// (`totals`), this session's reused samples and duration, which
    /// add to the earlier sessions', and each check's decision over every
    /// stored sample (`verdicts`, in column order; `None` leaves none, and
    /// `probity runs` rebuilds them from the samples).
    pub fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        totals: RunTotals,
        cached: u64,
        duration_s: f64,
        verdicts: Option<&[Decision]>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
                 model_calls = ?3, judge_calls = ?4, tokens = ?5, cached = cached + ?6,
                 duration_s = COALESCE(duration_s, 0) + ?7, judge_calls_by_check = ?8,
                 verdicts = ?9
                 WHERE id = ?1",
                params![
                    run,
                    <&str>::from(status),
                    totals.model_calls as i64,
                    totals.judge_calls as i64,
                    totals.tokens as i64,
                    cached as i64,
                    duration_s,
                    serde_json::to_string(&totals.judge_calls_by_check).unwrap_or_default(),
                    verdicts.and_then(|v| serde_json::to_string(v).ok())
                ],
            )
            .map_err(|e| self.err(e))?;
        // Finished or interrupted, the run is no longer this process's.
        self.release_lease(run)
    }

    /// Store a sequential run's outcome with it (when it finishes).
    pub fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET sequential = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(outcome).ok()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Every run, newest first, optionally only those whose name contains
    /// `name`.
    pub fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        self.query_all(
            &format!("{RUN_COLUMNS} WHERE (?1 IS NULL OR instr(name, ?1) > 0) ORDER BY id DESC"),
            params![name],
            run_from_row,
        )
    }

    /// One run's header.
    pub fn run(&self, run: i64) -> Result<RunRecord, StoreError> {
        self.conn
            .query_row(
                &format!("{RUN_COLUMNS} WHERE id = ?1"),
                params![run],
                run_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(StoreError::NoSuchRun {
                path: self.path.clone(),
                run,
            })
    }

    /// The latest run whose name is exactly `name`.
    pub fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
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
