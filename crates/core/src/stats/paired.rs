//! Comparing two runs (docs/architecture.md, Design decisions: "Comparing two runs on the
//! same inputs").
//!
//! Differences are always `a − b`. Their intervals use [`Interval`] with
//! bounds in [−1, 1] (a difference of two rates).

use super::error::{check_confidence, check_rate, StatsError};
use super::interval::{
    beta_quantile_upper, normal_quantile, proportion_interval, Interval, IntervalMethod,
};
use serde::{Deserialize, Serialize};

/// A difference of two success rates, `a − b`, with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Estimated difference of rates, a − b, in [−1, 1].
    pub mean_diff: f64,
    /// Its standard error (see each constructor for the formula).
    pub se: f64,
    /// Two-sided interval for the true difference, within [−1, 1].
    pub interval: Interval,
    /// Paired: the number of input pairs used. Unpaired: n_a + n_b, rounded.
    pub n: u64,
}

impl Difference {
    /// The uninformative result for `n` usable observations.
    pub(crate) fn uninformative(mean_diff: f64, n: u64) -> Self {
        Difference {
            mean_diff,
            se: 0.0,
            interval: Interval {
                lower: -1.0,
                upper: 1.0,
            },
            n,
        }
    }

    /// Whether the interval excludes 0 (a real change, not noise).
    pub fn is_significant(&self) -> bool {
        self.interval.lower > 0.0 || self.interval.upper < 0.0
    }
}

/// Two-sided Student-t critical value t_{1−α/2, ν} for `confidence` = 1 − α
/// and `df` = ν > 0 degrees of freedom, from T²/(ν+T²) ~ Beta(½, ν/2):
/// x = Beta⁻¹_upper(α; ½, ν/2), t = sqrt(ν·x/(1−x)).
///
/// NaN for invalid `df` or `confidence` outside (0, 1); never panics.
///
/// Remembered per thread (a report computes thousands of intervals with the
/// same ν; each quantile is a root search over the incomplete beta).
pub fn t_value(confidence: f64, df: f64) -> f64 {
    if !(confidence > 0.0 && confidence < 1.0 && df > 0.0) {
        return f64::NAN;
    }
    if df.is_infinite() {
        return super::interval::z_value(confidence);
    }
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
            Default::default();
    }
    let key = (confidence.to_bits(), df.to_bits());
    if let Some(t) = KNOWN.with(|k| k.borrow().get(&key).copied()) {
        return t;
    }
    let x = beta_quantile_upper(0.5, df / 2.0, 1.0 - confidence);
    let t = (df * x / (1.0 - x)).sqrt();
    KNOWN.with(|k| {
        let mut k = k.borrow_mut();
        // Bounded: a long-lived process asking for many (confidence, ν).
        if k.len() >= 4096 {
            k.clear();
        }
        k.insert(key, t);
    });
    t
}

/// Paired comparison of two runs on the same inputs: `a[i]` and `b[i]` are
/// input i's success rates in run a and run b.
///
/// d_i = a_i − b_i, d̄ = mean(d), SE = sd(d)/sqrt(N) with sd the
/// (N−1)-denominator standard deviation, interval d̄ ± t_{1−α/2, N−1}·SE
/// (Student t, see [`t_value`]; the paired t interval), clamped to [−1, 1].
/// Much tighter than [`compare_unpaired`] when inputs differ in difficulty,
/// because the between-input variation cancels in d_i.
///
/// Errors: slices of different lengths ([`StatsError::Lengths`]), a value
/// that is not a rate in [0, 1] (NaN, 1.5: [`StatsError::Rate`]), a
/// confidence outside (0, 1). Fewer than two pairs give `se = 0` and the
/// uninformative interval [−1, 1] (nothing to estimate a spread from).
pub fn compare_paired(a: &[f64], b: &[f64], confidence: f64) -> Result<Difference, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::Lengths {
            a: a.len(),
            b: b.len(),
        });
    }
    for &x in a.iter().chain(b) {
        check_rate(x)?;
    }
    check_confidence(confidence)?;
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len();
    if n == 0 {
        return Ok(Difference::uninformative(0.0, 0));
    }
    let nf = n as f64;
    let mean = d.iter().sum::<f64>() / nf;
    if n < 2 {
        return Ok(Difference::uninformative(mean, n as u64));
    }
    let var = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (nf - 1.0);
    let se = (var / nf).sqrt();
    let t = t_value(confidence, nf - 1.0);
    Ok(Difference {
        mean_diff: mean,
        se,
        interval: Interval {
            lower: (mean - t * se).clamp(-1.0, 1.0),
            upper: (mean + t * se).clamp(-1.0, 1.0),
        },
        n: n as u64,
    })
}

