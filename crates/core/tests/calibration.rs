//! The judge-corrected rate (`stats::calibration`, paper §4, issue 23
//! item 4): reference values from an independent implementation
//! (statsmodels/scipy; the script that made them is at the end of this
//! file: `python3 -m venv /tmp/sm && /tmp/sm/bin/pip install statsmodels
//! scipy && /tmp/sm/bin/python ref.py`), errors as values, the weakness
//! warning, and coverage by simulation with a judge whose error rates are
//! known. Run with `--nocapture` to see the measured coverages.

use probity_core::judge_sim::SimulatedJudge;
use probity_core::stats::{
    beta_binomial_score, corrected_rate, outputs_to_settle, CalibrationError, ClusterSum,
    JudgeAccuracy, LabelCounts, RunVariance, Weakness,
};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// (se, se_lo, se_hi, sp, sp_lo, sp_hi, J, J_lo, J_hi, p̂, θ̂, lo, hi,
/// labels-only lo, labels-only hi, best lower bound)
type Row = (
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
);

const X20: [u64; 20] = [
    10, 10, 9, 10, 8, 10, 10, 7, 10, 9, 10, 10, 10, 6, 10, 9, 10, 10, 8, 10,
];

/// (name, per-input passes, outputs per input, judged_pass, pass_labels,
/// judged_fail, fail_labels, confidence) — the CASES of the script.
fn cases() -> Vec<(&'static str, Vec<ClusterSum>, LabelCounts, f64)> {
    let singles = |pass: u64, n: u64| -> Vec<ClusterSum> {
        (0..n)
            .map(|i| ClusterSum::from_passes(u64::from(i < pass), 1).unwrap())
            .collect()
    };
    let of = |xs: &[u64], m: u64| -> Vec<ClusterSum> {
        xs.iter()
            .map(|&x| ClusterSum::from_passes(x, m).unwrap())
            .collect()
    };
    let labels = |a, n1, b, n0| LabelCounts {
        pass_labels: n1,
        judged_pass: a,
        fail_labels: n0,
        judged_fail: b,
        errors: 0,
        reused: 0,
    };
    vec![
        (
            "one output per input",
            singles(180, 200),
            labels(95, 100, 45, 50),
            0.95,
        ),
        (
            "judged rate above Se (clipped)",
            singles(196, 200),
            labels(94, 100, 40, 50),
            0.95,
        ),
        (
            "20 inputs x 10",
            of(&X20, 10),
            labels(190, 200, 88, 100),
            0.95,
        ),
        (
            "20 inputs x 10, confidence 0.9",
            of(&X20, 10),
            labels(190, 200, 88, 100),
            0.90,
        ),
        (
            "10 inputs x 20, weak judge",
            of(&[20, 18, 19, 20, 15, 20, 17, 20, 19, 12], 20),
            labels(40, 50, 14, 20),
            0.95,
        ),
    ]
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, want {want} (diff {:e})",
        (got - want).abs()
    );
}

