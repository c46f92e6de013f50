//! An anytime-valid confidence sequence for the mean of bounded
//! observations: the hedged betting confidence sequence of Waudby-Smith &
//! Ramdas, *Estimating means of bounded random variables by betting*
//! (JRSS-B 2023), §4 (Theorem 3, the hedged capital process) with the
//! predictable plug-in bets of §5.1 ("PrPl"). Used by sequential runs
//! (`crate::sequential`; `crates/core/STATISTICS.md`, *Sequential testing*).
//!
//! Observations `X_1, X_2, …` in [0, 1], i.i.d. with mean μ (in probity:
//! one input's pass share over its judged outputs). For a candidate mean
//! `m`, two capital processes bet on `X > m` and on `X < m`:
//!
//! ```text
//! K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m) (X_i − m)),   λ⁺_i(m) = min(λ_i, c/m)
//! K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m) (X_i − m)),   λ⁻_i(m) = min(λ_i, c/(1−m))
//! K±_t(m) = max(½ K⁺_t(m), ½ K⁻_t(m))
//! ```
//!
//! Under μ = m both are non-negative martingales with initial value 1
//! (the truncation at c < 1 keeps every factor ≥ 1 − c > 0), so by Ville's
//! inequality P(∃t: K±_t(μ) ≥ 1/α) ≤ α. The confidence sequence is
//! `C_t = ∩_{s≤t} { m : K±_s(m) < 1/α }` (the running intersection), and
//! P(∀t: μ ∈ C_t) ≥ 1 − α: it holds at every t at once, so a run may stop
//! whenever it likes (on what it has seen) and its C_t is still valid.
//!
//! The bets are predictable (they use `X_1 … X_{i−1}` only):
//!
//! ```text
//! λ_i = sqrt( 2 ln(2/α) / (σ̂²_{i−1} · i · ln(i + 1)) )
//! μ̂_t = (½ + Σ_{s≤t} X_s) / (t + 1),   σ̂²_t = (¼ + Σ_{s≤t} (X_s − μ̂_s)²) / (t + 1)
//! ```
//!
//! with σ̂²_0 = ¼, truncated per side and candidate as above (c =
//! [`BET_CAP`]): near m = 1 the bet on X < m may be large, since X − m
//! cannot exceed 1 − m. `m` runs over a grid of step
//! 1/[`GRID_STEPS`] on [0, 1] plus any extra points (a check's threshold,
//! so the verdict's boundary is tested exactly). A point once rejected stays
//! rejected (the running intersection), so only live points are updated.
//! The interval reported is the hull of the live points: `lower` the
//! smallest, `upper` the largest.

use super::error::{check_confidence, StatsError};
use super::interval::Interval;
use serde::{Deserialize, Serialize};

/// c, the cap on every bet by default (WSR §5.1 suggest 1/2 or 3/4; 3/4
/// grows the capital faster where pass rates are high and the variance
/// small, see `crates/core/STATISTICS.md`). Validity does not depend on c
/// (any c in (0, 1) keeps every factor positive).
pub const BET_CAP: f64 = 0.75;

/// c for sequences read after rounds of one output of every input
/// (`crate::sequential`, output rounds): at 10–50 inputs and pass rates
/// near 0.95 a pass needs about ln(2/α) / ln(1 + c(1 − m)/m) passing
/// outputs in a row, 95 at c = 3/4 and 78 at c = 0.9, which is the
/// difference between settling within a 10 × 10 budget and not
/// (`bench/sequential.sh … few`); a failure then costs ln(1 − c) = −2.3
/// instead of −1.4.
pub const OUTPUT_ROUND_BET_CAP: f64 = 0.9;

fn default_cap() -> f64 {
    BET_CAP
}

/// The grid of candidate means: `m = g / GRID_STEPS`, g = 0 ..= GRID_STEPS.
pub const GRID_STEPS: usize = 1000;

/// One candidate mean still in the confidence sequence, with the logs of
/// its two capital processes. A step multiplies its factors into a
/// product since the last fold instead of adding their logs: ln(1 + a)
/// per point, side and step was most of a live monitor's CPU (two per
/// check, each over up to 1,001 points, on every request of `probity
/// serve`). The log capital is `ln_up + ln(up_since)`; since ln u ≤ u − 1,
/// `ln_up + up_since − 1` below the barrier proves it below without a log,
/// and a side is folded (its log taken) only when that bound reaches the
/// barrier or the product nears underflow. Each factor is ≥ 1 − c > 0, so
/// the product stays positive; its rounding (about 10⁻¹⁶ of the log per
/// step) is that of the sum of logs it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Live {
    m: f64,
    /// ln K⁺ up to the last fold.
    ln_up: f64,
    /// ln K⁻ up to the last fold.
    ln_down: f64,
    /// Π of K⁺'s factors since the last fold.
    #[serde(default = "one")]
    up_since: f64,
    /// Π of K⁻'s factors since the last fold.
    #[serde(default = "one")]
    down_since: f64,
}

