//! The default interval when input difficulty is not Beta (issue 35,
//! bench/mixture.sh): two-point mixtures — a hard share h of inputs at
//! pass rate q, the rest at e — and the Beta grid, for the default
//! (profile likelihood with the unseen-minority allowance,
//! `stats::unseen`) and the default before (the profile likelihood alone).
//!
//! For each cell: coverage of the true mean μ = h·q + (1 − h)·e, the share
//! of runs whose lower end lies above μ (a check whose minimum is μ would
//! be wrongly established PASS), the share whose upper end lies below it
//! (wrongly established FAIL), and the mean width. Usage: `cargo run
//! --release -p probity-core --example mixture -- [replicates] [seed]`
//! (defaults 1000, 1).

#[path = "../tests/sim/mod.rs"]
mod sim;

use probity_core::stats::betabin::profile_likelihood;
use probity_core::stats::{ClusterMethod, ClusterSum, Counts, IntervalMethod, RateEstimate};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// How inputs' pass rates are drawn.
#[derive(Clone, Copy)]
enum Truth {
    /// Share `h` at rate `q`, the rest at `e`.
    Mixture { h: f64, q: f64, e: f64 },
    /// Beta with mean `p` and ICC `rho` (every input at p when rho = 0).
    Beta { p: f64, rho: f64 },
}

impl Truth {
    fn mean(&self) -> f64 {
        match *self {
            Truth::Mixture { h, q, e } => h * q + (1.0 - h) * e,
            Truth::Beta { p, .. } => p,
        }
    }

    fn draw(&self, rng: &mut StdRng) -> f64 {
        match *self {
            Truth::Mixture { h, q, e } => {
                if rng.gen::<f64>() < h {
                    q
                } else {
                    e
                }
            }
            Truth::Beta { p, rho } if rho > 0.0 => {
                let k = (1.0 - rho) / rho;
                sim::beta_draw(rng, p * k, (1.0 - p) * k)
            }
            Truth::Beta { p, .. } => p,
        }
    }
}

/// Tallies of one interval over a cell's replicates.
#[derive(Default, Clone, Copy)]
struct Tally {
    covered: usize,
    low: usize,
    high: usize,
    width: f64,
}

impl Tally {
    fn add(&mut self, lower: f64, upper: f64, mu: f64) {
        self.covered += usize::from(lower <= mu && mu <= upper);
        self.low += usize::from(lower > mu);
        self.high += usize::from(upper < mu);
        self.width += upper - lower;
    }
}

struct Cell {
    truth: Truth,
    n: usize,
    m: u64,
    before: Tally,
    default: Tally,
    /// Replicates with no input drawn from the hard share.
    unseen: usize,
}

fn run(truth: Truth, n: usize, m: u64, reps: usize, seed: u64) -> Cell {
    let mut rng = StdRng::seed_from_u64(seed);
    let mu = truth.mean();
    let mut c = Cell {
        truth,
        n,
        m,
        before: Tally::default(),
        default: Tally::default(),
        unseen: 0,
    };
    for _ in 0..reps {
        let mut clusters = Vec::with_capacity(n);
        let mut counts = Counts::default();
        let mut hard_seen = false;
        for _ in 0..n {
            let pi = truth.draw(&mut rng);
            if let Truth::Mixture { q, e, .. } = truth {
                hard_seen |= pi == q && q != e;
            }
            let x = (0..m).filter(|_| rng.gen::<f64>() < pi).count() as u64;
            clusters.push(ClusterSum::from_passes(x, m).expect("x <= m"));
            counts.pass += x;
            counts.fail += m - x;
        }
        c.unseen += usize::from(matches!(truth, Truth::Mixture { .. }) && !hard_seen);
        let b = profile_likelihood(&clusters, 0.95).expect("valid").interval;
        c.before.add(b.lower, b.upper, mu);
        let d = RateEstimate::try_clustered(
            &clusters,
            counts,
            0.95,
            IntervalMethod::Wilson,
            ClusterMethod::Profile,
        )
        .expect("valid")
        .interval;
        c.default.add(d.lower, d.upper, mu);
    }
    c
}

