//! Reading a run's inputs, samples, attempts and snapshot from SQLite.

use super::db::Sqlite;
use crate::store::backend::{LiveCells, Samples};
use crate::store::error::StoreError;
use crate::store::records::{AttemptCounts, AttemptRow, CachedOutput, SampleRow};
use crate::store::rows::{
    attempt_from_row, attempt_usage, byte_cell, cached_from_row, causes_row, inputs_from,
    sample_from_row, ATTEMPT_COLUMNS, SAMPLE_COLUMNS,
};
use probity_core::causes::Causes;
use probity_core::{Cell, Input, ReliabilityTensor};
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;
use std::ops::Range;

impl Samples for Sqlite {
    fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        let rows: Vec<(String, String)> = self.query_all(
            "SELECT input_id, fields FROM inputs WHERE run_id = ?1 ORDER BY idx",
            params![run],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        inputs_from(rows, run, &self.location())
    }

    fn input_ids(&self, run: i64) -> Result<Vec<String>, StoreError> {
        self.query_all(
            "SELECT input_id FROM inputs WHERE run_id = ?1 ORDER BY idx",
            params![run],
            |r| r.get(0),
        )
    }

    fn inputs_at(&self, run: i64, at: &[usize]) -> Result<Vec<(usize, Input)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT input_id, fields FROM inputs WHERE run_id = ?1 AND idx = ?2")
            .map_err(|e| self.err(e))?;
        let mut found = Vec::new();
        let mut rows = Vec::new();
        for &i in at {
            if let Some(row) = stmt
                .query_row(params![run, i as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| self.err(e))?
            {
                found.push(i);
                rows.push(row);
            }
        }
        Ok(found
            .into_iter()
            .zip(inputs_from(rows, run, &self.location())?)
            .collect())
    }

    fn samples(
        &self,
        run: i64,
        inputs: Option<Range<usize>>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        let (from, to) = inputs.map_or((0, i64::MAX), |r| (r.start as i64, r.end as i64));
        self.query_all(
            &format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx >= ?2 AND input_idx < ?3
                 ORDER BY input_idx, repetition"
            ),
            params![run, from, to],
            |r| sample_from_row(r),
        )
    }

    fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM samples WHERE run_id = ?1)
                    + (SELECT COUNT(*) FROM rechecks WHERE run_id = ?1)",
                params![run],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(|e| self.err(e))
    }

    fn samples_at(&self, run: i64, at: &[(usize, usize)]) -> Result<Vec<SampleRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx = ?2 AND repetition = ?3"
            ))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for &(i, j) in at {
            if let Some(row) = stmt
                .query_row(params![run, i as i64, j as i64], |r| sample_from_row(r))
                .optional()
                .map_err(|e| self.err(e))?
            {
                out.push(row);
            }
        }
        Ok(out)
    }

    fn each_sample_cells(
        &self,
        run: i64,
        f: &mut dyn FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, repetition, cells FROM samples WHERE run_id = ?1
                 UNION ALL SELECT input_idx, repetition, cells FROM rechecks WHERE run_id = ?1
                 ORDER BY 1, 2",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.err(e))?;
        let mut cells = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let (i, j) = (
                r.get::<_, i64>(0).map_err(|e| self.err(e))? as usize,
                r.get::<_, i64>(1).map_err(|e| self.err(e))? as usize,
            );
            let bytes = r
                .get_ref(2)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(|e| self.err(e))?;
            cells.clear();
            cells.extend(bytes.iter().copied().map(byte_cell));
            f(i, j, &cells);
        }
        Ok(())
    }

    fn each_sample_error(&self, run: i64, f: &mut dyn FnMut(&SampleRow)) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, repetition, error, cells, reasons FROM run_samples WHERE run_id = ?1
                 ORDER BY input_idx, repetition",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            f(&causes_row(r).map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        self.query_all(
            &format!("{ATTEMPT_COLUMNS} WHERE run_id = ?1 ORDER BY input_idx, repetition, attempt"),
            params![run],
            |r| attempt_from_row(r),
        )
    }

    fn live_cells(
        &self,
        run: i64,
        from: usize,
        limit: usize,
    ) -> Result<Vec<LiveCells>, StoreError> {
        self.query_all(
            "SELECT s.input_idx, s.cells, a.cells FROM samples s
                 LEFT JOIN attempts a ON a.run_id = s.run_id AND a.input_idx = s.input_idx
                    AND a.repetition = s.repetition
                    AND a.attempt = (SELECT MAX(l.attempt) FROM attempts l WHERE l.run_id = s.run_id
                        AND l.input_idx = s.input_idx AND l.repetition = s.repetition)
                 WHERE s.run_id = ?1 AND s.input_idx >= ?2 AND s.repetition = 0
                 ORDER BY s.input_idx LIMIT ?3",
            params![run, from as i64, limit as i64],
            |r| {
                let first: Vec<u8> = r.get(1)?;
                let published: Option<Vec<u8>> = r.get(2)?;
                Ok((
                    r.get::<_, i64>(0)? as usize,
                    first.into_iter().map(byte_cell).collect(),
                    published.map(|b| b.into_iter().map(byte_cell).collect()),
                ))
            },
        )
    }

    fn each_attempt_counts(
        &self,
        run: i64,
        f: &mut dyn FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, attempt, published, call_attempts, judge_calls,
                    input_tokens, output_tokens, error IS NULL
                 FROM attempts WHERE run_id = ?1 ORDER BY input_idx, repetition, attempt",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let read = || -> rusqlite::Result<AttemptCounts> {
                Ok(AttemptCounts {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    attempt: r.get::<_, i64>(1)? as u32,
                    published: r.get(2)?,
                    calls: r.get::<_, i64>(3)? as u64 + r.get::<_, i64>(4)? as u64,
                    ..attempt_usage(
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<i64>>(5)?,
                        r.get::<_, Option<i64>>(6)?,
                        r.get(7)?,
                    )
                })
            };
            f(read().map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        let wanted: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT cache_key, output, latency_ms, input_tokens, output_tokens FROM run_samples
                 WHERE run_id = ?1 AND error IS NULL AND output IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![from]).map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let key = r
                .get_ref(0)
                .and_then(|v| v.as_str().map_err(Into::into))
                .map_err(|e| self.err(e))?;
            if !wanted.contains(key) || out.contains_key(key) {
                continue;
            }
            let hit = cached_from_row(r, 1).map_err(|e| self.err(e))?;
            out.insert(key.to_string(), hit);
        }
        Ok(out)
    }

    fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO snapshots (run_id, cells, causes) VALUES (?1, ?2, ?3)",
                params![
                    run,
                    tensor.packed(),
                    serde_json::to_string(causes).unwrap_or_default()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn snapshot(&self, run: i64) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        self.conn
            .query_row(
                "SELECT cells, causes FROM snapshots WHERE run_id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }
}