fn one() -> f64 {
    1.0
}

/// A product since the last fold below this is folded (far from f64's
/// underflow at about 10⁻³⁰⁸, each factor being ≥ 1 − c).
const FOLD_BELOW: f64 = 1e-200;

impl Live {
    fn new(m: f64) -> Self {
        Live {
            m,
            ln_up: 0.0,
            ln_down: 0.0,
            up_since: 1.0,
            down_since: 1.0,
        }
    }

    /// ln K⁺ now.
    fn ln_up(&self) -> f64 {
        self.ln_up + self.up_since.ln()
    }

    /// ln K⁻ now.
    fn ln_down(&self) -> f64 {
        self.ln_down + self.down_since.ln()
    }

    /// Both sides' logs taken: the products since are 1.
    fn fold(&mut self) {
        self.ln_up = self.ln_up();
        self.ln_down = self.ln_down();
        self.up_since = 1.0;
        self.down_since = 1.0;
    }

    /// Multiply in one step's factors (1 + a⁺, 1 + a⁻); whether both
    /// sides are still below `barrier`.
    fn step(&mut self, up: f64, down: f64, barrier: f64) -> bool {
        self.up_since *= up;
        self.down_since *= down;
        below(&mut self.ln_up, &mut self.up_since, barrier)
            && below(&mut self.ln_down, &mut self.down_since, barrier)
    }
}

/// Whether `ln + ln(since)` is below `barrier`, the log taken (and folded
/// into `ln`) only when the bound `ln + since − 1` does not show it, or
/// `since` nears underflow.
fn below(ln: &mut f64, since: &mut f64, barrier: f64) -> bool {
    if *ln + (*since - 1.0) < barrier && *since > FOLD_BELOW {
        return true;
    }
    *ln += since.ln();
    *since = 1.0;
    *ln < barrier
}

/// The betting confidence sequence of one mean (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BettingSequence {
    /// α = 1 − confidence.
    alpha: f64,
    /// ln(2/α): a side rejects `m` when its log capital reaches it
    /// (½ K ≥ 1/α).
    barrier: f64,
    live: Vec<Live>,
    /// Observations so far.
    t: u64,
    sum: f64,
    /// Σ (X_s − μ̂_s)².
    sum_sq: f64,
    /// Σ X_s².
    sum_x2: f64,
    /// The last non-empty hull (kept should every point be rejected, an
    /// event of probability ≤ α).
    hull: Interval,
    /// c, the cap on the bets ([`BET_CAP`] unless set).
    #[serde(default = "default_cap")]
    cap: f64,
}

impl BettingSequence {
    /// A sequence at `confidence` (1 − α, two-sided) over the grid plus
    /// `extra` points (each in [0, 1]).
    pub fn new(confidence: f64, extra: &[f64]) -> Result<Self, StatsError> {
        let confidence = check_confidence(confidence)?;
        Self::at_alpha(1.0 - confidence, extra)
    }

