//! The clustered intervals of the beta-binomial model: the score
//! (Wilson-type) interval whose design effect is estimated **under each
//! tested rate**, with a Student-t reference on G − 1 degrees of freedom
//! ([`beta_binomial_score`], the default before), the ICC-bound interval
//! ([`icc_bound_score`]) and the default, the profile-likelihood interval
//! with its end away from the boundary extended to the ICC bound's while
//! few inputs show the rarer outcome ([`profile_likelihood`]).
//! See `crates/core/STATISTICS.md` for why, the alternatives and the
//! coverage tables.
//!
//! # Model and interval
//!
//! Input i (a cluster) has n_i outputs with x_i passes. Inputs are a sample
//! from a population; input i's own pass rate p_i ~ Beta(μκ, (1−μ)κ) (mean
//! μ, intra-class correlation ρ = 1/(1+κ)), and x_i | p_i ~ Binomial(n_i,
//! p_i). The target is μ, the mean rate over the population of inputs. The
//! point estimate is p̂ = Σx_i / Σn_i. Under the model
//!
//! ```text
//! Var(p̂) = μ(1−μ) · Σ_i n_i (1 + (n_i − 1) ρ) / n²,   n = Σ n_i,
//! ```
//!
//! i.e. the binomial variance times the design effect
//! deff(ρ) = Σ n_i (1 + (n_i − 1) ρ) / n (= 1 + (M−1)ρ when balanced).
//!
//! A rate μ0 belongs to the interval iff
//!
//! ```text
//! (p̂ − μ0)² ≤ c² · μ0 (1 − μ0) · deff(ρ̃(μ0)) / n,
//! ```
//!
//! where ρ̃(μ0) maximises the beta-binomial likelihood with the mean fixed
//! at μ0 (the restricted maximum-likelihood ICC), and c = t_{1−α/2, G−1}
//! with G the number of inputs (c = z when every input has one output:
//! then deff = 1, nothing is estimated, and the interval is exactly Wilson's).
//!
//! Why the restricted ICC: the design effect estimated at p̂ is small exactly
//! when the sample happens to contain few failing inputs — when p̂ is too
//! high — so an interval built on it is too narrow on the side where it must
//! reach down to the truth (the cause of 80 % coverage at p = 0.97). Under a
//! tested μ0 < p̂ the likelihood asks "how clustered must failures be for
//! this sample to come from mean μ0?", which is the right variance for the
//! test, as Wilson's μ0(1−μ0) is for a single proportion. When every output
//! passes (or every output fails) the restricted ICC is 1 for every μ0: the
//! M outputs of one input count as one trial and the interval is the
//! Wilson-t interval on the G inputs (20 inputs × 10 outputs all passing
//! give the interval of 20 inputs × 1 output, not of 200 trials).
//!
//! Scores in [0, 1] that are not 0/1 (aggregates) use the same formula with
//! the beta-binomial likelihood evaluated at the real-valued x_i (a
//! quasi-likelihood); their coverage is not part of the checked grid.

use super::cluster::ClusterSum;
use super::error::{check_confidence, StatsError};
use super::interval::{z_value, Interval};
use super::paired::t_value;
use statrs::function::gamma::ln_gamma;

/// The result of [`beta_binomial_score`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreInterval {
    /// p̂ = Σx_i / Σn_i.
    pub estimate: f64,
    pub interval: Interval,
    /// ρ̂: the beta-binomial ICC at μ = p̂ (1 when every output passes or
    /// every output fails: nothing bounds the clustering below).
    pub icc: f64,
    /// deff(ρ̂) = Σ n_i (1 + (n_i − 1) ρ̂) / n.
    pub design_effect: f64,
    /// The critical value c used (t_{G−1}, or z when all n_i ≤ 1).
    pub critical: f64,
    /// Degrees of freedom of c (`f64::INFINITY` for z).
    pub df: f64,
}

/// Distinct (x, m) cluster values with multiplicities.
struct Groups {
    /// (x, m, multiplicity)
    g: Vec<(f64, f64, f64)>,
    /// When every x and m is an integer and m ≤ 256: the largest m
    /// (log-likelihoods are then sums of logs, no ln Γ).
    small_int: Option<usize>,
    /// With `small_int`: the largest pass count and the largest fail count
    /// of any input (how far the prefix sums of `loglik` must reach).
    reach: (usize, usize),
}

