//! Cluster-robust mean of per-output scores, inputs as clusters
//! (docs/architecture.md, Design decisions: "Repeated outputs of one input are correlated").

use super::counts::{Counts, ErrorPolicy};
use super::error::{check_rate, StatsError};
use serde::{Deserialize, Serialize};

/// Sufficient statistics of one cluster (one input's outputs): the sum of
/// its scores, the sum of their squares and how many there are. Scores are in
/// [0, 1]: 0/1 for a single validator, a weighted mean across validators for
/// an aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterSum {
    pub sum: f64,
    pub sum_sq: f64,
    pub count: u64,
}

impl ClusterSum {
    /// The sums of a slice of scores, each in [0, 1]; a score outside it
    /// or NaN (1.5 is not a rate) is [`StatsError::Rate`].
    pub fn from_scores(scores: &[f64]) -> Result<Self, StatsError> {
        for &s in scores {
            check_rate(s)?;
        }
        Ok(ClusterSum {
            sum: scores.iter().sum(),
            sum_sq: scores.iter().map(|s| s * s).sum(),
            count: scores.len() as u64,
        })
    }

    /// The sums of `passes` 0/1 outcomes equal to 1 out of `count`; more
    /// passes than outcomes is [`StatsError::Counts`] (never capped).
    pub fn from_passes(passes: u64, count: u64) -> Result<Self, StatsError> {
        if passes > count {
            return Err(StatsError::Counts {
                successes: passes as f64,
                trials: count as f64,
            });
        }
        Ok(Self::binary(passes, count))
    }

    /// The sums of one input's cells under `policy`: infallible, since
    /// [`Counts`] cannot hold more passes than judged cells.
    pub fn from_counts(counts: &Counts, policy: ErrorPolicy) -> Self {
        let (x, n) = counts.successes_of(policy);
        Self::binary(x, n)
    }

    /// 0/1 sums, `passes ≤ count` (checked by the callers).
    fn binary(passes: u64, count: u64) -> Self {
        let p = passes as f64;
        ClusterSum {
            sum: p,
            sum_sq: p,
            count,
        }
    }
}

/// The clustered mean of all observations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredEstimate {
    /// ȳ = Σ_g S_g / n.
    pub mean: f64,
    /// n = Σ_g n_g, the number of observations.
    pub n: u64,
    /// G, the number of non-empty clusters.
    pub clusters: usize,
    /// sqrt(s²/n), s² = (Σ y² − n ȳ²)/(n − 1): the i.i.d. standard error.
    pub se_naive: f64,
    /// The CR1 cluster-robust standard error
    /// sqrt(G/(G−1) · Σ_g (S_g − n_g ȳ)² / n²), unfloored.
    pub se_cluster: f64,
    /// max(1, se_cluster² / se_naive²); see [`clustered_mean`].
    pub design_effect: f64,
    /// n / design_effect (≤ n).
    pub effective_n: f64,
}

