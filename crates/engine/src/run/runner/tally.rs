//! A run's counts as its samples arrive: the tensor (§3.6), the progress
//! shown to a person, and the causes of errors.

use crate::run::outcome::Progress;
use crate::store::SampleRow;
use probity_core::causes::Causes;
use probity_core::{Cell, ReliabilityTensor};

pub(super) struct Tally {
    pub tensor: ReliabilityTensor,
    pub progress: Progress,
    pub causes: Causes,
}

impl Tally {
    /// Nothing counted yet, for N × M samples of K checks.
    pub fn new(tensor: ReliabilityTensor, n: usize, m: usize, k: usize) -> Tally {
        Tally {
            tensor,
            progress: Progress {
                done: 0,
                total: (n * m) as u64,
                model_calls: 0,
                cached: 0,
                attempts_cached: 0,
                errors: 0,
                passes: vec![(0, 0); k],
            },
            causes: Causes::new(k),
        }
    }

    /// Count one sample: its cells into the tensor and the progress, its
    /// errors into their causes.
    pub fn record(&mut self, row: &SampleRow) {
        self.cells(row.input_idx, row.repetition, &row.cells);
        row.note_causes(&mut self.causes);
        self.progress.errors += failed_call(row) as u64;
    }

    /// Count the cells of sample `(i, j)` into the tensor and the progress.
    pub fn cells(&mut self, i: usize, j: usize, cells: &[Cell]) {
        for (kk, &cell) in cells.iter().enumerate().take(self.progress.passes.len()) {
            let _ = self.tensor.set(i, j, kk, cell);
            if !matches!(cell, Cell::Missing | Cell::NotApplicable) {
                self.progress.passes[kk].1 += 1;
                self.progress.passes[kk].0 += (cell == Cell::Pass) as u64;
            }
        }
        self.progress.done += 1;
    }
}

/// Whether sample `row` is a failed call, counted against the run's error
/// budget: it has an error that is not a spoiled episode's (an episode the
/// simulated user spoiled measured the system; it is counted apart,
/// `probity_core::agent::is_spoiled_cause`). An episode that broke on an
/// upstream, tool or simulator error is a failed call.
pub(super) fn failed_call(row: &SampleRow) -> bool {
    row.error
        .as_deref()
        .is_some_and(|e| !probity_core::agent::is_spoiled_cause(e))
}

/// The failed calls among a resumed run's errors: every system error but
/// the spoiled episodes among its listed causes (those lumped in `other`
/// cannot be told apart and count as failed calls).
pub(super) fn failed_calls(causes: &Causes) -> u64 {
    let spoiled: u64 = causes
        .system
        .causes
        .iter()
        .filter(|c| probity_core::agent::is_spoiled_cause(&c.message))
        .map(|c| c.count)
        .sum();
    causes.system.total.saturating_sub(spoiled)
}