#[test]
fn corrected_rate_matches_the_scipy_reference() {
    for ((name, clusters, labels, confidence), r) in cases().into_iter().zip(REFERENCE) {
        let a = JudgeAccuracy::measure(labels, confidence).unwrap();
        // Closed forms: to the last digits.
        let exact = 1e-12;
        close(a.sensitivity.estimate, r.0, exact, &format!("{name}: Se"));
        close(
            a.sensitivity.interval.lower,
            r.1,
            exact,
            &format!("{name}: Se lower (Wilson)"),
        );
        close(
            a.sensitivity.interval.upper,
            r.2,
            exact,
            &format!("{name}: Se upper"),
        );
        close(a.specificity.estimate, r.3, exact, &format!("{name}: Sp"));
        close(
            a.specificity.interval.lower,
            r.4,
            exact,
            &format!("{name}: Sp lower"),
        );
        close(
            a.specificity.interval.upper,
            r.5,
            exact,
            &format!("{name}: Sp upper"),
        );
        close(a.youden, r.6, exact, &format!("{name}: J"));
        close(
            a.youden_interval.lower,
            r.7,
            exact,
            &format!("{name}: J lower (MOVER)"),
        );
        close(
            a.youden_interval.upper,
            r.8,
            exact,
            &format!("{name}: J upper"),
        );
        close(
            a.best_lower_bound(),
            r.15,
            1e-9,
            &format!("{name}: best lower bound"),
        );
        let c = corrected_rate(&clusters, &a, 0.9, RunVariance::Clustered).unwrap();
        close(c.raw, r.9, exact, &format!("{name}: raw rate"));
        close(c.estimate, r.10, exact, &format!("{name}: Rogan–Gladen"));
        // Roots: the clustered cases rest on a restricted ICC that probity
        // finds by golden section to 1e-3 in ln κ, scipy by Brent to 1e-10.
        let tol = 2e-5;
        close(
            c.interval.lower,
            r.11,
            tol,
            &format!("{name}: corrected lower"),
        );
        close(
            c.interval.upper,
            r.12,
            tol,
            &format!("{name}: corrected upper"),
        );
        close(
            c.labels_only.lower,
            r.13,
            1e-9,
            &format!("{name}: labels-only lower"),
        );
        close(
            c.labels_only.upper,
            r.14,
            1e-9,
            &format!("{name}: labels-only upper"),
        );
    }
}

fn counts(a: u64, n1: u64, b: u64, n0: u64) -> LabelCounts {
    LabelCounts {
        pass_labels: n1,
        judged_pass: a,
        fail_labels: n0,
        judged_fail: b,
        errors: 0,
        reused: 0,
    }
}

#[test]
fn a_label_set_without_both_classes_cannot_measure_the_judge() {
    assert_eq!(
        JudgeAccuracy::measure(counts(0, 0, 9, 10), 0.95),
        Err(CalibrationError::NoPassLabels)
    );
    assert_eq!(
        JudgeAccuracy::measure(counts(9, 10, 0, 0), 0.95),
        Err(CalibrationError::NoFailLabels)
    );
    let e = JudgeAccuracy::measure(counts(9, 10, 0, 0), 0.95).unwrap_err();
    assert!(e.to_string().contains("specificity"), "{e}");
    assert!(matches!(
        JudgeAccuracy::measure(counts(11, 10, 5, 10), 0.95),
        Err(CalibrationError::Invalid { .. })
    ));
    assert!(matches!(
        JudgeAccuracy::measure(counts(9, 10, 5, 10), 95.0),
        Err(CalibrationError::Invalid { .. })
    ));
}

#[test]
fn a_judge_no_better_than_chance_gets_no_number() {
    let clusters: Vec<ClusterSum> = (0..20)
        .map(|i| ClusterSum::from_passes(8 + i % 3, 10).unwrap())
        .collect();
    // Se + Sp = 0.6 + 0.4 = 1.
    let a = JudgeAccuracy::measure(counts(30, 50, 20, 50), 0.95).unwrap();
    assert_eq!(a.youden, 0.0);
    match corrected_rate(&clusters, &a, 0.9, RunVariance::Clustered) {
        Err(CalibrationError::NoBetterThanChance {
            sensitivity,
            specificity,
        }) => {
            assert_eq!((sensitivity, specificity), (0.6, 0.4));
        }
        other => panic!("expected NoBetterThanChance, got {other:?}"),
    }
}

