//! Coverage of the judge-corrected interval by simulation (`bench/judge.sh`,
//! `crates/core/STATISTICS.md`, *Judges with known error rates*).
//!
//! A judge with known sensitivity and specificity judges N × M outputs of a
//! system whose true mean rate is θ (inputs differ: ICC ρ) and a labelled
//! set of n₁ true passes and n₀ true fails. Coverage = share of replicates
//! whose corrected 95 % interval contains θ; the raw (uncorrected) default
//! interval is shown beside it. Usage: `cargo run --release -p probity-core
//! --example calibration -- [replicates] [seed]` (defaults 2000, 1).

use probity_core::judge_sim::SimulatedJudge;
use probity_core::stats::{
    beta_binomial_score, corrected_rate, JudgeAccuracy, RunVariance, Weakness,
};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

struct Tally {
    covered: usize,
    below: usize,
    above: usize,
    width: f64,
    raw_covered: usize,
    refused: usize,
    weak: usize,
}

fn cell(
    judge: SimulatedJudge,
    theta: f64,
    rho: f64,
    n: usize,
    m: u64,
    reps: usize,
    seed: u64,
) -> Tally {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = Tally {
        covered: 0,
        below: 0,
        above: 0,
        width: 0.0,
        raw_covered: 0,
        refused: 0,
        weak: 0,
    };
    for _ in 0..reps {
        let run = judge.run(&mut rng, theta, rho, n, m);
        if beta_binomial_score(&run.judged, 0.95).is_ok_and(|s| s.interval.contains(theta)) {
            t.raw_covered += 1;
        }
        let Ok(acc) = JudgeAccuracy::measure(run.labels, 0.95) else {
            t.refused += 1;
            continue;
        };
        match corrected_rate(&run.judged, &acc, 0.95, RunVariance::Clustered) {
            Ok(c) => {
                if c.interval.contains(theta) {
                    t.covered += 1;
                } else if theta < c.interval.lower {
                    t.below += 1;
                } else {
                    t.above += 1;
                }
                t.width += c.interval.width();
                if matches!(c.weak, Some(Weakness::Chance { .. })) {
                    t.weak += 1;
                }
            }
            Err(_) => t.refused += 1,
        }
    }
    t
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let judges = [
        (0.95, 0.90, 100, 50),
        (0.95, 0.90, 300, 100),
        (0.90, 0.75, 100, 50),
        (0.99, 0.95, 200, 50),
    ];
    let mut grid = Vec::new();
    for &(se, sp, n1, n0) in &judges {
        for &theta in &[0.8, 0.9, 0.97] {
            for &rho in &[0.0, 0.1, 0.3] {
                for &(n, m) in &[(20usize, 10u64), (50, 20)] {
                    grid.push((
                        SimulatedJudge {
                            sensitivity: se,
                            specificity: sp,
                            pass_labels: n1,
                            fail_labels: n0,
                        },
                        theta,
                        rho,
                        n,
                        m,
                    ));
                }
            }
        }
    }
    println!(
        "Coverage of the judge-corrected 95% interval; {reps} replicates per cell, seed {seed}."
    );
    println!("p_i ~ Beta(mean theta, ICC rho); outputs truly pass w.p. p_i; the judge says PASS w.p. Se (true pass) or 1-Sp (true fail);");
    println!("labels: n1 true passes and n0 true fails judged by the same judge. corrected = Rogan-Gladen with the Fieller-type interval;");
    println!("raw = the default clustered interval of the judge's own rate, against the true theta. below/above = truth below/above the interval.");
    println!("  Se   Sp   n1  n0 | theta  rho   NxM  | corrected (below/above)  width | raw      | refused");
    let rows: Vec<_> = grid
        .par_iter()
        .enumerate()
        .map(|(k, &(j, theta, rho, n, m))| {
            (
                k,
                cell(
                    j,
                    theta,
                    rho,
                    n,
                    m,
                    reps,
                    seed.wrapping_mul(1_000_003).wrapping_add(k as u64),
                ),
            )
        })
        .collect();
    let mut worst: f64 = 1.0;
    for (k, t) in rows {
        let (j, theta, rho, n, m) = grid[k];
        let done = (reps - t.refused).max(1) as f64;
        let cov = t.covered as f64 / reps as f64;
        worst = worst.min(cov);
        println!(
            "{:.2} {:.2} {:4} {:3} | {:5} {:4} {:>6} | {:6.1}% ({:4.1}/{:4.1})  {:.4} | {:6.1}% | {:5.1}%{}",
            j.sensitivity, j.specificity, j.pass_labels, j.fail_labels, theta, rho, format!("{n}x{m}"),
            100.0 * cov, 100.0 * t.below as f64 / reps as f64, 100.0 * t.above as f64 / reps as f64,
            t.width / done, 100.0 * t.raw_covered as f64 / reps as f64, 100.0 * t.refused as f64 / reps as f64,
            if t.weak > 0 { format!(" weak(chance) {:.1}%", 100.0 * t.weak as f64 / reps as f64) } else { String::new() },
        );
    }
    println!(
        "least corrected coverage: {:.1}% (a refused replicate counts as not covering)",
        100.0 * worst
    );
}
