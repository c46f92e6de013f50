//! The simulation both the coverage test (tests/stats_edges.rs) and the
//! full coverage grid (examples/coverage.rs, bench/coverage.sh) draw from:
//! the core's [`probity_core::simulate`] (inputs differ in difficulty,
//! p_i ~ Beta(a, b) with mean p and intra-class correlation ρ, outputs
//! Bernoulli(p_i); the target is the mean over inputs, p).

#![allow(dead_code)]

use probity_core::stats::{ClusterSum, Counts};
use rand::rngs::StdRng;
use rand::Rng;

pub use probity_core::simulate::beta_draw;

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
        let pi = if rho == 0.0 {
            p
        } else {
            beta_draw(rng, p * k, (1.0 - p) * k)
        };
        let x = (0..m).filter(|_| rng.gen::<f64>() < pi).count() as u64;
        clusters.push(ClusterSum::from_passes(x, m).unwrap());
        counts.pass += x;
        counts.fail += m - x;
    }
    (clusters, counts)
}
