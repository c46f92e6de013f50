//! Inputs no sample has seen: the share of the population that G inputs
//! can miss entirely, and the allowance the default clustered interval
//! makes for it (`crates/core/STATISTICS.md`, *Inputs the sample has not
//! seen*; issue 35).
//!
//! A share h of the population of inputs is absent from a sample of G
//! inputs drawn i.i.d. with probability (1 − h)^G. The largest share that G
//! inputs miss with probability at least α/2 is
//!
//! ```text
//! h_G = 1 − (α/2)^(1/G)        (20 inputs, α = 0.05: 16.8 %; 50: 7.1 %; 72: 5.0 %)
//! ```
//!
//! No interval can see such a minority: the sample looks exactly as if it
//! were not there. If its inputs failed every output, the population's
//! mean rate would be (1 − h)·μ_seen; if they passed every output,
//! 1 − (1 − h)(1 − μ_seen). The default interval's ends therefore reach
//! at least to
//!
//! ```text
//! lower ≤ (1 − h_G)·p̂,     upper ≥ 1 − (1 − h_G)(1 − p̂)
//! ```
//!
//! (p̂ standing for the seen inputs' rate; its own sampling error is the
//! model-based interval's part, whose end is kept when it reaches further).
//! With one output per input this is not needed: each output is then a
//! Bernoulli(μ) trial whatever the inputs' difficulties, and
//! Clopper–Pearson's interval is exact without any model of them.

use super::error::check_confidence;
use super::interval::Interval;

/// h_G = 1 − (α/2)^(1/G), α = 1 − `confidence`: the largest share of the
/// population of inputs that `inputs` inputs drawn at random miss entirely
/// with probability at least α/2. 1 for no input; NaN for a confidence
/// outside (0, 1).
pub fn unseen_share(inputs: u64, confidence: f64) -> f64 {
    if check_confidence(confidence).is_err() {
        return f64::NAN;
    }
    if inputs == 0 {
        return 1.0;
    }
    let half_alpha = (1.0 - confidence) / 2.0;
    // 1 − exp(ln(α/2)/G), without cancellation for large G.
    -(half_alpha.ln() / inputs as f64).exp_m1()
}

/// The lower end of the all-pass sample over `inputs` inputs with more
/// than one output each: Wilson-t on the inputs at x = G,
///
/// ```text
/// G / (G + t²_{1−α/2, G−1})
/// ```
///
/// The default clustered interval's lower end never lies above it while
/// few inputs fail (`RateEstimate::try_clustered`), so the first failure
/// never raises the lower end (issue 35 item 5); mirrored, 1 − this for
/// the upper end. NaN below 2 inputs.
pub fn all_pass_lower(inputs: u64, confidence: f64) -> f64 {
    let g = inputs as f64;
    if inputs < 2 {
        return f64::NAN;
    }
    let t = super::paired::t_value(confidence, g - 1.0);
    g / (g + t * t)
}

/// The interval an unseen minority of share h_G ([`unseen_share`]) allows
/// around an estimate p̂ of the seen inputs' rate:
/// [(1 − h_G)·p̂, 1 − (1 − h_G)(1 − p̂)] — the mean if the minority failed
/// every output, and if it passed every output.
pub fn allowance(estimate: f64, inputs: u64, confidence: f64) -> Interval {
    let keep = 1.0 - unseen_share(inputs, confidence);
    Interval {
        lower: (keep * estimate).clamp(0.0, 1.0),
        upper: (1.0 - keep * (1.0 - estimate)).clamp(0.0, 1.0),
    }
}

/// The share of the population that `k` of `g` inputs may stand for, at
/// its smallest: Clopper–Pearson's lower end for k of g at `confidence`
/// (one-sided α/2; 0 for k = 0). For k = 0 its upper end is
/// [`unseen_share`].
///
/// Remembered per thread ([`SOLVED`]): a run's report widens the same G
/// inputs' intervals many times (each check, the aggregate, each retry
/// strategy, the retry plan), and each solve is some 60 evaluations of a
/// continued fraction. A pure function's memo: the values are the same.
fn least_share(k: f64, g: f64, confidence: f64) -> f64 {
    if k <= 0.0 {
        return 0.0;
    }
    let key = (k.to_bits(), g.to_bits(), confidence.to_bits());
    if let Some(h) = SOLVED.with(|m| m.borrow().get(&key).copied()) {
        return h;
    }
    let h = super::interval::proportion_interval(
        k,
        g,
        confidence,
        super::interval::IntervalMethod::ClopperPearson,
    )
    .lower;
    SOLVED.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= SOLVED_MOST {
            m.clear();
        }
        m.insert(key, h);
    });
    h
}

