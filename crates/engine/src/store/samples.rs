//! Reading a run's inputs, samples, attempts, causes and snapshot.

use super::error::StoreError;
use super::records::{
    byte_cell, sample_from_row, AttemptCounts, AttemptRow, CachedOutput, SampleRow, SAMPLE_COLUMNS,
};
use super::sqlite::Store;
use probity_core::causes::Causes;
use probity_core::{Cell, Input, ReliabilityTensor};
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;

impl Store {
    /// A run's inputs, in index order.
    pub fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT input_id, fields FROM inputs WHERE run_id = ?1 ORDER BY idx")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, fields) = row.map_err(|e| self.err(e))?;
            let fields = match serde_json::from_str(&fields) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => {
                    return Err(StoreError::Damaged {
                        path: self.path.clone(),
                        run,
                        what: format!("fields of input {id:?} are not a JSON object"),
                    })
                }
            };
            out.push(Input { id, fields });
        }
        Ok(out)
    }

    /// A run's stored samples, in `(input, repetition)` order.
    pub fn samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.query_all(
            &format!("{SAMPLE_COLUMNS} WHERE run_id = ?1 ORDER BY input_idx, repetition"),
            params![run],
            sample_from_row,
        )
    }

    /// Run `run`'s samples of the inputs in `inputs`, in `(input,
    /// repetition)` order: a run read a slice at a time.
    pub fn samples_of_inputs(
        &self,
        run: i64,
        inputs: std::ops::Range<usize>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        self.query_all(
            &format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx >= ?2 AND input_idx < ?3
                 ORDER BY input_idx, repetition"
            ),
            params![run, inputs.start as i64, inputs.end as i64],
            sample_from_row,
        )
    }

    /// How many samples run `run` holds.
    pub fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
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

    /// The samples of run `run` at the `(input, repetition)` cells `at`,
    /// in the order asked (once each; a cell with no sample is left out):
    /// the few outputs a report quotes, without reading the others.
    pub fn samples_at(
        &self,
        run: i64,
        at: &[(usize, usize)],
    ) -> Result<Vec<SampleRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx = ?2 AND repetition = ?3"
            ))
            .map_err(|e| self.err(e))?;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &(i, j) in at {
            if !seen.insert((i, j)) {
                continue;
            }
            if let Some(row) = stmt
                .query_row(params![run, i as i64, j as i64], sample_from_row)
                .optional()
                .map_err(|e| self.err(e))?
            {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// Visit run `run`'s samples in `(input, repetition)` order as
    /// `(input, repetition, cells)`, one row in memory at a time and no
    /// output read: what the tensor is built from.
    pub fn each_sample_cells(
        &self,
        run: i64,
        mut f: impl FnMut(usize, usize, &[Cell]),
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

    /// The causes of run `run`'s errors over `k` checks, counted from every
    /// stored sample ([`SampleRow::note_causes`]) one row at a time, no
    /// output read (unsorted: see [`Causes::sorted`]).
    pub fn causes(&self, run: i64, k: usize) -> Result<Causes, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, repetition, error, cells, reasons FROM run_samples WHERE run_id = ?1
                 ORDER BY input_idx, repetition",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run], |r| {
                let cells: Vec<u8> = r.get(3)?;
                let reasons: Option<String> = r.get(4)?;
                Ok(SampleRow {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    repetition: r.get::<_, i64>(1)? as usize,
                    cache_key: String::new(),
                    output: None,
                    error: r.get(2)?,
                    latency_ms: None,
                    input_tokens: None,
                    output_tokens: None,
                    call_attempts: 0,
                    cells: cells.into_iter().map(byte_cell).collect(),
                    reasons: reasons
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        let mut causes = Causes::new(k);
        for row in rows {
            row.map_err(|e| self.err(e))?.note_causes(&mut causes);
        }
        Ok(causes)
    }

    /// A run's stored attempts, in `(input, repetition, attempt)` order
    /// (empty for a run without a retry policy).
    pub fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        self.query_all(
            "SELECT input_idx, repetition, attempt, output, error, latency_ms, input_tokens, output_tokens,
                        call_attempts, judge_calls, cells, reasons, passed, published, cache_key
                 FROM attempts WHERE run_id = ?1 ORDER BY input_idx, repetition, attempt",
            params![run],
            |r| {
                let cells: Vec<u8> = r.get(10)?;
                let reasons: Option<String> = r.get(11)?;
                Ok(AttemptRow {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    repetition: r.get::<_, i64>(1)? as usize,
                    attempt: r.get::<_, i64>(2)? as u32,
                    output: r.get(3)?,
                    error: r.get(4)?,
                    latency_ms: r.get(5)?,
                    input_tokens: r.get::<_, Option<i64>>(6)?.map(|v| v as u64),
                    output_tokens: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
                    call_attempts: r.get::<_, i64>(8)? as u32,
                    judge_calls: r.get::<_, i64>(9)? as u64,
                    cells: cells.into_iter().map(byte_cell).collect(),
                    reasons: reasons
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                    passed: r.get(12)?,
                    published: r.get(13)?,
                    cache_key: r.get(14)?,
                })
            },
        )
    }

    /// Visit run `run`'s attempts in `(input, repetition, attempt)` order as
    /// [`AttemptCounts`], one row in memory at a time and no output read:
    /// what the guarded system's measurement is built from.
    pub fn each_attempt_counts(
        &self,
        run: i64,
        mut f: impl FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, attempt, published, call_attempts, judge_calls,
                    COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)
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
                    tokens: r.get::<_, i64>(5)? as u64,
                })
            };
            f(read().map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// The successful outputs of run `from` stored under any of `keys`
    /// (the first for a key), read in one pass over that run's samples.
    pub fn cached_outputs(
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
            let read = || -> rusqlite::Result<CachedOutput> {
                Ok(CachedOutput {
                    output: r.get(1)?,
                    latency_ms: r.get(2)?,
                    input_tokens: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                    output_tokens: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
                })
            };
            let hit = read().map_err(|e| self.err(e))?;
            out.insert(key.to_string(), hit);
        }
        Ok(out)
    }

    /// Keep a finished run's tensor and error causes, so its report reads
    /// no sample but those it quotes (dropped when the run is taken to be
    /// written again, [`Store::take_lease`]).
    pub fn put_snapshot(
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

    /// Run `run`'s snapshot: its tensor of shape `(n, m, k)` and its
    /// causes; `None` when it has none (being written, or stored before
    /// schema 8) or one that does not fit the shape.
    pub fn snapshot(
        &self,
        run: i64,
        (n, m, k): (usize, usize, usize),
    ) -> Result<Option<(ReliabilityTensor, Causes)>, StoreError> {
        let row: Option<(Vec<u8>, String)> = self
            .conn
            .query_row(
                "SELECT cells, causes FROM snapshots WHERE run_id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(cells, causes)| {
            let tensor = ReliabilityTensor::from_packed(n, m, k, cells).ok()?;
            let causes: Causes = serde_json::from_str(&causes).ok()?;
            (causes.checks.len() == k).then_some((tensor, causes))
        }))
    }
}
