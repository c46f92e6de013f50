//! judge(): decisions, the `established` flag and `samples_needed`.

use probity_core::stats::{
    judge, proportion_interval, Counts, Decision, IntervalMethod, RateEstimate, VerdictMode,
};

const CONF: f64 = 0.95;

/// A hand-built rate: `x` of `n` with design effect `deff`, interval of
/// `method` at the effective size n/deff (as RateEstimate::clustered does).
fn rate(x: u64, n: u64, deff: f64, method: IntervalMethod) -> RateEstimate {
    let p = if n == 0 { 0.0 } else { x as f64 / n as f64 };
    let n_eff = n as f64 / deff;
    RateEstimate {
        estimate: p,
        counts: Counts {
            pass: x,
            fail: n - x,
            error: 0,
            missing: 0,
        },
        n,
        inputs: n,
        scope: probity_core::stats::Scope::Population,
        design_effect: deff,
        effective_n: n_eff,
        confidence: CONF,
        interval: proportion_interval(p * n_eff, n_eff, CONF, method),
    }
}

fn wilson(x: u64, n: u64) -> RateEstimate {
    rate(x, n, 1.0, IntervalMethod::Wilson)
}

/// Does the interval around p̂ at raw size `m` exclude the threshold on p̂'s
/// side? Recomputed here independently of judge().
fn excludes(r: &RateEstimate, thr: f64, m: u64, method: IntervalMethod) -> bool {
    let n_eff = m as f64 / r.design_effect;
    let i = proportion_interval(r.estimate * n_eff, n_eff, r.confidence, method);
    if r.estimate > thr {
        i.lower >= thr
    } else {
        i.upper < thr
    }
}

#[test]
fn point_mode() {
    let v = judge(
        &wilson(900, 1000),
        0.8,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!(
        (v.decision, v.established, v.samples_needed),
        (Decision::Pass, true, Some(1000))
    );
    assert_eq!(v.additional_samples(1000), Some(0));

    // 17/20 = 0.85 ≥ 0.8 passes (the paper's rule) but the interval straddles.
    let v = judge(
        &wilson(17, 20),
        0.8,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Pass, false));
    assert!(v.samples_needed.unwrap() > 20);

    let v = judge(
        &wilson(14, 20),
        0.8,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Fail, false));

    let v = judge(
        &wilson(500, 1000),
        0.8,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!(
        (v.decision, v.established, v.samples_needed),
        (Decision::Fail, true, Some(1000))
    );

    // Exactly at the threshold: passes, can never be established.
    let v = judge(
        &wilson(16, 20),
        0.8,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!(
        (v.decision, v.established, v.samples_needed),
        (Decision::Pass, false, None)
    );
}

#[test]
fn lower_bound_mode() {
    let v = judge(
        &wilson(17, 20),
        0.8,
        VerdictMode::LowerBound,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Fail, false));
    // p̂ is above the threshold, so more samples would establish a pass.
    let m = v.samples_needed.unwrap();
    assert!(excludes(&wilson(17, 20), 0.8, m, IntervalMethod::Wilson));

    let v = judge(
        &wilson(950, 1000),
        0.8,
        VerdictMode::LowerBound,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Pass, true));

    let v = judge(
        &wilson(600, 1000),
        0.8,
        VerdictMode::LowerBound,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Fail, true));
}

#[test]
fn three_way_mode() {
    let m = VerdictMode::ThreeWay;
    let w = IntervalMethod::Wilson;
    let v = judge(&wilson(950, 1000), 0.8, m, w);
    assert_eq!((v.decision, v.established), (Decision::Pass, true));
    let v = judge(&wilson(600, 1000), 0.8, m, w);
    assert_eq!((v.decision, v.established), (Decision::Fail, true));
    let v = judge(&wilson(17, 20), 0.8, m, w);
    assert_eq!((v.decision, v.established), (Decision::Inconclusive, false));
    assert!(v.samples_needed.is_some());
    let v = judge(&wilson(14, 20), 0.8, m, w);
    assert_eq!((v.decision, v.established), (Decision::Inconclusive, false));
}

#[test]
fn nothing_observed_and_invalid_threshold() {
    // Nothing judged is no verdict in every mode, never a failure.
    let empty = wilson(0, 0);
    for mode in [
        VerdictMode::Point,
        VerdictMode::LowerBound,
        VerdictMode::ThreeWay,
    ] {
        let v = judge(&empty, 0.8, mode, IntervalMethod::Wilson);
        assert_eq!(
            (v.decision, v.established, v.samples_needed, v.why_not),
            (
                Decision::Inconclusive,
                false,
                None,
                Some(probity_core::stats::NotEstablished::NothingObserved)
            ),
            "{mode:?}"
        );
    }
    let v = judge(
        &wilson(17, 20),
        f64::NAN,
        VerdictMode::Point,
        IntervalMethod::Wilson,
    );
    assert_eq!(
        (v.decision, v.established, v.samples_needed),
        (Decision::Inconclusive, false, None)
    );
    // Threshold 0 is always met (lower ≥ 0), threshold above 1 never.
    let v = judge(
        &wilson(0, 20),
        0.0,
        VerdictMode::ThreeWay,
        IntervalMethod::Wilson,
    );
    assert_eq!((v.decision, v.established), (Decision::Pass, true));
    // A threshold outside [0, 1] (95 for 95 %, −0.5) is bad input: never
    // an established verdict, and an error from try_judge.
    for thr in [1.5, 95.0, -0.5] {
        let v = judge(
            &wilson(20, 20),
            thr,
            VerdictMode::ThreeWay,
            IntervalMethod::Wilson,
        );
        assert_eq!((v.decision, v.established), (Decision::Inconclusive, false));
        assert!(probity_core::stats::decision::try_judge(
            &wilson(20, 20),
            thr,
            VerdictMode::ThreeWay,
            IntervalMethod::Wilson
        )
        .is_err());
    }
}