impl Groups {
    fn new(clusters: &[ClusterSum]) -> Groups {
        let mut v: Vec<(f64, f64)> = clusters
            .iter()
            .filter(|c| c.count > 0)
            .map(|c| (c.sum, c.count as f64))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut g: Vec<(f64, f64, f64)> = Vec::new();
        for (x, m) in v {
            match g.last_mut() {
                Some(last) if last.0 == x && last.1 == m => last.2 += 1.0,
                _ => g.push((x, m, 1.0)),
            }
        }
        let small_int = g
            .iter()
            .all(|&(x, m, _)| x.fract() == 0.0 && m.fract() == 0.0 && m <= 256.0)
            .then(|| g.iter().map(|&(_, m, _)| m as usize).max().unwrap_or(0));
        // The largest pass count and fail count of any input.
        let reach = (
            g.iter().map(|&(x, _, _)| x as usize).max().unwrap_or(0),
            g.iter()
                .map(|&(x, m, _)| (m - x) as usize)
                .max()
                .unwrap_or(0),
        );
        Groups {
            g,
            small_int,
            reach,
        }
    }

    /// Beta-binomial log-likelihood (without binomial coefficients) at mean
    /// `mu` in (0, 1) and precision `kappa` = a + b > 0.
    fn loglik(&self, mu: f64, kappa: f64, scratch: &mut Vec<f64>) -> f64 {
        let a = mu * kappa;
        let b = (1.0 - mu) * kappa;
        match self.small_int {
            Some(mmax) => {
                // prefix sums: A[t] = Σ_{s<t} ln(a+s), B[t], K[t] likewise,
                // each only as far as some input needs it (near an all-pass
                // run, B is short).
                scratch.clear();
                scratch.resize(3 * (mmax + 1), 0.0);
                let (pa, rest) = scratch.split_at_mut(mmax + 1);
                let (pb, pk) = rest.split_at_mut(mmax + 1);
                let (xa, xb) = self.reach;
                for t in 0..mmax {
                    let tf = t as f64;
                    if t < xa {
                        pa[t + 1] = pa[t] + (a + tf).ln();
                    }
                    if t < xb {
                        pb[t + 1] = pb[t] + (b + tf).ln();
                    }
                    pk[t + 1] = pk[t] + (kappa + tf).ln();
                }
                self.g
                    .iter()
                    .map(|&(x, m, w)| {
                        let (x, m) = (x as usize, m as usize);
                        w * (pa[x] + pb[m - x] - pk[m])
                    })
                    .sum()
            }
            None => {
                let lb = ln_gamma(a) + ln_gamma(b) - ln_gamma(kappa);
                self.g
                    .iter()
                    .map(|&(x, m, w)| {
                        w * (ln_gamma(a + x) + ln_gamma(b + m - x) - ln_gamma(kappa + m) - lb)
                    })
                    .sum()
            }
        }
    }

    /// The binomial limit κ → ∞ (ρ = 0).
    fn loglik_binomial(&self, mu: f64) -> f64 {
        self.g
            .iter()
            .map(|&(x, m, w)| {
                let mut s = 0.0;
                if x > 0.0 {
                    s += x * mu.ln();
                }
                if m - x > 0.0 {
                    s += (m - x) * (1.0 - mu).ln();
                }
                w * s
            })
            .sum()
    }

