//! Turning cells into observations: the value of a cell under the error
//! policy, per-output scores across validators, and clustered sums.

use crate::options::AnalysisOptions;
use crate::stats::{ClusterSum, Counts, ErrorPolicy, RateEstimate};
use crate::tensor::Cell;

/// The 0/1 value of a cell under `policy`, or `None` when the cell does not
/// enter rates (missing, not applicable, or an error under
/// [`ErrorPolicy::Exclude`]).
#[inline]
pub fn cell_value(cell: Cell, policy: ErrorPolicy) -> Option<f64> {
    match (cell, policy) {
        (Cell::Pass, _) => Some(1.0),
        (Cell::Fail, _) | (Cell::Error, ErrorPolicy::AsFailure) => Some(0.0),
        (Cell::Missing | Cell::NotApplicable, _) | (Cell::Error, ErrorPolicy::Exclude) => None,
    }
}

/// Weighted score of one output across its validators:
/// `Σ_k w_k·R[k] / Σ_k w_k` over the cells that enter rates (§3.3.2 applied
/// per output). `None` when no cell with positive weight was evaluated.
pub fn output_score(cells: &[Cell], weights: &[f64], policy: ErrorPolicy) -> Option<f64> {
    let (mut num, mut den) = (0.0, 0.0);
    for (&cell, &w) in cells.iter().zip(weights) {
        if let Some(v) = cell_value(cell, policy) {
            num += w * v;
            den += w;
        }
    }
    (den > 0.0).then(|| num / den)
}

/// Whether one output passed every check (§4.2.3's `Π_k R[i][j][k]`): `Some(false)`
/// as soon as one cell fails (or errs, when errors count as failures),
/// `Some(true)` when all pass, `None` when undecided (a missing cell, or an
/// excluded error, and no failure). A check that does not apply to the
/// input is no condition on it.
pub fn output_passes_all(cells: &[Cell], policy: ErrorPolicy) -> Option<bool> {
    let mut decided = true;
    for &cell in cells.iter().filter(|&&c| c != Cell::NotApplicable) {
        match cell_value(cell, policy) {
            Some(0.0) => return Some(false),
            Some(_) => {}
            None => decided = false,
        }
    }
    decided.then_some(true)
}

/// Accumulates observations into clusters and counts, then estimates the
/// clustered rate.
#[derive(Debug, Clone)]
pub struct ClusterAccumulator {
    sums: Vec<ClusterSum>,
    counts: Counts,
}

impl ClusterAccumulator {
    pub fn new(clusters: usize) -> Self {
        ClusterAccumulator {
            sums: vec![ClusterSum::default(); clusters],
            counts: Counts::default(),
        }
    }

    /// Add one cell to `cluster`.
    #[inline]
    pub fn add_cell(&mut self, cluster: usize, cell: Cell, policy: ErrorPolicy) {
        cell.tally(&mut self.counts);
        if let Some(v) = cell_value(cell, policy) {
            self.add_value(cluster, v);
        }
    }

    /// Add one observation in [0, 1] to `cluster` (counts are the caller's).
    #[inline]
    pub fn add_value(&mut self, cluster: usize, v: f64) {
        let s = &mut self.sums[cluster];
        s.sum += v;
        s.sum_sq += v * v;
        s.count += 1;
    }

    /// Empty again, keeping its clusters' number (and memory).
    pub fn clear(&mut self) {
        self.sums.fill(ClusterSum::default());
        self.counts = Counts::default();
    }

    /// Record raw cell counts without an observation.
    pub fn tally(&mut self, cell: Cell) {
        cell.tally(&mut self.counts);
    }

    pub fn sums(&self) -> &[ClusterSum] {
        &self.sums
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The clustered rate over everything added (docs/architecture.md: cluster-robust
    /// standard error, interval at the effective sample size).
    pub fn estimate(&self, opts: &AnalysisOptions) -> RateEstimate {
        RateEstimate::clustered_or_empty(
            &self.sums,
            self.counts,
            opts.confidence,
            opts.interval,
            opts.cluster,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_that_does_not_apply_is_no_condition_on_the_output() {
        let p = ErrorPolicy::Exclude;
        assert_eq!(
            output_passes_all(&[Cell::Pass, Cell::NotApplicable], p),
            Some(true)
        );
        assert_eq!(
            output_passes_all(&[Cell::Fail, Cell::NotApplicable], p),
            Some(false)
        );
        assert_eq!(
            output_passes_all(&[Cell::Missing, Cell::NotApplicable], p),
            None
        );
        assert_eq!(
            cell_value(Cell::NotApplicable, ErrorPolicy::AsFailure),
            None
        );
        assert_eq!(
            output_score(&[Cell::Pass, Cell::NotApplicable], &[1.0, 5.0], p),
            Some(1.0)
        );
    }
}