/// samples_needed really establishes: at N the recomputed interval excludes
/// the threshold, at N − 1 it does not — for every method, both sides of the
/// threshold, with and without a design effect.
#[test]
fn samples_needed_is_minimal_and_sufficient() {
    let cases = [
        (17u64, 20u64, 1.0, 0.8),
        (14, 20, 1.0, 0.8),
        (93, 100, 1.0, 0.9),
        (88, 100, 2.5, 0.9),
        (45, 50, 3.0, 0.95),
        (1, 10, 1.0, 0.05),
    ];
    for method in IntervalMethod::ALL {
        for &(x, n, deff, thr) in &cases {
            let r = rate(x, n, deff, method);
            let v = judge(&r, thr, VerdictMode::ThreeWay, method);
            if v.established {
                assert_eq!(v.samples_needed, Some(n));
                continue;
            }
            let m = v.samples_needed.expect("reachable");
            assert!(m > n, "{method:?} {x}/{n}: {m}");
            assert!(
                excludes(&r, thr, m, method),
                "{method:?} {x}/{n} deff {deff}: N = {m} does not establish"
            );
            assert!(
                !excludes(&r, thr, m - 1, method),
                "{method:?} {x}/{n} deff {deff}: N − 1 = {} already establishes",
                m - 1
            );
            assert_eq!(v.additional_samples(n), Some(m - n));
        }
    }
}

/// A larger design effect needs proportionally more raw samples.
#[test]
fn design_effect_scales_samples_needed() {
    let w = IntervalMethod::Wald;
    let a = judge(&rate(17, 20, 1.0, w), 0.8, VerdictMode::Point, w)
        .samples_needed
        .unwrap();
    let b = judge(&rate(17, 20, 3.0, w), 0.8, VerdictMode::Point, w)
        .samples_needed
        .unwrap();
    // Wald: N = z² p(1−p) deff / (p − thr)² → 3× (± rounding).
    assert!((b as f64 / a as f64 - 3.0).abs() < 0.01, "{a} {b}");
    let z2 = 1.959963984540054f64.powi(2);
    let expect = (z2 * 0.85 * 0.15 / 0.05f64.powi(2)).ceil() as u64;
    assert!(a.abs_diff(expect) <= 1, "{a} vs {expect}");
}

/// Every verdict that is not established carries why and what would settle
/// it (`NotEstablished`); an established one carries none.
#[test]
fn not_established_carries_its_reason() {
    use probity_core::stats::{ClusterMethod, ClusterSum, NotEstablished};
    let j = |r: &RateEstimate, t: f64| judge(r, t, VerdictMode::Point, IntervalMethod::Wilson);
    // Established: no reason.
    assert_eq!(j(&wilson(990, 1000), 0.9).why_not, None);
    // The interval straddles the minimum: the samples that would settle it.
    let v = j(&wilson(93, 100), 0.9);
    assert!(!v.established);
    match v.why_not {
        Some(NotEstablished::Straddles {
            lower,
            upper,
            samples_needed,
        }) => {
            assert!(lower < 0.9 && upper >= 0.9);
            assert_eq!(samples_needed, v.samples_needed);
            assert!(samples_needed.unwrap() > 100);
        }
        other => panic!("{other:?}"),
    }
    // On the minimum: straddles, and no size settles it.
    let v = j(&wilson(90, 100), 0.9);
    assert!(matches!(
        v.why_not,
        Some(NotEstablished::Straddles {
            samples_needed: None,
            ..
        })
    ));
    // Two inputs, every output failing: about these inputs only; 5 inputs
    // would be needed (the 0% [0, 16.1] against 95%).
    let clusters = [ClusterSum::from_passes(0, 10).unwrap(); 2];
    let counts = Counts {
        fail: 20,
        ..Counts::default()
    };
    let r = RateEstimate::try_clustered(
        &clusters,
        counts,
        CONF,
        IntervalMethod::Wilson,
        ClusterMethod::BetaBinomial,
    )
    .unwrap();
    assert_eq!(
        j(&r, 0.95).why_not,
        Some(NotEstablished::TooFewInputs {
            inputs: 2,
            inputs_needed: 5
        })
    );
    // Unclustered (binomial) rates over many inputs.
    let r = RateEstimate::try_clustered(
        &[ClusterSum::from_passes(5, 10).unwrap(); 8],
        Counts {
            pass: 40,
            fail: 40,
            ..Counts::default()
        },
        CONF,
        IntervalMethod::Wilson,
        ClusterMethod::Binomial,
    )
    .unwrap();
    assert_eq!(
        j(&r, 0.95).why_not,
        Some(NotEstablished::Unclustered { inputs: 8 })
    );
    // Nothing observed; an invalid minimum.
    assert_eq!(
        j(&wilson(0, 0), 0.9).why_not,
        Some(NotEstablished::NothingObserved)
    );
    assert_eq!(
        j(&wilson(5, 10), 95.0).why_not,
        Some(NotEstablished::InvalidThreshold)
    );
}

