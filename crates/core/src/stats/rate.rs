//! A rate with its interval: the estimate, counts, the number of inputs
//! it rests on and what it can claim (its scope), and how repeated outputs
//! of one input were accounted for (paper §3.4; `crates/core/STATISTICS.md`).

use super::betabin::beta_binomial_score;
use super::cluster::{clustered_mean, ClusterSum};
use super::counts::{Counts, ErrorPolicy};
use super::error::StatsError;
use super::interval::{proportion_interval, Interval, IntervalMethod};
use serde::{Deserialize, Serialize};

/// How a rate over the repeated outputs of several inputs gets its interval
/// (inputs as clusters). See `crates/core/STATISTICS.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterMethod {
    /// The default: the beta-binomial profile-likelihood interval with a t
    /// reference on G − 1 degrees of freedom, its lower bound extended to
    /// the ICC-bound interval's while fewer than 10 inputs have a failure
    /// (the upper bound, mirrored, for rates below ½;
    /// [`super::betabin::profile_likelihood`]), and each end reaching at
    /// least as far as a minority of inputs the sample may have missed
    /// could move the mean ([`super::unseen::widen_by`]: the Beta model cannot
    /// see inputs that were never sampled).
    /// Uses what the data say about clustering: close to Wilson on all
    /// outputs when failures are spread over inputs, wide when they are
    /// concentrated; Wilson-t on the G inputs when every output passes;
    /// Clopper–Pearson when every input has one output (each one-sided
    /// miss at most α/2). The `IntervalMethod` is not used for it.
    #[default]
    Profile,
    /// The score interval with the design effect estimated under each
    /// tested rate from a beta-binomial model (restricted maximum-likelihood
    /// ICC) and a t reference on G − 1 degrees of freedom
    /// ([`beta_binomial_score`]; the default before): never misses low at
    /// high pass rates, but as wide as Wilson-t on the G inputs whatever the
    /// failures' spread, and misses high up to 6 % at p = 0.99.
    BetaBinomial,
    /// Wilson's score interval at the effective size n / deff(ρ_U), ρ_U
    /// the upper likelihood bound on the ICC that the data allow
    /// ([`super::betabin::icc_bound_score`]): narrower where failures are
    /// spread over inputs, but under-covers at high ICC with 20 inputs
    /// (see `crates/core/STATISTICS.md`); opt-in, not the default.
    IccBound,
    /// The behaviour before: the CR1 cluster-robust design effect at p̂
    /// (floored at 1) and the `IntervalMethod` (Wilson, Wald, …) at the
    /// effective size n/deff, normal reference. Under-covers at high pass
    /// rates (down to 80 % at p = 0.97, ICC 0.3); kept for comparison.
    DesignEffect,
    /// No clustering: the `IntervalMethod` on all N×M outputs as if they
    /// were independent (the paper's §3.4 with `Wald`). Valid only for the
    /// inputs observed, not for inputs in general.
    Binomial,
}

/// What a rate's interval is a statement about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The interval is for the mean rate over the population of inputs
    /// the observed ones were drawn from: a claim about the system.
    #[default]
    Population,
    /// The interval is for these inputs only (one input, fewer than
    /// [`MIN_INPUTS`], a per-input rate, or [`ClusterMethod::Binomial`]):
    /// no verdict about the system can be established from it.
    TheseInputs,
}

/// Fewer inputs than this give a rate whose scope is
/// [`Scope::TheseInputs`]: with G < 5 inputs the t reference has fewer than
/// 4 degrees of freedom and the spread between inputs cannot be estimated in
/// any useful way, so the interval is the binomial one over the observed
/// outputs, about these inputs only.
pub const MIN_INPUTS: u64 = 5;

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
    /// Number of inputs (clusters) with at least one observation: goes
    /// with every rate. For a per-input rate, 1.
    #[serde(default)]
    pub inputs: u64,
    /// What the interval is about (see [`Scope`]).
    #[serde(default)]
    pub scope: Scope,
    /// Variance ratio of the clustered estimate to the naive binomial one;
    /// 1 when no clustering was applied. For the beta-binomial methods,
    /// `1 + (M − 1)·ρ̂` (unbalanced: `Σ n_i(1 + (n_i − 1)ρ̂)/n`) with ρ̂ the
    /// beta-binomial ICC at p̂; M when every output passed (nothing bounds
    /// the clustering).
    pub design_effect: f64,
    /// `n / design_effect`.
    pub effective_n: f64,
    /// Confidence level the interval was computed at.
    pub confidence: f64,
    /// The interval for the true rate.
    pub interval: Interval,
}

