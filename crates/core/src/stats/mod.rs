//! Statistics: proportions with intervals, cluster-robust rates, verdicts
//! against thresholds and sample sizes.
//!
//! Every rate probity prints carries an interval (DESIGN.md, Statistics).

pub mod cluster;
pub mod counts;
pub mod decision;
pub mod interval;
pub mod paired;

pub use cluster::{clustered_mean, ClusterSum, ClusteredEstimate};
pub use counts::{Counts, ErrorPolicy};
pub use decision::{
    excludes_threshold, judge, sample_size_for_margin, samples_to_detect, Decision,
    ThresholdVerdict, VerdictMode, MAX_SAMPLES,
};
pub use interval::{normal_quantile, proportion_interval, z_value, Interval, IntervalMethod};
pub use paired::{compare_paired, compare_unpaired, inputs_needed, t_value, Difference};

use serde::{Deserialize, Serialize};

/// A success rate with its interval and the bookkeeping behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateEstimate {
    /// Point estimate p̂ in [0, 1] (0 when nothing was evaluated).
    pub estimate: f64,
    /// Raw cell counts, errors and missing cells included.
    pub counts: Counts,
    /// Number of observations the estimate is taken over (after the error
    /// policy is applied).
    pub n: u64,
    /// Variance ratio of the clustered estimate to the naive binomial one;
    /// 1 when no clustering was applied.
    pub design_effect: f64,
    /// `n / design_effect`: the sample size the interval is computed with.
    pub effective_n: f64,
    /// Confidence level the interval was computed at.
    pub confidence: f64,
    /// The interval for the true rate.
    pub interval: Interval,
}

impl RateEstimate {
    /// A plain binomial rate: `x` successes out of `n` evaluated cells, as
    /// counted by `counts` under `policy`, with the interval of `method` at
    /// `confidence`. No clustering (design effect 1).
    pub fn binomial(
        counts: Counts,
        policy: ErrorPolicy,
        confidence: f64,
        method: IntervalMethod,
    ) -> Self {
        let (x, n) = counts.successes_of(policy);
        let interval = proportion_interval(x as f64, n as f64, confidence, method);
        RateEstimate {
            estimate: if n == 0 { 0.0 } else { x as f64 / n as f64 },
            counts,
            n,
            design_effect: 1.0,
            effective_n: n as f64,
            confidence,
            interval,
        }
    }

    /// A rate over clustered observations (inputs as clusters, DESIGN.md):
    /// the point estimate and design effect come from [`clustered_mean`]; the
    /// interval is `method` applied to the effective sample size
    /// `n_eff = n / deff` with `x_eff = p̂ · n_eff`.
    pub fn clustered(
        clusters: &[ClusterSum],
        counts: Counts,
        confidence: f64,
        method: IntervalMethod,
    ) -> Self {
        let c = clustered_mean(clusters);
        let interval = if c.n == 0 {
            Interval::EMPTY
        } else {
            proportion_interval(c.mean * c.effective_n, c.effective_n, confidence, method)
        };
        RateEstimate {
            estimate: c.mean,
            counts,
            n: c.n,
            design_effect: c.design_effect,
            effective_n: c.effective_n,
            confidence,
            interval,
        }
    }
}