    /// The ICC ρ̃ maximising the likelihood with the mean fixed at `mu`:
    /// golden-section search over ln κ ∈ [ln 1e-6, ln 1e8], then the two
    /// limits ρ → 1 (κ = 1e-6) and ρ = 0 (binomial) compared.
    fn restricted_icc(&self, mu: f64, scratch: &mut Vec<f64>) -> f64 {
        if !(mu > 0.0 && mu < 1.0) {
            return 0.0;
        }
        const LO: f64 = -13.815510557964274; // ln 1e-6
        const HI: f64 = 18.420680743952367; // ln 1e8
        let f = |t: f64, s: &mut Vec<f64>| self.loglik(mu, t.exp(), s);
        let gr = 0.5 * (5f64.sqrt() - 1.0);
        let (mut lo, mut hi) = (LO, HI);
        let mut c = hi - gr * (hi - lo);
        let mut d = lo + gr * (hi - lo);
        let mut fc = f(c, scratch);
        let mut fd = f(d, scratch);
        while hi - lo > 1e-3 {
            if fc >= fd {
                hi = d;
                d = c;
                fd = fc;
                c = hi - gr * (hi - lo);
                fc = f(c, scratch);
            } else {
                lo = c;
                c = d;
                fc = fd;
                d = lo + gr * (hi - lo);
                fd = f(d, scratch);
            }
        }
        let (mut best_t, mut best) = if fc >= fd { (c, fc) } else { (d, fd) };
        let f_lo = f(LO, scratch);
        if f_lo > best {
            best = f_lo;
            best_t = LO;
        }
        if self.loglik_binomial(mu) >= best {
            return 0.0;
        }
        1.0 / (1.0 + best_t.exp())
    }
}

/// deff(ρ) = Σ n_i (1 + (n_i − 1) ρ) / n.
fn design_effect(groups: &Groups, n: f64, rho: f64) -> f64 {
    groups
        .g
        .iter()
        .map(|&(_, m, w)| w * m * (1.0 + (m - 1.0) * rho))
        .sum::<f64>()
        / n
}

/// Validate cluster sums: count > 0 clusters only, finite, 0 ≤ sum ≤ count,
/// sum² / count ≤ sum_sq ≤ sum (sums of scores in [0, 1]).
pub(crate) fn check_clusters(clusters: &[ClusterSum]) -> Result<(), StatsError> {
    for (i, c) in clusters.iter().enumerate() {
        if c.count == 0 {
            if c.sum == 0.0 && c.sum_sq == 0.0 {
                continue;
            }
        } else {
            let m = c.count as f64;
            let tol = 1e-9 * m.max(1.0);
            if c.sum.is_finite()
                && c.sum_sq.is_finite()
                && c.sum >= 0.0
                && c.sum <= m + tol
                && c.sum_sq <= c.sum + tol
                && c.sum_sq >= c.sum * c.sum / m - tol
            {
                continue;
            }
        }
        return Err(StatsError::Scores {
            cluster: i,
            sum: c.sum,
            sum_sq: c.sum_sq,
            count: c.count,
        });
    }
    Ok(())
}

/// The score interval with the restricted ICC (see the module docs;
/// [`ClusterMethod::BetaBinomial`](super::rate::ClusterMethod::BetaBinomial))
/// for the mean of all observations in `clusters` at `confidence`.
///
/// Errors: confidence outside (0, 1); a cluster whose sums are not those of
/// scores in [0, 1] ([`StatsError::Scores`]); no observation at all
/// ([`StatsError::Empty`]). A single cluster is valid input (G = 1 gives no
/// t reference: the interval is then the binomial Wilson interval over its
/// outputs, which is about that input only — callers mark such a rate's
/// [`Scope`](super::rate::Scope)).
pub fn beta_binomial_score(
    clusters: &[ClusterSum],
    confidence: f64,
) -> Result<ScoreInterval, StatsError> {
    Ok(beta_binomial_nv(&NullVariance::new(clusters, confidence)?))
}

/// [`beta_binomial_score`] of the inputs `nv` holds.
fn beta_binomial_nv(nv: &NullVariance) -> ScoreInterval {
    let p = nv.estimate();
    let c2 = nv.critical * nv.critical;
    let mut scratch = Vec::new();
    // f(μ0) ≤ 0 ⇔ μ0 is in the interval.
    let f = |mu: f64, s: &mut Vec<f64>| -> f64 { (p - mu) * (p - mu) - c2 * nv.variance_at(mu, s) };
    let lower = if p <= 0.0 {
        0.0
    } else {
        root(|mu| f(mu, &mut scratch), 0.0, p)
    };
    let upper = if p >= 1.0 {
        1.0
    } else {
        root(|mu| f(mu, &mut scratch), 1.0, p)
    };
    let icc = if p > 0.0 && p < 1.0 {
        nv.icc_at(p, &mut scratch)
    } else if nv.g >= 2.0 && !nv.all_single {
        1.0
    } else {
        0.0
    };
    ScoreInterval {
        estimate: p,
        interval: Interval {
            lower: lower.clamp(0.0, p),
            upper: upper.clamp(p, 1.0),
        },
        icc,
        design_effect: design_effect(&nv.groups, nv.n, icc),
        critical: nv.critical,
        df: nv.df,
    }
}

