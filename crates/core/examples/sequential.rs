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
use probity_core::stats::{proportion_interval, Decision, IntervalMethod};
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
///
/// Error: the true rate at the minimum, no futility stop. Cost and power
/// (issue 35 item 2): true rates 3 points from the minimum (0.98 and 0.92
/// against 0.95), the full procedure; for each, the share of runs whose
/// sequential verdict is established on the right side, the share whose
/// fixed run on all N × M outputs is, with the same scope (Clopper–Pearson
/// on the N × M outputs: about these inputs), and the savings counted only
/// over the sequential runs that reached that verdict.
fn few_inputs(runs: u64, seed: u64, confidence: f64) {
    let alpha = 1.0 - confidence;
    println!("3. Few inputs: output rounds (one more output of every input per round; scope: these inputs), N x M in {{10,20,50}}^2, ICC in {{0,0.1,0.3}}.");
    println!("   error: true rate = threshold 0.95, no futility stop; wrong = an established verdict on the wrong side of these inputs' mean rate (mean of p_i).");
    println!("   power: 0.98 against 0.95 (pass) and 0.92 against 0.95 (fail), futility on; seq = sequential runs that established the right verdict;");
    println!("          fixed = fixed runs on all N x M outputs that did, same scope (Clopper-Pearson on the N x M outputs, about these inputs);");
    println!("          saved = mean share of the budget left, over the sequential runs that established it (-: none); opp = opposite established verdicts.");
    println!("    N   M  rho | wrong | pass: seq fixed saved  opp | fail: seq fixed saved  opp");
    let mut cells = Vec::new();
    for &n in &[10u64, 20, 50] {
        for &m in &[10u64, 20, 50] {
            for &rho in &[0.0, 0.1, 0.3] {
                cells.push((n, m, rho));
            }
        }
    }
    let rows: Vec<(f64, Power, Power, String)> = cells
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
            let mut power = |p: f64| {
                let right = if p > 0.95 {
                    Decision::Pass
                } else {
                    Decision::Fail
                };
                let mut w = Power::default();
                for _ in 0..runs {
                    let r = simulate_run(&mut rng, &[p], &[0.95], &design(true)).expect("valid");
                    let seq = match r.states[0] {
                        SequenceState::Pass => Decision::Pass,
                        SequenceState::Fail => Decision::Fail,
                        _ => Decision::Inconclusive,
                    };
                    let fixed = these_inputs_verdict(&r.passes[0], m, 0.95, confidence);
                    if seq == right {
                        w.seq += 1;
                        w.saved += 1.0 - r.samples as f64 / (n * m) as f64;
                    }
                    w.fixed += u64::from(fixed == right);
                    w.opposite += u64::from(seq != Decision::Inconclusive && seq != right);
                }
                w.runs = runs;
                w
            };
            let pass = power(0.98);
            let fail = power(0.92);
            let w = wrong as f64 / runs as f64;
            let row = format!(
                "{n:>5} {m:>3} {rho:>4} | {:>4.1}% | {} | {}{}{}",
                100.0 * w,
                pass.row(),
                fail.row(),
                if w > alpha { "  wrong > alpha" } else { "" },
                if pass.seq < pass.fixed || fail.seq < fail.fixed {
                    "  seq < fixed"
                } else {
                    ""
                },
            );
            (w, pass, fail, row)
        })
        .collect();
    let (mut worst, mut behind, mut saved_sum, mut saved_cells) = (0.0f64, 0usize, 0.0, 0usize);
    let mut least_saved = 1.0f64;
    for (w, pass, fail, row) in &rows {
        worst = worst.max(*w);
        for p in [pass, fail] {
            behind += usize::from(p.seq < p.fixed);
            if let Some(s) = p.mean_saved() {
                saved_sum += s;
                saved_cells += 1;
                least_saved = least_saved.min(s);
            }
        }
        println!("{row}");
    }
    println!(
        "worst wrong: {:.2}% (alpha {:.0}%); sequential established less often than fixed in {behind} of {} (cell, side) pairs; saved over runs with a verdict: least {:.1}%, mean {:.1}%",
        100.0 * worst,
        100.0 * alpha,
        2 * rows.len(),
        100.0 * least_saved,
        100.0 * saved_sum / saved_cells.max(1) as f64,
    );
}

/// Tallies of one (cell, true rate) pair in section 3.
#[derive(Default, Clone, Copy)]
struct Power {
    runs: u64,
    /// Sequential runs that established the right verdict, and the budget
    /// share they left, summed.
    seq: u64,
    saved: f64,
    /// Fixed runs (same scope) that established it.
    fixed: u64,
    /// Sequential runs that established the opposite.
    opposite: u64,
}

impl Power {
    fn mean_saved(&self) -> Option<f64> {
        (self.seq > 0).then(|| self.saved / self.seq as f64)
    }

    fn row(&self) -> String {
        let pct = |x: u64| 100.0 * x as f64 / self.runs as f64;
        let saved = self
            .mean_saved()
            .map_or_else(|| "-".to_string(), |s| format!("{:.0}%", 100.0 * s));
        format!(
            "{:>3.0}% {:>4.0}% {:>5} {:>3.1}%",
            pct(self.seq),
            pct(self.fixed),
            saved,
            pct(self.opposite)
        )
    }
}

/// The fixed run's verdict about these inputs: Clopper–Pearson on all
/// N × M outputs, pass iff lower ≥ threshold, fail iff upper < threshold,
/// else inconclusive (the scope of output rounds, `Scope::TheseInputs`).
fn these_inputs_verdict(passes: &[u64], m: u64, threshold: f64, confidence: f64) -> Decision {
    let x: u64 = passes.iter().sum();
    let n = passes.len() as u64 * m;
    let iv = proportion_interval(
        x as f64,
        n as f64,
        confidence,
        IntervalMethod::ClopperPearson,
    );
    if iv.lower >= threshold {
        Decision::Pass
    } else if iv.upper < threshold {
        Decision::Fail
    } else {
        Decision::Inconclusive
    }
}
