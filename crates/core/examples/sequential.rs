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
//! 3. Few inputs (output rounds, the group-sequential design): see
//!    [`few_inputs`]; `spending`: the spending functions compared exactly.
//!
//! Usage: `cargo run --release -p probity-core --example sequential --
//! [runs] [seed] [few|spending]` (defaults 2000, 1).

use probity_core::sequential::{SequenceState, SequentialTest};
use probity_core::simulate::plan::sequential_cost;
use probity_core::simulate::{
    fixed_verdicts, mixture_rates, output_rounds_test, sim_checks, simulate_output_rounds_with,
    simulate_run, SimDesign, SimRun,
};
use probity_core::stats::sequential_group::{
    boundaries_with, crossing, fixed_boundary, max_rounds_with,
};
use probity_core::stats::{proportion_interval, Decision, IntervalMethod};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (n, m, confidence) = (400u64, 10u64, 0.95);
    match args.get(3).map(String::as_str) {
        Some("few") => {
            few_inputs(runs, seed, confidence);
            return;
        }
        Some("spending") => {
            spending(confidence);
            return;
        }
        _ => {}
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

/// The input difficulty of a section-3 row: Beta with an ICC, or the
/// two-point mixture 90 % of inputs at 0.99 and 10 % at 0.70 (mean 0.961).
#[derive(Clone, Copy)]
enum Shape {
    Icc(f64),
    Mixture,
}

const MIX: (f64, f64, f64) = (0.10, 0.70, 0.99);
const MIX_MEAN: f64 = 0.961;

impl Shape {
    fn label(self) -> String {
        match self {
            Shape::Icc(r) => format!("{r:>4}"),
            Shape::Mixture => " mix".into(),
        }
    }

    /// (minimum at the truth, pass minimum, pass rate, fail minimum, fail rate).
    fn rates(self) -> (f64, f64, f64, f64, f64) {
        match self {
            Shape::Icc(_) => (0.95, 0.95, 0.98, 0.95, 0.92),
            Shape::Mixture => (
                MIX_MEAN,
                MIX_MEAN - 0.03,
                MIX_MEAN,
                MIX_MEAN + 0.03,
                MIX_MEAN,
            ),
        }
    }

    fn run(self, rng: &mut StdRng, p: f64, test: &SequentialTest, design: &SimDesign) -> SimRun {
        simulate_output_rounds_with(rng, &[p], test, design, |rng, p, n| match self {
            Shape::Icc(r) => (0..n)
                .map(|_| probity_core::simulate::input_rate(rng, p, r))
                .collect(),
            Shape::Mixture => mixture_rates(rng, n, MIX.0, MIX.1, MIX.2),
        })
        .expect("valid design")
    }
}

/// Section 3, few inputs (output rounds, scope: these inputs, the
/// group-sequential design): N in {10, 20, 50} x M in {10, 20, 50} x
/// input difficulty in {Beta at ICC 0, 0.1, 0.3; the two-point mixture}.
///
/// Error: the true rate at the minimum, no futility stop, an established
/// verdict on the wrong side of these inputs' mean. Power (issue 35 item
/// 2): true rates 3 points from the minimum, the full procedure; the share
/// of runs whose sequential verdict is established on the right side,
/// beside the fixed run of N x M on the same draws (Clopper-Pearson on
/// the N x M outputs: about these inputs), their paired difference, and
/// the savings against N x M counted only over the sequential runs that
/// reached that verdict (negative: it went past M).
fn few_inputs(runs: u64, seed: u64, confidence: f64) {
    let alpha = 1.0 - confidence;
    println!("3. Few inputs: output rounds, group-sequential (exact binomial boundaries, linear alpha spending; scope: these inputs), N x M in {{10,20,50}}^2;");
    println!("   input difficulty: Beta with ICC 0 / 0.1 / 0.3 (rates 0.98 and 0.92 against 0.95), or mix = 90% of inputs at 0.99 and 10% at 0.70 (mean 0.961; against 0.931 and 0.991).");
    println!("   max = outputs per input the design may take (the fixed run's M plus what keeps its power at least the fixed run's);");
    println!("   wrong: true rate = minimum (0.95, or 0.961 for mix), no futility stop: an established verdict on the wrong side of these inputs' mean rate;");
    println!("   seq = sequential runs that established the right verdict; fixed = fixed runs on the first N x M outputs of the same draws that did (Clopper-Pearson, same scope);");
    println!("   d = seq - fixed (paired; * when below -2 SE); saved = mean share of N x M left over the sequential runs that established it; opp = opposite verdicts.");
    println!("    N   M  icc max | wrong | pass:  seq fixed     d saved  opp | fail:  seq fixed     d saved  opp");
    let mut cells = Vec::new();
    for &n in &[10u64, 20, 50] {
        for &m in &[10u64, 20, 50] {
            for shape in [
                Shape::Icc(0.0),
                Shape::Icc(0.1),
                Shape::Icc(0.3),
                Shape::Mixture,
            ] {
                cells.push((n, m, shape));
            }
        }
    }
    let rows: Vec<(f64, Power, Power, String)> = cells
        .par_iter()
        .enumerate()
        .map(|(ci, &(n, m, shape))| {
            let design = |futility| SimDesign {
                inputs: n,
                m,
                icc: 0.0,
                confidence,
                concurrency: 16,
                futility,
            };
            let (at, pass_min, pass_p, fail_min, fail_p) = shape.rates();
            let max = probity_core::sequential::max_outputs(
                n,
                m,
                &sim_checks(&[pass_min, fail_min, at]),
                confidence,
            )
            .expect("valid");
            let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(104_729) + ci as u64);
            let mut wrong = 0u64;
            let test = |t: f64, futility: bool| {
                output_rounds_test(&sim_checks(&[t]), &design(futility)).expect("valid")
            };
            let at_min = test(at, false);
            for _ in 0..runs {
                let r = shape.run(&mut rng, at, &at_min, &design(false));
                let mu = r.true_means[0];
                wrong += match r.states[0] {
                    SequenceState::Pass => (mu < at) as u64,
                    SequenceState::Fail => (mu >= at) as u64,
                    _ => 0,
                };
            }
            let mut power = |p: f64, t: f64| {
                let right = if p > t {
                    Decision::Pass
                } else {
                    Decision::Fail
                };
                let mut w = Power::default();
                let template = test(t, true);
                for _ in 0..runs {
                    let r = shape.run(&mut rng, p, &template, &design(true));
                    let seq = match r.states[0] {
                        SequenceState::Pass => Decision::Pass,
                        SequenceState::Fail => Decision::Fail,
                        _ => Decision::Inconclusive,
                    };
                    let fixed = these_inputs_verdict(&r.passes[0], m, t, confidence);
                    let (a, b) = (u64::from(seq == right), u64::from(fixed == right));
                    if a == 1 {
                        w.saved += 1.0 - r.samples as f64 / (n * m) as f64;
                    }
                    w.seq += a;
                    w.fixed += b;
                    w.diff_sq += (a as f64 - b as f64).powi(2);
                    w.opposite += u64::from(seq != Decision::Inconclusive && seq != right);
                }
                w.runs = runs;
                w
            };
            let pass = power(pass_p, pass_min);
            let fail = power(fail_p, fail_min);
            let w = wrong as f64 / runs as f64;
            let row = format!(
                "{n:>5} {m:>3} {} {max:>3} | {:>4.1}% | {} | {}{}",
                shape.label(),
                100.0 * w,
                pass.row(),
                fail.row(),
                if w > alpha { "  wrong > alpha" } else { "" },
            );
            (w, pass, fail, row)
        })
        .collect();
    let (mut worst, mut behind, mut behind_2se) = (0.0f64, 0usize, 0usize);
    let (mut saved_sum, mut saved_cells, mut least_saved) = (0.0, 0usize, 1.0f64);
    let (mut seq_runs, mut seq_saved) = (0u64, 0.0);
    for (w, pass, fail, row) in &rows {
        worst = worst.max(*w);
        for p in [pass, fail] {
            behind += usize::from(p.seq < p.fixed);
            behind_2se += usize::from(p.significantly_behind());
            seq_runs += p.seq;
            seq_saved += p.saved;
            if let Some(s) = p.mean_saved() {
                saved_sum += s;
                saved_cells += 1;
                least_saved = least_saved.min(s);
            }
        }
        println!("{row}");
    }
    println!(
        "worst wrong: {:.2}% (alpha {:.0}%); sequential established the right verdict less often than fixed in {behind} of {} (cell, side) pairs, by more than 2 SE in {behind_2se};",
        100.0 * worst,
        100.0 * alpha,
        2 * rows.len(),
    );
    println!(
        "saved over runs with a verdict: mean over runs {:.1}%, mean over pairs {:.1}%, least {:.1}%",
        100.0 * seq_saved / seq_runs.max(1) as f64,
        100.0 * saved_sum / saved_cells.max(1) as f64,
        100.0 * least_saved,
    );
}