/// The variance of p̂ under a tested mean μ0, as the default interval
/// ([`beta_binomial_score`]) uses it:
///
/// ```text
/// V(μ0) = μ0 (1 − μ0) · deff(ρ̃(μ0)) / n
/// ```
///
/// with ρ̃(μ0) the restricted maximum-likelihood ICC (1 when every output
/// passed or every output failed, 0 with one input or one output per
/// input), and the critical value c (t_{G−1}, or z when every input has one
/// output). Shared with the judge-corrected interval
/// ([`super::calibration`]), which tests the apparent rate a corrected
/// rate implies.
pub(crate) struct NullVariance {
    groups: Groups,
    /// Σ n_i.
    pub(crate) n: f64,
    /// Σ x_i.
    x: f64,
    /// G, the number of inputs observed.
    pub(crate) g: f64,
    all_single: bool,
    degenerate: bool,
    /// c: t_{1−α/2, G−1}, or z when all n_i ≤ 1 or G < 2.
    pub(crate) critical: f64,
    /// Degrees of freedom of c (`f64::INFINITY` for z).
    pub(crate) df: f64,
}

impl NullVariance {
    /// Errors: confidence outside (0, 1); sums that are not those of
    /// scores in [0, 1]; nothing observed ([`StatsError::Empty`]).
    pub(crate) fn new(clusters: &[ClusterSum], confidence: f64) -> Result<Self, StatsError> {
        check_confidence(confidence)?;
        check_clusters(clusters)?;
        Self::of_groups(Groups::new(clusters), confidence)
    }

    /// The inputs of `clusters`, each counted `inputs` times (a
    /// multiplicity, not necessarily whole) and with its passes and
    /// outputs multiplied by `outputs` (its rate kept): the same pattern
    /// at another size, for [`profile_likelihood_scaled`].
    fn scaled(
        clusters: &[ClusterSum],
        confidence: f64,
        inputs: f64,
        outputs: f64,
    ) -> Result<Self, StatsError> {
        check_confidence(confidence)?;
        check_clusters(clusters)?;
        let mut groups = Groups::new(clusters);
        for g in &mut groups.g {
            *g = (g.0 * outputs, g.1 * outputs, g.2 * inputs);
        }
        groups.small_int = groups
            .g
            .iter()
            .all(|&(x, m, _)| x.fract() == 0.0 && m.fract() == 0.0 && m <= 256.0)
            .then(|| {
                groups
                    .g
                    .iter()
                    .map(|&(_, m, _)| m as usize)
                    .max()
                    .unwrap_or(0)
            });
        groups.reach = (
            groups
                .g
                .iter()
                .map(|&(x, _, _)| x as usize)
                .max()
                .unwrap_or(0),
            groups
                .g
                .iter()
                .map(|&(x, m, _)| (m - x) as usize)
                .max()
                .unwrap_or(0),
        );
        Self::of_groups(groups, confidence)
    }

    fn of_groups(groups: Groups, confidence: f64) -> Result<Self, StatsError> {
        let n: f64 = groups.g.iter().map(|&(_, m, w)| m * w).sum();
        let x: f64 = groups.g.iter().map(|&(x, _, w)| x * w).sum();
        let g: f64 = groups.g.iter().map(|&(_, _, w)| w).sum();
        if n == 0.0 {
            return Err(StatsError::Empty);
        }
        let all_single = groups.g.iter().all(|&(_, m, _)| m <= 1.0);
        let (critical, df) = if all_single || g < 2.0 {
            (z_value(confidence), f64::INFINITY)
        } else {
            (t_value(confidence, g - 1.0), g - 1.0)
        };
        // Every output passed, or every output failed: the likelihood is
        // maximised at ρ → 1 for every μ0 (all-or-nothing inputs explain the
        // data best), so deff(1) = Σn_i²/n throughout.
        let degenerate =
            groups.g.iter().all(|&(x, m, _)| x == m) || groups.g.iter().all(|&(x, _, _)| x == 0.0);
        Ok(NullVariance {
            groups,
            n,
            x,
            g,
            all_single,
            degenerate,
            critical,
            df,
        })
    }

