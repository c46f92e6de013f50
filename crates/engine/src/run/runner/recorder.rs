//! Where a run's rows go: the store's batched writer, or memory.

use crate::store::{AttemptRow, RunTotals, SampleRow, StoreError, Writer, WriterHealth};

pub(super) enum Recorder {
    Store(Writer),
    Memory(Vec<SampleRow>),
}

impl Recorder {
    pub fn sample(&mut self, row: SampleRow) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send(row),
            Recorder::Memory(rows) => {
                rows.push(row);
                Ok(())
            }
        }
    }

    pub fn attempt(&mut self, row: AttemptRow) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send_attempt(row),
            // The guarded measurement is read from the store's attempts.
            Recorder::Memory(_) => Ok(()),
        }
    }

    pub fn totals(&mut self, totals: RunTotals) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send_totals(totals),
            Recorder::Memory(_) => Ok(()),
        }
    }

    /// The store's writer, when rows are stored.
    pub fn writer(&self) -> Option<&Writer> {
        match self {
            Recorder::Store(w) => Some(w),
            Recorder::Memory(_) => None,
        }
    }

    /// The writer's health, for workers to start no call while it is
    /// stuck in a commit.
    pub fn health(&self) -> Option<WriterHealth> {
        self.writer().map(Writer::health)
    }

    /// Flush; the samples of a run kept in memory, in (input, repetition)
    /// order.
    pub fn finish(self) -> Result<Vec<SampleRow>, StoreError> {
        match self {
            Recorder::Store(w) => w.finish().map(|_| Vec::new()),
            Recorder::Memory(mut rows) => {
                rows.sort_by_key(|r| (r.input_idx, r.repetition));
                Ok(rows)
            }
        }
    }
}
