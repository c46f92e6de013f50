//! Variants of one system compared (`[[variant]]` tables, docs/config.md,
//! Variants): V runs sampled on the same inputs and repetitions, each
//! pair compared check by check as [`crate::compare`] compares two runs —
//! paired by input id, the change `B − A` with its interval — and the
//! correction taken across **every** test made at once.
//!
//! * **Pairs.** Against a reference variant R (the default): the V − 1
//!   pairs `(R, B)`, each difference `B − R`. Or every pair `(A, B)` with
//!   A before B in the file's order: V(V − 1)/2 pairs, each `B − A`.
//! * **Correction.** Each (pair, check) has its two-sided p-value (the
//!   paired t test over the per-input differences, or the unpaired
//!   fallback, as in [`crate::compare::compare_check`]). With
//!   [`MultipleTesting::Holm`] (the default) the p-values of all
//!   P × K tests with data are Holm-adjusted together, so with no true
//!   difference anywhere the chance that any variant is called better or
//!   worse on any check is at most α. A difference is *established* —
//!   B better (improved) or worse (regressed) than A on a check — only
//!   when its interval excludes 0 and its adjusted p ≤ α. Everything else
//!   is "no established difference"; the intervals stay the per-test
//!   1 − α intervals.
//! * **Better.** A variant is called better than another only on the
//!   checks where the difference is established; [`VariantsComparison::
//!   better`] lists those, and nothing else is ranked.

use crate::compare::{
    adjust, align_by_id, compare_runs, CheckComparison, CompareOptions, Comparison, Direction,
    RunData,
};
use crate::stats::MultipleTesting;
use serde::{Deserialize, Serialize};

/// One variant as the comparison sees it: its name, its run (tensor and
/// checks) and its inputs' ids, in the run's order.
#[derive(Debug, Clone, Copy)]
pub struct VariantData<'a> {
    pub name: &'a str,
    pub run: RunData<'a>,
    pub input_ids: &'a [String],
}

/// Two variants compared: `B − A` per check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantPair {
    /// A: the reference, or the earlier variant of the pair.
    pub baseline: usize,
    /// B.
    pub candidate: usize,
    /// Its checks' p-values adjusted across every pair (see the module).
    pub comparison: Comparison,
}

/// Every pair compared, with the correction across all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantsComparison {
    /// The variants' names, in the matrix's order.
    pub names: Vec<String>,
    /// The reference variant; `None`: every pair.
    pub reference: Option<usize>,
    pub options: CompareOptions,
    pub pairs: Vec<VariantPair>,
    /// Tests the correction was taken over: (pair, check) with data.
    pub tests: usize,
}

/// Compare `variants` against `reference` (every pair when `None`), the
/// correction of `opts.multiple` taken over every (pair, check). Pure and
/// total: a reference out of range compares every pair.
pub fn compare_variants(
    variants: &[VariantData<'_>],
    reference: Option<usize>,
    opts: &CompareOptions,
) -> VariantsComparison {
    let v = variants.len();
    let reference = reference.filter(|&r| r < v);
    let pairs: Vec<(usize, usize)> = match reference {
        Some(r) => (0..v).filter(|&b| b != r).map(|b| (r, b)).collect(),
        None => (0..v)
            .flat_map(|a| (a + 1..v).map(move |b| (a, b)))
            .collect(),
    };
    // Each pair on its own, uncorrected; then one correction over all.
    let alone = CompareOptions {
        multiple: MultipleTesting::None,
        ..*opts
    };
    let mut compared: Vec<VariantPair> = pairs
        .into_iter()
        .map(|(a, b)| {
            let (va, vb) = (&variants[a], &variants[b]);
            VariantPair {
                baseline: a,
                candidate: b,
                comparison: compare_runs(
                    va.run,
                    vb.run,
                    &align_by_id(va.input_ids, vb.input_ids),
                    &alone,
                ),
            }
        })
        .collect();
    let lens: Vec<usize> = compared.iter().map(|p| p.comparison.checks.len()).collect();
    let mut all: Vec<CheckComparison> = compared
        .iter_mut()
        .flat_map(|p| std::mem::take(&mut p.comparison.checks))
        .collect();
    // The uncorrected pass may have downgraded a verdict whose p sits on
    // α; the family's correction starts from the intervals again.
    for c in &mut all {
        c.direction = raw_direction(c);
    }
    adjust(&mut all, opts);
    let tests = all
        .iter()
        .filter(|c| c.direction != Direction::NoData)
        .count();
    let mut rest = all.into_iter();
    for (p, len) in compared.iter_mut().zip(lens) {
        p.comparison.checks = rest.by_ref().take(len).collect();
        p.comparison.options = *opts;
    }
    VariantsComparison {
        names: variants.iter().map(|v| v.name.to_string()).collect(),
        reference,
        options: *opts,
        pairs: compared,
        tests,
    }
}

/// The direction from the decisive interval alone (before correction).
fn raw_direction(c: &CheckComparison) -> Direction {
    if c.direction == Direction::NoData {
        return Direction::NoData;
    }
    let d = c.decisive();
    if d.interval.lower > 0.0 {
        Direction::Improved
    } else if d.interval.upper < 0.0 {
        Direction::Regressed
    } else {
        Direction::NoDetectableChange
    }
}

/// An established difference: `better` is better than `worse` on `check`.
#[derive(Debug, Clone, PartialEq)]
pub struct Established<'a> {
    pub better: usize,
    pub worse: usize,
    pub check: &'a CheckComparison,
}