impl RateEstimate {
    /// The estimate for nothing observed.
    pub fn empty(counts: Counts, confidence: f64) -> Self {
        RateEstimate {
            estimate: 0.0,
            counts,
            n: 0,
            inputs: 0,
            scope: Scope::TheseInputs,
            design_effect: 1.0,
            effective_n: 0.0,
            confidence,
            interval: Interval::EMPTY,
        }
    }

    /// A plain binomial rate: `x` successes out of `n` evaluated cells, as
    /// counted by `counts` under `policy`, with the interval of `method` at
    /// `confidence`. No clustering (design effect 1). Each observation is
    /// taken as its own input (`inputs = n`, population scope when
    /// `n ≥` [`MIN_INPUTS`]): right for one output per input (a column of
    /// the tensor); for the outputs of one input use
    /// [`RateEstimate::within_input`].
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
            inputs: n,
            scope: if n >= MIN_INPUTS {
                Scope::Population
            } else {
                Scope::TheseInputs
            },
            design_effect: 1.0,
            effective_n: n as f64,
            confidence,
            interval,
        }
    }

    /// The rate of one input over its outputs: binomial, `inputs = 1`,
    /// scope [`Scope::TheseInputs`] (it says nothing about other inputs).
    pub fn within_input(
        counts: Counts,
        policy: ErrorPolicy,
        confidence: f64,
        method: IntervalMethod,
    ) -> Self {
        let r = RateEstimate::binomial(counts, policy, confidence, method);
        RateEstimate {
            inputs: u64::from(r.n > 0),
            scope: Scope::TheseInputs,
            ..r
        }
    }

    /// A rate over clustered observations (inputs as clusters) with the
    /// default [`ClusterMethod`]: [`RateEstimate::try_clustered`]. A sum
    /// above its count (or any sums that are not those of scores in
    /// [0, 1]) is [`StatsError::Scores`], an invalid confidence
    /// [`StatsError::Confidence`].
    pub fn clustered(
        clusters: &[ClusterSum],
        counts: Counts,
        confidence: f64,
        method: IntervalMethod,
    ) -> Result<Self, StatsError> {
        Self::try_clustered(
            clusters,
            counts,
            confidence,
            method,
            ClusterMethod::default(),
        )
    }

    /// [`RateEstimate::try_clustered`], with the uninformative result on
    /// error (never a silent clamp: the interval is [0, 1] and the scope
    /// [`Scope::TheseInputs`]).
    pub fn clustered_or_empty(
        clusters: &[ClusterSum],
        counts: Counts,
        confidence: f64,
        method: IntervalMethod,
        cluster: ClusterMethod,
    ) -> Self {
        match Self::try_clustered(clusters, counts, confidence, method, cluster) {
            Ok(r) => r,
            Err(_) => {
                let c = clustered_mean(clusters);
                RateEstimate {
                    estimate: c.mean,
                    n: c.n,
                    inputs: c.clusters as u64,
                    effective_n: c.n as f64,
                    ..RateEstimate::empty(counts, confidence)
                }
            }
        }
    }

    /// A rate over clustered observations, inputs as clusters.
    ///
    /// * Fewer than [`MIN_INPUTS`] inputs: the interval of `method` over all
    ///   outputs as independent trials, scope [`Scope::TheseInputs`] — it is
    ///   about these inputs only (outputs are independent given the input).
    /// * Otherwise by `cluster`: [`ClusterMethod::Profile`] (default,
    ///   [`super::betabin::profile_likelihood`]),
    ///   [`ClusterMethod::BetaBinomial`] ([`beta_binomial_score`]),
    ///   [`ClusterMethod::IccBound`], [`ClusterMethod::DesignEffect`] (the
    ///   former behaviour: `method` at `n_eff = n / deff`,
    ///   `x_eff = p̂·n_eff`, deff from [`clustered_mean`]), or
    ///   [`ClusterMethod::Binomial`] (scope `TheseInputs`).
    ///
    /// Errors: confidence outside (0, 1); sums that are not those of scores
    /// in [0, 1]. Nothing observed is not an error: it gives
    /// [`RateEstimate::empty`].
    pub fn try_clustered(
        clusters: &[ClusterSum],
        counts: Counts,
        confidence: f64,
        method: IntervalMethod,
        cluster: ClusterMethod,
    ) -> Result<Self, StatsError> {
        super::error::check_confidence(confidence)?;
        super::betabin::check_clusters(clusters)?;
        let c = clustered_mean(clusters);
        if c.n == 0 {
            return Ok(RateEstimate::empty(counts, confidence));
        }
        let inputs = c.clusters as u64;
        let nf = c.n as f64;
        let binomial = |scope| RateEstimate {
            estimate: c.mean,
            counts,
            n: c.n,
            inputs,
            scope,
            design_effect: 1.0,
            effective_n: nf,
            confidence,
            interval: proportion_interval(c.mean * nf, nf, confidence, method),
        };
        if inputs < MIN_INPUTS || cluster == ClusterMethod::Binomial {
            return Ok(binomial(Scope::TheseInputs));
        }
        Ok(match cluster {
            ClusterMethod::Profile | ClusterMethod::BetaBinomial | ClusterMethod::IccBound => {
                let s = match cluster {
                    ClusterMethod::IccBound => {
                        super::betabin::icc_bound_score(clusters, confidence)?
                    }
                    ClusterMethod::BetaBinomial => beta_binomial_score(clusters, confidence)?,
                    _ => {
                        let mut s = super::betabin::profile_likelihood(clusters, confidence)?;
                        s.interval = no_rise_on_one_more(clusters, confidence, s.interval)?;
                        if c.n > inputs {
                            s.interval = all_pass_cap(clusters, confidence, s.interval);
                        }
                        s
                    }
                };
                // The default reaches at least as far as an unseen minority
                // of inputs could move the mean (`super::unseen`); with one
                // output per input Clopper–Pearson needs no such allowance.
                let interval = if cluster == ClusterMethod::Profile && c.n > inputs {
                    let means: Vec<(f64, f64)> = clusters
                        .iter()
                        .filter(|c| c.count > 0)
                        .map(|c| (c.sum / c.count as f64, 1.0))
                        .collect();
                    super::unseen::widen_by(s.interval, &means, confidence)
                } else {
                    s.interval
                };
                RateEstimate {
                    estimate: s.estimate,
                    counts,
                    n: c.n,
                    inputs,
                    scope: Scope::Population,
                    design_effect: s.design_effect,
                    effective_n: nf / s.design_effect,
                    confidence,
                    interval,
                }
            }
            ClusterMethod::DesignEffect | ClusterMethod::Binomial => RateEstimate {
                estimate: c.mean,
                counts,
                n: c.n,
                inputs,
                scope: Scope::Population,
                design_effect: c.design_effect,
                effective_n: c.effective_n,
                confidence,
                interval: proportion_interval(
                    c.mean * c.effective_n,
                    c.effective_n,
                    confidence,
                    method,
                ),
            },
        })
    }
}