#[test]
fn a_judge_too_weak_for_the_minimum_is_flagged_and_outputs_cannot_settle_it() {
    let clusters: Vec<ClusterSum> = (0..50)
        .map(|i| ClusterSum::from_passes(if i % 3 == 0 { 16 } else { 20 }, 20).unwrap())
        .collect();
    // p̂ = 0.932, θ̂ = (0.932 + 0.9 − 1) / 0.86 = 0.967. 50 PASS labels: even a system that always passes cannot be shown
    // above 0.95 (the best lower bound is below it).
    let a = JudgeAccuracy::measure(counts(48, 50, 45, 50), 0.95).unwrap();
    let best = a.best_lower_bound();
    assert!(best < 0.95, "best lower bound {best}");
    let c = corrected_rate(&clusters, &a, 0.95, RunVariance::Clustered).unwrap();
    assert_eq!(
        c.weak,
        Some(Weakness::Threshold {
            best_lower: best,
            minimum: 0.95
        })
    );
    // More outputs cannot settle it: the labels-only interval straddles.
    assert!(c.labels_only.contains(0.95), "{:?}", c.labels_only);
    assert_eq!(
        outputs_to_settle(&clusters, &a, 0.95, RunVariance::Clustered, 1 << 40),
        None
    );
    // Against 0.8 the same judge is strong enough, and more outputs would
    // settle what this run does not (or it is settled already).
    let c = corrected_rate(&clusters, &a, 0.8, RunVariance::Clustered).unwrap();
    assert_eq!(c.weak, None);
    let n = outputs_to_settle(&clusters, &a, 0.8, RunVariance::Clustered, 1 << 40).unwrap();
    assert!(n >= 1000, "{n}");
    // A judge shown no better than chance is flagged so, whatever the minimum.
    let a = JudgeAccuracy::measure(counts(6, 10, 5, 10), 0.95).unwrap();
    let middling: Vec<ClusterSum> = (0..50)
        .map(|i| ClusterSum::from_passes(10 + i % 3, 20).unwrap())
        .collect();
    // A run's rate far beyond what such a judge produces is no number: the
    // labels do not represent the run.
    assert!(matches!(
        corrected_rate(&clusters, &a, 0.5, RunVariance::Clustered),
        Err(CalibrationError::Inconsistent { .. })
    ));
    let c = corrected_rate(&middling, &a, 0.5, RunVariance::Clustered).unwrap();
    assert!(
        matches!(c.weak, Some(Weakness::Chance { .. })),
        "{:?}",
        c.weak
    );
}

#[test]
fn a_perfect_judge_reduces_to_the_rate_it_judges() {
    let clusters: Vec<ClusterSum> = X20
        .iter()
        .map(|&x| ClusterSum::from_passes(x, 10).unwrap())
        .collect();
    let a = JudgeAccuracy::measure(counts(1000, 1000, 1000, 1000), 0.95).unwrap();
    let c = corrected_rate(&clusters, &a, 0.9, RunVariance::Clustered).unwrap();
    let raw = beta_binomial_score(&clusters, 0.95).unwrap();
    assert!((c.estimate - raw.estimate).abs() < 1e-12);
    // The label terms (Agresti–Coull, never 0) widen it only a little.
    assert!(c.interval.lower <= raw.interval.lower + 1e-9);
    assert!(
        c.interval.lower > raw.interval.lower - 0.01,
        "{c:?} {raw:?}"
    );
}

