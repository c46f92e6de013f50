//! The judge cache and the output cache: in memory, or read from (and
//! written through) the store.

use super::backend::CacheReader;
use super::records::{CachedOutput, JudgementRow};
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
