//! One-sided misses of the judge-corrected interval by simulation
//! (`bench/judge.sh`, `crates/core/STATISTICS.md`, *Judges with known error
//! rates*; issue 35, item 4).
//!
//! A judge with known sensitivity and specificity judges N × M outputs of a
//! system whose inputs' true rates are drawn by a [`Difficulty`] — Beta
//! (ICC 0.1) or a two-point mixture of a few hard inputs among easy ones,
//! which the model does not assume — and a labelled set of n₁ true passes
//! and n₀ true fails. For each cell: the share of replicates whose
//! corrected 95 % interval lies wholly above the true mean θ ("below":
//! truth below, a system at its minimum wrongly established passing) and
//! wholly below it ("above": wrongly established failing), and refusals
//! (no corrected rate). Usage: `cargo run --release -p probity-core
//! --example calibration -- [replicates] [seed] [--cells]` (defaults 1000,
//! 1; `--cells` prints every cell, otherwise the worst per judge and label
//! set).

use probity_core::judge_sim::{Difficulty, SimulatedJudge};
use probity_core::stats::{corrected_rate, JudgeAccuracy, RunVariance};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

#[derive(Default, Clone, Copy)]
struct Tally {
    below: usize,
    above: usize,
    refused: usize,
    width: f64,
}

#[derive(Clone, Copy)]
struct Cell {
    judge: SimulatedJudge,
    difficulty: Difficulty,
    mixture: bool,
    n: usize,
    m: u64,
}

fn run_cell(c: Cell, reps: usize, seed: u64) -> Tally {
    let mut rng = StdRng::seed_from_u64(seed);
    let theta = c.difficulty.mean();
    let mut t = Tally::default();
    for _ in 0..reps {
        let run = c.judge.run_with(&mut rng, c.difficulty, c.n, c.m);
        let Ok(acc) = JudgeAccuracy::measure(run.labels, 0.95) else {
            t.refused += 1;
            continue;
        };
        match corrected_rate(&run.judged, &acc, 0.95, RunVariance::Clustered) {
            Ok(r) => {
                if theta < r.interval.lower {
                    t.below += 1;
                } else if theta > r.interval.upper {
                    t.above += 1;
                }
                t.width += r.interval.width();
            }
            Err(_) => t.refused += 1,
        }
    }
    t
}

/// The mixture with mean θ of the grid: 15 % of inputs at 0.4 (θ 0.90),
/// 10 % at 0.6 (θ 0.95), 5 % at 0.8 (θ 0.99); the rest easy.
fn mixture(theta: f64) -> Difficulty {
    let (share, hard) = if theta < 0.93 {
        (0.15, 0.4)
    } else if theta < 0.97 {
        (0.10, 0.6)
    } else {
        (0.05, 0.8)
    };
    Difficulty::mixture(theta, share, hard).expect("a mixture with this mean")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cells_flag = args.iter().any(|a| a == "--cells");
    let nums: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let reps: usize = nums.first().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let seed: u64 = nums.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let judges = [
        (0.80, 0.80),
        (0.90, 0.90),
        (0.95, 0.85),
        (0.99, 0.95),
        (0.99, 0.99),
    ];
    let labels = [(30u64, 30u64), (120, 30), (500, 100), (500, 500)];
    let mut grid = Vec::new();
    for &(se, sp) in &judges {
        for &(n1, n0) in &labels {
            for &theta in &[0.90, 0.95, 0.99] {
                for &(n, m) in &[
                    (10usize, 10u64),
                    (10, 30),
                    (20, 10),
                    (20, 30),
                    (50, 10),
                    (50, 30),
                ] {
                    for mix in [false, true] {
                        grid.push(Cell {
                            judge: SimulatedJudge {
                                sensitivity: se,
                                specificity: sp,
                                pass_labels: n1,
                                fail_labels: n0,
                            },
                            difficulty: if mix {
                                mixture(theta)
                            } else {
                                Difficulty::Beta {
                                    mean: theta,
                                    rho: 0.1,
                                }
                            },
                            mixture: mix,
                            n,
                            m,
                        });
                    }
                }
            }
        }
    }
    println!(
        "One-sided misses of the judge-corrected 95% interval; {reps} replicates per cell, seed {seed}, {} cells.",
        grid.len()
    );
    println!("Judges (Se, Sp) x labels (n1 PASS, n0 FAIL) x theta {{0.90, 0.95, 0.99}} x NxM {{10,20,50}}x{{10,30}} x inputs {{Beta ICC 0.1, mixture}};");
    println!("mixture: 15% of inputs at 0.4 (theta 0.90), 10% at 0.6 (0.95), 5% at 0.8 (0.99), the rest easy.");
    println!("below = truth below the interval (wrongly established PASS at the minimum); above = truth above it (wrongly established FAIL).");
    let rows: Vec<Tally> = grid
        .par_iter()
        .enumerate()
        .map(|(k, &c)| run_cell(c, reps, seed.wrapping_mul(1_000_003).wrapping_add(k as u64)))
        .collect();
    let pct = |x: usize| 100.0 * x as f64 / reps as f64;
    if cells_flag {
        println!("  Se   Sp   n1  n0 | theta  NxM    inputs  | below  above  refused  width");
        for (c, t) in grid.iter().zip(&rows) {
            println!(
                "{:.2} {:.2} {:4} {:3} | {:.2} {:>6} {:>8} | {:5.1}% {:5.1}%  {:5.1}%  {:.4}",
                c.judge.sensitivity,
                c.judge.specificity,
                c.judge.pass_labels,
                c.judge.fail_labels,
                c.difficulty.mean(),
                format!("{}x{}", c.n, c.m),
                if c.mixture { "mixture" } else { "Beta" },
                pct(t.below),
                pct(t.above),
                pct(t.refused),
                t.width / (reps - t.refused).max(1) as f64,
            );
        }
    }
    println!("worst cell per judge and label set (over theta, NxM and inputs):");
    println!("  Se   Sp   n1  n0 | max below (mixture / Beta) | max above (mixture / Beta) | max refused");
    let (mut worst_below, mut worst_above) = (0usize, 0usize);
    for chunk in grid.iter().zip(&rows).collect::<Vec<_>>().chunks(36) {
        let c = chunk[0].0;
        let max = |mix: bool, f: &dyn Fn(&Tally) -> usize| {
            chunk
                .iter()
                .filter(|(c, _)| c.mixture == mix)
                .map(|(_, t)| f(t))
                .max()
                .unwrap_or(0)
        };
        let (bm, bb) = (max(true, &|t| t.below), max(false, &|t| t.below));
        let (am, ab) = (max(true, &|t| t.above), max(false, &|t| t.above));
        let refused = chunk.iter().map(|(_, t)| t.refused).max().unwrap_or(0);
        worst_below = worst_below.max(bm).max(bb);
        worst_above = worst_above.max(am).max(ab);
        println!(
            "{:.2} {:.2} {:4} {:3} | {:5.1}% / {:5.1}%            | {:5.1}% / {:5.1}%            | {:5.1}%",
            c.judge.sensitivity, c.judge.specificity, c.judge.pass_labels, c.judge.fail_labels,
            pct(bm), pct(bb), pct(am), pct(ab), pct(refused),
        );
    }
    println!(
        "largest one-sided miss over the grid: below {:.1}%, above {:.1}% (Monte Carlo standard error at 2.5%: {:.1} points)",
        pct(worst_below),
        pct(worst_above),
        100.0 * (0.025f64 * 0.975 / reps as f64).sqrt()
    );
}
