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
        self.progress.errors += row.error.is_some() as u64;
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
