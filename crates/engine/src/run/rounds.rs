//! The rounds of a sequential run (`[experiment] sequential`): which cells
//! the runner asks for next, and when it stops. The statistics are the
//! core's (`probity_core::sequential`); this holds the run's place in its
//! seeded input order.
//!
//! With more than `OUTPUT_ROUNDS_MAX_INPUTS` inputs a round is the next
//! inputs of the order (`round_end`), each with all M outputs; with fewer,
//! a round is one more output of every input (`RoundDesign::Outputs`, a
//! claim about these inputs: `crates/core/STATISTICS.md`). When every cell of a round is recorded, its inputs are fed to
//! the checks' confidence sequences *in the order's sequence* (not in the
//! order calls completed, which depends on the outcomes), and the stop
//! rules are applied. Cells already stored (`--resume`) are not asked for
//! again: rounds they complete are fed at once, so a resumed run replays
//! the same sequence and continues it.

use crate::run::experiment::Experiment;
use probity_core::sequential::{
    design_for, input_order, max_outputs, round_end, RoundDesign, SequentialOutcome,
    SequentialTest, StopReason,
};
use probity_core::stats::{ErrorPolicy, StatsError};
use probity_core::{CheckInfo, ReliabilityTensor};

/// Outputs per input the run of `experiment` samples at most (its
/// tensor's M): `outputs_per_input`, or for a sequential run with output
/// rounds the group-sequential design's maximum
/// (`probity_core::sequential::max_outputs`, a few more outputs per input, so that its
/// chance of a verdict is at least the fixed run's; its reports say so).
pub(crate) fn run_outputs(experiment: &Experiment) -> usize {
    let m = experiment.outputs_per_input;
    if experiment.sequential.is_none() {
        return m;
    }
    max_outputs(
        experiment.inputs.len() as u64,
        m as u64,
        &experiment.check_infos(),
        experiment.analysis.options.confidence,
    )
    .map_or(m, |k| k as usize)
}

/// What to do after a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Ask for these cells (`i · M + j`), the rest of the next round.
    Cells(Vec<usize>),
    /// Stop sampling.
    Stop(StopReason),
}

/// A sequential run's place in its input order.
pub(crate) struct Rounds {
    test: SequentialTest,
    order: Vec<usize>,
    seed: u64,
    m: usize,
    concurrency: usize,
    errors: ErrorPolicy,
    /// Inputs of the order fed to the sequences.
    fed: usize,
    /// Cells of the round asked for and not yet recorded.
    outstanding: usize,
    stop: Option<StopReason>,
}

impl Rounds {
    /// The rounds of `n` inputs × at most `m` outputs ([`run_outputs`])
    /// judged by `checks`, in the order of `seed`; `fixed_m`: the
    /// configured outputs per input, which the design stands for.
    pub(crate) fn new(
        checks: &[CheckInfo],
        confidence: f64,
        errors: ErrorPolicy,
        (n, m, fixed_m): (usize, usize, usize),
        concurrency: usize,
        seed: u64,
    ) -> Result<Self, StatsError> {
        let mut test = SequentialTest::new(checks, confidence, n as u64, m as u64)?;
        if design_for(n as u64) == RoundDesign::Outputs {
            test = test
                .with_output_rounds()?
                .with_fixed_outputs(fixed_m as u64);
        }
        Ok(Rounds {
            test,
            order: input_order(n, seed),
            seed,
            m,
            concurrency,
            errors,
            fed: 0,
            outstanding: 0,
            stop: None,
        })
    }

    /// Feed every round whose cells are all recorded (`done`, in `t`) and
    /// apply the stop rules after each; the cells of the next round still
    /// to ask for, or why to stop.
    pub(crate) fn advance(
        &mut self,
        t: &ReliabilityTensor,
        done: &[bool],
    ) -> Result<Next, StatsError> {
        if let Some(stop) = self.stop {
            return Ok(Next::Stop(stop));
        }
        let (n, m) = (self.order.len(), self.m);
        if self.test.design() == RoundDesign::Outputs {
            return self.advance_outputs(t, done);
        }
        loop {
            let end = round_end(self.fed, n, m, self.concurrency);
            let missing: Vec<usize> = self.order[self.fed..end]
                .iter()
                .flat_map(|&i| (0..m).map(move |j| i * m + j))
                .filter(|&c| !done.get(c).copied().unwrap_or(true))
                .collect();
            if !missing.is_empty() {
                self.outstanding = missing.len();
                return Ok(Next::Cells(missing));
            }
            for &i in &self.order[self.fed..end] {
                self.test.observe_input(t, i, self.errors)?;
            }
            self.fed = end;
            if let Some(stop) = self.test.decide() {
                self.stop = Some(stop);
                return Ok(Next::Stop(stop));
            }
        }
    }

    /// [`Rounds::advance`] with output rounds: round j is output j of
    /// every input (`self.fed` counts the rounds fed).
    fn advance_outputs(
        &mut self,
        t: &ReliabilityTensor,
        done: &[bool],
    ) -> Result<Next, StatsError> {
        let (n, m) = (self.order.len(), self.m);
        loop {
            let j = self.fed;
            let missing: Vec<usize> = (0..n)
                .map(|i| i * m + j)
                .filter(|&c| !done.get(c).copied().unwrap_or(true))
                .collect();
            if !missing.is_empty() {
                self.outstanding = missing.len();
                return Ok(Next::Cells(missing));
            }
            self.test.observe_output_round(t, j, self.errors)?;
            self.fed += 1;
            if let Some(stop) = self.test.decide() {
                self.stop = Some(stop);
                return Ok(Next::Stop(stop));
            }
        }
    }

    /// One asked-for cell was recorded; `true` when that completes the
    /// round (call [`Rounds::advance`]).
    pub(crate) fn recorded(&mut self) -> bool {
        self.outstanding = self.outstanding.saturating_sub(1);
        self.outstanding == 0
    }

    /// Why it stopped, if it did.
    pub(crate) fn stop(&self) -> Option<StopReason> {
        self.stop
    }

    /// The outcome so far: `samples` taken in all (every session).
    pub(crate) fn outcome(&self, samples: u64) -> SequentialOutcome {
        self.test.outcome(self.stop, samples, self.seed)
    }
}