/// Coverage with a judge whose error rates are known (Se 0.95, Sp 0.90,
/// 100 PASS and 50 FAIL labels): the corrected 95 % interval covers the
/// true rate in at least 92.5 % of replicates (nominal minus 2.5 points;
/// the Monte Carlo standard error at 600 replicates is 0.9 points, so the
/// bound sits ~2.8 standard errors under nominal and a correct method
/// fails it with probability < 0.3 %), and the judge's own (raw) interval
/// visibly does not cover it (below 80 %). The full grid is
/// `bench/judge.sh` (crates/core/STATISTICS.md).
#[test]
fn corrected_interval_covers_the_true_rate_with_a_simulated_judge() {
    let judge = SimulatedJudge {
        sensitivity: 0.95,
        specificity: 0.90,
        pass_labels: 100,
        fail_labels: 50,
    };
    for (k, &(theta, rho, inputs, outputs)) in [(0.9, 0.1, 20usize, 10u64), (0.97, 0.3, 30, 20)]
        .iter()
        .enumerate()
    {
        let mut rng = StdRng::seed_from_u64(0xCA11_B000 + k as u64);
        let reps = 600;
        let (mut covered, mut raw_covered, mut estimate_sum) = (0, 0, 0.0);
        for _ in 0..reps {
            let run = judge.run(&mut rng, theta, rho, inputs, outputs);
            let a = JudgeAccuracy::measure(run.labels, 0.95).unwrap();
            let c = corrected_rate(&run.judged, &a, 0.9, RunVariance::Clustered).unwrap();
            covered += usize::from(c.interval.contains(theta));
            estimate_sum += c.estimate;
            let raw = beta_binomial_score(&run.judged, 0.95).unwrap();
            raw_covered += usize::from(raw.interval.contains(theta));
        }
        let cov = covered as f64 / reps as f64;
        let raw = raw_covered as f64 / reps as f64;
        println!(
            "theta {theta}, rho {rho}, {inputs}x{outputs}: corrected covers {:.1}%, raw {:.1}%, mean corrected estimate {:.4}",
            100.0 * cov,
            100.0 * raw,
            estimate_sum / reps as f64
        );
        assert!(cov >= 0.925, "corrected coverage {cov}");
        assert!(raw < 0.8, "raw coverage {raw}");
        // Rogan–Gladen is nearly unbiased (clipping at 1 pulls it down a little).
        assert!((estimate_sum / reps as f64 - theta).abs() < 0.01);
    }
}

/// A calibrated verifier's verdict is the corrected rate's: 30 inputs × 10
/// outputs judged PASS 90 % of the time by a judge with Se 0.95 and Sp
/// 0.70 (on 400 + 200 labels) — raw 0.90 would fail a 0.95 minimum, the
/// corrected rate (0.90 + 0.70 − 1)/0.65 = 0.923 too, but established only
/// by the corrected interval; against 0.80 the raw and corrected verdicts
/// both pass, the corrected one established.
#[test]
fn a_calibrated_check_is_judged_on_its_corrected_rate() {
    use probity_core::stats::{Calibrated, Decision, VerdictMode};
    use probity_core::{
        Aggregate, AnalysisOptions, Cell, CheckInfo, CheckKind, ReliabilityTensor, Strategy,
        Summary,
    };
    let (n, m) = (30, 10);
    let mut t = ReliabilityTensor::new(n, m, 2).unwrap();
    for i in 0..n {
        for j in 0..m {
            let pass = (i * m + j) % 10 != 0;
            t.set(i, j, 0, if pass { Cell::Pass } else { Cell::Fail })
                .unwrap();
            t.set(i, j, 1, if pass { Cell::Pass } else { Cell::Fail })
                .unwrap();
        }
    }
    let info = |name: &str, min: f64| CheckInfo {
        name: name.into(),
        message: String::new(),
        minimum_success_percentage: min,
        weight: 1.0,
        kind: CheckKind::Verifier,
    };
    let opts = AnalysisOptions {
        verdict: VerdictMode::ThreeWay,
        ..AnalysisOptions::default()
    };
    let checks = [info("strict", 0.95), info("lenient", 0.80)];
    let raw = Summary::build(&t, &checks, Strategy::All, Aggregate::Min, &opts);
    let labels = Some(counts(380, 400, 140, 200));
    let s = raw.clone().with_calibration(&t, &[labels, labels]);
    for (k, check) in s.checks.iter().enumerate() {
        let Some(Calibrated::Corrected(c)) = &check.calibration else {
            panic!("check {k} not corrected: {:?}", check.calibration);
        };
        assert_eq!(check.rate, raw.checks[k].rate, "the raw rate stays");
        assert!((c.raw - 0.9).abs() < 1e-12);
        assert!((c.estimate - 0.6 / 0.65).abs() < 1e-9, "{}", c.estimate);
        assert_eq!(
            check.verdict.established,
            !c.interval.contains(check.info.minimum_success_percentage)
        );
    }
    assert_ne!(s.checks[0].verdict.decision, Decision::Pass);
    assert_eq!(s.checks[1].verdict.decision, Decision::Pass);
    assert!(s.checks[1].verdict.established);
    // A check without labels is left alone.
    let s = raw.clone().with_calibration(&t, &[None, labels]);
    assert_eq!(s.checks[0], raw.checks[0]);
    // No FAIL labels: no number, and no established verdict.
    let s = raw.with_calibration(&t, &[None, Some(counts(380, 400, 0, 0))]);
    assert!(matches!(
        s.checks[1].calibration,
        Some(Calibrated::Unusable {
            problem: CalibrationError::NoFailLabels,
            ..
        })
    ));
    assert_eq!(s.checks[1].verdict.decision, Decision::Inconclusive);
    assert!(!s.checks[1].verdict.established);
}

