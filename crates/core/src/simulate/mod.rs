//! Simulated runs with known truth, for planning (`probity plan`) and for
//! the tests and benches of the statistics: inputs differ in difficulty,
//! p_i ~ Beta(a, b) with mean p and intra-class correlation ρ
//! (a + b = (1 − ρ)/ρ; ρ = 0: every p_i = p), outputs Bernoulli(p_i).
//! Pure: every draw comes from the `StdRng` passed in (seeded by the
//! caller).
//!
//! The Beta draw works in logs, so the tiny shapes of ρ near 1 at p = 0.99
//! do not underflow to 0 or 1 (the coverage table of
//! `crates/core/STATISTICS.md` is reproducible from these exact streams).

pub mod plan;

use crate::sequential::test::{design_for, max_outputs, round_end, SequentialTest};
use crate::stats::{
    judge, ClusterMethod, ClusterSum, Counts, ErrorPolicy, IntervalMethod, RateEstimate,
    StatsError, ThresholdVerdict, VerdictMode,
};
use crate::summary::sequential::{RoundDesign, SequenceState, StopReason};
use crate::summary::CheckInfo;
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

/// One input's pass rate p_i: Beta with mean `p` and ICC `rho` (p itself
/// when ρ = 0 or p is 0 or 1).
pub fn input_rate(rng: &mut StdRng, p: f64, rho: f64) -> f64 {
    if rho <= 0.0 || p <= 0.0 || p >= 1.0 {
        return p;
    }
    let k = (1.0 - rho) / rho;
    beta_draw(rng, p * k, (1.0 - p) * k)
}

/// Passes among `m` outputs of one input drawn with mean `p`, ICC `rho`.
pub fn input_passes(rng: &mut StdRng, p: f64, rho: f64, m: u64) -> u64 {
    let pi = input_rate(rng, p, rho);
    (0..m).filter(|_| rng.gen::<f64>() < pi).count() as u64
}

/// `n` inputs of `m` outputs each (see [`input_passes`]) as clusters.
pub fn clusters(rng: &mut StdRng, p: f64, rho: f64, n: usize, m: u64) -> Vec<ClusterSum> {
    (0..n)
        .map(|_| {
            let pass = input_passes(rng, p, rho, m);
            let c = Counts {
                pass,
                fail: m - pass,
                ..Counts::default()
            };
            ClusterSum::from_counts(&c, ErrorPolicy::Exclude)
        })
        .collect()
}

/// The design of a simulated sequential run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimDesign {
    /// The budget: N inputs of M outputs.
    pub inputs: u64,
    pub m: u64,
    /// Intra-class correlation of every check.
    pub icc: f64,
    /// Confidence of the sequences (1 − α).
    pub confidence: f64,
    /// Calls in flight: sets the round size ([`round_end`]).
    pub concurrency: usize,
    /// Stop for futility (the default rule); `false` runs every
    /// unsettled run to its budget (the harshest case for the error rate).
    pub futility: bool,
}

/// What a simulated sequential run did.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRun {
    pub stop: StopReason,
    /// Inputs sampled, and samples (inputs × M).
    pub inputs: u64,
    pub samples: u64,
    /// Each check's state at the stop.
    pub states: Vec<SequenceState>,
    /// Each check's passes per input for every input of the budget, in
    /// the order sampled (the sequential run saw the first `inputs`): the
    /// fixed-size run of the same budget sees them all.
    pub passes: Vec<Vec<u64>>,
    /// Each check's true mean over what its sequence is about: the mean of
    /// these inputs' rates p_i with output rounds, the population mean p
    /// with input rounds.
    pub true_means: Vec<f64>,
}

/// Simulate a sequential run of checks with true mean rates `rates` and
/// minimums `thresholds` (checks independent of each other given the
/// input), under `design`.
pub fn simulate_run(
    rng: &mut StdRng,
    rates: &[f64],
    thresholds: &[f64],
    design: &SimDesign,
) -> Result<SimRun, StatsError> {
    let checks = sim_checks(thresholds);
    for &p in rates {
        if !(0.0..=1.0).contains(&p) {
            return Err(StatsError::Rate(p));
        }
    }
    let n = design.inputs as usize;
    let m = design.m;
    if design_for(design.inputs) == RoundDesign::Outputs {
        return simulate_output_rounds(rng, rates, &checks, design);
    }
    let passes: Vec<Vec<u64>> = rates
        .iter()
        .map(|&p| {
            (0..n)
                .map(|_| input_passes(rng, p, design.icc, m))
                .collect()
        })
        .collect();
    let mut test = SequentialTest::new(&checks, design.confidence, design.inputs, m)?;
    if !design.futility {
        test = test.without_futility();
    }
    let mut position = 0;
    let stop = loop {
        let end = round_end(position, n, m as usize, design.concurrency);
        for i in position..end {
            let shares: Vec<Option<f64>> = passes
                .iter()
                .map(|x| (m > 0).then(|| x[i] as f64 / m as f64))
                .collect();
            test.observe(&shares)?;
        }
        position = end;
        if let Some(stop) = test.decide() {
            break stop;
        }
    };
    Ok(SimRun {
        stop,
        inputs: position as u64,
        samples: position as u64 * m,
        states: test.states().into_iter().map(|(s, _)| s).collect(),
        passes,
        true_means: rates.to_vec(),
    })
}

