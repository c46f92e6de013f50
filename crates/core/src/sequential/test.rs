//! The sequential test of a run's K checks ([`SequentialTest`]): the
//! seeded input order, rounds, each input's observation and the stop
//! rules (module docs of [`crate::sequential`]).

use crate::stats::sequential::{projected_observations, BettingSequence};
use crate::stats::sequential_group::{max_rounds, GroupSequential};
use crate::stats::{Decision, ErrorPolicy, NotEstablished, StatsError};
use crate::summary::sequential::{
    CheckSequence, RoundDesign, SequenceState, SequentialOutcome, StopReason,
};
use crate::summary::{CheckInfo, Summary};
use crate::tensor::{Cell, ReliabilityTensor};

/// Inputs in the smallest round.
pub const MIN_ROUND_INPUTS: usize = 5;

/// Inputs observed before a check may be declared futile.
pub const FUTILITY_MIN_INPUTS: u64 = 10;

/// Output rounds observed before a check may be declared futile.
pub const FUTILITY_MIN_OUTPUT_ROUNDS: u64 = 2;

/// Runs of at most this many inputs use output rounds
/// ([`RoundDesign::Outputs`]); more inputs, input rounds.
pub const OUTPUT_ROUNDS_MAX_INPUTS: u64 = 100;

/// The design a sequential run of `n` inputs uses.
pub fn design_for(n: u64) -> RoundDesign {
    if n <= OUTPUT_ROUNDS_MAX_INPUTS {
        RoundDesign::Outputs
    } else {
        RoundDesign::Inputs
    }
}

/// Outputs per input a sequential run of `n` inputs samples at most when
/// the fixed run it stands for has `m`: `m` with input rounds; with output
/// rounds the group-sequential design's rounds
/// ([`max_rounds`](crate::stats::sequential_group::max_rounds), the most
/// over `checks`): a few more than `m` (at most 20 % on the issue-35 grid
/// at 0.95, up to 40 % for M ≥ 10 at minimums from 0.5 to 0.99), so that the run's chance of
/// establishing a verdict is at least the fixed run's (the price of looking
/// early, paid only by runs that no look settles).
pub fn max_outputs(
    n: u64,
    m: u64,
    checks: &[CheckInfo],
    confidence: f64,
) -> Result<u64, StatsError> {
    if design_for(n) == RoundDesign::Inputs {
        return Ok(m);
    }
    let mut most = m;
    for c in checks {
        most = most.max(max_rounds(confidence, c.minimum_success_percentage, n, m)?);
    }
    Ok(most)
}