/// Each end of the profile-likelihood interval of `clusters` kept where one
/// more rare outcome cannot move it the wrong way (issue 35 item 5). With
/// the rarer outcome on at most [`super::betabin::FEW_RARER_INPUTS`]
/// inputs (the switch where the ICC-bound extension stops included), the
/// lower end (p̂ ≥ ½) is the minimum over the chain of samples obtained by
/// turning the failing inputs into all-pass ones, fewest failures first:
///
/// ```text
/// lower*(P) = min(lower(P), lower(P − i₁), lower(P − i₁ − i₂), …),   i₁, i₂, … by ascending failures
/// ```
///
/// The likelihood ratio alone can rise when a failure lands on a new input
/// (the failures look less clustered: 50 × 10, failures [9, 2, 2, 1] and
/// one more on a fresh input, 90.03 → 90.10 %). With one more failure the
/// chain's samples each hold at least as many failures, on inputs failing
/// at least as often, as the matching sample of the chain before, and the
/// lower end does not rise when failures are added to an input that
/// already fails (`the_lower_end_does_not_fall_as_failures_unclump`), so
/// the minimum cannot rise (`the_lower_end_never_rises_with_one_more_failure`
/// checks it). At most 10 more likelihood intervals. Mirrored for the
/// upper end (inputs passing, p̂ ≤ ½). Only 0/1 outcomes; scores leave the
/// interval as it is.
fn no_rise_on_one_more(
    clusters: &[ClusterSum],
    confidence: f64,
    interval: super::interval::Interval,
) -> Result<super::interval::Interval, StatsError> {
    let binary = clusters.iter().all(|c| (c.sum - c.sum_sq).abs() < 1e-9);
    if !binary {
        return Ok(interval);
    }
    let sum: f64 = clusters.iter().map(|c| c.sum).sum();
    let n: f64 = clusters.iter().map(|c| c.count as f64).sum();
    if n <= 0.0 {
        return Ok(interval);
    }
    let few = super::betabin::FEW_RARER_INPUTS;
    let mut out = interval;
    // `fails(c)`: the rarer outcome's count on input c.
    for lower_side in [true, false] {
        let rarer = |c: &ClusterSum| {
            if lower_side {
                c.count as f64 - c.sum
            } else {
                c.sum
            }
        };
        if (lower_side && sum / n < 0.5) || (!lower_side && sum / n > 0.5) {
            continue;
        }
        let mut cl = clusters.to_vec();
        loop {
            let having = cl.iter().filter(|c| c.count > 0 && rarer(c) > 0.5).count();
            if having == 0 || having as f64 > few {
                break;
            }
            // The input with the fewest (but some) rare outcomes leaves.
            let Some(i) = (0..cl.len())
                .filter(|&i| cl[i].count > 0 && rarer(&cl[i]) > 0.5)
                .min_by(|&a, &b| rarer(&cl[a]).total_cmp(&rarer(&cl[b])))
            else {
                break;
            };
            let m = cl[i].count;
            cl[i] = ClusterSum::from_passes(if lower_side { m } else { 0 }, m)?;
            let iv = super::betabin::profile_likelihood(&cl, confidence)?.interval;
            if lower_side {
                out.lower = out.lower.min(iv.lower);
            } else {
                out.upper = out.upper.max(iv.upper);
            }
        }
    }
    Ok(out)
}