/// [`simulate_run`] with output rounds ([`RoundDesign::Outputs`]): every
/// input's rate p_i is drawn once per check, then round j draws output j
/// of every input (Bernoulli(p_i)) and the group-sequential tests look at
/// the round. The design may go past M, up to [`max_outputs`] rounds;
/// `passes` holds the first M rounds — what the fixed run of N × M sees
/// (the same draws, so the two are compared run by run).
fn simulate_output_rounds(
    rng: &mut StdRng,
    rates: &[f64],
    checks: &[CheckInfo],
    design: &SimDesign,
) -> Result<SimRun, StatsError> {
    let test = output_rounds_test(checks, design)?;
    simulate_output_rounds_with(rng, rates, &test, design, |rng, p, n| {
        (0..n).map(|_| input_rate(rng, p, design.icc)).collect()
    })
}

/// The group-sequential test a simulated run with output rounds starts
/// from (its design's boundaries computed once, to be cloned per run):
/// `design.inputs` × up to [`max_outputs`] rounds, standing for the fixed
/// run of `design.m`.
pub fn output_rounds_test(
    checks: &[CheckInfo],
    design: &SimDesign,
) -> Result<SequentialTest, StatsError> {
    let rounds = max_outputs(design.inputs, design.m, checks, design.confidence)?;
    let mut test = SequentialTest::new(checks, design.confidence, design.inputs, rounds)?
        .with_output_rounds()?
        .with_fixed_outputs(design.m);
    if !design.futility {
        test = test.without_futility();
    }
    Ok(test)
}

/// [`simulate_output_rounds`] from `test` ([`output_rounds_test`] of the
/// same `design`), with the inputs' rates drawn by `draw(rng, p, n)` (for
/// input difficulty that is not Beta: [`mixture_rates`]).
pub fn simulate_output_rounds_with(
    rng: &mut StdRng,
    rates: &[f64],
    test: &SequentialTest,
    design: &SimDesign,
    draw: impl Fn(&mut StdRng, f64, usize) -> Vec<f64>,
) -> Result<SimRun, StatsError> {
    let n = design.inputs as usize;
    let m = design.m as usize;
    let rounds = test.max_rounds() as usize;
    // outputs[k][j][i]: check k, output j of input i.
    let mut true_means = Vec::with_capacity(rates.len());
    let outputs: Vec<Vec<Vec<f64>>> = rates
        .iter()
        .map(|&p| {
            let pi = draw(rng, p, n);
            true_means.push(pi.iter().sum::<f64>() / n.max(1) as f64);
            (0..rounds)
                .map(|_| {
                    pi.iter()
                        .map(|&q| f64::from(u8::from(rng.gen::<f64>() < q)))
                        .collect()
                })
                .collect()
        })
        .collect();
    let mut test = test.clone();
    let mut j = 0;
    let stop = loop {
        let round: Vec<Vec<f64>> = outputs.iter().map(|o| o[j].clone()).collect();
        test.observe_outputs(&round)?;
        j += 1;
        if let Some(stop) = test.decide() {
            break stop;
        }
    };
    let passes = outputs
        .iter()
        .map(|o| {
            (0..n)
                .map(|i| o[..m].iter().map(|row| row[i] as u64).sum())
                .collect()
        })
        .collect();
    Ok(SimRun {
        stop,
        inputs: design.inputs,
        samples: j as u64 * design.inputs,
        states: test.states().into_iter().map(|(s, _)| s).collect(),
        passes,
        true_means,
    })
}

/// `n` inputs' rates from a two-point mixture: each input is hard (rate
/// `hard_rate`) with probability `hard_share`, else easy (`easy_rate`) —
/// the shape of input difficulty users meet (most inputs easy, a few
/// hard), which no Beta has.
pub fn mixture_rates(
    rng: &mut StdRng,
    n: usize,
    hard_share: f64,
    hard_rate: f64,
    easy_rate: f64,
) -> Vec<f64> {
    (0..n)
        .map(|_| {
            if rng.gen::<f64>() < hard_share {
                hard_rate
            } else {
                easy_rate
            }
        })
        .collect()
}

/// Checks named "check 1", … with minimums `thresholds` (for simulations).
pub fn sim_checks(thresholds: &[f64]) -> Vec<CheckInfo> {
    thresholds
        .iter()
        .enumerate()
        .map(|(k, &t)| CheckInfo {
            name: format!("check {}", k + 1),
            message: String::new(),
            minimum_success_percentage: t,
            weight: 1.0,
            kind: Default::default(),
        })
        .collect()
}

/// The fixed-size run's verdicts on every input of `passes` (per check,
/// passes per input of `m` outputs): the default clustered interval
/// (beta-binomial score, `crates/core/STATISTICS.md`) at `confidence`,
/// judged three-way (pass iff lower ≥ threshold, fail iff upper <
/// threshold) — what the fixed-size analysis establishes.
pub fn fixed_verdicts(
    passes: &[Vec<u64>],
    m: u64,
    thresholds: &[f64],
    confidence: f64,
) -> Result<Vec<ThresholdVerdict>, StatsError> {
    passes
        .iter()
        .zip(thresholds)
        .map(|(xs, &t)| {
            let clusters: Vec<ClusterSum> = xs
                .iter()
                .map(|&x| ClusterSum::from_passes(x, m))
                .collect::<Result<_, _>>()?;
            let pass: u64 = xs.iter().sum();
            let counts = Counts {
                pass,
                fail: xs.len() as u64 * m - pass,
                ..Counts::default()
            };
            let rate = RateEstimate::try_clustered(
                &clusters,
                counts,
                confidence,
                IntervalMethod::Wilson,
                ClusterMethod::default(),
            )?;
            Ok(judge(
                &rate,
                t,
                VerdictMode::ThreeWay,
                IntervalMethod::Wilson,
            ))
        })
        .collect()
}