    /// A sequence at level `alpha` (α itself, in (0, 1)) over the grid
    /// plus `extra` points: for a share of an error budget
    /// (`crate::monitor::Budget`), which may be too small for 1 − α to be
    /// told from 1 in f64 (below about 1.1·10⁻¹⁶: a monitor's epoch k gets
    /// α·6/(π²k²), that small after some 10⁷ epochs).
    pub fn at_alpha(alpha: f64, extra: &[f64]) -> Result<Self, StatsError> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(StatsError::Confidence(1.0 - alpha));
        }
        if let Some(&bad) = extra.iter().find(|x| !(0.0..=1.0).contains(*x)) {
            return Err(StatsError::Rate(bad));
        }
        let mut ms: Vec<f64> = (0..=GRID_STEPS)
            .map(|g| g as f64 / GRID_STEPS as f64)
            .chain(extra.iter().copied())
            .collect();
        ms.sort_by(f64::total_cmp);
        ms.dedup();
        Ok(BettingSequence {
            alpha,
            barrier: (2.0 / alpha).ln(),
            live: ms.into_iter().map(Live::new).collect(),
            t: 0,
            sum: 0.0,
            sum_sq: 0.0,
            sum_x2: 0.0,
            hull: Interval {
                lower: 0.0,
                upper: 1.0,
            },
            cap: BET_CAP,
        })
    }

    /// The sequence with the bets capped at `cap` (c in (0, 1)) instead of
    /// [`BET_CAP`]; to be set before any observation.
    pub fn with_cap(mut self, cap: f64) -> Result<Self, StatsError> {
        if !(cap > 0.0 && cap < 1.0) {
            return Err(StatsError::Rate(cap));
        }
        self.cap = cap;
        Ok(self)
    }

    /// c, the cap on the bets.
    pub fn cap(&self) -> f64 {
        self.cap
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Observations so far.
    pub fn observations(&self) -> u64 {
        self.t
    }

    /// The mean of the observations (0 before any).
    pub fn mean(&self) -> f64 {
        if self.t == 0 {
            0.0
        } else {
            self.sum / self.t as f64
        }
    }

    /// The plain variance of the observations, Σ(X − X̄)²/t (0 before any).
    pub fn sample_variance(&self) -> f64 {
        if self.t == 0 {
            return 0.0;
        }
        let mean = self.mean();
        (self.sum_x2 / self.t as f64 - mean * mean).max(0.0)
    }

    /// σ̂²_t, the regularised variance estimate the bets use.
    pub fn variance(&self) -> f64 {
        (0.25 + self.sum_sq) / (self.t as f64 + 1.0)
    }

    /// The bet λ_{t+1} for the next observation, before the caps at c/m
    /// and c/(1 − m): the predictable plug-in of the module docs.
    pub fn next_bet(&self) -> f64 {
        bet(self.alpha, self.variance(), self.t + 1)
    }

    /// The one bet of a batch of `size` observations
    /// ([`BettingSequence::observe_batch`]): the plug-in rule at the
    /// batch's last observation, λ_{t+size}, not its first. The plug-in λ_t
    /// is sized for one observation at time t; staked on a whole batch at
    /// t + 1 (λ ≈ 6.5, capped at c/m, for a first round) it loses most of
    /// the capital a verdict needs on the first round's failures (3.16 of
    /// ln(2/α) = 3.69 nats after 20 outputs at 0.90 against 0.95; issue 35
    /// item 2). Still predictable (the batch's size is known before it is
    /// observed), so validity is unchanged. A batch of 1 is
    /// [`BettingSequence::next_bet`].
    pub fn batch_bet(&self, size: usize) -> f64 {
        bet(self.alpha, self.variance(), self.t + size.max(1) as u64)
    }

    /// Observe `x` ∈ [0, 1].
    pub fn observe(&mut self, x: f64) -> Result<(), StatsError> {
        if !(0.0..=1.0).contains(&x) {
            return Err(StatsError::Rate(x));
        }
        let lambda = self.next_bet();
        let (barrier, cap) = (self.barrier, self.cap);
        self.live.retain_mut(|p| {
            let up = lambda.min(cap / p.m);
            let down = lambda.min(cap / (1.0 - p.m));
            p.step(1.0 + up * (x - p.m), 1.0 - down * (x - p.m), barrier)
        });
        self.t += 1;
        self.sum += x;
        self.sum_x2 += x * x;
        let mu = (0.5 + self.sum) / (self.t as f64 + 1.0);
        self.sum_sq += (x - mu) * (x - mu);
        if let (Some(first), Some(last)) = (self.live.first(), self.live.last()) {
            self.hull = Interval {
                lower: first.m,
                upper: last.m,
            };
        }
        Ok(())
    }

    /// Observe a batch of `xs` ∈ [0, 1] with **one** bet for the whole
    /// batch (from the observations before it and the batch's size:
    /// [`BettingSequence::batch_bet`]), for a round that samples
    /// one output of each of a fixed set of inputs: the outputs x_1 … x_N
    /// are independent with means p_1 … p_N (given the inputs) and the
    /// target is their mean μ_N. Under μ_N = m, by the AM–GM inequality,
    /// E Π_i (1 + λ(x_i − m)) = Π_i (1 + λ(p_i − m)) ≤ (1 + λ(p̄ − m))^N = 1,
    /// so the capital at the ends of batches is a non-negative
    /// supermartingale and Ville's inequality holds at every batch's end
    /// (not inside a batch: the sequence is read after whole rounds).
    pub fn observe_batch(&mut self, xs: &[f64]) -> Result<(), StatsError> {
        if let Some(&bad) = xs.iter().find(|x| !(0.0..=1.0).contains(*x)) {
            return Err(StatsError::Rate(bad));
        }
        if xs.is_empty() {
            return Ok(());
        }
        let lambda = self.batch_bet(xs.len());
        let (barrier, cap) = (self.barrier, self.cap);
        self.live.retain_mut(|p| {
            p.fold();
            let up = lambda.min(cap / p.m);
            let down = lambda.min(cap / (1.0 - p.m));
            for &x in xs {
                p.ln_up += (up * (x - p.m)).ln_1p();
                p.ln_down += (-down * (x - p.m)).ln_1p();
            }
            p.ln_up < barrier && p.ln_down < barrier
        });
        for &x in xs {
            self.t += 1;
            self.sum += x;
            self.sum_x2 += x * x;
            let mu = (0.5 + self.sum) / (self.t as f64 + 1.0);
            self.sum_sq += (x - mu) * (x - mu);
        }
        if let (Some(first), Some(last)) = (self.live.first(), self.live.last()) {
            self.hull = Interval {
                lower: first.m,
                upper: last.m,
            };
        }
        Ok(())
    }

    /// Whether every candidate mean has been rejected (an event of
    /// probability ≤ α; [`BettingSequence::interval`] then keeps the last
    /// non-empty hull).
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The confidence sequence's current interval: the hull of the
    /// candidate means not rejected so far ([0, 1] before any observation).
    pub fn interval(&self) -> Interval {
        self.hull
    }

    /// The log capital at `threshold` of the side that grows when the
    /// mean is on `above`'s side of it: ln K⁺ (betting on X > m) for a mean
    /// above the threshold — its reaching ln(2/α) establishes a pass —
    /// else ln K⁻. `None` when the threshold was rejected already or is
    /// not a point of the sequence.
    pub fn ln_capital_at(&self, threshold: f64, above: bool) -> Option<f64> {
        self.live
            .iter()
            .find(|p| p.m == threshold)
            .map(|p| if above { p.ln_up() } else { p.ln_down() })
    }

    /// ln(2/α), the log capital at which a side rejects.
    pub fn barrier(&self) -> f64 {
        self.barrier
    }

    /// Whether the sequence could still establish that the mean is at or
    /// above `threshold` (`above`; every live point below it rejected) or
    /// below it (every live point at or above it rejected) if every
    /// observation still to come were the most favourable one (1 for
    /// `above`, else 0), fed in `rounds` batches of `batch` observations
    /// (one bet each, as [`BettingSequence::observe_batch`]; batches of 1
    /// are [`BettingSequence::observe`]).
    ///
    /// Only the binding point is followed: ln K⁺ decreases in m (each
    /// factor 1 + min(λ, c/m)(x − m) does), so the last live point below
    /// the threshold is the last to fall for a pass; ln K⁻ increases in m,
    /// so the first live point at or above it for a fail. The bets follow
    /// the plug-in rule on the favourable outcomes (their variance shrinks,
    /// so the bets grow to their caps), which makes this a best case in
    /// all but contrived histories. Used by the futility rule: a check
    /// that cannot settle even so is futile for certain. Stopping for
    /// futility never inflates the error, so the rule affects only when a
    /// run stops, never what it may claim.
    pub fn could_settle(&self, threshold: f64, above: bool, batch: usize, rounds: usize) -> bool {
        let binding = if above {
            self.live.iter().rev().find(|p| p.m < threshold)
        } else {
            self.live.iter().find(|p| p.m >= threshold)
        };
        let Some(point) = binding else {
            return true;
        };
        let (x, mut ln) = if above {
            (1.0, point.ln_up())
        } else {
            (0.0, point.ln_down())
        };
        let cap = if above {
            self.cap / point.m
        } else {
            self.cap / (1.0 - point.m)
        };
        let (mut t, mut sum, mut sum_sq) = (self.t, self.sum, self.sum_sq);
        // Empty batches add nothing: the point stays where it is.
        let rounds = if batch == 0 { 0 } else { rounds };
        for _ in 0..rounds {
            let variance = (0.25 + sum_sq) / (t as f64 + 1.0);
            let lambda = bet(self.alpha, variance, t + batch as u64).min(cap);
            let step = if above {
                (lambda * (x - point.m)).ln_1p()
            } else {
                (-lambda * (x - point.m)).ln_1p()
            };
            ln += batch as f64 * step;
            if ln >= self.barrier {
                return true;
            }
            for _ in 0..batch {
                t += 1;
                sum += x;
                let mu = (0.5 + sum) / (t as f64 + 1.0);
                sum_sq += (x - mu) * (x - mu);
            }
        }
        false
    }
}

