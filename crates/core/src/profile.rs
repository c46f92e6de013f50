//! Validation strategies (paper §2.2.3) and reliability profiles (§3.6.3–
//! §3.6.5): success rates along the axes of the tensor, each with its
//! interval.

use crate::options::AnalysisOptions;
use crate::score::{output_score, ClusterAccumulator};
use crate::stats::RateEstimate;
use crate::tensor::{Cell, ReliabilityTensor};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Which slice of the tensor one validator's success percentage is taken
/// over (§2.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Strategy {
    /// One rate per input `i`, over its outputs `j` ("validating rows").
    Rows,
    /// One rate per repetition `j`, over the inputs `i` ("validating columns").
    Columns,
    /// One rate over all N×M outputs ("validating all").
    #[default]
    All,
}

/// Which marginal of the tensor a profile holds (§3.6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Input Reliability Profile: per input, over outputs and validators.
    Input,
    /// Output Reliability Profile: per repetition, over inputs and validators.
    Output,
    /// Validator Reliability Profile: per validator, over inputs and outputs.
    Validator,
}

/// One success percentage of a profile or strategy: the slice's index along
/// its axis, and the rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    pub index: usize,
    pub rate: RateEstimate,
}

/// Success rates of validator `k` under `strategy`.
///
/// Rows and Columns slices hold independent outputs (the outputs of one
/// input are exchangeable; one repetition across inputs touches each input
/// once), so each entry is a plain binomial rate. `All` spans the repeated
/// outputs of every input, which are correlated: its single entry is the
/// clustered rate with inputs as clusters. Inputs check `k` does not apply
/// to enter none of them (and have no row). Empty when `k` is out of range.
pub fn strategy_rates(
    t: &ReliabilityTensor,
    k: usize,
    strategy: Strategy,
    opts: &AnalysisOptions,
) -> Vec<ProfileEntry> {
    if k >= t.validators() {
        return Vec::new();
    }
    let binomial = |counts: Vec<crate::stats::Counts>, one_input: bool| -> Vec<ProfileEntry> {
        counts
            .into_iter()
            .enumerate()
            .map(|(index, c)| ProfileEntry {
                index,
                rate: if one_input {
                    RateEstimate::within_input(c, opts.errors, opts.confidence, opts.interval)
                } else {
                    RateEstimate::binomial(c, opts.errors, opts.confidence, opts.interval)
                },
            })
            .collect()
    };
    match strategy {
        // Only the inputs check k applies to have a row.
        Strategy::Rows => binomial(t.input_counts_for(k), true)
            .into_iter()
            .filter(|e| t.applies(e.index, k))
            .collect(),
        Strategy::Columns => binomial(t.repetition_counts_for(k), false),
        Strategy::All => {
            // Only check k's cells: scanning the whole tensor for each of
            // the K checks would make a run's analysis grow with K².
            let mut acc = ClusterAccumulator::new(t.inputs());
            for i in 0..t.inputs() {
                for j in 0..t.repetitions() {
                    if let Some(cell) = t.get(i, j, k) {
                        acc.add_cell(i, cell, opts.errors);
                    }
                }
            }
            vec![ProfileEntry {
                index: 0,
                rate: acc.estimate(opts),
            }]
        }
    }
}

/// The worst of check `k`'s per-input rates (`strategy_rates` under
/// `Rows`, then [`worst`]), taken input by input without holding them.
pub fn worst_input_for(
    t: &ReliabilityTensor,
    k: usize,
    opts: &AnalysisOptions,
) -> Option<ProfileEntry> {
    if k >= t.validators() {
        return None;
    }
    (0..t.inputs())
        .map(|index| ProfileEntry {
            index,
            rate: RateEstimate::within_input(
                t.input_counts(index, k),
                opts.errors,
                opts.confidence,
                opts.interval,
            ),
        })
        .min_by(worse)
        .filter(|e| e.rate.n > 0)
}