fn pct(k: usize, reps: usize) -> f64 {
    100.0 * k as f64 / reps as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let designs = [(10, 10), (10, 30), (20, 10), (20, 30), (50, 10), (50, 30)];
    let mut truths = Vec::new();
    for &h in &[0.02, 0.05, 0.10, 0.15] {
        for &q in &[0.0, 0.3, 0.5, 0.8] {
            for &e in &[0.97, 0.99, 1.0] {
                truths.push(Truth::Mixture { h, q, e });
            }
        }
    }
    let mixtures = truths.len();
    for &p in &[0.5, 0.9, 0.97, 0.99] {
        for &rho in &[0.0, 0.1, 0.3] {
            truths.push(Truth::Beta { p, rho });
        }
    }
    let mut cells = Vec::new();
    for (ti, &t) in truths.iter().enumerate() {
        for (di, &(n, m)) in designs.iter().enumerate() {
            cells.push((ti * 10 + di, t, n, m));
        }
    }
    let results: Vec<Cell> = cells
        .par_iter()
        .map(|&(id, t, n, m)| run(t, n, m, reps, seed.wrapping_mul(1_000_003) + id as u64))
        .collect();
    println!("Coverage of the default 95% interval when input difficulty is a two-point mixture, and on the Beta grid; {reps} replicates per cell, seed {seed}.");
    println!("mixture h/q/e: a share h of inputs at pass rate q, the rest at e (mu = h q + (1 - h) e); beta p/rho: p_i ~ Beta(mean p, ICC rho).");
    println!("before  = beta-binomial profile likelihood alone (betabin::profile_likelihood, the default before issue 35)");
    println!("default = the same, each end reaching at least the unseen-minority allowance [(1 - h_G) p-hat, 1 - (1 - h_G)(1 - p-hat)], h_G = 1 - 0.025^(1/G)");
    println!("cover; wrong PASS = lower end above mu (a check whose minimum is mu established PASS); wrong FAIL = upper end below mu; width = mean width; unseen = runs with no hard input");
    println!();
    println!(
        "{:<22} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6} | {:>6}",
        "truth",
        "mu",
        "NxM",
        "cover",
        "PASS!",
        "FAIL!",
        "width",
        "cover",
        "PASS!",
        "FAIL!",
        "width",
        "unseen"
    );
    println!("{:<36} | {:^27} | {:^27} |", "", "before", "default");
    let mut worst: [(f64, String); 2] = [(0.0, String::new()), (0.0, String::new())];
    let mut lowest: [(f64, String); 2] = [(100.0, String::new()), (100.0, String::new())];
    let mut width_ratio: Vec<f64> = Vec::new();
    for (ci, c) in results.iter().enumerate() {
        let label = match c.truth {
            Truth::Mixture { h, q, e } => format!("mixture {h}/{q}/{e}"),
            Truth::Beta { p, rho } => format!("beta {p}/{rho}"),
        };
        let design = format!("{}x{}", c.n, c.m);
        let mu = c.truth.mean();
        let row = |t: &Tally| {
            format!(
                "{:>5.1}% {:>5.1}% {:>5.1}% {:>6.4}",
                pct(t.covered, reps),
                pct(t.low, reps),
                pct(t.high, reps),
                t.width / reps as f64
            )
        };
        let flag = |t: &Tally| {
            let mut f = String::new();
            if pct(t.low, reps) > 3.0 || pct(t.high, reps) > 3.0 {
                f.push_str(" miss>3");
            }
            if pct(t.covered, reps) < 93.5 {
                f.push_str(" cov<93.5");
            }
            f
        };
        let unseen = if ci / designs.len() < mixtures {
            format!("{:>5.1}%", pct(c.unseen, reps))
        } else {
            String::new()
        };
        println!(
            "{label:<22} {mu:>6.4} {design:>6} | {} | {} | {unseen:>6}{}",
            row(&c.before),
            row(&c.default),
            flag(&c.default)
        );
        for (k, t) in [&c.before, &c.default].iter().enumerate() {
            let miss = pct(t.low, reps).max(pct(t.high, reps));
            if miss > worst[k].0 {
                worst[k] = (miss, format!("{label} {design}"));
            }
            let cov = pct(t.covered, reps);
            if cov < lowest[k].0 {
                lowest[k] = (cov, format!("{label} {design}"));
            }
        }
        if ci / designs.len() >= mixtures && c.before.width > 0.0 {
            width_ratio.push(c.default.width / c.before.width);
        }
    }
    println!();
    for (k, name) in ["before", "default"].iter().enumerate() {
        println!(
            "{name}: largest one-sided miss {:.1}% ({}); lowest coverage {:.1}% ({})",
            worst[k].0, worst[k].1, lowest[k].0, lowest[k].1
        );
    }
    width_ratio.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (width_ratio.first(), width_ratio.last()) {
        println!(
            "Beta grid: default width / before width from {lo:.2} to {hi:.2} (median {:.2})",
            width_ratio[width_ratio.len() / 2]
        );
    }
}
