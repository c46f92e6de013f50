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
/// clustered rate with inputs as clusters. Empty when `k` is out of range.
pub fn strategy_rates(
    t: &ReliabilityTensor,
    k: usize,
    strategy: Strategy,
    opts: &AnalysisOptions,
) -> Vec<ProfileEntry> {
    if k >= t.validators() {
        return Vec::new();
    }
    let binomial = |counts: Vec<crate::stats::Counts>, one_input: bool| {
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
        Strategy::Rows => binomial(t.input_counts_for(k), true),
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

/// The entries sorted worst first: lowest point estimate, then lowest upper
/// bound, then index. Entries with nothing evaluated sort last.
pub fn worst_first(entries: &[ProfileEntry]) -> Vec<ProfileEntry> {
    let mut v = entries.to_vec();
    v.sort_by(|a, b| {
        (a.rate.n == 0)
            .cmp(&(b.rate.n == 0))
            .then(a.rate.estimate.total_cmp(&b.rate.estimate))
            .then(a.rate.interval.upper.total_cmp(&b.rate.interval.upper))
            .then(a.index.cmp(&b.index))
    });
    v
}

/// The worst entry (see [`worst_first`]), or `None` when nothing was
/// evaluated anywhere.
pub fn worst(entries: &[ProfileEntry]) -> Option<ProfileEntry> {
    worst_first(entries)
        .into_iter()
        .next()
        .filter(|e| e.rate.n > 0)
}
