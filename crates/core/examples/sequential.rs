//! Sequential testing by simulation with known truth (bench/sequential.sh;
//! `crates/core/STATISTICS.md`, *Sequential testing*).
//!
//! 1. Error under optional stopping: the true mean exactly at the
//!    threshold; a run checks its confidence sequence after every round
//!    and stops when the verdict is established or the budget is spent
//!    (the futility rule off: the harshest case). Any established verdict
//!    is counted as wrong (an established fail is wrong outright; an
//!    established pass claims μ > every rejected point below the
//!    threshold).
//! 2. Cost: the true mean 3 to 5 points from the threshold, the full
//!    procedure (futility on); calls against the budget N × M, and the
//!    verdict beside the fixed-size run's on all N × M samples.
//!
//! Usage: `cargo run --release -p probity-core --example sequential --
//! [runs] [seed]` (defaults 2000, 1).

use probity_core::sequential::{sequential_cost, SequenceState};
use probity_core::simulate::{fixed_verdicts, simulate_run, SimDesign};
use probity_core::stats::Decision;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (n, m, confidence) = (400u64, 10u64, 0.95);
    let alpha = 1.0 - confidence;
    println!("Sequential testing (betting confidence sequence, inputs as the unit); {runs} simulated runs per cell, seed {seed}.");
    println!("p_i ~ Beta with mean p and intra-class correlation rho; outputs Bernoulli(p_i); budget N x M = {n} x {m}; confidence {confidence}.");
    println!();
    println!("1. Error under optional stopping: true rate = threshold, checked after every round, run to the budget (no futility stop).");
    println!("    p  rho | established fail  established pass  any (wrong) | alpha");
    let cells: Vec<(f64, f64)> = [0.9, 0.97, 0.99]
        .iter()
        .flat_map(|&p| [0.0, 0.3].map(|r| (p, r)))
        .collect();
    let mut worst: f64 = 0.0;
    let rows: Vec<String> = cells
        .par_iter()
        .enumerate()
        .map(|(ci, &(p, rho))| {
            let design = SimDesign {
                inputs: n,
                m,
                icc: rho,
                confidence,
                concurrency: 16,
                futility: false,
            };
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1000) + ci as u64);
            let (mut fail, mut pass) = (0u64, 0u64);
            for _ in 0..runs {
                let r = simulate_run(&mut rng, &[p], &[p], &design).expect("valid design");
                fail += (r.states[0] == SequenceState::Fail) as u64;
                pass += (r.states[0] == SequenceState::Pass) as u64;
            }
            let share = |x: u64| x as f64 / runs as f64;
            let any = share(fail + pass);
            (
                any,
                format!(
                    "{p:>5} {rho:>4} | {:>15.2}% {:>16.2}% {:>11.2}% | {:>4.1}%{}",
                    100.0 * share(fail),
                    100.0 * share(pass),
                    100.0 * any,
                    100.0 * alpha,
                    if any > alpha { "  > alpha" } else { "" }
                ),
            )
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(any, row)| {
            worst = worst.max(any);
            row
        })
        .collect();
    for r in rows {
        println!("{r}");
    }
    println!(
        "worst cell: {:.2}% (alpha {:.0}%)",
        100.0 * worst,
        100.0 * alpha
    );
    println!();
    println!("2. Cost: true rate 3-5 points from the threshold, the full procedure (futility on); samples = calls before retries.");
    println!("    p  thr  rho | mean samples (saved)   p10   p50   p90 budget | settled futile spent | same verdict as fixed  fixed established  opposite");
    let costs: Vec<(f64, f64, f64)> = [
        (0.97, 0.94),
        (0.90, 0.95),
        (0.95, 0.90),
        (0.99, 0.95),
        (0.93, 0.97),
    ]
    .iter()
    .flat_map(|&(p, t)| [0.0, 0.3].map(|r| (p, t, r)))
    .collect();
    let rows: Vec<(f64, String)> = costs
        .par_iter()
        .enumerate()
        .map(|(ci, &(p, t, rho))| {
            let design = SimDesign {
                inputs: n,
                m,
                icc: rho,
                confidence,
                concurrency: 16,
                futility: true,
            };
            let cell_seed = seed.wrapping_mul(7919) + ci as u64;
            let cost = sequential_cost(&[p], &[t], &design, runs, cell_seed).expect("valid design");
            // The same simulated runs again, beside the fixed-size verdict
            // on the whole budget.
            let mut rng = StdRng::seed_from_u64(cell_seed);
            let (mut same, mut fixed_est, mut opposite) = (0u64, 0u64, 0u64);
            for _ in 0..runs {
                let r = simulate_run(&mut rng, &[p], &[t], &design).expect("valid design");
                let fixed = fixed_verdicts(&r.passes, m, &[t], confidence).expect("valid")[0];
                fixed_est += fixed.established as u64;
                let seq = match r.states[0] {
                    SequenceState::Pass => Decision::Pass,
                    SequenceState::Fail => Decision::Fail,
                    _ => Decision::Inconclusive,
                };
                same += (seq == fixed.decision) as u64;
                opposite += (seq != Decision::Inconclusive
                    && fixed.decision != Decision::Inconclusive
                    && seq != fixed.decision) as u64;
            }
            let saved = 1.0 - cost.mean_samples / cost.budget_samples as f64;
            (
                saved,
                format!(
                    "{p:>5} {t:>4} {rho:>4} | {:>12.0} ({:>5.1}%) {:>5} {:>5} {:>5} {:>6} | {:>6.1}% {:>5.1}% {:>4.1}% | {:>20.1}% {:>17.1}% {:>8.1}%",
                    cost.mean_samples,
                    100.0 * saved,
                    cost.p10_samples,
                    cost.p50_samples,
                    cost.p90_samples,
                    cost.budget_samples,
                    100.0 * cost.settled,
                    100.0 * cost.futile,
                    100.0 * cost.budget_spent,
                    100.0 * same as f64 / runs as f64,
                    100.0 * fixed_est as f64 / runs as f64,
                    100.0 * opposite as f64 / runs as f64,
                ),
            )
        })
        .collect();
    let mut least: f64 = 1.0;
    for (saved, row) in rows {
        least = least.min(saved);
        println!("{row}");
    }
    println!(
        "least saved on average: {:.1}% of the budget",
        100.0 * least
    );
}