/// The marginal success percentages of `which` (§3.6.4), one entry per
/// index along its axis, in index order.
///
/// Input MSP\[i\] = mean over `j, k` of `R[i][j][k]`, and symmetrically for
/// outputs and validators. Intervals account for correlation: the K verdicts
/// on one output share that output, and the M outputs of one input share
/// that input, so the Input profile clusters by output, the Output profile
/// by input, and the Validator profile by input.
pub fn profile(t: &ReliabilityTensor, which: Profile, opts: &AnalysisOptions) -> Vec<ProfileEntry> {
    let (n, m, k) = t.shape();
    if which == Profile::Input {
        // Input by input, one accumulator per thread: N accumulators of M
        // clusters each would be held at once otherwise.
        return (0..n)
            .into_par_iter()
            .map_init(
                || (ClusterAccumulator::new(m), Vec::with_capacity(k)),
                |(acc, cells), i| {
                    acc.clear();
                    for j in 0..m {
                        t.output_cells(i, j, cells);
                        for &cell in cells.iter() {
                            acc.add_cell(j, cell, opts.errors);
                        }
                    }
                    ProfileEntry {
                        index: i,
                        rate: acc.estimate(opts),
                    }
                },
            )
            .collect();
    }
    if which == Profile::Validator {
        // Check by check, one accumulator of N clusters reused: K of them
        // at once were 240 MB at a million inputs × 10 checks.
        let mut acc = ClusterAccumulator::new(n);
        return (0..k)
            .map(|kk| {
                acc.clear();
                for i in 0..n {
                    for j in 0..m {
                        if let Some(cell) = t.get(i, j, kk) {
                            acc.add_cell(i, cell, opts.errors);
                        }
                    }
                }
                ProfileEntry {
                    index: kk,
                    rate: acc.estimate(opts),
                }
            })
            .collect();
    }
    let (slices, clusters) = match which {
        Profile::Input => (n, m),
        Profile::Output => (m, n),
        Profile::Validator => (k, n),
    };
    let mut accs: Vec<ClusterAccumulator> = (0..slices)
        .map(|_| ClusterAccumulator::new(clusters))
        .collect();
    t.for_each(|i, j, kk, cell| {
        let (slice, cluster) = match which {
            Profile::Input => (i, j),
            Profile::Output => (j, i),
            Profile::Validator => (kk, i),
        };
        accs[slice].add_cell(cluster, cell, opts.errors);
    });
    // Each slice's interval is a root search: in parallel.
    accs.par_iter()
        .enumerate()
        .map(|(index, acc)| ProfileEntry {
            index,
            rate: acc.estimate(opts),
        })
        .collect()
}

/// Per-output scores across validators (mean over the evaluated cells,
/// weighted by `weights`), as an `N × M` matrix in row-major order; `None`
/// where no cell was evaluated. The heatmap of input × repetition.
pub fn output_scores(
    t: &ReliabilityTensor,
    weights: &[f64],
    opts: &AnalysisOptions,
) -> Vec<Option<f64>> {
    let (n, m, _) = t.shape();
    let mut cells: Vec<Cell> = Vec::new();
    let mut out = Vec::with_capacity(n * m);
    for i in 0..n {
        for j in 0..m {
            t.output_cells(i, j, &mut cells);
            out.push(output_score(&cells, weights, opts.errors));
        }
    }
    out
}

/// The order of [`worst_first`]: lowest point estimate, then lowest upper
/// bound, then index; entries with nothing evaluated last.
fn worse(a: &ProfileEntry, b: &ProfileEntry) -> std::cmp::Ordering {
    (a.rate.n == 0)
        .cmp(&(b.rate.n == 0))
        .then(a.rate.estimate.total_cmp(&b.rate.estimate))
        .then(a.rate.interval.upper.total_cmp(&b.rate.interval.upper))
        .then(a.index.cmp(&b.index))
}