    /// The binomial variance of `x` passes in `n` independent outputs
    /// (every output its own input: deff = 1, c = z) — for a rate whose
    /// interval is about these inputs only. `x ≤ n`, `n > 0` (else
    /// [`StatsError::Counts`] or [`StatsError::Empty`]).
    pub(crate) fn binomial(x: u64, n: u64, confidence: f64) -> Result<Self, StatsError> {
        check_confidence(confidence)?;
        if n == 0 {
            return Err(StatsError::Empty);
        }
        if x > n {
            return Err(StatsError::Counts {
                successes: x as f64,
                trials: n as f64,
            });
        }
        let g: Vec<(f64, f64, f64)> = [(0.0, 1.0, (n - x) as f64), (1.0, 1.0, x as f64)]
            .into_iter()
            .filter(|&(_, _, w)| w > 0.0)
            .collect();
        Ok(NullVariance {
            groups: Groups {
                g,
                small_int: Some(1),
                reach: (1, 1),
            },
            n: n as f64,
            x: x as f64,
            g: n as f64,
            all_single: true,
            degenerate: x == n || x == 0,
            critical: z_value(confidence),
            df: f64::INFINITY,
        })
    }

    /// p̂ = Σx_i / Σn_i.
    pub(crate) fn estimate(&self) -> f64 {
        (self.x / self.n).clamp(0.0, 1.0)
    }

    /// ρ̃(μ0), the ICC the variance under `mu` uses.
    pub(crate) fn icc_at(&self, mu: f64, scratch: &mut Vec<f64>) -> f64 {
        if self.g < 2.0 || self.all_single {
            0.0
        } else if self.degenerate {
            1.0
        } else {
            self.groups.restricted_icc(mu, scratch)
        }
    }

    /// V(μ0) = μ0 (1 − μ0) · deff(ρ̃(μ0)) / n.
    pub(crate) fn variance_at(&self, mu: f64, scratch: &mut Vec<f64>) -> f64 {
        let deff = design_effect(&self.groups, self.n, self.icc_at(mu, scratch));
        mu * (1.0 - mu) * deff / self.n
    }
}

/// The boundary of the accepted region between `out` (f(out) > 0,
/// rejected: the end away from p̂) and `inn` (f(inn) ≤ 0, accepted: p̂):
/// Illinois false position, then bisection should it stall; to about
/// 1e-11. Returns an accepted point, so the interval never excludes a value
/// the test accepts.
pub(crate) fn root(mut f: impl FnMut(f64) -> f64, out: f64, inn: f64) -> f64 {
    let (mut a, mut b) = (out, inn);
    let (mut fa, mut fb) = (f(a), f(b));
    if fa.is_nan() || fb.is_nan() {
        return a;
    }
    if fa <= 0.0 {
        // The far end is accepted too.
        return a;
    }
    // Invariant: fa > 0 (rejected), fb ≤ 0 (accepted).
    let mut last_kept = 0i8;
    for _ in 0..100 {
        if (b - a).abs() < 1e-11 {
            return b;
        }
        let mut c = (a * fb - b * fa) / (fb - fa);
        if !(c.is_finite() && c > a.min(b) && c < a.max(b)) {
            c = 0.5 * (a + b);
        }
        let fc = f(c);
        if fc.is_nan() {
            break;
        }
        if fc > 0.0 {
            a = c;
            fa = fc;
            if last_kept == 1 {
                fb *= 0.5;
            }
            last_kept = 1;
        } else {
            b = c;
            fb = fc;
            if last_kept == -1 {
                fa *= 0.5;
            }
            last_kept = -1;
        }
    }
    for _ in 0..60 {
        if (b - a).abs() < 1e-11 {
            break;
        }
        let c = 0.5 * (a + b);
        if f(c) > 0.0 {
            a = c;
        } else {
            b = c;
        }
    }
    b
}

/// The level γ of the upper confidence bound on the ICC that
/// [`icc_bound_score`] uses (one-sided, likelihood ratio).
pub const ICC_BOUND_LEVEL: f64 = 0.1;