/// Issue 35 item 1: issue 23's 20 × 30 with 5 failures on 5 inputs was an
/// established pass against 95 % ([97.8, 99.7]), but 20 inputs miss a
/// minority of up to h = 1 − 0.025^(1/20) = 16.84 % of inputs with
/// probability 2.5 % (scipy `binom.pmf(0, 20, h)` = 0.025): if its inputs
/// failed every output the mean would be (1 − h)·99.17 % = 82.5 %. The
/// verdict says so, names the inputs that would rule it out
/// (ln 0.025 / ln(0.95 / 0.99167) = 85.9 → 86 inputs, 2,580 samples at 30
/// outputs each) and gives the verdict about these 20 inputs, which needs
/// no model of the population: Clopper–Pearson on 595 of 600
/// (scipy `beta.ppf(0.025, 595, 6)` = 0.980660650, `beta.isf(0.025, 596,
/// 5)` = 0.997288812), established. The same pattern over 100 inputs is
/// established. Mirrored (5 passes of 600 against a 5 % minimum) the
/// failure is not established about the population either.
#[test]
fn an_unseen_minority_keeps_a_pass_from_being_established() {
    use probity_core::stats::{ClusterMethod, ClusterSum, NotEstablished};
    let pattern = |inputs: usize, flip: bool| {
        let mut c = Vec::new();
        let mut counts = Counts::default();
        for i in 0..inputs {
            let x = if i % 4 == 0 { 29 } else { 30 };
            let x = if flip { 30 - x } else { x };
            c.push(ClusterSum::from_passes(x, 30).unwrap());
            counts.pass += x;
            counts.fail += 30 - x;
        }
        let r = RateEstimate::try_clustered(
            &c,
            counts,
            CONF,
            IntervalMethod::Wilson,
            ClusterMethod::default(),
        )
        .unwrap();
        (r, c)
    };
    let (r, clusters) = pattern(20, false);
    let model = probity_core::stats::betabin::profile_likelihood(&clusters, CONF).unwrap();
    assert!(model.interval.lower >= 0.95, "{model:?}");
    let keep: f64 = 1.0 - 0.168_433_471;
    // Nor above the all-pass sample's lower end, Wilson-t on the 20 inputs
    // (t_{0.975, 19} = 2.093024054408263, scipy.stats.t.ppf), so that one
    // more failure never raises it (issue 35 item 5).
    let t = 2.093_024_054_408_263_f64;
    let all_pass = 20.0 / (20.0 + t * t);
    assert!(
        (r.interval.lower - (keep * 595.0 / 600.0).min(all_pass)).abs() < 1e-6,
        "{r:?}"
    );
    let v = judge(&r, 0.95, VerdictMode::Point, IntervalMethod::Wilson);
    assert_eq!(v.decision, Decision::Pass);
    assert!(!v.established);
    match v.why_not {
        Some(NotEstablished::UnseenMinority {
            inputs: 20,
            share,
            failing: true,
            inputs_needed: Some(86),
            these_inputs,
        }) => {
            assert!((share - 0.168_433_471).abs() < 1e-8, "{share}");
            assert!((these_inputs.lower - 0.980_660_650).abs() < 1e-6);
            assert!((these_inputs.upper - 0.997_288_812).abs() < 1e-6);
            assert!(these_inputs.established);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(v.samples_needed, Some(86 * 30));
    let (big, _) = pattern(100, false);
    let v = judge(&big, 0.95, VerdictMode::ThreeWay, IntervalMethod::Wilson);
    assert!(v.established && v.decision == Decision::Pass, "{big:?}");
    let (low, _) = pattern(20, true);
    assert!((low.interval.upper - (1.0 - (keep * 595.0 / 600.0).min(all_pass))).abs() < 1e-6);
    let v = judge(&low, 0.05, VerdictMode::ThreeWay, IntervalMethod::Wilson);
    assert_eq!(v.decision, Decision::Inconclusive);
    match v.why_not {
        Some(NotEstablished::UnseenMinority {
            failing: false,
            these_inputs,
            ..
        }) => assert!(these_inputs.established && these_inputs.upper < 0.05),
        other => panic!("{other:?}"),
    }
}
