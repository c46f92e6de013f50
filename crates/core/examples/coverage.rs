//! Coverage of the clustered 95 % interval by simulation (bench/coverage.sh).
//!
//! Inputs differ in difficulty: p_i ~ Beta(a, b) with mean p and intra-class
//! correlation ρ (a + b = (1 − ρ)/ρ), outputs Bernoulli(p_i). The target is
//! the mean over inputs, p. Coverage = share of replicates whose interval
//! contains p. Usage: `cargo run --release -p probity-core --example
//! coverage -- [replicates] [seed]` (defaults 10000, 1).

#[path = "../tests/sim/mod.rs"]
mod sim;

use probity_core::stats::{ClusterMethod, IntervalMethod, RateEstimate};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;
use sim::replicate;

const METHODS: [ClusterMethod; 3] = [
    ClusterMethod::BetaBinomial,
    ClusterMethod::DesignEffect,
    ClusterMethod::Binomial,
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let designs: [(usize, u64); 7] = [
        (5, 10),
        (10, 5),
        (10, 20),
        (20, 10),
        (50, 5),
        (50, 20),
        (200, 1),
    ];
    let mut cells = Vec::new();
    for (pi, &p) in [0.5, 0.9, 0.97, 0.99].iter().enumerate() {
        for (ri, &rho) in [0.1, 0.3].iter().enumerate() {
            for (di, &(n, m)) in designs.iter().enumerate() {
                cells.push((pi * 100 + ri * 10 + di, p, rho, n, m));
            }
        }
    }
    let results: Vec<_> = cells
        .par_iter()
        .map(|&(id, p, rho, n, m)| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003) + id as u64);
            let mut covered = [0usize; 3];
            let mut width = [0.0f64; 3];
            let mut all_pass = 0usize;
            let mut deff = 0.0;
            for _ in 0..reps {
                let (clusters, counts) = replicate(&mut rng, p, rho, n, m);
                if counts.fail == 0 {
                    all_pass += 1;
                }
                for (i, &cm) in METHODS.iter().enumerate() {
                    let r = RateEstimate::try_clustered(
                        &clusters,
                        counts,
                        0.95,
                        IntervalMethod::Wilson,
                        cm,
                    )
                    .expect("valid simulated input");
                    covered[i] += usize::from(r.interval.contains(p));
                    width[i] += r.interval.width();
                    if i == 0 {
                        deff += r.design_effect;
                    }
                }
            }
            (p, rho, n, m, covered, width, all_pass, deff)
        })
        .collect();
    println!(
        "Coverage of nominal 95% intervals for the mean pass rate over inputs; {reps} replicates per cell, seed {seed}."
    );
    println!("p_i ~ Beta with mean p and intra-class correlation rho; outputs Bernoulli(p_i).");
    println!("default = beta-binomial restricted-ICC score interval, t(G-1) [ClusterMethod::BetaBinomial]");
    println!(
        "old     = CR1 design effect at p-hat, Wilson at n/deff [ClusterMethod::DesignEffect]"
    );
    println!("naive   = Wilson on all N*M outputs [ClusterMethod::Binomial]");
    println!("deff    = true design effect 1+(M-1)rho; est = mean estimated (default); all-pass = share of replicates with no failure");
    println!();
    println!(
        "{:>5} {:>4} {:>8} | {:>8} {:>8} {:>8} | {:>7} {:>7} | {:>5} {:>6} {:>8}",
        "p", "rho", "N x M", "default", "old", "naive", "width", "width", "deff", "est", "all-pass"
    );
    println!(
        "{:>5} {:>4} {:>8} | {:>8} {:>8} {:>8} | {:>7} {:>7} | {:>5} {:>6} {:>8}",
        "", "", "", "", "", "", "default", "old", "true", "", ""
    );
    let mut outside = 0;
    let mut below = 0;
    for (p, rho, n, m, covered, width, all_pass, deff) in &results {
        let f = |c: usize| 100.0 * c as f64 / reps as f64;
        let cov = f(covered[0]);
        let flag = if cov < 93.5 {
            below += 1;
            outside += 1;
            " <93.5"
        } else if cov > 96.5 {
            outside += 1;
            " >96.5"
        } else {
            ""
        };
        println!(
            "{:>5} {:>4} {:>8} | {:>7.1}% {:>7.1}% {:>7.1}% | {:>7.4} {:>7.4} | {:>5.2} {:>6.2} {:>7.1}%{}",
            p,
            rho,
            format!("{n}x{m}"),
            cov,
            f(covered[1]),
            f(covered[2]),
            width[0] / reps as f64,
            width[1] / reps as f64,
            1.0 + (*m as f64 - 1.0) * rho,
            deff / reps as f64,
            f(*all_pass),
            flag
        );
    }
    println!();
    println!(
        "default: {} of {} cells outside [93.5%, 96.5%], {} below 93.5%",
        outside,
        results.len(),
        below
    );
}