/// The ICC-bound score interval ([`ClusterMethod::IccBound`](super::rate::ClusterMethod::IccBound),
/// opt-in; see `crates/core/STATISTICS.md`, *Intervals no wider than needed*): Wilson's score interval at the
/// effective size n / deff(ρ_U), normal reference, where ρ_U is the upper
/// one-sided (1 − γ) likelihood-ratio bound on the ICC of the
/// beta-binomial model at μ = p̂:
///
/// ```text
/// ρ_U = max { ρ ≥ ρ̂ : 2 [ℓ(p̂, ρ̂) − ℓ(p̂, ρ)] ≤ z²_{1−γ} },   γ = ICC_BOUND_LEVEL
/// μ0 ∈ C  ⇔  (p̂ − μ0)² ≤ z² μ0 (1 − μ0) deff(ρ_U) / n
/// ```
///
/// It uses what the data say about clustering — failures spread over many
/// inputs bound ρ near 0 and the interval is close to Wilson on all
/// outputs — while what they cannot rule out is still allowed for: when
/// every output passes (or fails) nothing bounds ρ, ρ_U = 1, and the
/// interval is Wilson on the G inputs; when failures are few, the
/// likelihood is flat in ρ and ρ_U is large. It is the Berger–Boos
/// construction with the nuisance ρ confined to its confidence set: the
/// score statistic decreases in ρ, so the supremum over the set is at ρ_U.
/// One input, or one output per input: Wilson on the n outputs.
pub fn icc_bound_score(
    clusters: &[ClusterSum],
    confidence: f64,
) -> Result<ScoreInterval, StatsError> {
    icc_bound_score_at(clusters, confidence, ICC_BOUND_LEVEL)
}

/// [`icc_bound_score`] with the ICC bound at level `gamma` (for the
/// calibration of [`ICC_BOUND_LEVEL`] in `examples/coverage.rs`).
pub fn icc_bound_score_at(
    clusters: &[ClusterSum],
    confidence: f64,
    gamma: f64,
) -> Result<ScoreInterval, StatsError> {
    Ok(icc_bound_nv(
        &NullVariance::new(clusters, confidence)?,
        confidence,
        gamma,
    ))
}

/// [`icc_bound_score_at`] of the inputs `nv` holds.
fn icc_bound_nv(nv: &NullVariance, confidence: f64, gamma: f64) -> ScoreInterval {
    let p = nv.estimate();
    let mut scratch = Vec::new();
    let (icc, icc_upper) = if nv.all_single || nv.g < 2.0 {
        (0.0, 0.0)
    } else if nv.degenerate {
        (1.0, 1.0)
    } else {
        nv.groups.icc_upper(p, gamma, &mut scratch)
    };
    let deff = design_effect(&nv.groups, nv.n, icc_upper);
    let z = z_value(confidence);
    let n_eff = nv.n / deff;
    let interval = super::interval::proportion_interval(
        p * n_eff,
        n_eff,
        confidence,
        super::interval::IntervalMethod::Wilson,
    );
    ScoreInterval {
        estimate: p,
        interval: Interval {
            lower: interval.lower.min(p),
            upper: interval.upper.max(p),
        },
        icc,
        design_effect: deff,
        critical: z,
        df: f64::INFINITY,
    }
}

/// One output per input: the outputs are independent trials whatever the
/// clustering, and the default interval is Clopper–Pearson's on them
/// (`crates/core/STATISTICS.md`, *One output per input*). Wilson's score
/// interval, the one used before, misses on one side in up to 5.2 % of
/// samples at p = 0.99 with 200 inputs (exactly: every sample with 5 or
/// more failures puts its upper end below 0.99), twice its share of the
/// 5 %; a verdict is a one-sided decision, so that was a check at its
/// minimum failing with twice the stated error. Clopper–Pearson's misses
/// are at most α/2 on each side for every p and n, for 2 % (1,000
/// inputs) to 14 % (20 inputs, p = ½) more width than Wilson's.
fn exact_binomial(nv: &NullVariance, confidence: f64) -> ScoreInterval {
    let p = nv.estimate();
    let interval = super::interval::proportion_interval(
        nv.x,
        nv.n,
        confidence,
        super::interval::IntervalMethod::ClopperPearson,
    );
    ScoreInterval {
        estimate: p,
        interval: Interval {
            lower: interval.lower.min(p),
            upper: interval.upper.max(p),
        },
        icc: 0.0,
        design_effect: 1.0,
        critical: nv.critical,
        df: nv.df,
    }
}