/// Entries [`SOLVED`] keeps before it starts again (a few MB): both sides
/// of 100,000 inputs' widening.
const SOLVED_MOST: usize = 1 << 18;

thread_local! {
    /// [`least_share`]'s values by the bits of (k, G, confidence).
    static SOLVED: std::cell::RefCell<std::collections::HashMap<(u64, u64, u64), f64>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// `interval` widened to reach at least how far a minority of inputs the
/// sample misrepresents could move the mean, from the per-input rates
/// `means` (value, multiplicity; the target is their population mean):
///
/// * **unseen** ([`allowance`], k = 0): a share h_G no input came from,
///   failing (passing) every output;
/// * **over-represented** (1 ≤ k ≤ G/2): the k lowest inputs (highest, for
///   the lower end) may stand for a share of the population as small as
///   h_k = Clopper–Pearson's lower end for k of G (α/2), so the mean may
///   be as high as (1 − h_k)·mean(the other G − k) + h_k·mean(those k)
///   (as low as, mirrored). One hard input among 20 stands for a share of
///   0.13 % to 25 %: the upper end reaches about the mean of the other 19.
///
/// k steps one entry of `means` at a time (an entry with multiplicity w
/// moves w inputs at once).
/// The unseen term uses the mean of the per-input rates (p̂ when every
/// input has the same number of outputs).
///
/// Cost: the over-represented terms need h_k, a Clopper–Pearson end, for
/// each k up to G/2; [`Minority::reach`] computes it only where it can
/// matter (a bound over a block of k), so a run of 10,000 inputs does not
/// solve 10,000 Beta quantiles per interval, with the same result.
pub fn widen_by(interval: Interval, means: &[(f64, f64)], confidence: f64) -> Interval {
    let mut v: Vec<(f64, f64)> = means
        .iter()
        .copied()
        .filter(|&(_, w)| w > 0.0 && w.is_finite())
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let g: f64 = v.iter().map(|&(_, w)| w).sum();
    if g <= 0.0 {
        return interval;
    }
    let total: f64 = v.iter().map(|&(x, w)| x * w).sum();
    let mean = total / g;
    let keep = 1.0 - unseen_share(g.round().max(1.0) as u64, confidence);
    let lower = interval.lower.min(keep * mean);
    let upper = interval.upper.max(1.0 - keep * (1.0 - mean));
    // From the bottom: the k lowest over-represented (upper end); from the
    // top: the k highest (lower end).
    let upper = Minority::new(v.iter(), g, total, confidence).reach(upper, Side::Upper);
    let lower = Minority::new(v.iter().rev(), g, total, confidence).reach(lower, Side::Lower);
    Interval {
        lower: lower.clamp(0.0, 1.0),
        upper: upper.clamp(0.0, 1.0),
    }
}

/// Which end an over-represented minority moves.
#[derive(Clone, Copy)]
enum Side {
    /// The lowest inputs, taken from the bottom, raise the upper end.
    Upper,
    /// The highest, taken from the top, lower the lower end.
    Lower,
}

/// The over-represented minorities of [`widen_by`], one side: entry i
/// (in the side's order) ends the minority of the first k_i inputs, whose
/// rates sum to s_i, and that minority moves the end to
///
/// ```text
/// f(i, h) = (1 − h)·(total − s_i)/(G − k_i) + h·s_i/k_i,   at h = h_{k_i}
/// ```
///
/// For the upper side (rates ascending) the rest's mean R_i and the
/// minority's mean L_i never fall as i grows, L_i ≤ R_i, and h_k grows
/// with k, so for every i in a block [a, b]
/// f(i, h_i) = R_i − h_i(R_i − L_i) ≤ R_i − h_a(R_i − L_i) ≤ f(b, h_a):
/// a block whose bound cannot pass the end found so far holds no better k
/// and its h are never computed. Mirrored for the lower side (f ≥ f(b, h_a)).
struct Minority {
    /// (k_i, s_i): inputs and rate sums of the first i + 1 entries, up to
    /// the last minority of at most half the inputs.
    prefix: Vec<(f64, f64)>,
    g: f64,
    total: f64,
    confidence: f64,
}

/// A block is passed over only when its bound misses the end found so
/// far by more than this: far above the rounding of f's few operations
/// on values in [0, 1] (~10⁻¹⁵), so no k that would move the end is
/// skipped, and far below any digit a report shows.
const BOUND_SLACK: f64 = 1e-12;

impl Minority {
    fn new<'a>(
        entries: impl Iterator<Item = &'a (f64, f64)>,
        g: f64,
        total: f64,
        confidence: f64,
    ) -> Self {
        let (mut k, mut s) = (0.0, 0.0);
        let mut prefix = Vec::new();
        for &(x, w) in entries {
            k += w;
            s += x * w;
            if k > g / 2.0 + 1e-9 || k >= g {
                break;
            }
            prefix.push((k, s));
        }
        Minority {
            prefix,
            g,
            total,
            confidence,
        }
    }

    fn h(&self, i: usize) -> f64 {
        least_share(self.prefix[i].0, self.g, self.confidence)
    }

    fn f(&self, i: usize, h: f64) -> f64 {
        let (k, s) = self.prefix[i];
        (1.0 - h) * (self.total - s) / (self.g - k) + h * s / k
    }

    /// `end` moved as far as any minority moves it on `side`.
    fn reach(&self, mut end: f64, side: Side) -> f64 {
        if let Some(last) = self.prefix.len().checked_sub(1) {
            self.search(0, last, self.h(0), side, &mut end);
        }
        end
    }

    /// The block [a, b], h_a known: pass it over, take its one f, or
    /// split it in halves, the later first: with many inputs f grows with
    /// k over most of the range (f ≈ mean + c·√k·(R − L)/G), so the end
    /// found there lets the earlier blocks be passed over.
    fn search(&self, a: usize, b: usize, h_a: f64, side: Side, end: &mut f64) {
        let bound = self.f(b, h_a);
        let hopeless = match side {
            Side::Upper => bound + BOUND_SLACK <= *end,
            Side::Lower => bound - BOUND_SLACK >= *end,
        };
        if hopeless {
            return;
        }
        if a == b {
            *end = match side {
                Side::Upper => end.max(bound),
                Side::Lower => end.min(bound),
            };
            return;
        }
        let mid = a + (b - a) / 2;
        self.search(mid + 1, b, self.h(mid + 1), side, end);
        self.search(a, mid, h_a, side, end);
    }
}