impl VariantsComparison {
    /// Every established difference, pair by pair, check by check: which
    /// variant is better on which check. Nothing else is ranked.
    pub fn better(&self) -> Vec<Established<'_>> {
        let mut out = Vec::new();
        for p in &self.pairs {
            for c in &p.comparison.checks {
                let (better, worse) = match c.direction {
                    Direction::Improved => (p.candidate, p.baseline),
                    Direction::Regressed => (p.baseline, p.candidate),
                    _ => continue,
                };
                out.push(Established {
                    better,
                    worse,
                    check: c,
                });
            }
        }
        out
    }

    /// The pair of `a` and `b` (either order), when it was compared.
    pub fn pair(&self, a: usize, b: usize) -> Option<&VariantPair> {
        self.pairs
            .iter()
            .find(|p| (p.baseline, p.candidate) == (a, b) || (p.baseline, p.candidate) == (b, a))
    }
}

/// What a variant cost: calls, tokens, time, and the latency of its
/// samples' calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VariantCost {
    /// Calls to the system and to judges (retries included).
    pub calls: u64,
    /// Of `calls`, those to judges.
    pub judge_calls: u64,
    /// Tokens reported (prompt + completion); 0 when none are.
    pub tokens: u64,
    /// Samples stored.
    pub samples: u64,
    /// Samples whose output was reused rather than asked for.
    pub cached: u64,
    /// Wall-clock seconds of the run, all sessions.
    pub duration_s: Option<f64>,
    /// Mean, median and 95th percentile of the samples' call latency in
    /// milliseconds (nearest rank), over samples with one; `None` when
    /// none has.
    pub latency_ms: Option<Latency>,
}

/// Call latencies of a variant's samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    /// Samples with a latency.
    pub n: u64,
}

