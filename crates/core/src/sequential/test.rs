//! The sequential test of a run's K checks ([`SequentialTest`]): the
//! seeded input order, rounds, each input's observation and the stop
//! rules (module docs of [`crate::sequential`]).

use crate::sequential::outcome::{CheckSequence, SequenceState, SequentialOutcome, StopReason};
use crate::stats::sequential::{projected_observations, BettingSequence};
use crate::stats::{Decision, ErrorPolicy, NotEstablished, StatsError};
use crate::summary::{CheckInfo, Summary};
use crate::tensor::{Cell, ReliabilityTensor};

/// Inputs in the smallest round.
pub const MIN_ROUND_INPUTS: usize = 5;

/// Inputs observed before a check may be declared futile.
pub const FUTILITY_MIN_INPUTS: u64 = 10;

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
    /// Inputs fed.
    inputs: u64,
    rounds: u64,
    /// Whether the futility rule may stop the test.
    futility: bool,
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
        })
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
        let s = &self.sequences[k];
        let threshold = self.checks[k].1;
        let iv = s.interval();
        let seen = s.observations();
        if iv.lower >= threshold {
            return (SequenceState::Pass, Some(self.inputs));
        }
        if iv.upper < threshold {
            return (SequenceState::Fail, Some(self.inputs));
        }
        let limit = self.budget_inputs.saturating_mul(10);
        // Inputs without a judged output contribute nothing: project on
        // the share that did.
        let judged_share = if self.inputs == 0 {
            1.0
        } else {
            (seen as f64 / self.inputs as f64).max(1e-6)
        };
        let variance = s.sample_variance().max(1e-4);
        let project = |mean: f64| {
            let above = mean > threshold;
            projected_observations(
                s.alpha(),
                mean,
                variance,
                threshold,
                seen,
                s.ln_capital_at(threshold, above).unwrap_or(0.0),
                limit,
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
        let futile = seen >= FUTILITY_MIN_INPUTS
            && project(optimistic).is_none_or(|n| n > self.budget_inputs);
        let state = if futile {
            SequenceState::Futile
        } else {
            SequenceState::Open
        };
        (state, needed)
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
        if self.inputs >= self.budget_inputs {
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
            .map(|(((name, threshold), s), (state, needed))| {
                let iv = s.interval();
                CheckSequence {
                    name: name.clone(),
                    threshold: *threshold,
                    estimate: s.mean(),
                    lower: iv.lower,
                    upper: iv.upper,
                    inputs: s.observations(),
                    state,
                    needed_inputs: needed,
                }
            })
            .collect();
        SequentialOutcome {
            seed,
            stop,
            inputs: self.inputs,
            samples,
            budget_inputs: self.budget_inputs,
            budget_samples: self.budget_inputs * self.m,
            rounds: self.rounds,
            confidence: self.confidence,
            checks,
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
            c.verdict.samples_needed = s.needed_inputs.map(|n| n.saturating_mul(m));
            let why = match (s.state, outcome.stop) {
                (_, _) if s.inputs == 0 => NotEstablished::NothingObserved,
                (SequenceState::Futile, Some(StopReason::Futile)) => NotEstablished::Futile {
                    inputs_needed: s.needed_inputs,
                },
                (_, Some(StopReason::BudgetSpent)) => NotEstablished::BudgetSpent {
                    inputs_needed: s.needed_inputs,
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
        }
        self.sequential = Some(outcome.clone());
        self
    }
}

/// A sequential run read back from its tensor `t`: the inputs of
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