/// The fewest inputs whose [`allowance`] around `estimate` lies wholly on
/// its side of `threshold`: the smallest G with (1 − h_G)·p̂ ≥ threshold
/// when p̂ > threshold (no unseen minority of failing inputs could pull
/// the mean under it), or 1 − (1 − h_G)(1 − p̂) < threshold when
/// p̂ < threshold. From (1 − h_G) = (α/2)^(1/G):
/// G ≥ ln(α/2) / ln(threshold/p̂), resp. G > ln(α/2) / ln((1 − threshold)/(1 − p̂)).
/// `None` when p̂ equals the threshold, the threshold is 0 or 1 on the
/// far side, or an argument is invalid.
pub fn inputs_to_rule_out(estimate: f64, threshold: f64, confidence: f64) -> Option<u64> {
    if check_confidence(confidence).is_err()
        || !(0.0..=1.0).contains(&estimate)
        || !(0.0..=1.0).contains(&threshold)
    {
        return None;
    }
    let ln_half_alpha = ((1.0 - confidence) / 2.0).ln();
    let g = if estimate > threshold {
        if threshold <= 0.0 {
            return Some(1);
        }
        ln_half_alpha / (threshold / estimate).ln()
    } else if estimate < threshold {
        if threshold >= 1.0 {
            return Some(1);
        }
        ln_half_alpha / ((1.0 - threshold) / (1.0 - estimate)).ln()
    } else {
        return None;
    };
    if !g.is_finite() || g > 1e15 {
        return None;
    }
    let mut n = (g.ceil() as u64).max(1);
    // The fail side needs a strict inequality; settle rounding either way.
    let clear = |n: u64| {
        let a = allowance(estimate, n, confidence);
        if estimate > threshold {
            a.lower >= threshold
        } else {
            a.upper < threshold
        }
    };
    while !clear(n) {
        n += 1;
    }
    while n > 1 && clear(n - 1) {
        n -= 1;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: h_G = 1 − 0.025^(1/G) and the binomial chance of
    /// missing it, `scipy.stats.binom.pmf(0, G, h)` = 0.025.
    #[test]
    fn the_share_twenty_inputs_can_miss() {
        // 1 - 0.025**(1/20) = 0.1684335; 1 - 0.025**(1/50) = 0.0711217
        assert!((unseen_share(20, 0.95) - 0.168_433_5).abs() < 1e-6);
        assert!((unseen_share(50, 0.95) - 0.071_121_7).abs() < 1e-6);
        assert_eq!(unseen_share(0, 0.95), 1.0);
        assert!(unseen_share(20, 95.0).is_nan());
        // (1 − h)^G = α/2 by construction.
        let h = unseen_share(20, 0.95);
        assert!(((1.0 - h).powi(20) - 0.025).abs() < 1e-12);
    }

    /// The minorities' terms taken at every k, as the definition reads:
    /// what [`Minority::reach`] must equal, bit for bit.
    fn widen_at_every_k(interval: Interval, means: &[(f64, f64)], confidence: f64) -> Interval {
        let mut v: Vec<(f64, f64)> = means.iter().copied().filter(|&(_, w)| w > 0.0).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let g: f64 = v.iter().map(|&(_, w)| w).sum();
        let total: f64 = v.iter().map(|&(x, w)| x * w).sum();
        let keep = 1.0 - unseen_share(g.round().max(1.0) as u64, confidence);
        let mean = total / g;
        let mut lower = interval.lower.min(keep * mean);
        let mut upper = interval.upper.max(1.0 - keep * (1.0 - mean));
        for (order, end) in [(false, &mut upper), (true, &mut lower)] {
            let (mut k, mut s) = (0.0, 0.0);
            let entries: Vec<_> = if order {
                v.iter().rev().collect()
            } else {
                v.iter().collect()
            };
            for &(x, w) in entries {
                k += w;
                s += x * w;
                if k > g / 2.0 + 1e-9 || k >= g {
                    break;
                }
                let h = least_share(k, g, confidence);
                let f = (1.0 - h) * (total - s) / (g - k) + h * s / k;
                *end = if order { end.min(f) } else { end.max(f) };
            }
        }
        Interval {
            lower: lower.clamp(0.0, 1.0),
            upper: upper.clamp(0.0, 1.0),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Mixtures as users meet them: most inputs near one rate, a few
        /// hard ones, ties (outputs of 10 give rates in tenths), weights.
        #[test]
        fn skipping_blocks_changes_no_end(
            easy in proptest::collection::vec(0u32..=10, 1..120),
            hard in proptest::collection::vec(0u32..=10, 0..8),
            weights in proptest::collection::vec(1u32..4, 128),
            easy_at in 7u32..=10,
            half_width in 0.0f64..0.3,
            confidence in proptest::sample::select(vec![0.8, 0.9, 0.95, 0.99]),
        ) {
            let means: Vec<(f64, f64)> = easy
                .iter()
                .map(|&e| (f64::from(e.min(easy_at) + (10 - easy_at)) / 10.0, 1.0))
                .chain(hard.iter().map(|&h| (f64::from(h) / 40.0, 1.0)))
                .zip(weights.iter().cycle())
                .map(|((x, _), &w)| (x, f64::from(w)))
                .collect();
            let mean = means.iter().map(|&(x, w)| x * w).sum::<f64>()
                / means.iter().map(|&(_, w)| w).sum::<f64>();
            let interval = Interval {
                lower: (mean - half_width).max(0.0),
                upper: (mean + half_width).min(1.0),
            };
            let fast = widen_by(interval, &means, confidence);
            let every = widen_at_every_k(interval, &means, confidence);
            proptest::prop_assert_eq!(fast.lower.to_bits(), every.lower.to_bits());
            proptest::prop_assert_eq!(fast.upper.to_bits(), every.upper.to_bits());
        }
    }

    #[test]
    fn inputs_that_rule_it_out() {
        // 0.99 against 0.95: ln(0.025)/ln(0.95/0.99) = 89.4 → 90 inputs.
        assert_eq!(inputs_to_rule_out(0.99, 0.95, 0.95), Some(90));
        let a = allowance(0.99, 90, 0.95);
        assert!(a.lower >= 0.95);
        assert!(allowance(0.99, 89, 0.95).lower < 0.95);
        // The fail side: 0.80 against 0.90: ln(0.025)/ln(0.1/0.2) = 5.32 → 6.
        assert_eq!(inputs_to_rule_out(0.80, 0.90, 0.95), Some(6));
        assert_eq!(inputs_to_rule_out(0.9, 0.9, 0.95), None);
    }
}
