//! Control of the error rate across several checks compared at once.

use serde::{Deserialize, Serialize};

/// How the comparison of K checks controls false alarms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultipleTesting {
    /// Holm's step-down procedure (the default): the probability that any
    /// of the K checks is flagged (improved or regressed) when nothing
    /// changed is at most α, whatever the dependence between checks; it is
    /// uniformly more powerful than Bonferroni.
    #[default]
    Holm,
    /// No correction: each check at level α on its own (with K checks,
    /// some check is flagged with probability up to 1 − (1 − α)^K).
    None,
}

/// Holm-adjusted p-values, in the order given: with p sorted ascending
/// p_(1) ≤ … ≤ p_(K), `adj_(i) = max_{j ≤ i} min(1, (K − j + 1)·p_(j))`.
/// Reject hypothesis i at level α iff `adj_i ≤ α`. NaN p-values are
/// treated as 1 (never rejected) and do not count towards K.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let k = p.iter().filter(|v| !v.is_nan()).count();
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![1.0; p.len()];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let adj = ((k - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: statsmodels `multipletests([0.01, 0.04, 0.03, 0.005],
    /// method='holm')[1]` = [0.03, 0.06, 0.06, 0.02].
    #[test]
    fn holm_matches_statsmodels() {
        let a = holm(&[0.01, 0.04, 0.03, 0.005]);
        for (got, want) in a.iter().zip([0.03, 0.06, 0.06, 0.02]) {
            assert!((got - want).abs() < 1e-12, "{a:?}");
        }
        assert_eq!(holm(&[f64::NAN, 0.5]), vec![1.0, 0.5]);
    }
}