/// λ_t = sqrt(2 ln(2/α) / (σ̂² t ln(t + 1))), before the caps at c/m and
/// c/(1 − m).
pub fn bet(alpha: f64, variance: f64, t: u64) -> f64 {
    let t = t.max(1) as f64;
    (2.0 * (2.0 / alpha).ln() / (variance.max(1e-12) * t * (t + 1.0).ln())).sqrt()
}

/// Requests — observations that are 0 or 1, each 1 with probability
/// `mean` — after which a sequence of this module (bet cap `cap`) is
/// expected to reject `threshold`, counted from its start: the first `t`
/// at which the expected log capital of the side betting on the truth,
///
/// ```text
/// Σ_{s≤t} E ln(1 + λ_s (X − m)) = Σ_{s≤t} [ p ln(1 + λ_s (1 − m)) + (1 − p) ln(1 − λ_s m) ]
/// ```
///
/// (the K⁺ side, mean p above m = `threshold`; K⁻ mirrored), reaches
/// ln(2/α), with λ_s the plug-in bet at the variance estimate's expected
/// path σ̂²_{s−1} = (¼ + (s − 1) p(1 − p)) / s, capped at c/m (c/(1 − m)).
/// The expectation is exact for 0/1 outcomes, where
/// [`projected_observations`]'s second-order one is 30–40 % short: the
/// first bets, at the cap, lose more than a quadratic says (simulated
/// medians of first crossings against both, `sequential::tests`). Past
/// 1,024 requests the sum advances s/1,024 requests at a time at the
/// step's middle bet, so a projection to 10⁸ costs about 20,000 terms.
/// `None` when p = m or not within `limit` requests. A projection, not a
/// guarantee: single streams cross from about half to twice it.
pub fn projected_requests(
    alpha: f64,
    cap: f64,
    mean: f64,
    threshold: f64,
    limit: u64,
) -> Option<u64> {
    if mean == threshold || !(0.0..=1.0).contains(&mean) || !(0.0..=1.0).contains(&threshold) {
        return None;
    }
    let barrier = (2.0 / alpha).ln();
    let variance = mean * (1.0 - mean);
    // The side that grows, in terms of Y = X or 1 − X betting on Y > m'.
    let (p, m) = if mean > threshold {
        (mean, threshold)
    } else {
        (1.0 - mean, 1.0 - threshold)
    };
    let side_cap = cap / m.max(1e-12);
    let increment = |s: u64| {
        let sigma2 = (0.25 + (s - 1) as f64 * variance) / s as f64;
        let l = bet(alpha, sigma2, s).min(side_cap);
        p * (l * (1.0 - m)).ln_1p() + (1.0 - p) * (-l * m).ln_1p()
    };
    let (mut capital, mut s) = (0.0, 0u64);
    while capital < barrier {
        let h = (s / 1024).max(1);
        if s + h > limit {
            return None;
        }
        let step = increment(s + h.div_ceil(2));
        if h > 1 && step > 0.0 && capital + h as f64 * step >= barrier {
            return Some(s + ((barrier - capital) / step).ceil() as u64);
        }
        capital += h as f64 * step;
        s += h;
    }
    Some(s)
}