/// The default's ends never beyond the all-pass sample's (issue 35 item 5):
/// with the rarer outcome on fewer than
/// [`super::betabin::FEW_RARER_INPUTS`] of the G inputs, the lower end
/// (p̂ ≥ ½) is at most [`super::unseen::all_pass_lower`] and the upper end
/// (p̂ ≤ ½) at least 1 minus it: the first failure
/// must not raise the lower end (at 10 × 10 it raised it from 66.1 to
/// 68.5 %). Kept out of `betabin::profile_likelihood`, which stays the
/// likelihood interval that scipy reproduces. Only 0/1 outcomes.
fn all_pass_cap(
    clusters: &[ClusterSum],
    confidence: f64,
    interval: super::interval::Interval,
) -> super::interval::Interval {
    let seen: Vec<&ClusterSum> = clusters.iter().filter(|c| c.count > 0).collect();
    let binary = seen.iter().all(|c| (c.sum - c.sum_sq).abs() < 1e-9);
    let all_pass_lower = super::unseen::all_pass_lower(seen.len() as u64, confidence);
    if !binary || !all_pass_lower.is_finite() {
        return interval;
    }
    let few = super::betabin::FEW_RARER_INPUTS;
    let failing = seen.iter().filter(|c| c.sum < c.count as f64 - 0.5).count() as f64;
    let passing = seen.iter().filter(|c| c.sum > 0.5).count() as f64;
    let (sum, n) = seen
        .iter()
        .fold((0.0, 0.0), |(s, n), c| (s + c.sum, n + c.count as f64));
    let p = sum / n;
    let mut out = interval;
    if p >= 0.5 && failing < few {
        out.lower = out.lower.min(all_pass_lower);
    }
    if p <= 0.5 && passing < few {
        out.upper = out.upper.max(1.0 - all_pass_lower);
    }
    out
}
