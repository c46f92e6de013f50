//! Coverage by simulation with known truth (fixed seeds, deterministic).
//! Run with `--nocapture` to see the measured coverages.

use probity_core::stats::{
    proportion_interval, ClusterSum, Counts, ErrorPolicy, IntervalMethod, RateEstimate,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// (a) Plain binomial: the Wilson 95 % interval covers the true p in
/// 93–97 % of experiments.
#[test]
fn wilson_binomial_coverage() {
    let mut rng = StdRng::seed_from_u64(0x5EED_0001);
    let (p, n, experiments) = (0.9, 200u64, 4000);
    let mut covered = 0;
    for _ in 0..experiments {
        let x = (0..n).filter(|_| rng.gen::<f64>() < p).count() as u64;
        let counts = Counts {
            pass: x,
            fail: n - x,
            error: 0,
            missing: 0,
        };
        let r =
            RateEstimate::binomial(counts, ErrorPolicy::AsFailure, 0.95, IntervalMethod::Wilson);
        if r.interval.contains(p) {
            covered += 1;
        }
    }
    let cov = covered as f64 / experiments as f64;
    println!("Wilson 95% binomial coverage (p = {p}, n = {n}): {cov:.4}");
    assert!((0.93..=0.97).contains(&cov), "coverage {cov}");
}

/// (b) Clustered: N = 50 inputs whose true rates differ, drawn each
/// experiment from Beta(6, 1) (mean 6/7 ≈ 0.857, sd ≈ 0.124, drawn as U^(1/6)
/// since Beta(6,1) has CDF x⁶), M = 20 outputs each. The target is the
/// population mean rate 6/7 (inputs are a sample from a population, which is
/// what the cluster-robust SE is for). The clustered interval must
/// cover it 93–99 % of the time; the naive binomial interval on all N×M
/// outputs, which ignores the correlation (design effect ≈ 1 + 19·0.125 ≈ 3.4),
/// markedly less.
#[test]
fn clustered_coverage_beats_naive() {
    let mut rng = StdRng::seed_from_u64(0x5EED_0002);
    let (inputs, outputs, experiments) = (50usize, 20u64, 2000);
    let truth = 6.0 / 7.0;
    let (mut cov_cluster, mut cov_naive) = (0, 0);
    let mut deff_sum = 0.0;
    for _ in 0..experiments {
        let mut clusters = Vec::with_capacity(inputs);
        let mut counts = Counts::default();
        for _ in 0..inputs {
            let p_i = rng.gen::<f64>().powf(1.0 / 6.0);
            let x = (0..outputs).filter(|_| rng.gen::<f64>() < p_i).count() as u64;
            clusters.push(ClusterSum::from_passes(x, outputs).unwrap());
            counts.pass += x;
            counts.fail += outputs - x;
        }
        let c = RateEstimate::clustered(&clusters, counts, 0.95, IntervalMethod::Wilson).unwrap();
        deff_sum += c.design_effect;
        if c.interval.contains(truth) {
            cov_cluster += 1;
        }
        let naive = proportion_interval(
            counts.pass as f64,
            (counts.pass + counts.fail) as f64,
            0.95,
            IntervalMethod::Wilson,
        );
        if naive.contains(truth) {
            cov_naive += 1;
        }
    }
    let cc = cov_cluster as f64 / experiments as f64;
    let cn = cov_naive as f64 / experiments as f64;
    println!(
        "clustered Wilson 95% coverage: {cc:.4}; naive binomial: {cn:.4}; mean design effect {:.3}",
        deff_sum / experiments as f64
    );
    // At most 99 %, not 97 % as before issue 35: the default now reaches
    // the allowance for a minority of inputs 50 inputs may have missed
    // (h_50 = 7.1 %; `stats::unseen`), which the Beta model's interval,
    // 93–97 % here, does not — and which no sample can rule out.
    assert!((0.93..=0.99).contains(&cc), "clustered coverage {cc}");
    assert!(cn < 0.90, "naive coverage {cn}");
}

/// Issue 35 item 1: when most inputs are easy and a few are hard (a
/// two-point mixture, not a Beta), a sample without a hard input looks
/// unclustered and the Beta model's interval lies above the true mean. The
/// issue's three cases, 300 replicates each (fixed seeds): the default must
/// not establish a pass for a check whose minimum is the true mean in more
/// than 5 % of runs (target 3 %; a 3 % miss exceeds 5 % in 300 runs with
/// probability < 5 %) and must cover at least 91 % (target 93.5 %); the
/// model's interval alone (`betabin::profile_likelihood`, the default
/// before) misses low in over 15 % of runs in the first (audit: 23.0 %).
/// The full grid: bench/mixture.sh.
#[test]
fn a_hard_minority_the_sample_missed_is_allowed_for() {
    use probity_core::stats::betabin::profile_likelihood;
    let reps = 300;
    for (case, &(h, q, e, n, m)) in [
        (0.05, 0.5, 0.995, 20usize, 30u64),
        (0.10, 0.7, 0.99, 20, 30),
        (0.10, 0.7, 0.99, 50, 20),
    ]
    .iter()
    .enumerate()
    {
        let mu = h * q + (1.0 - h) * e;
        let mut rng = StdRng::seed_from_u64(0x35_0000 + case as u64);
        let (mut covered, mut low, mut model_low) = (0, 0, 0);
        for _ in 0..reps {
            let mut clusters = Vec::with_capacity(n);
            let mut counts = Counts::default();
            for _ in 0..n {
                let p_i = if rng.gen::<f64>() < h { q } else { e };
                let x = (0..m).filter(|_| rng.gen::<f64>() < p_i).count() as u64;
                clusters.push(ClusterSum::from_passes(x, m).unwrap());
                counts.pass += x;
                counts.fail += m - x;
            }
            let r =
                RateEstimate::clustered(&clusters, counts, 0.95, IntervalMethod::Wilson).unwrap();
            covered += usize::from(r.interval.contains(mu));
            low += usize::from(r.interval.lower > mu);
            let model = profile_likelihood(&clusters, 0.95).unwrap().interval;
            model_low += usize::from(model.lower > mu);
        }
        let f = |k: usize| k as f64 / reps as f64;
        println!(
            "{h} at {q}, rest at {e}, {n}x{m} (mu {mu:.4}): cover {:.3}, wrong pass {:.3}; model alone wrong pass {:.3}",
            f(covered),
            f(low),
            f(model_low)
        );
        assert!(f(low) <= 0.05, "case {case}: {low} of {reps} above mu");
        assert!(f(covered) >= 0.91, "case {case}: coverage {}", f(covered));
        if case == 0 {
            assert!(f(model_low) > 0.15, "model alone {model_low} of {reps}");
        }
    }
}
