//! Confidence intervals for a binomial proportion (paper §3.4; docs/architecture.md,
//! Statistics).
//!
//! All functions here are total: they never panic. Invalid inputs are
//! handled as follows (and the same rules apply everywhere in `stats`):
//!
//! * `n` that is NaN, infinite or `≤ 0` → [`Interval::EMPTY`] (nothing was
//!   observed, so nothing is known);
//! * `x` that is NaN → [`Interval::EMPTY`]; `x` outside `[0, n]` is clamped
//!   into it (a count above the number of trials is a caller bug, and the
//!   closest meaningful answer is `x = n`);
//! * `confidence` that is NaN or outside the open interval `(0, 1)` →
//!   [`Interval::EMPTY`] (a 100 % interval is `[0, 1]`, and there is no
//!   meaningful interval at confidence `≤ 0`; the uninformative answer is
//!   the safe one because it can never establish a verdict).
//!
//! [`try_proportion_interval`] returns these cases as a
//! [`StatsError`] instead; prefer it wherever the input is not known valid.

use super::error::{check_confidence, StatsError};
use serde::{Deserialize, Serialize};
use statrs::function::{erf, gamma};

/// Interval method (docs/architecture.md, Design decisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "kebab-case")]
pub enum IntervalMethod {
    /// The paper's §3.4 formula p ± z·sqrt(p(1−p)/n), clamped to [0, 1].
    Wald,
    /// Wilson score interval (the default):
    /// `(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)`.
    #[default]
    Wilson,
    /// Exact Clopper–Pearson interval from beta quantiles:
    /// `[B(α/2; x, n−x+1), B(1−α/2; x+1, n−x)]`, lower = 0 at x = 0 and
    /// upper = 1 at x = n.
    ClopperPearson,
    /// Jeffreys interval: the equal-tailed `1−α` credible interval of the
    /// `Beta(x+½, n−x+½)` posterior, with the Brown–Cai–DasGupta boundary
    /// rule (lower = 0 at x = 0, upper = 1 at x = n), generalised so that
    /// the interval always contains p̂.
    Jeffreys,
    /// Agresti–Coull: ñ = n + z², p̃ = (x + z²/2)/ñ, p̃ ± z·sqrt(p̃(1−p̃)/ñ),
    /// clamped to [0, 1] (the statsmodels convention).
    AgrestiCoull,
}

impl IntervalMethod {
    /// All five methods, in declaration order.
    pub const ALL: [IntervalMethod; 5] = [
        IntervalMethod::Wald,
        IntervalMethod::Wilson,
        IntervalMethod::ClopperPearson,
        IntervalMethod::Jeffreys,
        IntervalMethod::AgrestiCoull,
    ];
}

/// A closed interval within [0, 1] (for a difference of two proportions,
/// see [`crate::stats::paired`], within [−1, 1]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

impl Interval {
    /// The uninformative interval, used when nothing was observed.
    pub const EMPTY: Interval = Interval {
        lower: 0.0,
        upper: 1.0,
    };

    /// `upper − lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }

    /// Whether `lower ≤ p ≤ upper` (closed interval; false for NaN).
    pub fn contains(&self, p: f64) -> bool {
        self.lower <= p && p <= self.upper
    }
}

/// Φ⁻¹(p), the standard normal quantile, for `p` in `[0, 1]`:
/// `−√2 · erfc⁻¹(2p)` (statrs' Boost-derived `erfc_inv`, accurate to a few
/// ulps). Returns `−∞` at 0, `+∞` at 1 and NaN for NaN or `p` outside
/// `[0, 1]`.
pub fn normal_quantile(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    -std::f64::consts::SQRT_2 * erf::erfc_inv(2.0 * p)
}

/// z = Φ⁻¹(1 − α/2) for a two-sided interval at `confidence` = 1 − α
/// (the Z of paper §3.4), computed as `√2 · erfc⁻¹(α)` so no precision is
/// lost forming `1 − α/2`.
///
/// Out-of-range input never panics: `confidence ≤ 0` gives 0,
/// `confidence ≥ 1` gives `+∞`, NaN gives NaN.
pub fn z_value(confidence: f64) -> f64 {
    if confidence.is_nan() {
        return f64::NAN;
    }
    if confidence <= 0.0 {
        return 0.0;
    }
    if confidence >= 1.0 {
        return f64::INFINITY;
    }
    std::f64::consts::SQRT_2 * erf::erfc_inv(1.0 - confidence)
}

/// Largest `n` for which Clopper–Pearson and Jeffreys are computed from exact
/// beta quantiles; above it [`proportion_interval`] uses Wilson for them.
pub const BETA_METHODS_MAX_N: f64 = 1e7;

