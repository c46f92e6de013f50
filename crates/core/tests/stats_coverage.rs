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
/// what the cluster-robust SE is for). The clustered Wilson interval must
/// cover it 93–97 % of the time; the naive binomial interval on all N×M
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
    assert!((0.93..=0.97).contains(&cc), "clustered coverage {cc}");
    assert!(cn < 0.90, "naive coverage {cn}");
}