/// The entries sorted worst first: lowest point estimate, then lowest upper
/// bound, then index. Entries with nothing evaluated sort last.
pub fn worst_first(entries: &[ProfileEntry]) -> Vec<ProfileEntry> {
    worst_n(entries, entries.len())
}

/// The `n` worst entries, worst first (the first `n` of [`worst_first`]),
/// without sorting a copy of them all: a report shows a few of a million.
pub fn worst_n(entries: &[ProfileEntry], n: usize) -> Vec<ProfileEntry> {
    // Positions (8 bytes each) are ordered, not entries (over 100); ties
    // by position, as a stable sort leaves them.
    let by = |a: &usize, b: &usize| worse(&entries[*a], &entries[*b]).then(a.cmp(b));
    let mut order: Vec<usize> = (0..entries.len()).collect();
    let n = n.min(order.len());
    if n == 0 {
        return Vec::new();
    }
    if n < order.len() {
        order.select_nth_unstable_by(n - 1, by);
        order.truncate(n);
    }
    order.sort_unstable_by(by);
    order.into_iter().map(|p| entries[p]).collect()
}

/// The worst entry (see [`worst_first`]), or `None` when nothing was
/// evaluated anywhere.
pub fn worst(entries: &[ProfileEntry]) -> Option<ProfileEntry> {
    entries
        .iter()
        .min_by(|a, b| worse(a, b))
        .copied()
        .filter(|e| e.rate.n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 40 × 6 × 3 tensor of varied cells (a fixed LCG), some missing.
    fn tensor() -> ReliabilityTensor {
        let mut t = ReliabilityTensor::new(40, 6, 3).unwrap();
        let mut x: u64 = 7;
        for i in 0..40 {
            for j in 0..6 {
                for k in 0..3 {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let cell = match (x >> 33) % 10 {
                        0 => Cell::Fail,
                        1 if i % 4 == 0 => Cell::Fail,
                        2 => Cell::Error,
                        3 if i == 5 => Cell::Missing,
                        _ => Cell::Pass,
                    };
                    t.set(i, j, k, cell).unwrap();
                }
            }
        }
        t
    }

    #[test]
    fn worst_n_is_the_head_of_worst_first() {
        let t = tensor();
        let opts = AnalysisOptions::default();
        let entries = profile(&t, Profile::Input, &opts);
        let all = worst_first(&entries);
        // worst_first against a plain stable sort of the entries.
        let mut sorted = entries.clone();
        sorted.sort_by(worse);
        assert_eq!(all, sorted);
        for n in [0, 1, 5, 39, 40, 100] {
            assert_eq!(worst_n(&entries, n), all[..n.min(40)].to_vec(), "n = {n}");
        }
        assert_eq!(worst(&entries), all.first().copied());
    }

    #[test]
    fn per_input_figures_taken_one_input_at_a_time_are_the_held_ones() {
        let t = tensor();
        let opts = AnalysisOptions::default();
        for k in 0..3 {
            let rows = strategy_rates(&t, k, Strategy::Rows, &opts);
            assert_eq!(worst_input_for(&t, k, &opts), worst(&rows), "check {k}");
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(t.input_counts(i, k), r.rate.counts);
            }
        }
        assert_eq!(worst_input_for(&t, 3, &opts), None);
        // The input profile by one accumulator per input equals the
        // accumulation over the whole tensor at once.
        let (n, m, _) = t.shape();
        let mut accs: Vec<ClusterAccumulator> =
            (0..n).map(|_| ClusterAccumulator::new(m)).collect();
        t.for_each(|i, j, _, cell| accs[i].add_cell(j, cell, opts.errors));
        let held: Vec<ProfileEntry> = accs
            .iter()
            .enumerate()
            .map(|(index, a)| ProfileEntry {
                index,
                rate: a.estimate(&opts),
            })
            .collect();
        assert_eq!(profile(&t, Profile::Input, &opts), held);
    }
}
