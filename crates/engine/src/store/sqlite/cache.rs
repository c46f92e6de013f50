//! The caches' lookups in SQLite, on a connection of their own.

use super::db::{err_at, open_connection, Sqlite};
use crate::store::backend::{CacheReader, Caches};
use crate::store::error::StoreError;
use crate::store::records::{CachedOutput, Existing, JudgementRow, LabelVerdict};
use crate::store::rows::cached_from_row;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub(super) fn lookup_judgement(
    conn: &Connection,
    key: &str,
) -> rusqlite::Result<Option<JudgementRow>> {
    conn.prepare_cached("SELECT verdict, reasons, raw FROM judgements WHERE cache_key = ?1")?
        .query_row(params![key], |r| {
            let reasons: String = r.get(1)?;
            Ok(JudgementRow {
                cache_key: key.to_string(),
                pass: r.get::<_, i64>(0)? != 0,
                reasons: serde_json::from_str(&reasons).unwrap_or_default(),
                raw: r.get(2)?,
            })
        })
        .optional()
}

/// A connection of its own for the caches.
pub(super) struct Reader {
    path: PathBuf,
    conn: Connection,
}

impl Reader {
    pub(super) fn open(path: &Path) -> Result<Reader, StoreError> {
        Ok(Reader {
            path: path.to_path_buf(),
            conn: open_connection(path)?,
        })
    }
}

impl CacheReader for Reader {
    fn judgement(&mut self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        lookup_judgement(&self.conn, key).map_err(|e| err_at(&self.path, e))
    }

    fn output(&mut self, key: &str, from: i64) -> Result<Option<CachedOutput>, StoreError> {
        let lookup = || -> rusqlite::Result<Option<CachedOutput>> {
            let hit = self
                .conn
                .prepare_cached(
                    "SELECT output, latency_ms, input_tokens, output_tokens FROM attempts
                     WHERE cache_key = ?1 AND run_id = ?2 AND output IS NOT NULL LIMIT 1",
                )?
                .query_row(params![key, from], |r| cached_from_row(r, 0))
                .optional()?;
            if hit.is_some() {
                return Ok(hit);
            }
            self.conn
                .prepare_cached(
                    "SELECT output, latency_ms, input_tokens, output_tokens FROM samples
                     WHERE cache_key = ?1 AND run_id = ?2 AND error IS NULL AND output IS NOT NULL LIMIT 1",
                )?
                .query_row(params![key, from], |r| cached_from_row(r, 0))
                .optional()
        };
        lookup().map_err(|e| err_at(&self.path, e))
    }
}

impl Caches for Sqlite {
    fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        lookup_judgement(&self.conn, key).map_err(|e| self.err(e))
    }

    fn judgement_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM judgements", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    fn label_verdicts(&self, keys: &[String]) -> Result<HashMap<String, LabelVerdict>, StoreError> {
        // One indexed lookup a key on a cached statement: a few hundred
        // keys take about a millisecond, with no limit on their number.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT verdict, reasons FROM calibration_verdicts WHERE cache_key = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for key in keys {
            let hit = stmt
                .query_row(params![key], |r| {
                    Ok((r.get::<_, i64>(0)? != 0, r.get::<_, String>(1)?))
                })
                .optional()
                .map_err(|e| self.err(e))?;
            if let Some((pass, reasons)) = hit {
                out.insert(
                    key.clone(),
                    LabelVerdict {
                        cache_key: key.clone(),
                        pass,
                        reasons: serde_json::from_str(&reasons).unwrap_or_default(),
                    },
                );
            }
        }
        Ok(out)
    }

    fn put_label_verdicts(
        &self,
        rows: &[LabelVerdict],
        existing: Existing,
    ) -> Result<(), StoreError> {
        let sql = match existing {
            Existing::Stays => {
                "INSERT OR IGNORE INTO calibration_verdicts (cache_key, verdict, reasons)
                 VALUES (?1, ?2, ?3)"
            }
            Existing::Replaced => {
                "INSERT OR REPLACE INTO calibration_verdicts (cache_key, verdict, reasons)
                 VALUES (?1, ?2, ?3)"
            }
        };
        let put = || -> rusqlite::Result<()> {
            // Immediate: the write lock is waited for (busy timeout) up
            // front, never refused halfway.
            let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
            {
                let mut stmt = tx.prepare_cached(sql)?;
                for row in rows {
                    let reasons = serde_json::to_string(&row.reasons).unwrap_or_default();
                    stmt.execute(params![row.cache_key, i64::from(row.pass), reasons])?;
                }
            }
            tx.commit()
        };
        put().map_err(|e| self.err(e))
    }

    fn label_verdict_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM calibration_verdicts", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    fn reader(&self) -> Result<Box<dyn CacheReader>, StoreError> {
        Ok(Box::new(Reader::open(&self.path)?))
    }
}