/// Mean of all observations with a cluster-robust standard error, inputs as
/// clusters.
///
/// With S_g, n_g the sum and count of cluster g, n = Σ n_g, ȳ = Σ S_g / n:
///
/// * naive variance V = s²/n, s² = (Σ y² − n ȳ²)/(n − 1) (for 0/1 data
///   ≈ p̂(1−p̂)/n);
/// * CR1 cluster-robust variance V_c = G/(G−1) · Σ_g (S_g − n_g ȳ)² / n².
///   This equals statsmodels' `OLS(y, ones).fit(cov_type='cluster')`
///   exactly: its extra factor (n−1)/(n−k) is 1 for k = 1 regressor;
/// * design effect deff = max(1, V_c / V), effective size n / deff.
///
/// Why the floor at 1 (a modelling decision, not a blind one): the outputs
/// of one input are conditionally independent draws given the input, and
/// inputs are a sample from the population we make claims about. Under that
/// model deff = 1 + (m̄ − 1)·ρ with intraclass correlation ρ ≥ 0, so the true
/// design effect is never below 1; an estimate below 1 is sampling noise of
/// V_c (which has only G − 1 degrees of freedom) and would make the interval
/// narrower than the binomial one. `se_cluster` is still reported unfloored.
///
/// Degenerate cases: no observations → mean 0, n 0, both SEs 0, deff 1,
/// effective n 0. A single cluster (G = 1) carries no information about
/// between-cluster variation, so V_c cannot be estimated: deff 1,
/// `se_cluster = se_naive` (documented fallback). Zero variance (every
/// score equal, e.g. p̂ = 0 or 1) → deff 1, effective n = n. With n = 1 the
/// naive SE is 0. Clusters with `count == 0` or non-finite sums are skipped
/// (never a panic); scores outside [0, 1] are not clamped.
pub fn clustered_mean(clusters: &[ClusterSum]) -> ClusteredEstimate {
    let valid = || {
        clusters
            .iter()
            .filter(|c| c.count > 0 && c.sum.is_finite() && c.sum_sq.is_finite())
    };
    let g = valid().count();
    let n: u64 = valid().map(|c| c.count).sum();
    if n == 0 {
        return ClusteredEstimate {
            mean: 0.0,
            n: 0,
            clusters: 0,
            se_naive: 0.0,
            se_cluster: 0.0,
            design_effect: 1.0,
            effective_n: 0.0,
        };
    }
    let nf = n as f64;
    let total: f64 = valid().map(|c| c.sum).sum();
    let mean = total / nf;
    // Centered sum of squares: Σ y² − n ȳ², guarded against rounding.
    let ss: f64 = (valid().map(|c| c.sum_sq).sum::<f64>() - nf * mean * mean).max(0.0);
    let var_naive = if n > 1 { ss / (nf - 1.0) / nf } else { 0.0 };
    let se_naive = var_naive.sqrt();
    if g < 2 {
        return ClusteredEstimate {
            mean,
            n,
            clusters: g,
            se_naive,
            se_cluster: se_naive,
            design_effect: 1.0,
            effective_n: nf,
        };
    }
    let gf = g as f64;
    let between: f64 = valid()
        .map(|c| {
            let r = c.sum - c.count as f64 * mean;
            r * r
        })
        .sum();
    let var_cluster = gf / (gf - 1.0) * between / (nf * nf);
    let se_cluster = var_cluster.sqrt();
    let design_effect = if var_naive > 0.0 && var_cluster.is_finite() {
        (var_cluster / var_naive).max(1.0)
    } else {
        1.0
    };
    ClusteredEstimate {
        mean,
        n,
        clusters: g,
        se_naive,
        se_cluster,
        design_effect,
        effective_n: nf / design_effect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_single() {
        let e = clustered_mean(&[]);
        assert_eq!(
            (e.mean, e.n, e.design_effect, e.effective_n),
            (0.0, 0, 1.0, 0.0)
        );
        let s = clustered_mean(&[ClusterSum::from_passes(3, 10).unwrap()]);
        assert_eq!(
            (s.n, s.clusters, s.design_effect, s.effective_n),
            (10, 1, 1.0, 10.0)
        );
        assert!((s.mean - 0.3).abs() < 1e-15);
        assert_eq!(s.se_cluster, s.se_naive);
    }

    #[test]
    fn all_pass_has_unit_design_effect() {
        let c = vec![ClusterSum::from_passes(5, 5).unwrap(); 4];
        let e = clustered_mean(&c);
        assert_eq!((e.mean, e.design_effect, e.effective_n), (1.0, 1.0, 20.0));
    }

    #[test]
    fn perfectly_separated_clusters_have_design_effect_m() {
        // Half the inputs always pass, half always fail: ρ = 1, so the
        // design effect is about m (here G/(G−1)·(n−1)/n·m).
        let mut c = vec![ClusterSum::from_passes(10, 10).unwrap(); 5];
        c.extend(vec![ClusterSum::from_passes(0, 10).unwrap(); 5]);
        let e = clustered_mean(&c);
        let expected = 10.0 / 9.0 * 99.0 / 100.0 * 10.0;
        assert!((e.design_effect - expected).abs() < 1e-12, "{e:?}");
    }

    #[test]
    fn bad_clusters_are_skipped() {
        let c = [
            ClusterSum::from_passes(1, 2).unwrap(),
            ClusterSum {
                sum: f64::NAN,
                sum_sq: 1.0,
                count: 3,
            },
            ClusterSum::default(),
            ClusterSum::from_passes(2, 2).unwrap(),
        ];
        let e = clustered_mean(&c);
        assert_eq!((e.n, e.clusters), (4, 2));
        assert!((e.mean - 0.75).abs() < 1e-15);
    }
}
