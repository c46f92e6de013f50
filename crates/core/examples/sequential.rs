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

use probity_core::sequential::SequenceState;
use probity_core::simulate::plan::sequential_cost;
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
    if args.get(3).map(String::as_str) == Some("few") {
        few_inputs(runs, seed, confidence);
        return;
    }
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
    println!();
    few_inputs(runs, seed, confidence);
}

/// Section 3, few inputs (output rounds, scope: these inputs): N in
/// {10, 20, 50} x M in {10, 20, 50} x ICC in {0, 0.1, 0.3}.
fn few_inputs(runs: u64, seed: u64, confidence: f64) {
    let alpha = 1.0 - confidence;
    println!("3. Few inputs: output rounds (one more output of every input per round; scope: these inputs), N x M in {{10,20,50}}^2, ICC in {{0,0.1,0.3}}.");
    println!("   error: true rate = threshold 0.95, no futility stop; wrong = an established verdict on the wrong side of these inputs' mean rate (mean of p_i).");
    println!("   cost: 0.98 against 0.95 (pass) and 0.92 against 0.95 (fail), futility on;");
    println!("          same = the sequential verdict (established pass / fail / not) equals the fixed run's on all N x M outputs (default interval, three-way).");
    println!("    N   M  rho | wrong | pass: saved  same  opp. fixed-est | fail: saved  same  opp. fixed-est");
    let mut cells = Vec::new();
    for &n in &[10u64, 20, 50] {
        for &m in &[10u64, 20, 50] {
            for &rho in &[0.0, 0.1, 0.3] {
                cells.push((n, m, rho));
            }
        }
    }
    let rows: Vec<(f64, f64, f64, f64, String)> = cells
        .par_iter()
        .enumerate()
        .map(|(ci, &(n, m, rho))| {
            let design = |futility| SimDesign {
                inputs: n,
                m,
                icc: rho,
                confidence,
                concurrency: 16,
                futility,
            };
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(104_729) + ci as u64);
            let mut wrong = 0u64;
            for _ in 0..runs {
                let r = simulate_run(&mut rng, &[0.95], &[0.95], &design(false)).expect("valid");
                let mu = r.true_means[0];
                wrong += match r.states[0] {
                    SequenceState::Pass => (mu < 0.95) as u64,
                    SequenceState::Fail => (mu >= 0.95) as u64,
                    _ => 0,
                };
            }
            let mut cost = |p: f64| {
                let (mut samples, mut same, mut opp, mut fixed_est) = (0u64, 0u64, 0u64, 0u64);
                for _ in 0..runs {
                    let r = simulate_run(&mut rng, &[p], &[0.95], &design(true)).expect("valid");
                    samples += r.samples;
                    let fixed = fixed_verdicts(&r.passes, m, &[0.95], confidence).expect("valid")[0];
                    let fixed_d = if fixed.established { fixed.decision } else { Decision::Inconclusive };
                    fixed_est += fixed.established as u64;
                    let seq = match r.states[0] {
                        SequenceState::Pass => Decision::Pass,
                        SequenceState::Fail => Decision::Fail,
                        _ => Decision::Inconclusive,
                    };
                    same += (seq == fixed_d) as u64;
                    opp += (seq != Decision::Inconclusive
                        && fixed_d != Decision::Inconclusive
                        && seq != fixed_d) as u64;
                }
                let share = |x: u64| x as f64 / runs as f64;
                (
                    1.0 - samples as f64 / (runs * n * m) as f64,
                    share(same),
                    share(opp),
                    share(fixed_est),
                )
            };
            let (sp, smp, op, fp) = cost(0.98);
            let (sf, smf, of, ff) = cost(0.92);
            let w = wrong as f64 / runs as f64;
            (
                w,
                sp.min(sf),
                smp.min(smf),
                op.max(of),
                format!(
                    "{n:>5} {m:>3} {rho:>4} | {:>4.1}% | {:>10.1}% {:>4.0}% {:>4.1}% {:>8.0}% | {:>10.1}% {:>4.0}% {:>4.1}% {:>8.0}%{}",
                    100.0 * w,
                    100.0 * sp,
                    100.0 * smp,
                    100.0 * op,
                    100.0 * fp,
                    100.0 * sf,
                    100.0 * smf,
                    100.0 * of,
                    100.0 * ff,
                    if w > alpha { "  wrong > alpha" } else { "" }
                ),
            )
        })
        .collect();
    let (mut worst, mut least, mut least_same, mut most_opp) = (0.0f64, 1.0f64, 1.0f64, 0.0f64);
    let mut saved_sum = 0.0;
    for (w, saved, same, opp, row) in &rows {
        worst = worst.max(*w);
        least = least.min(*saved);
        least_same = least_same.min(*same);
        most_opp = most_opp.max(*opp);
        saved_sum += saved;
        println!("{row}");
    }
    println!(
        "worst wrong: {:.2}% (alpha {:.0}%); saved: least {:.1}%, mean over cells {:.1}%; same verdict as fixed: least {:.0}%; opposite: most {:.1}%",
        100.0 * worst,
        100.0 * alpha,
        100.0 * least,
        100.0 * saved_sum / rows.len() as f64,
        100.0 * least_same,
        100.0 * most_opp
    );
}