/// The spending functions compared exactly (no simulation): for the
/// cells of section 3 at ICC 0 (binomial outputs), the rounds each needs
/// for its power at the end to reach the fixed run's, and the mean savings
/// over the runs that establish the right verdict, from the exact
/// crossing probabilities look by look.
fn spending(confidence: f64) {
    let alpha = 1.0 - confidence;
    println!("Spending functions (exact, binomial outputs, 0.98 and 0.92 against 0.95; N x M in {{10,20,50}}^2):");
    println!(
        "  spending            | most rounds / M | saved over runs with a verdict: mean  least"
    );
    for (name, rho) in [
        ("O'Brien-Fleming type", 0.0),
        ("a t^3", 3.0),
        ("a t^2", 2.0),
        ("a t^1.5", 1.5),
        ("a t (used)", 1.0),
    ] {
        let (mut sum, mut count, mut least, mut most) = (0.0, 0.0, 1.0f64, 0.0f64);
        for &n in &[10u64, 20, 50] {
            for &m in &[10u64, 20, 50] {
                let k = max_rounds_with(confidence, 0.95, n, m, rho).expect("valid");
                most = most.max(k as f64 / m as f64);
                let plan =
                    boundaries_with(alpha, 0.95, &vec![n; k as usize], n * k, k as usize, rho);
                let _ = fixed_boundary(alpha, 0.95, n * m);
                for p in [0.98, 0.92] {
                    let (mut saved, mut total, mut before) = (0.0, 0.0, 0.0);
                    for j in 1..=plan.len() {
                        let (u, d) = crossing(&plan[..j], p);
                        let c = if p > 0.95 { u } else { d };
                        saved += (c - before) * (1.0 - (j as u64 * n) as f64 / (n * m) as f64);
                        total += c - before;
                        before = c;
                    }
                    let s = saved / total.max(1e-12);
                    sum += s;
                    count += 1.0;
                    least = least.min(s);
                }
            }
        }
        println!("  {name:<20}|            {most:.2} |                                 {:>4.1}% {:>5.1}%", 100.0 * sum / count, 100.0 * least);
    }
}

