//! Property tests for proportion intervals.

use probity_core::stats::{proportion_interval, IntervalMethod};
use proptest::prelude::*;

fn method() -> impl Strategy<Value = IntervalMethod> {
    prop::sample::select(IntervalMethod::ALL.to_vec())
}

/// (x, n) with integer x ≤ n, or real-valued (effective sizes).
fn counts() -> impl Strategy<Value = (f64, f64)> {
    prop_oneof![
        (1u64..2000).prop_flat_map(|n| (0..=n).prop_map(move |x| (x as f64, n as f64))),
        (0.05f64..2000.0).prop_flat_map(|n| (0.0..=1.0f64).prop_map(move |f| (f * n, n))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// 0 ≤ lower ≤ p̂ ≤ upper ≤ 1 for every method (Wald and Agresti–Coull
    /// through their clamping, Jeffreys through its boundary rule,
    /// Clopper–Pearson by construction).
    #[test]
    fn interval_is_ordered_and_contains_p_hat(
        (x, n) in counts(),
        conf in 0.01f64..0.9999,
        m in method(),
    ) {
        let i = proportion_interval(x, n, conf, m);
        let p = x / n;
        prop_assert!(0.0 <= i.lower, "{:?}", i);
        prop_assert!(i.upper <= 1.0, "{:?}", i);
        // Wilson and Agresti–Coull are centred away from p̂, but still
        // contain it; allow rounding at the last ulp.
        let eps = 1e-12;
        prop_assert!(i.lower <= p + eps && p <= i.upper + eps, "{m:?} x={x} n={n} conf={conf}: {i:?}");
    }

    /// Wilson: at fixed p̂ = k/d the interval narrows as n grows.
    #[test]
    fn wilson_width_shrinks_with_n(
        d in 1u64..20,
        k_frac in 0.0f64..=1.0,
        mult in 1u64..200,
        extra in 1u64..200,
        conf in 0.5f64..0.999,
    ) {
        let k = (k_frac * d as f64).round();
        let (n1, n2) = ((d * mult) as f64, (d * (mult + extra)) as f64);
        let p = k / d as f64;
        let w1 = proportion_interval(p * n1, n1, conf, IntervalMethod::Wilson).width();
        let w2 = proportion_interval(p * n2, n2, conf, IntervalMethod::Wilson).width();
        prop_assert!(w2 <= w1 + 1e-12, "p={p} n1={n1} w1={w1} n2={n2} w2={w2}");
    }

    /// Higher confidence gives a wider-or-equal interval — in fact a
    /// superset — for every method.
    #[test]
    fn higher_confidence_is_wider(
        (x, n) in counts(),
        c1 in 0.01f64..0.9999,
        c2 in 0.01f64..0.9999,
        m in method(),
    ) {
        let (lo, hi) = if c1 <= c2 { (c1, c2) } else { (c2, c1) };
        let a = proportion_interval(x, n, lo, m);
        let b = proportion_interval(x, n, hi, m);
        let eps = 1e-12;
        prop_assert!(b.width() + eps >= a.width(), "{m:?} x={x} n={n}: {a:?} at {lo} vs {b:?} at {hi}");
        prop_assert!(b.lower <= a.lower + eps && a.upper <= b.upper + eps, "{m:?} x={x} n={n}: {a:?} vs {b:?}");
    }

    /// Never a panic, whatever the input; always a sub-interval of [0, 1].
    #[test]
    fn total_on_garbage(
        x in prop::num::f64::ANY,
        n in prop::num::f64::ANY,
        conf in prop::num::f64::ANY,
        m in method(),
    ) {
        let i = proportion_interval(x, n, conf, m);
        prop_assert!(0.0 <= i.lower && i.lower <= i.upper && i.upper <= 1.0, "{i:?}");
    }
}