/// Observations (inputs) after which a sequence is expected to reject
/// `threshold` when the mean is `mean` with per-observation variance
/// `variance`, starting from `ln_capital` after `t` observations: the
/// first `t' > t` at which the expected log capital of the side betting
/// on the truth, `ln_capital + Σ_{s=t+1}^{t'} E ln(1 + λ_s |X − threshold|)`
/// ≈ `Σ (λ_s Δ − λ_s² (σ² + Δ²) / 2)` (second order, Δ = |mean − threshold|,
/// λ_s the plug-in bet at variance σ², capped at `cap`/threshold or
/// `cap`/(1 − threshold)), reaches ln(2/α). `None` when
/// Δ = 0 or not within `limit` observations. A projection from the
/// current estimate, for the futility rule and for planning; not part of
/// any guarantee.
#[allow(clippy::too_many_arguments)]
pub fn projected_observations(
    alpha: f64,
    cap: f64,
    mean: f64,
    variance: f64,
    threshold: f64,
    t: u64,
    ln_capital: f64,
    limit: u64,
) -> Option<u64> {
    let delta = (mean - threshold).abs();
    if delta == 0.0 || !delta.is_finite() {
        return None;
    }
    let barrier = (2.0 / alpha).ln();
    let sigma2 = variance.max(1e-6);
    // The cap on the side that grows: c/m for K⁺ (mean above), c/(1 − m)
    // for K⁻, at m = threshold.
    let side_cap = if mean > threshold {
        cap / threshold.max(1e-12)
    } else {
        cap / (1.0 - threshold).max(1e-12)
    };
    let mut capital = ln_capital;
    let mut s = t;
    while capital < barrier {
        s += 1;
        if s > limit {
            return None;
        }
        let l = bet(alpha, sigma2, s).min(side_cap);
        capital += l * delta - l * l * (sigma2 + delta * delta) / 2.0;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A stream whose rate changes from run to run: `(rate, length)`
    /// segments, observations 0/1 or (for `fractional`) any in [0, 1].
    fn stream(segments: &[(f64, usize)], fractional: bool, seed: u64) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        segments
            .iter()
            .flat_map(|&(p, n)| std::iter::repeat_n(p, n))
            .map(|p| {
                if fractional {
                    (p + rng.gen_range(-0.1..0.1f64)).clamp(0.0, 1.0)
                } else {
                    f64::from(u8::from(rng.gen::<f64>() < p))
                }
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(60))]
        /// Multiplying the factors and taking logs only near the barrier
        /// ([`Live::step`]) rejects the same points at the same step as
        /// adding every factor's log (a batch of one,
        /// [`BettingSequence::observe_batch`], the sum of ln(1 + a) as
        /// before), and keeps the log capital within 10⁻⁹ of it: streams
        /// of easy and hard stretches (a rate of 0.97–0.99, drops to
        /// 0.6–0.9, recoveries), at several levels and caps.
        #[test]
        fn products_reject_as_sums_of_logs_do(
            segments in proptest::collection::vec((prop_oneof![0.6..0.9f64, 0.97..0.995f64], 50..1500usize), 1..5),
            fractional in any::<bool>(),
            alpha in prop_oneof![Just(0.05), Just(0.01), Just(1e-6)],
            cap in prop_oneof![Just(BET_CAP), Just(OUTPUT_ROUND_BET_CAP)],
            seed in any::<u64>(),
        ) {
            let new = || BettingSequence::at_alpha(alpha, &[0.95]).unwrap().with_cap(cap).unwrap();
            let (mut fast, mut sums) = (new(), new());
            for (i, &x) in stream(&segments, fractional, seed).iter().enumerate() {
                fast.observe(x).unwrap();
                sums.observe_batch(&[x]).unwrap();
                let points = |s: &BettingSequence| s.live.iter().map(|p| p.m).collect::<Vec<_>>();
                prop_assert_eq!(points(&fast), points(&sums), "step {}", i);
                for above in [true, false] {
                    let (a, b) = (fast.ln_capital_at(0.95, above), sums.ln_capital_at(0.95, above));
                    prop_assert_eq!(a.is_some(), b.is_some());
                    if let (Some(a), Some(b)) = (a, b) {
                        prop_assert!((a - b).abs() < 1e-9, "step {}: {} against {}", i, a, b);
                    }
                }
            }
            prop_assert_eq!(fast.interval(), sums.interval());
        }
    }

    /// A sequence stored before the products existed (its points without
    /// `up_since`/`down_since`) reads as folded, and goes on as one that
    /// never left memory.
    #[test]
    fn a_stored_sequence_without_products_reads_as_folded() {
        let mut s = BettingSequence::new(0.95, &[]).unwrap();
        for x in stream(&[(0.9, 300)], false, 3) {
            s.observe(x).unwrap();
        }
        s.live.iter_mut().for_each(Live::fold);
        let mut json: serde_json::Value = serde_json::to_value(&s).unwrap();
        for p in json["live"].as_array_mut().unwrap() {
            let p = p.as_object_mut().unwrap();
            assert!(p.remove("up_since").is_some() && p.remove("down_since").is_some());
        }
        let mut back: BettingSequence = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
        for x in stream(&[(0.7, 200)], false, 4) {
            s.observe(x).unwrap();
            back.observe(x).unwrap();
        }
        assert_eq!(back, s);
    }
}
