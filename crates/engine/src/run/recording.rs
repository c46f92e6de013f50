//! Where a run is recorded in the store: one place creates (or reopens) a
//! run, starts its batched writer and opens its judgement cache — for
//! `probity run`, `probity revalidate` and `probity serve` alike.

use crate::checks::check::Judging;
use crate::store::{NewRun, Store, StoreError, Writer};
use std::sync::Arc;

/// A run being written.
pub(crate) struct Recording {
    pub run_id: i64,
    pub writer: Writer,
    judging: Judging,
}

impl Recording {
    /// Create the run `header` describes and start writing it.
    pub fn create(store: &mut Store, header: &NewRun<'_>) -> Result<Self, StoreError> {
        let run_id = store.create_run(header)?;
        Recording::reopen(store, run_id)
    }

    /// Create a run of live traffic: its writer commits at least every
    /// `window`, the most a server killed outright can lose.
    pub(crate) fn create_live(
        store: &mut Store,
        header: &NewRun<'_>,
        window: std::time::Duration,
    ) -> Result<Self, StoreError> {
        let run_id = store.create_run(header)?;
        // An answer never waits for the store: a record the writer's
        // queue has no room for is refused (and counted by the server).
        let writer = store
            .writer_committing_every(run_id, window)?
            .never_waiting();
        Recording::with_writer(store, run_id, writer)
    }

    /// Continue writing run `run_id` (a resumed run).
    pub(crate) fn reopen(store: &Store, run_id: i64) -> Result<Self, StoreError> {
        Recording::with_writer(store, run_id, store.writer(run_id)?)
    }

    fn with_writer(store: &Store, run_id: i64, writer: Writer) -> Result<Self, StoreError> {
        let cache = store.judgements(Some(writer.judgement_sink()))?;
        Ok(Recording {
            run_id,
            writer,
            judging: Judging {
                cache: Some(Arc::new(cache)),
                calls: true,
                reuse: true,
            },
        })
    }

    /// Judgements through the store's cache (new ones written with this
    /// run); with `reuse` off, none is read from it (a fresh run); with
    /// `calls` off, a judgement not cached is not asked for.
    pub fn judging(&self, calls: bool, reuse: bool) -> Judging {
        Judging {
            calls,
            reuse,
            ..self.judging.clone()
        }
    }
}