/// A seeded random order of `n` inputs (Fisher–Yates with SplitMix64, so
/// the order depends on the seed alone and `--resume` replays it).
pub fn input_order(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The end (exclusive position in the input order) of the round starting
/// at `position` of `n`: at least [`MIN_ROUND_INPUTS`] inputs, at least
/// enough inputs to keep `concurrency` calls busy (⌈concurrency / M⌉), and
/// a tenth of the inputs already sampled (rounds grow).
pub fn round_end(position: usize, n: usize, m: usize, concurrency: usize) -> usize {
    let busy = concurrency.div_ceil(m.max(1));
    let size = MIN_ROUND_INPUTS.max(busy).max(position / 10);
    (position + size).min(n)
}

/// Input `i`'s observation for check `k`: its share of passes over its
/// judged outputs (`errors` decides whether an error is a judged failure
/// or excluded); `None` when it has no judged output.
pub fn input_share(t: &ReliabilityTensor, i: usize, k: usize, errors: ErrorPolicy) -> Option<f64> {
    let (mut pass, mut judged) = (0u64, 0u64);
    for j in 0..t.repetitions() {
        match t.get(i, j, k) {
            Some(Cell::Pass) => {
                pass += 1;
                judged += 1;
            }
            Some(Cell::Fail) => judged += 1,
            Some(Cell::Error) if errors == ErrorPolicy::AsFailure => judged += 1,
            _ => {}
        }
    }
    (judged > 0).then(|| pass as f64 / judged as f64)
}

/// The sequential test of K checks: one confidence sequence each.
#[derive(Debug, Clone)]
pub struct SequentialTest {
    checks: Vec<(String, f64)>,
    sequences: Vec<BettingSequence>,
    confidence: f64,
    budget_inputs: u64,
    m: u64,
    /// Inputs fed (input rounds).
    inputs: u64,
    rounds: u64,
    /// Whether the futility rule may stop the test.
    futility: bool,
    design: RoundDesign,
    /// Output rounds fed (output rounds).
    output_rounds: u64,
    /// With output rounds: each check's group-sequential test (the
    /// betting sequences are then unused).
    groups: Vec<GroupSequential>,
    /// The fixed run's outputs per input the design stands for (output
    /// rounds; `m` is then the design's maximum).
    fixed_outputs: Option<u64>,
}

impl SequentialTest {
    /// A test of `checks` at `confidence` with a budget of `budget_inputs`
    /// inputs of `m` outputs each.
    pub fn new(
        checks: &[CheckInfo],
        confidence: f64,
        budget_inputs: u64,
        m: u64,
    ) -> Result<Self, StatsError> {
        let mut sequences = Vec::with_capacity(checks.len());
        for c in checks {
            crate::stats::error::check_threshold(c.minimum_success_percentage)?;
            sequences.push(BettingSequence::new(
                confidence,
                &[c.minimum_success_percentage],
            )?);
        }
        Ok(SequentialTest {
            checks: checks
                .iter()
                .map(|c| (c.name.clone(), c.minimum_success_percentage))
                .collect(),
            sequences,
            confidence,
            budget_inputs,
            m,
            inputs: 0,
            rounds: 0,
            futility: true,
            design: RoundDesign::Inputs,
            output_rounds: 0,
            groups: Vec::new(),
            fixed_outputs: None,
        })
    }

    /// The test with output rounds ([`RoundDesign::Outputs`]): feed
    /// [`SequentialTest::observe_outputs`], one round at a time. Each
    /// check gets a group-sequential test
    /// ([`GroupSequential`], exact binomial boundaries, linear alpha
    /// spending) over at most `m` rounds of `budget_inputs` outputs — `m`
    /// being the design's maximum ([`max_outputs`] of the fixed run's M).
    /// To be called before any observation.
    pub fn with_output_rounds(mut self) -> Result<Self, StatsError> {
        self.design = RoundDesign::Outputs;
        self.groups = self
            .checks
            .iter()
            .map(|(_, t)| GroupSequential::new(self.confidence, *t, self.budget_inputs, self.m))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Record the fixed run's outputs per input that this design's
    /// maximum stands for (reported beside the maximum).
    pub fn with_fixed_outputs(mut self, m: u64) -> Self {
        self.fixed_outputs = Some(m);
        self
    }

    /// Rounds at most: output rounds per input, or inputs.
    pub fn max_rounds(&self) -> u64 {
        match self.design {
            RoundDesign::Outputs => self.m,
            RoundDesign::Inputs => self.budget_inputs,
        }
    }

    /// The round design.
    pub fn design(&self) -> RoundDesign {
        self.design
    }

    /// Feed one output round: per check, the judged outputs of the round
    /// (1 pass, 0 fail), one per input at most, to its group-sequential
    /// test (a share ≥ ½ counts as a pass).
    pub fn observe_outputs(&mut self, outputs: &[Vec<f64>]) -> Result<(), StatsError> {
        for (g, xs) in self.groups.iter_mut().zip(outputs) {
            if let Some(&bad) = xs.iter().find(|x| !(0.0..=1.0).contains(*x)) {
                return Err(StatsError::Rate(bad));
            }
            let passes = xs.iter().filter(|&&x| x >= 0.5).count() as u64;
            g.observe_round(passes, xs.len() as u64)?;
        }
        self.output_rounds += 1;
        self.inputs = self.budget_inputs;
        Ok(())
    }

    /// Feed output round `j` of `t` (output j of every input, every check).
    pub fn observe_output_round(
        &mut self,
        t: &ReliabilityTensor,
        j: usize,
        errors: ErrorPolicy,
    ) -> Result<(), StatsError> {
        let outputs: Vec<Vec<f64>> = (0..self.sequences.len())
            .map(|k| {
                (0..t.inputs())
                    .filter_map(|i| match t.get(i, j, k) {
                        Some(Cell::Pass) => Some(1.0),
                        Some(Cell::Fail) => Some(0.0),
                        Some(Cell::Error) if errors == ErrorPolicy::AsFailure => Some(0.0),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        self.observe_outputs(&outputs)
    }

    /// The test without the futility rule: it stops when settled or when
    /// the budget is spent (futile checks are still reported as such).
    pub fn without_futility(mut self) -> Self {
        self.futility = false;
        self
    }

    /// Feed one input: its observation per check (`None`: nothing judged,
    /// it contributes nothing to that check).
    pub fn observe(&mut self, shares: &[Option<f64>]) -> Result<(), StatsError> {
        for (s, x) in self.sequences.iter_mut().zip(shares) {
            if let Some(x) = x {
                s.observe(*x)?;
            }
        }
        self.inputs += 1;
        Ok(())
    }

    /// Feed input `i` of `t` (every check).
    pub fn observe_input(
        &mut self,
        t: &ReliabilityTensor,
        i: usize,
        errors: ErrorPolicy,
    ) -> Result<(), StatsError> {
        let shares: Vec<Option<f64>> = (0..self.sequences.len())
            .map(|k| input_share(t, i, k, errors))
            .collect();
        self.observe(&shares)
    }

    /// Inputs fed so far.
    pub fn inputs(&self) -> u64 {
        self.inputs
    }

    /// Each check's state now.
    pub fn states(&self) -> Vec<(SequenceState, Option<u64>)> {
        (0..self.sequences.len()).map(|k| self.state(k)).collect()
    }

    fn state(&self, k: usize) -> (SequenceState, Option<u64>) {
        if let Some(g) = self.groups.get(k) {
            return self.group_state(g);
        }
        let s = &self.sequences[k];
        let threshold = self.checks[k].1;
        let iv = s.interval();
        let seen = s.observations();
        let done = match self.design {
            RoundDesign::Inputs => self.inputs,
            RoundDesign::Outputs => self.output_rounds,
        };
        if iv.lower >= threshold {
            return (SequenceState::Pass, Some(done));
        }
        if iv.upper < threshold {
            return (SequenceState::Fail, Some(done));
        }
        // Units: inputs (input rounds) or output rounds; observations per
        // unit: 1 judged input, or the judged outputs of a round.
        let (units, budget) = match self.design {
            RoundDesign::Inputs => (self.inputs, self.budget_inputs),
            RoundDesign::Outputs => (self.output_rounds, self.m),
        };
        let limit = budget.saturating_mul(10);
        // Units without a judged observation contribute nothing: project
        // on the observations per unit that did.
        let judged_share = if units == 0 {
            1.0
        } else {
            (seen as f64 / units as f64).max(1e-6)
        };
        let variance = s.sample_variance().max(1e-4);
        let project = |mean: f64| {
            let above = mean > threshold;
            projected_observations(
                s.alpha(),
                s.cap(),
                mean,
                variance,
                threshold,
                seen,
                s.ln_capital_at(threshold, above).unwrap_or(0.0),
                (limit as f64 * judged_share).ceil() as u64,
            )
            .map(|obs| (obs as f64 / judged_share).ceil() as u64)
            .filter(|&n| n <= limit)
        };
        // What the current estimate needs (reported) ...
        let needed = project(s.mean());
        // ... and, for the futility rule, what an estimate two standard
        // errors further from the threshold would need: a check is futile
        // only when even that does not settle within the budget.
        let se = 2.0 * (variance / seen.max(1) as f64).sqrt();
        let optimistic = if s.mean() >= threshold {
            (s.mean() + se).min(1.0)
        } else {
            (s.mean() - se).max(0.0)
        };
        let enough = match self.design {
            RoundDesign::Inputs => seen >= FUTILITY_MIN_INPUTS,
            RoundDesign::Outputs => units >= FUTILITY_MIN_OUTPUT_ROUNDS,
        };
        // A check that cannot settle on its estimate's side even if every
        // output still to come is favourable is futile for certain, from
        // the first round (the projection below, too, looks only to the
        // estimate's side).
        let (batch, rounds) = match self.design {
            RoundDesign::Inputs => (1, budget.saturating_sub(units) as usize),
            RoundDesign::Outputs => (
                self.budget_inputs as usize,
                budget.saturating_sub(units) as usize,
            ),
        };
        let reachable = s.could_settle(threshold, s.mean() >= threshold, batch, rounds);
        let futile = !reachable || (enough && project(optimistic).is_none_or(|n| n > budget));
        let state = if futile {
            SequenceState::Futile
        } else {
            SequenceState::Open
        };
        (state, needed)
    }

    /// A group-sequential check's state: established at a boundary;
    /// futile only when no later look can establish either verdict even
    /// if every output still to come favours it (exact curtailment: it
    /// never costs a verdict the design would reach); the rounds at which
    /// the current share is projected to settle it.
    fn group_state(&self, g: &GroupSequential) -> (SequenceState, Option<u64>) {
        match g.verdict() {
            Some(true) => return (SequenceState::Pass, Some(g.looks())),
            Some(false) => return (SequenceState::Fail, Some(g.looks())),
            None => {}
        }
        let state = if g.could_settle() {
            SequenceState::Open
        } else {
            SequenceState::Futile
        };
        (state, g.projected_rounds())
    }

    /// After a round of inputs: stop, and why, or go on (`None`).
    /// Settled when every check is established; futile when every check
    /// not established is futile (stopping at the first futile check
    /// would abandon checks that can still settle); budget spent when
    /// every input was fed.
    pub fn decide(&mut self) -> Option<StopReason> {
        self.rounds += 1;
        let states = self.states();
        let settled = |s: &SequenceState| matches!(s, SequenceState::Pass | SequenceState::Fail);
        if states.iter().all(|(s, _)| settled(s)) {
            return Some(StopReason::Settled);
        }
        let spent = match self.design {
            RoundDesign::Inputs => self.inputs >= self.budget_inputs,
            RoundDesign::Outputs => self.output_rounds >= self.m,
        };
        if spent {
            return Some(StopReason::BudgetSpent);
        }
        if self.futility
            && states
                .iter()
                .all(|(s, _)| settled(s) || *s == SequenceState::Futile)
        {
            return Some(StopReason::Futile);
        }
        None
    }

    /// The outcome now: `stop` as decided (`None` when interrupted),
    /// `samples` taken, `seed` of the order.
    pub fn outcome(&self, stop: Option<StopReason>, samples: u64, seed: u64) -> SequentialOutcome {
        let checks = self
            .checks
            .iter()
            .zip(&self.sequences)
            .zip(self.states())
            .enumerate()
            .map(|(k, (((name, threshold), s), (state, needed)))| {
                let (iv, estimate) = match self.groups.get(k) {
                    Some(g) => {
                        let (pass, judged) = g.counts();
                        (g.interval(), pass as f64 / judged.max(1) as f64)
                    }
                    None => (s.interval(), s.mean()),
                };
                let (inputs, needed_inputs, needed_outputs) = match self.design {
                    RoundDesign::Inputs => (s.observations(), needed, None),
                    RoundDesign::Outputs => (self.budget_inputs, None, needed),
                };
                CheckSequence {
                    name: name.clone(),
                    threshold: *threshold,
                    estimate,
                    lower: iv.lower,
                    upper: iv.upper,
                    inputs,
                    state,
                    needed_inputs,
                    needed_outputs,
                }
            })
            .collect();
        SequentialOutcome {
            seed,
            design: self.design,
            stop,
            inputs: self.inputs,
            samples,
            budget_inputs: self.budget_inputs,
            budget_samples: self.budget_inputs * self.m,
            rounds: self.rounds,
            confidence: self.confidence,
            checks,
            fixed_samples: self.fixed_outputs.map(|m| m * self.budget_inputs),
        }
    }
}

impl Summary {
    /// The summary of a sequential run: each check's verdict comes from
    /// its confidence sequence (a fixed-size interval is not valid after
    /// optional stopping) and its rate's interval is the sequence's.
    /// Established pass iff lower ≥ threshold, fail iff upper < threshold;
    /// otherwise not established, and the decision follows the verdict
    /// mode (point: p̂ against the threshold; lower-bound: fail; three-way:
    /// inconclusive). `samples_needed` is the projected inputs × M.
    pub fn with_sequential(mut self, outcome: &SequentialOutcome) -> Summary {
        use crate::stats::VerdictMode;
        let m = self.shape.1 as u64;
        for (c, s) in self.checks.iter_mut().zip(&outcome.checks) {
            let (decision, established) = match s.state {
                SequenceState::Pass => (Decision::Pass, true),
                SequenceState::Fail => (Decision::Fail, true),
                _ => (
                    match self.options.verdict {
                        VerdictMode::Point if c.rate.estimate >= s.threshold => Decision::Pass,
                        VerdictMode::Point | VerdictMode::LowerBound => Decision::Fail,
                        VerdictMode::ThreeWay => Decision::Inconclusive,
                    },
                    false,
                ),
            };
            c.verdict.decision = decision;
            c.verdict.established = established;
            let n = self.shape.0 as u64;
            c.verdict.samples_needed = match outcome.design {
                RoundDesign::Inputs => s.needed_inputs.map(|k| k.saturating_mul(m)),
                RoundDesign::Outputs => s.needed_outputs.map(|k| k.saturating_mul(n)),
            };
            let why = match (s.state, outcome.stop) {
                (_, _) if s.inputs == 0 => NotEstablished::NothingObserved,
                (SequenceState::Futile, Some(StopReason::Futile)) => NotEstablished::Futile {
                    inputs_needed: s.needed_inputs,
                    outputs_needed: s.needed_outputs,
                },
                (_, Some(StopReason::BudgetSpent)) => NotEstablished::BudgetSpent {
                    inputs_needed: s.needed_inputs,
                    outputs_needed: s.needed_outputs,
                },
                _ => NotEstablished::Straddles {
                    lower: s.lower,
                    upper: s.upper,
                    samples_needed: c.verdict.samples_needed,
                },
            };
            c.verdict.why_not = (!established).then_some(why);
            c.rate.interval.lower = s.lower;
            c.rate.interval.upper = s.upper;
            // The sequence's interval needs no design effect, and the
            // fixed-sample one is not valid after an early stop: the rate
            // shows neither (issue 35 item 5). Outputs the run never
            // sampled are not missing answers: the sequential section
            // counts samples against the budget instead.
            c.rate.design_effect = 1.0;
            c.rate.effective_n = c.rate.n as f64;
            c.rate.counts.missing = 0;
            if outcome.design == RoundDesign::Outputs {
                // The sequence is about these inputs (output rounds).
                c.rate.scope = crate::stats::Scope::TheseInputs;
            }
        }
        // The aggregate likewise: after an early stop no design effect is
        // shown for it, and unsampled outputs are not missing answers.
        let a = &mut self.aggregate;
        for r in std::iter::once(&mut a.rate).chain(a.per_validator.iter_mut()) {
            r.design_effect = 1.0;
            r.effective_n = r.n as f64;
            r.counts.missing = 0;
        }
        self.sequential = Some(outcome.clone());
        self
    }
}

/// A sequential run read back from its tensor `t` — with output rounds
/// (at most [`OUTPUT_ROUNDS_MAX_INPUTS`] inputs) the rounds j = 0, 1, … whose
/// output j of every input is recorded; otherwise the inputs of
/// `input_order(N, seed)` whose M cells are all recorded, up to the first
/// that is not, fed in that order, then the stop rules applied once (one
/// round). For a run whose outcome was not stored (killed before it
/// finished) or whose outputs were re-checked with other checks
/// (`probity revalidate`): a confidence sequence is valid at any stopping
/// time of the outputs' history, so it may be read at the end of all the
/// inputs the run sampled. `stop` is the rule that holds there, `None`
/// when none does.
pub fn replay(
    t: &ReliabilityTensor,
    checks: &[CheckInfo],
    confidence: f64,
    errors: ErrorPolicy,
    seed: u64,
) -> Result<SequentialOutcome, StatsError> {
    let (n, m, _) = t.shape();
    let mut test = SequentialTest::new(checks, confidence, n as u64, m as u64)?;
    if design_for(n as u64) == RoundDesign::Outputs {
        // Output rounds: output j of every input, while recorded.
        test = test.with_output_rounds()?;
        let recorded =
            |j: usize| (0..n).all(|i| !matches!(t.get(i, j, 0), Some(Cell::Missing) | None));
        let mut rounds = 0u64;
        for j in (0..m).take_while(|&j| recorded(j)) {
            test.observe_output_round(t, j, errors)?;
            rounds += 1;
        }
        let stop = if rounds > 0 { test.decide() } else { None };
        return Ok(test.outcome(stop, rounds * n as u64, seed));
    }
    let complete = |i: usize| (0..m).all(|j| !matches!(t.get(i, j, 0), Some(Cell::Missing) | None));
    for i in input_order(n, seed)
        .into_iter()
        .take_while(|&i| complete(i))
    {
        test.observe_input(t, i, errors)?;
    }
    let stop = if test.inputs() > 0 {
        test.decide()
    } else {
        None
    };
    Ok(test.outcome(stop, test.inputs() * m as u64, seed))
}
