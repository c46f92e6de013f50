//! The caches' lookups in PostgreSQL, on a connection of their own.

use super::conn::Conn;
use super::db::Postgres;
use crate::store::backend::{CacheReader, Caches};
use crate::store::error::StoreError;
use crate::store::location::PostgresUrl;
use crate::store::records::{CachedOutput, Existing, JudgementRow, LabelVerdict};
use crate::store::rows::{cached_from_row, RowRead};
use std::collections::HashMap;

pub(super) fn lookup_judgement(
    c: &mut postgres::Client,
    key: &str,
) -> Result<Option<JudgementRow>, postgres::Error> {
    c.query_opt(
        "SELECT verdict, reasons, raw FROM judgements WHERE cache_key = $1",
        &[&key],
    )?
    .map(|r| {
        Ok(JudgementRow {
            cache_key: key.to_string(),
            pass: r.flag(0)?,
            reasons: serde_json::from_str(&r.text(1)?).unwrap_or_default(),
            raw: r.text(2)?,
        })
    })
    .transpose()
}

/// A connection of its own for the caches.
pub(super) struct Reader {
    conn: Conn,
}

impl Reader {
    pub(super) fn open(url: &PostgresUrl) -> Result<Reader, StoreError> {
        Ok(Reader {
            conn: Conn::open(url)?,
        })
    }
}

impl CacheReader for Reader {
    fn judgement(&mut self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        let key = key.to_string();
        self.conn.call(move |c| lookup_judgement(c, &key))
    }

    fn output(&mut self, key: &str, from: i64) -> Result<Option<CachedOutput>, StoreError> {
        let key = key.to_string();
        self.conn.call(move |c| {
            let hit = c.query_opt(
                "SELECT output, latency_ms, input_tokens, output_tokens FROM attempts
                 WHERE cache_key = $1 AND run_id = $2 AND output IS NOT NULL LIMIT 1",
                &[&key, &from],
            )?;
            let hit = match hit {
                Some(r) => Some(r),
                None => c.query_opt(
                    "SELECT output, latency_ms, input_tokens, output_tokens FROM samples
                     WHERE cache_key = $1 AND run_id = $2 AND error IS NULL AND output IS NOT NULL LIMIT 1",
                    &[&key, &from],
                )?,
            };
            hit.map(|r| cached_from_row(&r, 0)).transpose()
        })
    }
}

impl Caches for Postgres {
    fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        let key = key.to_string();
        self.conn.call(move |c| lookup_judgement(c, &key))
    }

    fn judgement_count(&self) -> Result<u64, StoreError> {
        self.conn.call(|c| {
            c.query_one("SELECT COUNT(*) FROM judgements", &[])
                .map(|r| r.get::<_, i64>(0) as u64)
        })
    }

    fn label_verdicts(&self, keys: &[String]) -> Result<HashMap<String, LabelVerdict>, StoreError> {
        let keys = keys.to_vec();
        self.conn.call(move |c| {
            let mut out = HashMap::new();
            for r in c.query(
                "SELECT cache_key, verdict, reasons FROM calibration_verdicts
                 WHERE cache_key = ANY($1)",
                &[&keys],
            )? {
                let key = r.text(0)?;
                out.insert(
                    key.clone(),
                    LabelVerdict {
                        cache_key: key,
                        pass: r.flag(1)?,
                        reasons: serde_json::from_str(&r.text(2)?).unwrap_or_default(),
                    },
                );
            }
            Ok(out)
        })
    }

    fn put_label_verdicts(
        &self,
        rows: &[LabelVerdict],
        existing: Existing,
    ) -> Result<(), StoreError> {
        let keys: Vec<String> = rows.iter().map(|r| r.cache_key.clone()).collect();
        let pass: Vec<bool> = rows.iter().map(|r| r.pass).collect();
        let reasons: Vec<String> = rows
            .iter()
            .map(|r| serde_json::to_string(&r.reasons).unwrap_or_default())
            .collect();
        // One statement (its own transaction), rows inserted in key order:
        // two processes keeping overlapping verdicts wait for each other
        // in the same order (never a deadlock), and the later one's rows
        // are ignored or win (never a unique violation).
        let sql = match existing {
            Existing::Stays => {
                "INSERT INTO calibration_verdicts (cache_key, verdict, reasons)
                 SELECT * FROM UNNEST($1::TEXT[], $2::BOOLEAN[], $3::TEXT[]) ORDER BY 1
                 ON CONFLICT (cache_key) DO NOTHING"
            }
            Existing::Replaced => {
                "INSERT INTO calibration_verdicts (cache_key, verdict, reasons)
                 SELECT * FROM UNNEST($1::TEXT[], $2::BOOLEAN[], $3::TEXT[]) ORDER BY 1
                 ON CONFLICT (cache_key)
                 DO UPDATE SET verdict = EXCLUDED.verdict, reasons = EXCLUDED.reasons"
            }
        };
        self.conn
            .call(move |c| c.execute(sql, &[&keys, &pass, &reasons]).map(|_| ()))
    }

    fn label_verdict_count(&self) -> Result<u64, StoreError> {
        self.conn.call(|c| {
            c.query_one("SELECT COUNT(*) FROM calibration_verdicts", &[])
                .map(|r| r.get::<_, i64>(0) as u64)
        })
    }

    fn reader(&self) -> Result<Box<dyn CacheReader>, StoreError> {
        Ok(Box::new(Reader::open(&self.url)?))
    }
}