/// The two-sided interval for a proportion with `x` successes in `n` trials
/// (real-valued so effective sample sizes can be used), `0 ≤ x ≤ n`, at
/// `confidence` = 1 − α with z = [`z_value`]`(confidence)`:
///
/// * [`Wald`](IntervalMethod::Wald) (paper §3.4): `p̂ ± z·sqrt(p̂(1−p̂)/n)`,
///   clamped to [0, 1];
/// * [`Wilson`](IntervalMethod::Wilson):
///   `(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)`;
/// * [`ClopperPearson`](IntervalMethod::ClopperPearson):
///   `[Beta⁻¹(α/2; x, n−x+1), Beta⁻¹(1−α/2; x+1, n−x)]`, 0 at x = 0, 1 at x = n;
/// * [`Jeffreys`](IntervalMethod::Jeffreys):
///   `[Beta⁻¹(α/2; x+½, n−x+½), Beta⁻¹(1−α/2; x+½, n−x+½)]`, then
///   `lower = min(lower, p̂)`, `upper = max(upper, p̂)` — which is exactly the
///   Brown–Cai–DasGupta rule lower = 0 at x = 0, upper = 1 at x = n, and only
///   otherwise matters for fractional `x < ½` or very low confidence;
/// * [`AgrestiCoull`](IntervalMethod::AgrestiCoull): ñ = n + z²,
///   p̃ = (x + z²/2)/ñ, `p̃ ± z·sqrt(p̃(1−p̃)/ñ)`, clamped to [0, 1].
///
/// For `n >` [`BETA_METHODS_MAX_N`] (10⁷) Clopper–Pearson and Jeffreys fall
/// back to Wilson (endpoints within O(1/n)) to bound the cost.
///
/// `n == 0` gives [`Interval::EMPTY`]; see the module docs for the handling
/// of every other invalid input (never a panic). The result always
/// satisfies `0 ≤ lower ≤ upper ≤ 1`.
pub fn proportion_interval(x: f64, n: f64, confidence: f64, method: IntervalMethod) -> Interval {
    if !(n.is_finite() && n > 0.0) || x.is_nan() {
        return Interval::EMPTY;
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Interval::EMPTY;
    }
    if !(0.0..=n).contains(&x) {
        return Interval::EMPTY;
    }
    let p = (x / n).clamp(0.0, 1.0);
    let alpha = 1.0 - confidence;
    let z = z_value(confidence);
    // Beyond BETA_METHODS_MAX_N trials the exact beta quantiles would cost
    // O(sqrt(n)) continued-fraction terms per evaluation; there the
    // Clopper–Pearson and Jeffreys endpoints differ from Wilson's by O(1/n)
    // (< 1e-7), so Wilson is used instead (it also contains p̂).
    let method = match method {
        IntervalMethod::ClopperPearson | IntervalMethod::Jeffreys if n > BETA_METHODS_MAX_N => {
            IntervalMethod::Wilson
        }
        m => m,
    };
    let (lo, hi) = match method {
        IntervalMethod::Wald => {
            let half = z * (p * (1.0 - p) / n).sqrt();
            (p - half, p + half)
        }
        IntervalMethod::Wilson => {
            let z2 = z * z;
            let denom = 1.0 + z2 / n;
            let center = (p + z2 / (2.0 * n)) / denom;
            let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
            let lo = if x == 0.0 { 0.0 } else { center - half };
            let hi = if x == n { 1.0 } else { center + half };
            (lo, hi)
        }
        IntervalMethod::ClopperPearson => {
            let lo = if x == 0.0 {
                0.0
            } else {
                beta_quantile(x, n - x + 1.0, alpha / 2.0)
            };
            let hi = if x == n {
                1.0
            } else {
                beta_quantile_upper(x + 1.0, n - x, alpha / 2.0)
            };
            (lo, hi)
        }
        IntervalMethod::Jeffreys => {
            let a = x + 0.5;
            let b = n - x + 0.5;
            let lo = beta_quantile(a, b, alpha / 2.0).min(p);
            let hi = beta_quantile_upper(a, b, alpha / 2.0).max(p);
            (lo, hi)
        }
        IntervalMethod::AgrestiCoull => {
            let z2 = z * z;
            let nc = n + z2;
            let pc = (x + z2 / 2.0) / nc;
            let half = z * (pc * (1.0 - pc) / nc).sqrt();
            (pc - half, pc + half)
        }
    };
    let lower = if lo.is_nan() { 0.0 } else { lo.clamp(0.0, 1.0) };
    let upper = if hi.is_nan() { 1.0 } else { hi.clamp(0.0, 1.0) };
    if lower > upper {
        // Cannot happen for valid inputs; keep the invariant regardless.
        return Interval {
            lower: upper,
            upper: lower,
        };
    }
    Interval { lower, upper }
}

