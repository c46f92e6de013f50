//! The judge cache, the output cache and the judges' verdicts on labelled
//! pairs: in memory, or read from (and written through) the store.

use super::backend::CacheReader;
use super::records::{CachedOutput, JudgementRow, LabelVerdict};
use super::writer::JudgementSink;
use std::collections::HashMap;
use std::sync::Mutex;

/// Where judges' successful judgements are kept and looked up (the judge
/// cache). A lookup that fails is a miss: the judge is called.
pub trait JudgementCache: Send + Sync {
    fn get(&self, key: &str) -> Option<JudgementRow>;
    fn put(&self, row: JudgementRow);
}

/// A judge cache in memory (library use, tests).
#[derive(Debug, Default)]
pub struct MemoryJudgements {
    rows: Mutex<HashMap<String, JudgementRow>>,
}

impl JudgementCache for MemoryJudgements {
    fn get(&self, key: &str) -> Option<JudgementRow> {
        self.rows.lock().ok()?.get(key).cloned()
    }

    fn put(&self, row: JudgementRow) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.insert(row.cache_key.clone(), row);
        }
    }
}

/// The judge cache in the run store: lookups on a connection of its own,
/// writes queued on the run's batched writer (so a judgement is as durable
/// as the sample it belongs to, and written in the same transactions).
/// Judgements written by this process are also kept in memory until the
/// writer has committed them.
pub struct StoreJudgements {
    reader: Mutex<Box<dyn CacheReader>>,
    sink: Option<JudgementSink>,
    recent: MemoryJudgements,
}

impl StoreJudgements {
    pub(super) fn new(reader: Box<dyn CacheReader>, sink: Option<JudgementSink>) -> Self {
        StoreJudgements {
            reader: Mutex::new(reader),
            sink,
            recent: MemoryJudgements::default(),
        }
    }
}

impl JudgementCache for StoreJudgements {
    fn get(&self, key: &str) -> Option<JudgementRow> {
        if let Some(row) = self.recent.get(key) {
            return Some(row);
        }
        let mut reader = self.reader.lock().ok()?;
        reader.judgement(key).ok().flatten()
    }

    fn put(&self, row: JudgementRow) {
        if let Some(sink) = &self.sink {
            if sink.send(row.clone()) {
                // Only needed until the writer commits: kept bounded.
                if let Ok(mut rows) = self.recent.rows.lock() {
                    if rows.len() >= 4096 {
                        rows.clear();
                    }
                    rows.insert(row.cache_key.clone(), row);
                }
            }
        }
    }
}

/// Where the outputs of guarded attempts are looked up before the system is
/// called (the output cache of attempts; the runner finds first attempts in
/// `samples` itself). Only outputs are cached, never errors. A lookup that
/// fails is a miss: the system is called.
pub trait OutputCache: Send + Sync {
    fn get(&self, key: &str) -> Option<CachedOutput>;
    /// Keep a new output under `key`.
    fn put(&self, key: &str, output: CachedOutput);
}

/// An output cache in memory (library use, tests).
#[derive(Debug, Default)]
pub struct MemoryOutputs {
    rows: Mutex<HashMap<String, CachedOutput>>,
}

impl OutputCache for MemoryOutputs {
    fn get(&self, key: &str) -> Option<CachedOutput> {
        self.rows.lock().ok()?.get(key).cloned()
    }

    fn put(&self, key: &str, output: CachedOutput) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.insert(key.to_string(), output);
        }
    }
}

/// The output cache in the run store: lookups on a connection of its own
/// in `attempts` (by `cache_key`, outputs only) and then in `samples` (a
/// first attempt's key is its sample's). New outputs are not written here:
/// the runner stores each attempt row with its key.
pub struct StoreOutputs {
    reader: Mutex<Box<dyn CacheReader>>,
    /// The run whose outputs are served.
    from: i64,
}

impl StoreOutputs {
    pub(super) fn new(reader: Box<dyn CacheReader>, from: i64) -> Self {
        StoreOutputs {
            reader: Mutex::new(reader),
            from,
        }
    }
}

impl OutputCache for StoreOutputs {
    fn get(&self, key: &str) -> Option<CachedOutput> {
        let mut reader = self.reader.lock().ok()?;
        reader.output(key, self.from).ok().flatten()
    }

    fn put(&self, _key: &str, _output: CachedOutput) {}
}

/// Where judges' verdicts on the pairs of labelled sets are kept between
/// runs (`crate::checks::calibration`): looked up before the judge is
/// asked, and new readable verdicts kept. It never stops a measurement: a
/// lookup that fails finds nothing (the judge is asked), a write that
/// fails keeps nothing (the pairs are asked again next time).
pub trait LabelVerdictCache: Send {
    /// The verdicts kept under any of `keys`, by key.
    fn lookup(&mut self, keys: &[String]) -> HashMap<String, LabelVerdict>;
    /// Keep `rows` (a key already kept stays as it is).
    fn keep(&mut self, rows: &[LabelVerdict]);
    /// Keep `rows`, replacing what is kept under their keys.
    fn replace(&mut self, rows: &[LabelVerdict]);
}

/// Verdicts on labelled pairs in memory (library use, tests).
#[derive(Debug, Default)]
pub struct MemoryLabelVerdicts {
    pub rows: HashMap<String, LabelVerdict>,
}

impl LabelVerdictCache for MemoryLabelVerdicts {
    fn lookup(&mut self, keys: &[String]) -> HashMap<String, LabelVerdict> {
        keys.iter()
            .filter_map(|k| self.rows.get(k).map(|v| (k.clone(), v.clone())))
            .collect()
    }

    fn keep(&mut self, rows: &[LabelVerdict]) {
        for row in rows {
            self.rows
                .entry(row.cache_key.clone())
                .or_insert_with(|| row.clone());
        }
    }

    fn replace(&mut self, rows: &[LabelVerdict]) {
        for row in rows {
            self.rows.insert(row.cache_key.clone(), row.clone());
        }
    }
}