impl Groups {
    /// (ρ̂, ρ_U) at mean `mu`: the maximum-likelihood ICC and the largest
    /// ρ ≥ ρ̂ whose log-likelihood is within z²_{1−γ}/2 of the maximum
    /// (bisection on ln κ; ρ = 1/(1 + κ)).
    fn icc_upper(&self, mu: f64, gamma: f64, scratch: &mut Vec<f64>) -> (f64, f64) {
        const LO: f64 = -13.815510557964274; // ln 1e-6: ρ ≈ 1
        let rho_hat = self.restricted_icc(mu, scratch);
        let at = |t: f64, s: &mut Vec<f64>| self.loglik(mu, t.exp(), s);
        let best = if rho_hat <= 0.0 {
            self.loglik_binomial(mu)
        } else {
            at(((1.0 - rho_hat) / rho_hat).ln(), scratch)
        };
        let q = super::interval::normal_quantile(1.0 - gamma);
        let cut = best - q * q / 2.0;
        if at(LO, scratch) >= cut {
            return (rho_hat, 1.0);
        }
        // ln κ of ρ̂ (ρ̂ = 0: start from κ = 1e8, the binomial limit).
        let mut hi = if rho_hat <= 0.0 {
            18.420680743952367
        } else {
            ((1.0 - rho_hat) / rho_hat).ln()
        };
        let mut lo = LO;
        // Invariant: at(hi) ≥ cut (inside), at(lo) < cut (outside).
        if at(hi, scratch) < cut {
            return (rho_hat, rho_hat);
        }
        for _ in 0..60 {
            if hi - lo < 1e-4 {
                break;
            }
            let mid = 0.5 * (lo + hi);
            if at(mid, scratch) >= cut {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        (rho_hat, 1.0 / (1.0 + lo.exp()))
    }

    /// (inputs with a failure, inputs with a pass): Σ w over x < m, over x > 0.
    fn inputs_failing_and_passing(&self) -> (f64, f64) {
        self.g.iter().fold((0.0, 0.0), |(f, p), &(x, m, w)| {
            (
                f + if x < m { w } else { 0.0 },
                p + if x > 0.0 { w } else { 0.0 },
            )
        })
    }

    /// The profile log-likelihood of the mean, ℓ_p(μ) = max_ρ ℓ(μ, ρ): at
    /// the restricted ICC ρ̃(μ), or the binomial limit when ρ̃ = 0.
    fn profile_loglik(&self, mu: f64, scratch: &mut Vec<f64>) -> f64 {
        let rho = self.restricted_icc(mu, scratch);
        if rho <= 0.0 {
            self.loglik_binomial(mu)
        } else {
            self.loglik(mu, (1.0 - rho) / rho, scratch)
        }
    }
}

/// Below this many inputs showing the rarer outcome (a failure when
/// p̂ ≥ ½, a pass otherwise), [`profile_likelihood`] extends its end away
/// from the boundary to the ICC-bound interval's. From 10 such inputs on
/// the likelihood ratio alone keeps each one-sided miss ≤ 3 % on the
/// coverage grid (`crates/core/STATISTICS.md`, *The default interval*); the
/// extension there would only add coverage (97.8 % instead of 97.2 % at
/// p = 0.5, ICC 0, 20 × 10).
pub const FEW_RARER_INPUTS: f64 = 10.0;

/// The default clustered interval ([`ClusterMethod::Profile`](super::rate::ClusterMethod::Profile);
/// `crates/core/STATISTICS.md`, *The default interval*): the
/// profile-likelihood interval of the beta-binomial mean with a Student-t
/// calibration, its end away from the boundary extended to the ICC-bound
/// interval's ([`icc_bound_score`]) while few inputs show the rarer outcome:
///
/// ```text
/// P = { μ0 : 2 [ℓ_p(p̂) − ℓ_p(μ0)] ≤ t²_{1−α/2, G−1} },   ℓ_p(μ) = max_ρ ℓ(μ, ρ)
/// lower = min(inf P, lower of the ICC-bound interval) if p̂ ≥ ½ and f < R, else inf P
/// upper = max(sup P, upper of the ICC-bound interval) if p̂ ≤ ½ and s < R, else sup P
/// ```
///
/// with f the number of inputs with a failure, s the number with a pass,
/// R = [`FEW_RARER_INPUTS`]. The likelihood uses what the data say
/// about clustering: failures spread over many inputs make a low mean
/// improbable at every ICC, so the interval is close to Wilson's on all
/// outputs; failures in a few inputs make it wide. Near the boundary (the
/// rarer outcome on few inputs) the likelihood ratio is too confident on
/// the side away from it (for x = n it would give exp(−t²/2G)), which the
/// ICC bound corrects: it allows every ICC the data cannot rule out at
/// γ = [`ICC_BOUND_LEVEL`]. The interval is symmetric: x ↦ m − x on every
/// input mirrors it about ½. When every output passes (or fails) nothing
/// bounds the ICC and the interval is [`beta_binomial_score`]'s (Wilson-t
/// on the G inputs); one input: Wilson on its outputs; one output per
/// input: Clopper–Pearson on the outputs ([`exact_binomial`]). The
/// reported ICC and design effect are at μ = p̂.
pub fn profile_likelihood(
    clusters: &[ClusterSum],
    confidence: f64,
) -> Result<ScoreInterval, StatsError> {
    Ok(profile_nv(
        &NullVariance::new(clusters, confidence)?,
        confidence,
    ))
}

/// [`profile_likelihood`] of the observed pattern of `clusters` at another
/// size: every input counted `inputs` times (G·`inputs` inputs, t on
/// G·`inputs` − 1 degrees of freedom) and with `outputs` times its passes
/// and outputs. For projections that must come from the interval a run
/// reports (`super::projection`).
pub fn profile_likelihood_scaled(
    clusters: &[ClusterSum],
    confidence: f64,
    inputs: f64,
    outputs: f64,
) -> Result<ScoreInterval, StatsError> {
    Ok(profile_nv(
        &NullVariance::scaled(clusters, confidence, inputs, outputs)?,
        confidence,
    ))
}

/// [`profile_likelihood`] of the inputs `nv` holds.
fn profile_nv(nv: &NullVariance, confidence: f64) -> ScoreInterval {
    if nv.all_single && nv.g >= 2.0 {
        return exact_binomial(nv, confidence);
    }
    if nv.degenerate || nv.g < 2.0 {
        return beta_binomial_nv(nv);
    }
    let p = nv.estimate();
    let c2 = nv.critical * nv.critical;
    let mut scratch = Vec::new();
    let top = nv.groups.profile_loglik(p, &mut scratch);
    // f(μ0) ≤ 0 ⇔ μ0 is in P.
    let f = |mu: f64, s: &mut Vec<f64>| -> f64 {
        if !(mu > 0.0 && mu < 1.0) {
            return f64::INFINITY;
        }
        2.0 * (top - nv.groups.profile_loglik(mu, s)) - c2
    };
    let mut lower = root(|mu| f(mu, &mut scratch), 0.0, p);
    let mut upper = root(|mu| f(mu, &mut scratch), 1.0, p);
    let (failing, passing) = nv.groups.inputs_failing_and_passing();
    let extend_lower = p >= 0.5 && failing < FEW_RARER_INPUTS;
    let extend_upper = p <= 0.5 && passing < FEW_RARER_INPUTS;
    if extend_lower || extend_upper {
        let bound = icc_bound_nv(nv, confidence, ICC_BOUND_LEVEL).interval;
        if extend_lower {
            lower = lower.min(bound.lower);
        }
        if extend_upper {
            upper = upper.max(bound.upper);
        }
    }
    let icc = nv.icc_at(p, &mut scratch);
    ScoreInterval {
        estimate: p,
        interval: Interval {
            lower: lower.clamp(0.0, p),
            upper: upper.clamp(p, 1.0),
        },
        icc,
        design_effect: design_effect(&nv.groups, nv.n, icc),
        critical: nv.critical,
        df: nv.df,
    }
}