/// [`proportion_interval`] with invalid input as an error: `n` must be
/// finite and > 0 ([`StatsError::Trials`]), `x` in `[0, n]`
/// ([`StatsError::Counts`]), `confidence` in (0, 1)
/// ([`StatsError::Confidence`]).
pub fn try_proportion_interval(
    x: f64,
    n: f64,
    confidence: f64,
    method: IntervalMethod,
) -> Result<Interval, StatsError> {
    check_confidence(confidence)?;
    if !(n.is_finite() && n > 0.0) {
        return Err(StatsError::Trials(n));
    }
    if !(0.0..=n).contains(&x) {
        return Err(StatsError::Counts {
            successes: x,
            trials: n,
        });
    }
    Ok(proportion_interval(x, n, confidence, method))
}

// ---------------------------------------------------------------------------
// Beta distribution: regularized incomplete beta function and its inverse.
//
// Why not `statrs::distribution::Beta::inverse_cdf` alone: statrs 0.18
// computes it with AS 109 (Newton iterations on its own `beta_reg`), and its
// `beta_reg` evaluates the continued fraction with a hard cap of 140 terms.
// That cap is reached for large shape parameters (the continued fraction
// needs O(sqrt(max(a, b))) terms), i.e. for Clopper–Pearson / Jeffreys with
// n in the tens of thousands — exactly the effective sample sizes probity
// produces for big runs — and the quantile then silently loses accuracy.
// `Beta::inverse_cdf` also panics outside [0, 1], and AS 109's Newton
// iteration is not safeguarded near the density's singularities (a or b
// < 1). So we solve I_x(a, b) = p by bisection on our own continued fraction
// (same Lentz scheme, no 140-term cap, ~1e-14 relative accuracy), which
// lands on the closest representable x (checked against scipy in
// tests/stats_reference.rs).
// ---------------------------------------------------------------------------

/// ln of the prefactor x^a (1−x)^b / (a B(a, b)) of the continued fraction.
fn ln_front(a: f64, b: f64, x: f64) -> f64 {
    gamma::ln_gamma(a + b) - gamma::ln_gamma(a) - gamma::ln_gamma(b)
        + a * x.ln()
        + b * (1.0 - x).ln()
}

/// Continued fraction for I_x(a, b) (Numerical Recipes `betacf`, modified
/// Lentz), valid/fast for x < (a+1)/(a+b+2).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const FPMIN: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < FPMIN {
        d = FPMIN;
    }
    d = 1.0 / d;
    let mut h = d;
    // Convergence takes O(sqrt(max(a, b))) terms; the cap only bounds the
    // work for absurd inputs (a, b ~ 1e12 still converge well within it).
    let max_iter = 200 + (4.0 * qab.sqrt()).min(4.0e6) as u64;
    for m in 1..=max_iter {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() <= EPS {
            break;
        }
    }
    h
}

/// Regularized incomplete beta function I_x(a, b) = P(X ≤ x), X ~ Beta(a, b),
/// for a, b > 0 (returns NaN otherwise). Also returns the upper tail
/// 1 − I_x(a, b) computed without cancellation: `(lower, upper)`.
fn beta_cdf_both(a: f64, b: f64, x: f64) -> (f64, f64) {
    if !(a > 0.0 && b > 0.0) || x.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    if x <= 0.0 {
        return (0.0, 1.0);
    }
    if x >= 1.0 {
        return (1.0, 0.0);
    }
    let front = ln_front(a, b, x).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        let lower = (front * beta_cf(a, b, x) / a).clamp(0.0, 1.0);
        (lower, 1.0 - lower)
    } else {
        let upper = (front * beta_cf(b, a, 1.0 - x) / b).clamp(0.0, 1.0);
        (1.0 - upper, upper)
    }
}

/// The quantile x with P(X ≤ x) = `p` for X ~ Beta(a, b) (lower tail).
pub(crate) fn beta_quantile(a: f64, b: f64, p: f64) -> f64 {
    beta_solve(a, b, p, false)
}

/// The quantile x with P(X > x) = `q` for X ~ Beta(a, b) (upper tail; no
/// precision lost forming 1 − q).
pub(crate) fn beta_quantile_upper(a: f64, b: f64, q: f64) -> f64 {
    beta_solve(a, b, q, true)
}

