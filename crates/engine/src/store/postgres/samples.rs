//! Reading a run's inputs, samples, attempts and snapshot from PostgreSQL.

use super::db::Postgres;
use crate::store::backend::{LiveCells, Samples};
use crate::store::error::StoreError;
use crate::store::records::{AttemptCounts, AttemptRow, CachedOutput, SampleRow};
use crate::store::rows::{
    attempt_from_row, attempt_usage, byte_cell, cached_from_row, causes_row, inputs_from,
    sample_from_row, RowRead, ATTEMPT_COLUMNS, SAMPLE_COLUMNS,
};
use probity_core::causes::Causes;
use probity_core::{Cell, Input, ReliabilityTensor};
use std::collections::HashMap;
use std::ops::Range;

impl Samples for Postgres {
    fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        let rows: Vec<(String, String)> = self.conn.call(move |c| {
            c.query(
                "SELECT input_id, fields FROM inputs WHERE run_id = $1 ORDER BY idx",
                &[&run],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.text(1)?)))
            .collect()
        })?;
        inputs_from(rows, run, &self.location())
    }

    fn input_ids(&self, run: i64) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        self.conn.each(
            "SELECT input_id FROM inputs WHERE run_id = $1 ORDER BY idx",
            run,
            |r| r.text(0),
            &mut |id| ids.push(id),
        )?;
        Ok(ids)
    }

    fn inputs_at(&self, run: i64, at: &[usize]) -> Result<Vec<(usize, Input)>, StoreError> {
        let idx: Vec<i64> = at.iter().map(|&i| i as i64).collect();
        let rows: Vec<(i64, String, String)> = self.conn.call(move |c| {
            c.query(
                "SELECT idx, input_id, fields FROM inputs WHERE run_id = $1 AND idx = ANY($2)",
                &[&run, &idx],
            )?
            .iter()
            .map(|r| Ok((r.get::<_, i64>(0), r.text(1)?, r.text(2)?)))
            .collect()
        })?;
        let (found, rows): (Vec<usize>, Vec<(String, String)>) = rows
            .into_iter()
            .map(|(i, id, fields)| (i as usize, (id, fields)))
            .unzip();
        let mut by_idx: HashMap<usize, Input> = found
            .into_iter()
            .zip(inputs_from(rows, run, &self.location())?)
            .collect();
        // In the order asked.
        Ok(at
            .iter()
            .filter_map(|i| by_idx.remove(i).map(|input| (*i, input)))
            .collect())
    }

    fn samples(
        &self,
        run: i64,
        inputs: Option<Range<usize>>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        let (from, to) = inputs.map_or((0, i64::MAX), |r| (r.start as i64, r.end as i64));
        self.conn.call(move |c| {
            c.query(
                &format!(
                    "{SAMPLE_COLUMNS} WHERE run_id = $1 AND input_idx >= $2 AND input_idx < $3
                     ORDER BY input_idx, repetition"
                ),
                &[&run, &from, &to],
            )?
            .iter()
            .map(sample_from_row)
            .collect()
        })
    }

    fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        self.conn.call(move |c| {
            c.query_one(
                "SELECT (SELECT COUNT(*) FROM samples WHERE run_id = $1)
                    + (SELECT COUNT(*) FROM rechecks WHERE run_id = $1)",
                &[&run],
            )
            .map(|r| r.get::<_, i64>(0) as usize)
        })
    }

    fn samples_at(&self, run: i64, at: &[(usize, usize)]) -> Result<Vec<SampleRow>, StoreError> {
        let is: Vec<i64> = at.iter().map(|&(i, _)| i as i64).collect();
        let js: Vec<i64> = at.iter().map(|&(_, j)| j as i64).collect();
        let rows: Vec<SampleRow> = self.conn.call(move |c| {
            c.query(
                &format!(
                    "{SAMPLE_COLUMNS} WHERE run_id = $1 AND (input_idx, repetition) IN
                     (SELECT * FROM UNNEST($2::BIGINT[], $3::BIGINT[]))"
                ),
                &[&run, &is, &js],
            )?
            .iter()
            .map(sample_from_row)
            .collect()
        })?;
        // In the order asked.
        let mut by_cell: HashMap<(usize, usize), SampleRow> = rows
            .into_iter()
            .map(|r| ((r.input_idx, r.repetition), r))
            .collect();
        Ok(at.iter().filter_map(|c| by_cell.remove(c)).collect())
    }

    fn each_sample_cells(
        &self,
        run: i64,
        f: &mut dyn FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        let mut cells = Vec::new();
        self.conn.each(
            "SELECT input_idx, repetition, cells FROM samples WHERE run_id = $1
             UNION ALL SELECT input_idx, repetition, cells FROM rechecks WHERE run_id = $1
             ORDER BY 1, 2",
            run,
            |r| Ok((r.int(0)? as usize, r.int(1)? as usize, r.bytes(2)?)),
            &mut |(i, j, bytes): (usize, usize, Vec<u8>)| {
                cells.clear();
                cells.extend(bytes.into_iter().map(byte_cell));
                f(i, j, &cells);
            },
        )
    }

    fn each_sample_error(&self, run: i64, f: &mut dyn FnMut(&SampleRow)) -> Result<(), StoreError> {
        self.conn.each(
            "SELECT input_idx, repetition, error, cells, reasons FROM run_samples WHERE run_id = $1
             ORDER BY input_idx, repetition",
            run,
            causes_row,
            &mut |row: SampleRow| f(&row),
        )
    }

    fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        self.conn.call(move |c| {
            c.query(
                &format!(
                    "{ATTEMPT_COLUMNS} WHERE run_id = $1 ORDER BY input_idx, repetition, attempt"
                ),
                &[&run],
            )?
            .iter()
            .map(attempt_from_row)
            .collect()
        })
    }

    fn live_cells(
        &self,
        run: i64,
        from: usize,
        limit: usize,
    ) -> Result<Vec<LiveCells>, StoreError> {
        let (from, limit) = (from as i64, limit as i64);
        self.conn.call(move |c| {
            c.query(
                "SELECT s.input_idx, s.cells, a.cells FROM samples s
                 LEFT JOIN attempts a ON a.run_id = s.run_id AND a.input_idx = s.input_idx
                    AND a.repetition = s.repetition
                    AND a.attempt = (SELECT MAX(l.attempt) FROM attempts l WHERE l.run_id = s.run_id
                        AND l.input_idx = s.input_idx AND l.repetition = s.repetition)
                 WHERE s.run_id = $1 AND s.input_idx >= $2 AND s.repetition = 0
                 ORDER BY s.input_idx LIMIT $3",
                &[&run, &from, &limit],
            )?
            .iter()
            .map(|r| {
                let published: Option<Vec<u8>> = r.try_get(2)?;
                Ok((
                    r.int(0)? as usize,
                    r.bytes(1)?.into_iter().map(byte_cell).collect(),
                    published.map(|b| b.into_iter().map(byte_cell).collect()),
                ))
            })
            .collect()
        })
    }

    fn each_attempt_counts(
        &self,
        run: i64,
        f: &mut dyn FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        self.conn.each(
            "SELECT input_idx, attempt, published, call_attempts, judge_calls,
                input_tokens, output_tokens, error IS NULL
             FROM attempts WHERE run_id = $1 ORDER BY input_idx, repetition, attempt",
            run,
            |r| {
                Ok(AttemptCounts {
                    input_idx: r.int(0)? as usize,
                    attempt: r.int(1)? as u32,
                    published: r.flag(2)?,
                    calls: r.int(3)? as u64 + r.int(4)? as u64,
                    ..attempt_usage(r.int(3)?, r.opt_int(5)?, r.opt_int(6)?, r.flag(7)?)
                })
            },
            f,
        )
    }

    fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        let keys = keys.to_vec();
        self.conn.call(move |c| {
            let mut out = HashMap::new();
            for r in c.query(
                "SELECT DISTINCT ON (cache_key) cache_key, output, latency_ms, input_tokens, output_tokens
                 FROM run_samples
                 WHERE run_id = $1 AND error IS NULL AND output IS NOT NULL AND cache_key = ANY($2)
                 ORDER BY cache_key, input_idx, repetition",
                &[&from, &keys],
            )? {
                out.insert(r.text(0)?, cached_from_row(&r, 1)?);
            }
            Ok(out)
        })
    }

    fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        let cells = tensor.packed().to_vec();
        let causes = serde_json::to_string(causes).unwrap_or_default();
        self.conn.call(move |c| {
            c.execute(
                "INSERT INTO snapshots (run_id, cells, causes) VALUES ($1, $2, $3)
                 ON CONFLICT (run_id) DO UPDATE SET cells = EXCLUDED.cells, causes = EXCLUDED.causes",
                &[&run, &cells, &causes],
            )
            .map(|_| ())
        })
    }

    fn snapshot(&self, run: i64) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        self.conn.call(move |c| {
            Ok(c.query_opt(
                "SELECT cells, causes FROM snapshots WHERE run_id = $1",
                &[&run],
            )?
            .map(|r| (r.get(0), r.get(1))))
        })
    }
}