#[rustfmt::skip]
const REFERENCE: [Row; 5] = [
    // one output per input
    (0.95, 0.8882495307680808, 0.9784563208456319, 0.9, 0.7863976856252035, 0.9565242350681096, 0.8500000000000001, 0.720699550342343, 0.9132831047445088, 0.9, 0.9411764705882353, 0.8619185809798827, 1.0, 0.8896442839387787, 0.9974704780892174, 0.9462968129905196),
    // judged rate above Se (clipped)
    (0.94, 0.8752318455410406, 0.9722138760368118, 0.8, 0.6696289406777459, 0.887562499842239, 0.74, 0.5944269017269114, 0.8333001885739636, 0.98, 1.0, 0.9694837678521281, 1.0, 0.9859958167369345, 1.0, 0.9347715174260479),
    // 20 inputs x 10
    (0.95, 0.9104218518612239, 0.972617354399236, 0.88, 0.8018790057328857, 0.9300059356298052, 0.8300000000000001, 0.7424253486711058, 0.8848829510707366, 0.93, 0.9759036144578314, 0.8081535479511819, 1.0, 0.9391402102522918, 1.0, 0.9625273392928024),
    // 20 inputs x 10, confidence 0.9
    (0.95, 0.9181081670817904, 0.9698793883289113, 0.88, 0.8163055403243498, 0.9236739918804378, 0.8300000000000001, 0.7587674709121176, 0.877985494132125, 0.93, 0.9759036144578314, 0.857936960538142, 1.0, 0.9454328892514372, 1.0, 0.9689222751003533),
    // 10 inputs x 20, weak judge
    (0.8, 0.6696289406777459, 0.887562499842239, 0.7, 0.4810271816464765, 0.8545227551323956, 0.5, 0.2451555213733445, 0.6776076384402665, 0.9, 1.0, 0.6392224523031178, 1.0, 0.9820681832131766, 1.0, 0.8067164107157674),
];