/// Solve for x: lower tail I_x(a,b) = target (or upper tail 1 − I_x = target
/// when `upper`). Never panics; NaN for invalid shapes.
fn beta_solve(a: f64, b: f64, target: f64, upper: bool) -> f64 {
    if !(a > 0.0 && b > 0.0) || target.is_nan() || a.is_infinite() || b.is_infinite() {
        return f64::NAN;
    }
    if target <= 0.0 {
        return if upper { 1.0 } else { 0.0 };
    }
    if target >= 1.0 {
        return if upper { 0.0 } else { 1.0 };
    }
    // g(x) is increasing in x, with root at the quantile.
    let g = |x: f64| -> f64 {
        let (lo, up) = beta_cdf_both(a, b, x);
        if upper {
            target - up
        } else {
            lo - target
        }
    };
    // Bisection over the IEEE-754 bit patterns of x ∈ [0, 1]: for
    // non-negative floats the bit pattern is monotone in the value, so at
    // most 62 halvings pin the root down to adjacent representable numbers,
    // whatever the scale (quantiles like 1e-231 for tiny `a` included). It
    // is slower than Newton but cannot diverge, stall on the density's
    // singularities at 0 and 1, or stop early.
    let mut lo = 0u64; // bits of 0.0
    let mut hi = 1.0f64.to_bits();
    let (mut g_lo, mut g_hi) = (g(0.0), g(1.0));
    if g_lo.is_nan() || g_hi.is_nan() {
        return f64::NAN;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let gm = g(f64::from_bits(mid));
        if gm.is_nan() {
            return f64::NAN;
        }
        if gm < 0.0 {
            lo = mid;
            g_lo = gm;
        } else {
            hi = mid;
            g_hi = gm;
        }
    }
    if g_lo.abs() < g_hi.abs() {
        f64::from_bits(lo)
    } else {
        f64::from_bits(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_cdf_symmetry() {
        let (l, u) = beta_cdf_both(3.0, 3.0, 0.5);
        assert!((l - 0.5).abs() < 1e-13 && (u - 0.5).abs() < 1e-13);
    }

    /// The solved quantile is right to 1e-8 relative in probability (the
    /// ln-gamma prefactor loses digits for shapes ~1e8; in x that is ~1e-14), or is
    /// as close as floating point allows (the target lies between the
    /// probabilities at the neighbouring representable x, ±4 ulps).
    fn check_root(a: f64, b: f64, target: f64, x: f64, upper: bool) {
        let tail = |x: f64| {
            let (l, u) = beta_cdf_both(a, b, x);
            if upper {
                u
            } else {
                l
            }
        };
        let t = tail(x);
        if (t - target).abs() <= 1e-8 * target {
            return;
        }
        let below = f64::from_bits(x.to_bits().saturating_sub(4));
        let above = f64::from_bits(x.to_bits() + 4);
        let (t1, t2) = (tail(below), tail(above));
        assert!(
            (t1 - target) * (t2 - target) <= 0.0,
            "a={a} b={b} target={target} upper={upper}: x={x} tail={t}"
        );
    }

    #[test]
    fn beta_quantile_roundtrip_large_shapes() {
        for &(a, b) in &[
            (0.5, 0.5),
            (1.0, 30.0),
            (0.01, 3.0),
            (500.0, 501.0),
            (3e5, 7e5),
            (2e8, 1e7),
        ] {
            for &p in &[1e-6, 0.005, 0.025, 0.5, 0.975, 0.995] {
                check_root(a, b, p, beta_quantile(a, b, p), false);
                check_root(a, b, p, beta_quantile_upper(a, b, p), true);
            }
        }
    }

    #[test]
    fn invalid_inputs_never_panic() {
        for &(x, n, c) in &[
            (f64::NAN, 10.0, 0.95),
            (1.0, f64::NAN, 0.95),
            (1.0, 10.0, f64::NAN),
            (11.0, 10.0, 0.95),
            (-1.0, 10.0, 0.95),
            (1.0, 10.0, 1.5),
            (1.0, 10.0, -0.5),
            (1.0, f64::INFINITY, 0.95),
            (1.0, -3.0, 0.95),
            (1e-300, 1e-290, 0.95),
            (5e11, 1e12, 0.95),
        ] {
            for m in IntervalMethod::ALL {
                let i = proportion_interval(x, n, c, m);
                assert!(
                    0.0 <= i.lower && i.lower <= i.upper && i.upper <= 1.0,
                    "{x} {n} {c} {m:?} {i:?}"
                );
            }
        }
        assert_eq!(
            proportion_interval(11.0, 10.0, 0.95, IntervalMethod::Wilson),
            Interval::EMPTY
        );
        assert!(try_proportion_interval(11.0, 10.0, 0.95, IntervalMethod::Wilson).is_err());
        assert!(try_proportion_interval(1.0, 10.0, 1.0, IntervalMethod::Wilson).is_err());
        assert!(try_proportion_interval(f64::NAN, 10.0, 0.95, IntervalMethod::Wilson).is_err());
        assert!(try_proportion_interval(0.0, 0.0, 0.95, IntervalMethod::Wilson).is_err());
    }
}
