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
    ClusterMethod::IccBound,
    ClusterMethod::DesignEffect,
];

/// One cell's tallies, per method: covered, missed low (truth below the
/// interval), missed high, summed width.
struct Cell {
    p: f64,
    rho: f64,
    n: usize,
    m: u64,
    covered: [usize; 3],
    below: [usize; 3],
    above: [usize; 3],
    width: [f64; 3],
    all_pass: usize,
    deff: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let designs: [(usize, u64); 8] = [
        (5, 10),
        (10, 5),
        (10, 20),
        (20, 10),
        (20, 30),
        (50, 5),
        (50, 20),
        (200, 1),
    ];
    let mut cells = Vec::new();
    for (pi, &p) in [0.5, 0.9, 0.97, 0.99].iter().enumerate() {
        for (ri, &rho) in [0.0, 0.1, 0.3].iter().enumerate() {
            for (di, &(n, m)) in designs.iter().enumerate() {
                cells.push((pi * 100 + ri * 10 + di, p, rho, n, m));
            }
        }
    }
    let results: Vec<Cell> = cells
        .par_iter()
        .map(|&(id, p, rho, n, m)| {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003) + id as u64);
            let mut c = Cell {
                p,
                rho,
                n,
                m,
                covered: [0; 3],
                below: [0; 3],
                above: [0; 3],
                width: [0.0; 3],
                all_pass: 0,
                deff: 0.0,
            };
            for _ in 0..reps {
                let (clusters, counts) = replicate(&mut rng, p, rho, n, m);
                if counts.fail == 0 {
                    c.all_pass += 1;
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
                    c.covered[i] += usize::from(r.interval.contains(p));
                    c.below[i] += usize::from(p < r.interval.lower);
                    c.above[i] += usize::from(p > r.interval.upper);
                    c.width[i] += r.interval.width();
                    if i == 0 {
                        c.deff += r.design_effect;
                    }
                }
            }
            c
        })
        .collect();
    println!(
        "Coverage of nominal 95% intervals for the mean pass rate over inputs; {reps} replicates per cell, seed {seed}."
    );
    println!("p_i ~ Beta with mean p and intra-class correlation rho (rho 0: every p_i = p); outputs Bernoulli(p_i).");
    println!("default = beta-binomial restricted-ICC score interval, t(G-1) [ClusterMethod::BetaBinomial]");
    println!("icc-bnd = Wilson at n/deff(rho_U), rho_U the 90% upper likelihood bound on the ICC [ClusterMethod::IccBound]");
    println!(
        "deff    = CR1 design effect at p-hat, Wilson at n/deff [ClusterMethod::DesignEffect]"
    );
    println!(
        "lo/hi miss = share of replicates with the truth below / above the default's interval;"
    );
    println!("width ratio = mean width / mean width of deff; deff est = mean reported design effect of the default; all-pass = replicates with no failure");
    println!();
    println!(
        "{:>5} {:>4} {:>7} | {:>7} {:>7} {:>7} | {:>5} {:>5} | {:>7} {:>6} {:>6} | {:>5} {:>6} {:>7}",
        "p", "rho", "N x M", "default", "icc-bnd", "deff", "lo", "hi", "width", "ratio", "ratio", "deff", "deff", "all-"
    );
    println!(
        "{:>5} {:>4} {:>7} | {:>7} {:>7} {:>7} | {:>5} {:>5} | {:>7} {:>6} {:>6} | {:>5} {:>6} {:>7}",
        "", "", "", "", "", "", "miss", "miss", "default", "dflt", "icc-bnd", "true", "est", "pass"
    );
    let mut bad = Vec::new();
    for c in &results {
        let f = |k: usize| 100.0 * k as f64 / reps as f64;
        let w = |i: usize| c.width[i] / reps as f64;
        let cov = f(c.covered[0]);
        let mut flag = String::new();
        if cov < 93.5 {
            flag.push_str(" <93.5");
        }
        if c.n >= 20 && cov > 97.0 {
            flag.push_str(" >97");
        }
        if f(c.below[0]) > 3.0 || f(c.above[0]) > 3.0 {
            flag.push_str(" miss>3");
        }
        if c.rho <= 0.1 && w(0) > 1.5 * w(2) && c.all_pass * 2 < reps {
            flag.push_str(" w>1.5");
        }
        if !flag.is_empty() {
            bad.push(format!("{} {} {}x{}:{flag}", c.p, c.rho, c.n, c.m));
        }
        println!(
            "{:>5} {:>4} {:>7} | {:>6.1}% {:>6.1}% {:>6.1}% | {:>4.1}% {:>4.1}% | {:>7.4} {:>6.2} {:>6.2} | {:>5.2} {:>6.2} {:>6.1}%{}",
            c.p,
            c.rho,
            format!("{}x{}", c.n, c.m),
            cov,
            f(c.covered[1]),
            f(c.covered[2]),
            f(c.below[0]),
            f(c.above[0]),
            w(0),
            w(0) / w(2),
            w(1) / w(2),
            1.0 + (c.m as f64 - 1.0) * c.rho,
            c.deff / reps as f64,
            f(c.all_pass),
            flag
        );
    }
    println!();
    let min = results
        .iter()
        .map(|c| 100.0 * c.covered[0] as f64 / reps as f64)
        .fold(f64::INFINITY, f64::min);
    println!(
        "default: lowest coverage {min:.1}%; {} of {} cells flagged (coverage < 93.5%, > 97% at N >= 20, a one-sided miss > 3%, or width > 1.5 x deff at rho <= 0.1 outside mostly-all-pass cells)",
        bad.len(),
        results.len()
    );
    for b in bad {
        println!("  {b}");
    }
}
