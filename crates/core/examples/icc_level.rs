//! Calibration of the ICC bound's level (STATISTICS.md): coverage and width
//! of `icc_bound_score_at` for several γ on the hardest cells.
#[path = "../tests/sim/mod.rs"]
mod sim;
use probity_core::stats::betabin::icc_bound_score_at;
use probity_core::stats::{ClusterMethod, IntervalMethod, RateEstimate};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let gammas: Vec<f64> = args
        .get(2)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or(vec![0.5, 0.3, 0.2, 0.1]);
    let cells = [
        (0.97, 0.3, 10, 20),
        (0.97, 0.3, 20, 10),
        (0.97, 0.3, 20, 30),
        (0.97, 0.3, 5, 10),
        (0.99, 0.3, 10, 5),
        (0.99, 0.3, 20, 30),
        (0.9, 0.3, 10, 20),
        (0.5, 0.3, 10, 20),
        (0.99, 0.1, 20, 10),
        (0.99, 0.1, 20, 30),
        (0.97, 0.1, 20, 30),
        (0.9, 0.1, 20, 10),
        (0.99, 0.0, 20, 30),
        (0.5, 0.0, 20, 10),
        (0.5, 0.1, 50, 20),
    ];
    let out: Vec<String> = cells
        .par_iter()
        .enumerate()
        .map(|(id, &(p, rho, n, m))| {
            let mut rng = StdRng::seed_from_u64(id as u64 + 5);
            let k = gammas.len();
            let (mut cov, mut lo, mut hi, mut w) =
                (vec![0; k], vec![0; k], vec![0; k], vec![0.0; k]);
            let mut wd = 0.0;
            for _ in 0..reps {
                let (c, counts) = sim::replicate(&mut rng, p, rho, n, m);
                for (i, &g) in gammas.iter().enumerate() {
                    let s = icc_bound_score_at(&c, 0.95, g).unwrap();
                    cov[i] += usize::from(s.interval.contains(p));
                    lo[i] += usize::from(p < s.interval.lower);
                    hi[i] += usize::from(p > s.interval.upper);
                    w[i] += s.interval.width();
                }
                wd += RateEstimate::try_clustered(
                    &c,
                    counts,
                    0.95,
                    IntervalMethod::Wilson,
                    ClusterMethod::DesignEffect,
                )
                .unwrap()
                .interval
                .width();
            }
            let f = |x: usize| 100.0 * x as f64 / reps as f64;
            let mut line = format!("{p:>5} {rho:>4} {:>6} |", format!("{n}x{m}"));
            for i in 0..k {
                line += &format!(
                    " {:5.1}% ({:3.1}/{:3.1}) w{:4.2} |",
                    f(cov[i]),
                    f(lo[i]),
                    f(hi[i]),
                    w[i] / wd
                );
            }
            line
        })
        .collect();
    println!("gammas {gammas:?}; coverage (lo miss / hi miss) width/deff-width");
    for l in out {
        println!("{l}");
    }
}