/// Unpaired comparison of two independent proportions x_a/n_a and x_b/n_b
/// (for contrast with [`compare_paired`], or when inputs do not match).
///
/// The interval is Newcombe's hybrid score interval (Newcombe 1998, method
/// 10; statsmodels `confint_proportions_2indep(method='newcomb')`): with
/// Wilson intervals [l_a, u_a], [l_b, u_b] and d = p_a − p_b,
/// `[d − sqrt((p_a−l_a)² + (u_b−p_b)²), d + sqrt((u_a−p_a)² + (p_b−l_b)²)]`.
/// It keeps its coverage near 0 and 1 where the Wald interval does not. `se`
/// is the Wald standard error sqrt(p_a(1−p_a)/n_a + p_b(1−p_b)/n_b), shown
/// for reference only.
///
/// Counts are real-valued (effective sizes allowed). Errors: a count n
/// that is NaN, infinite or negative ([`StatsError::Trials`]), successes
/// outside [0, n] (11 passes of 10: [`StatsError::Counts`]), a confidence
/// outside (0, 1). A side with n = 0 (nothing observed) gives the
/// uninformative interval [−1, 1].
pub fn compare_unpaired(
    x_a: f64,
    n_a: f64,
    x_b: f64,
    n_b: f64,
    confidence: f64,
) -> Result<Difference, StatsError> {
    for (x, n) in [(x_a, n_a), (x_b, n_b)] {
        if !(n.is_finite() && n >= 0.0) {
            return Err(StatsError::Trials(n));
        }
        if !(0.0..=n).contains(&x) {
            return Err(StatsError::Counts {
                successes: x,
                trials: n,
            });
        }
    }
    check_confidence(confidence)?;
    let n_total = (n_a + n_b).round() as u64;
    if n_a == 0.0 || n_b == 0.0 {
        return Ok(Difference::uninformative(0.0, n_total));
    }
    let pa = (x_a / n_a).clamp(0.0, 1.0);
    let pb = (x_b / n_b).clamp(0.0, 1.0);
    let d = pa - pb;
    let se = (pa * (1.0 - pa) / n_a + pb * (1.0 - pb) / n_b).sqrt();
    let ia = proportion_interval(pa * n_a, n_a, confidence, IntervalMethod::Wilson);
    let ib = proportion_interval(pb * n_b, n_b, confidence, IntervalMethod::Wilson);
    let lower = d - ((pa - ia.lower).powi(2) + (ib.upper - pb).powi(2)).sqrt();
    let upper = d + ((ia.upper - pa).powi(2) + (pb - ib.lower).powi(2)).sqrt();
    Ok(Difference {
        mean_diff: d,
        se,
        interval: Interval {
            lower: lower.clamp(-1.0, 1.0),
            upper: upper.clamp(-1.0, 1.0),
        },
        n: n_total,
    })
}

/// Inputs needed for a paired comparison to detect a change `delta` in the
/// mean per-input difference with a two-sided test at level `alpha` and the
/// given `power`: N = ⌈(z_{1−α/2} + z_{power})² · Var(d) / δ²⌉ (normal
/// approximation; `var_d` is the variance of the per-input differences d_i,
/// e.g. from a pilot run). At least 2, since a paired SE needs two inputs.
///
/// `delta == 0`, NaN inputs, negative `var_d`, or `alpha`/`power` outside
/// (0, 1) give `u64::MAX` (not reachable); the result saturates.
pub fn inputs_needed(var_d: f64, delta: f64, alpha: f64, power: f64) -> u64 {
    let open = |v: f64| v > 0.0 && v < 1.0;
    if var_d.is_nan()
        || var_d < 0.0
        || delta.is_nan()
        || delta == 0.0
        || !open(alpha)
        || !open(power)
    {
        return u64::MAX;
    }
    let z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
    let n = (z * z * var_d / (delta * delta)).ceil();
    if n.is_nan() || n >= 1.8e19 {
        return u64::MAX;
    }
    (n as u64).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_inputs() {
        let d = compare_paired(&[], &[], 0.95).unwrap();
        assert_eq!((d.n, d.interval.lower, d.interval.upper), (0, -1.0, 1.0));
        let d = compare_paired(&[1.0], &[0.0], 0.95).unwrap();
        assert_eq!((d.n, d.mean_diff), (1, 1.0));
        let u = compare_unpaired(0.0, 0.0, 1.0, 2.0, 0.95).unwrap();
        assert_eq!((u.interval.lower, u.interval.upper), (-1.0, 1.0));
        assert_eq!(inputs_needed(0.1, 0.0, 0.05, 0.8), u64::MAX);
    }

    /// The cases: 11 passes of 10, scores above 1, a NaN, slices
    /// of different lengths — each an error with a message.
    #[test]
    fn bad_input_is_an_error() {
        let e = compare_unpaired(11.0, 10.0, 5.0, 10.0, 0.95).unwrap_err();
        assert_eq!(
            e,
            StatsError::Counts {
                successes: 11.0,
                trials: 10.0
            }
        );
        assert!(e.to_string().contains("must lie in [0, trials]"), "{e}");
        assert!(compare_unpaired(1.0, -2.0, 1.0, 2.0, 0.95).is_err());
        assert!(compare_unpaired(1.0, 2.0, 1.0, 2.0, 1.0).is_err());
        let e = compare_paired(&[1.5, 2.0], &[0.5, 0.5], 0.95).unwrap_err();
        assert_eq!(e, StatsError::Rate(1.5));
        assert!(compare_paired(&[0.5, f64::NAN], &[0.5, 0.5], 0.95).is_err());
        let e = compare_paired(&[0.5, 0.5], &[0.5], 0.95).unwrap_err();
        assert_eq!(e, StatsError::Lengths { a: 2, b: 1 });
        assert!(e.to_string().contains("one value per input"), "{e}");
    }

    #[test]
    fn t_value_limits() {
        assert!((t_value(0.95, 1.0) - 12.706204736174698).abs() < 1e-9);
        assert!((t_value(0.95, 1e9) - 1.959963984540054).abs() < 1e-6);
        assert!(t_value(1.0, 3.0).is_nan());
    }
}