/// The nearest-rank percentile `q` (in (0, 1]) of sorted `v`:
/// `v[⌈q·n⌉ − 1]`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Latency figures of `ms`; `None` when empty.
pub fn latency(mut ms: Vec<f64>) -> Option<Latency> {
    ms.retain(|x| x.is_finite());
    if ms.is_empty() {
        return None;
    }
    ms.sort_by(f64::total_cmp);
    Some(Latency {
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
        p50: percentile(&ms, 0.5),
        p95: percentile(&ms, 0.95),
        n: ms.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::holm;
    use crate::summary::CheckInfo;
    use crate::tensor::{Cell, ReliabilityTensor};

    /// A run of N inputs × 10 outputs, K checks: input i passes
    /// `passes[k][i]` of its 10 outputs on check k.
    fn tensor(passes: &[Vec<usize>]) -> ReliabilityTensor {
        let n = passes[0].len();
        let mut t = ReliabilityTensor::new(n, 10, passes.len()).unwrap();
        for (k, p) in passes.iter().enumerate() {
            for (i, &x) in p.iter().enumerate() {
                for j in 0..10 {
                    let cell = if j < x { Cell::Pass } else { Cell::Fail };
                    t.set(i, j, k, cell).unwrap();
                }
            }
        }
        t
    }

    fn info(n: &str) -> CheckInfo {
        CheckInfo {
            name: n.into(),
            message: String::new(),
            minimum_success_percentage: 0.5,
            weight: 1.0,
            kind: Default::default(),
        }
    }

    /// The paired t test's p-value of these data and its Holm adjustment
    /// over 4 tests, from scipy 1.17.1 and statsmodels 0.15.0:
    ///
    /// ```python
    /// a = np.full(10, 0.5)
    /// b = np.array([7,6,5,7,6,5,6,4,6,5]) / 10
    /// c = np.array([3,4,5,3,4,5,4,6,4,5]) / 10   # the mirror: the same p
    /// stats.ttest_rel(b, a).pvalue               # 0.0445035373055765
    /// multipletests([p, p, 1, 1], method="holm")[1]
    /// # [0.178014149222306, 0.178014149222306, 1.0, 1.0]
    /// ```
    const P: f64 = 0.0445035373055765;

    #[test]
    fn holm_is_taken_over_every_pair_and_check() {
        let ids: Vec<String> = (0..10).map(|i| format!("q{i}")).collect();
        let a = tensor(&[vec![5; 10], vec![5; 10]]);
        let b = tensor(&[vec![7, 6, 5, 7, 6, 5, 6, 4, 6, 5], vec![5; 10]]);
        let c = tensor(&[vec![3, 4, 5, 3, 4, 5, 4, 6, 4, 5], vec![5; 10]]);
        let checks = [info("x"), info("y")];
        let run = |t| VariantData {
            name: "v",
            run: RunData {
                tensor: t,
                checks: &checks,
            },
            input_ids: &ids,
        };
        let all = [run(&a), run(&b), run(&c)];
        let opts = CompareOptions::default();
        let cmp = compare_variants(&all, Some(0), &opts);
        assert_eq!(cmp.pairs.len(), 2);
        assert_eq!(cmp.tests, 4);
        let x_b = &cmp.pairs[0].comparison.checks[0];
        let x_c = &cmp.pairs[1].comparison.checks[0];
        assert!((x_b.p_value - P).abs() < 1e-9, "{}", x_b.p_value);
        assert!((x_c.p_value - P).abs() < 1e-9, "{}", x_c.p_value);
        // Alone, each would be established at α = 0.05 …
        assert!(x_b.decisive().interval.lower > 0.0);
        assert!(x_c.decisive().interval.upper < 0.0);
        // … over the 4 tests made, neither is.
        let want = holm(&[P, P, 1.0, 1.0]);
        assert!((want[0] - 0.178014149222306).abs() < 1e-9);
        assert!((x_b.p_adjusted - want[0]).abs() < 1e-9);
        assert!((x_c.p_adjusted - want[1]).abs() < 1e-9);
        assert_eq!(x_b.direction, Direction::NoDetectableChange);
        assert_eq!(x_c.direction, Direction::NoDetectableChange);
        assert!(cmp.better().is_empty());
        // Without the correction both are called, with their signs.
        let none = CompareOptions {
            multiple: MultipleTesting::None,
            ..opts
        };
        let cmp = compare_variants(&all, Some(0), &none);
        let better = cmp.better();
        assert_eq!(better.len(), 2);
        assert_eq!((better[0].better, better[0].worse), (1, 0));
        assert_eq!((better[1].better, better[1].worse), (0, 2));
    }

    #[test]
    fn every_pair_and_a_clear_difference_survives() {
        let ids: Vec<String> = (0..20).map(|i| format!("q{i}")).collect();
        let checks = [info("x")];
        let good = tensor(&[vec![9; 20]]);
        let same = tensor(&[vec![9; 20]]);
        let bad = tensor(&[vec![4; 20]]);
        let run = |t| VariantData {
            name: "v",
            run: RunData {
                tensor: t,
                checks: &checks,
            },
            input_ids: &ids,
        };
        let all = [run(&good), run(&same), run(&bad)];
        let cmp = compare_variants(&all, None, &CompareOptions::default());
        let pairs: Vec<(usize, usize)> = cmp
            .pairs
            .iter()
            .map(|p| (p.baseline, p.candidate))
            .collect();
        assert_eq!(pairs, [(0, 1), (0, 2), (1, 2)]);
        assert_eq!(cmp.tests, 3);
        let dirs: Vec<Direction> = cmp
            .pairs
            .iter()
            .map(|p| p.comparison.checks[0].direction)
            .collect();
        assert_eq!(
            dirs,
            [
                Direction::NoDetectableChange,
                Direction::Regressed,
                Direction::Regressed
            ]
        );
        let better: Vec<(usize, usize)> =
            cmp.better().iter().map(|e| (e.better, e.worse)).collect();
        assert_eq!(better, [(0, 2), (1, 2)]);
        assert!(cmp.pair(2, 0).is_some());
        // A reference out of range compares every pair.
        assert_eq!(
            compare_variants(&all, Some(7), &CompareOptions::default())
                .pairs
                .len(),
            3
        );
    }

    #[test]
    fn latency_percentiles_are_nearest_rank() {
        // 1..=20 ms: mean 10.5, median the 10th value, p95 the 19th.
        let l = latency((1..=20).map(f64::from).collect()).unwrap();
        assert_eq!((l.mean, l.p50, l.p95, l.n), (10.5, 10.0, 19.0, 20));
        let one = latency(vec![7.0]).unwrap();
        assert_eq!((one.p50, one.p95), (7.0, 7.0));
        assert!(latency(vec![]).is_none());
        assert!(latency(vec![f64::NAN]).is_none());
    }
}