/// Tallies of one (cell, true rate) pair in section 3.
#[derive(Default, Clone, Copy)]
struct Power {
    runs: u64,
    /// Sequential runs that established the right verdict, and the share
    /// of N x M they left, summed.
    seq: u64,
    saved: f64,
    /// Fixed runs (same scope, same draws) that established it.
    fixed: u64,
    /// Σ (seq right − fixed right)², for the paired difference's SE.
    diff_sq: f64,
    /// Sequential runs that established the opposite.
    opposite: u64,
}

impl Power {
    fn mean_saved(&self) -> Option<f64> {
        (self.seq > 0).then(|| self.saved / self.seq as f64)
    }

    /// The paired difference seq − fixed (shares) and its standard error.
    fn difference(&self) -> (f64, f64) {
        let r = self.runs.max(1) as f64;
        let d = (self.seq as f64 - self.fixed as f64) / r;
        let var = (self.diff_sq / r - d * d).max(0.0);
        (d, (var / r).sqrt())
    }

    fn significantly_behind(&self) -> bool {
        let (d, se) = self.difference();
        d < -2.0 * se
    }

    fn row(&self) -> String {
        let pct = |x: u64| 100.0 * x as f64 / self.runs as f64;
        let saved = self
            .mean_saved()
            .map_or_else(|| "-".to_string(), |s| format!("{:.0}%", 100.0 * s));
        let (d, _) = self.difference();
        format!(
            "{:>4.0}% {:>4.0}% {:>+5.1}{} {:>5} {:>3.1}%",
            pct(self.seq),
            pct(self.fixed),
            100.0 * d,
            if self.significantly_behind() {
                "*"
            } else {
                " "
            },
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
