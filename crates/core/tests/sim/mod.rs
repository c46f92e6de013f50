//! The simulation both the coverage test (tests/stats_edges.rs) and the
//! full coverage grid (examples/coverage.rs, bench/coverage.sh) draw from:
//! inputs differ in difficulty, p_i ~ Beta(a, b) with mean p and intra-class
//! correlation ρ (a + b = (1 − ρ)/ρ), outputs Bernoulli(p_i); the target is
//! the mean over inputs, p.
//!
//! The Beta draw is written here rather than taken from `rand_distr`: it
//! works in logs, so the tiny shapes of ρ near 1 at p = 0.99 do not
//! underflow to 0 or 1, and the published coverage table stays reproducible
//! from these exact streams.

use probity_core::stats::{ClusterSum, Counts};
use rand::rngs::StdRng;
use rand::Rng;

/// ln of a Gamma(shape, 1) draw (Marsaglia–Tsang; shape < 1 boosted by
/// U^(1/shape), kept in logs so tiny shapes do not underflow).
fn ln_gamma_draw(rng: &mut StdRng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
        return ln_gamma_draw(rng, shape + 1.0) + u.ln() / shape;
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (x, v) = loop {
            // standard normal by Box–Muller
            let u1: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
            let u2: f64 = rng.gen();
            let x = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            let v = 1.0 + c * x;
            if v > 0.0 {
                break (x, v * v * v);
            }
        };
        let u: f64 = rng.gen();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return (d * v).ln();
        }
    }
}

/// p_i ~ Beta(a, b).
pub fn beta_draw(rng: &mut StdRng, a: f64, b: f64) -> f64 {
    let la = ln_gamma_draw(rng, a);
    let lb = ln_gamma_draw(rng, b);
    1.0 / (1.0 + (lb - la).exp())
}

pub fn replicate(
    rng: &mut StdRng,
    p: f64,
    rho: f64,
    n: usize,
    m: u64,
) -> (Vec<ClusterSum>, Counts) {
    let k = (1.0 - rho) / rho;
    let mut clusters = Vec::with_capacity(n);
    let mut counts = Counts::default();
    for _ in 0..n {
        let pi = beta_draw(rng, p * k, (1.0 - p) * k);
        let x = (0..m).filter(|_| rng.gen::<f64>() < pi).count() as u64;
        clusters.push(ClusterSum::from_passes(x, m));
        counts.pass += x;
        counts.fail += m - x;
    }
    (clusters, counts)
}