// The script that made REFERENCE (scipy 1.17.1, statsmodels 0.15.0):
//
// # Reference values for crates/core/tests/calibration_reference.rs, computed
// # independently of probity with scipy/statsmodels.
// import numpy as np
// from scipy import optimize, special, stats
// from statsmodels.stats.proportion import proportion_confint
//
// def restricted_icc(xs, ms, mu):
//     xs, ms = np.asarray(xs, float), np.asarray(ms, float)
//     if not (0 < mu < 1):
//         return 0.0
//     def ll(lk):
//         k = np.exp(lk); a, b = mu * k, (1 - mu) * k
//         return np.sum(special.betaln(xs + a, ms - xs + b) - special.betaln(a, b))
//     r = optimize.minimize_scalar(lambda t: -ll(t), bounds=(np.log(1e-6), np.log(1e8)), method="bounded", options={"xatol": 1e-10})
//     best_t, best = r.x, -r.fun
//     if ll(np.log(1e-6)) > best:
//         best_t, best = np.log(1e-6), ll(np.log(1e-6))
//     binom = np.sum(xs * np.log(mu) + (ms - xs) * np.log(1 - mu))
//     if binom >= best:
//         return 0.0
//     return 1.0 / (1.0 + np.exp(best_t))
//
// def run_variance(xs, ms, conf):
//     xs, ms = np.asarray(xs, float), np.asarray(ms, float)
//     n, G = ms.sum(), len(ms)
//     single = np.all(ms <= 1)
//     c = stats.norm.ppf(1 - (1 - conf) / 2) if single else stats.t.ppf(1 - (1 - conf) / 2, G - 1)
//     degenerate = np.all(xs == ms) or np.all(xs == 0)
//     def var(mu):
//         rho = 0.0 if single else (1.0 if degenerate else restricted_icc(xs, ms, mu))
//         deff = np.sum(ms * (1 + (ms - 1) * rho)) / n
//         return mu * (1 - mu) * deff / n
//     return xs.sum() / n, c, var
//
// def case(xs, ms, a, n1, b, n0, conf):
//     z = stats.norm.ppf(1 - (1 - conf) / 2)
//     se, sp = a / n1, b / n0
//     se_iv = proportion_confint(a, n1, 1 - conf, method="wilson")
//     sp_iv = proportion_confint(b, n0, 1 - conf, method="wilson")
//     J = se + sp - 1
//     jl = J - np.hypot(se - se_iv[0], sp - sp_iv[0])
//     ju = J + np.hypot(se_iv[1] - se, sp_iv[1] - sp)
//     ac = lambda x, n: ((x + z * z / 2) / (n + z * z)) * (1 - (x + z * z / 2) / (n + z * z)) / (n + z * z)
//     vse, vsp = ac(a, n1), ac(b, n0)
//     p, c, var = run_variance(xs, ms, conf)
//     theta = min(max((p + sp - 1) / J, 0.0), 1.0)
//     def f(t, scale=1.0):
//         pi = se * t + (1 - sp) * (1 - t)
//         return (p - pi) ** 2 - scale * c * c * var(pi) - z * z * (t * t * vse + (1 - t) ** 2 * vsp)
//     assert f(theta) <= 0
//     lo = 0.0 if f(0.0) <= 0 else optimize.brentq(f, 0.0, theta, xtol=1e-14)
//     hi = 1.0 if f(1.0) <= 0 else optimize.brentq(f, theta, 1.0, xtol=1e-14)
//     g = lambda t: f(t, 0.0)
//     llo = 0.0 if g(0.0) <= 0 else optimize.brentq(g, 0.0, theta, xtol=1e-14)
//     lhi = 1.0 if g(1.0) <= 0 else optimize.brentq(g, theta, 1.0, xtol=1e-14)
//     # best lower bound: theta = 1 and p = Se exactly
//     h = lambda t: (se - (se * t + (1 - sp) * (1 - t))) ** 2 - z * z * (t * t * vse + (1 - t) ** 2 * vsp)
//     best = 0.0 if h(0.0) <= 0 else optimize.brentq(h, 0.0, 1.0 - 1e-12, xtol=1e-14)
//     return [se, *se_iv, sp, *sp_iv, J, jl, ju, p, theta, lo, hi, llo, lhi, best]
//
// CASES = [
//     ("one output per input", [1] * 180 + [0] * 20, [1] * 200, 95, 100, 45, 50, 0.95),
//     ("judged rate above Se (clipped)", [1] * 196 + [0] * 4, [1] * 200, 94, 100, 40, 50, 0.95),
//     ("20 inputs x 10", [10,10,9,10,8,10,10,7,10,9,10,10,10,6,10,9,10,10,8,10], [10] * 20, 190, 200, 88, 100, 0.95),
//     ("20 inputs x 10, confidence 0.9", [10,10,9,10,8,10,10,7,10,9,10,10,10,6,10,9,10,10,8,10], [10] * 20, 190, 200, 88, 100, 0.90),
//     ("10 inputs x 20, weak judge", [20,18,19,20,15,20,17,20,19,12], [20] * 10, 40, 50, 14, 20, 0.95),
// ]
// for name, xs, ms, a, n1, b, n0, conf in CASES:
//     v = case(xs, ms, a, n1, b, n0, conf)
//     print(f"    // {name}")
//     print("    (" + ", ".join(f"{float(x)!r}" for x in v) + "),")
