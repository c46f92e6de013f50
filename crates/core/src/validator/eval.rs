//! Parallel evaluation of K validators over samples: the validator columns
//! `k` of the reliability tensor `R[i][j][k]` (paper §3.1, §3.6).
//!
//! [`evaluate_all`] does a whole batch at once. For streaming (samples
//! arriving from a model as they complete), build one [`Evaluator`] and feed
//! it chunks with [`Evaluator::evaluate_chunk`] or
//! [`Evaluator::evaluate_stream`]: each input is converted for expressions
//! at most once for the evaluator's lifetime, whichever chunk its outputs
//! arrive in. Validators are pure, so results do not depend on chunking or
//! on the number of threads.

use super::check::Validator;
use super::expr::on_eval_stack;
use super::prepared::PreparedInput;
use crate::model::{Input, Sample};
use crate::verdict::Verdict;
use rayon::prelude::*;

/// Samples per rayon task: small enough to balance, large enough that the
/// scheduling cost is negligible next to cheap checks.
const MIN_SAMPLES_PER_TASK: usize = 32;

/// Evaluates a fixed list of validators against samples of a fixed list of
/// inputs, in parallel (rayon), in chunks or all at once.
pub struct Evaluator<'a> {
    validators: &'a [Validator],
    inputs: Vec<PreparedInput<'a>>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator for `validators` over `inputs` (indexed by
    /// [`Sample::input`]).
    pub fn new(validators: &'a [Validator], inputs: &'a [Input]) -> Self {
        Evaluator {
            validators,
            inputs: inputs.iter().map(PreparedInput::new).collect(),
        }
    }

    /// The verdicts of every validator, in order, on one sample. A sample
    /// whose `input` index is out of range gets an `Error` from every
    /// validator.
    pub fn evaluate_sample(&self, sample: &Sample) -> Vec<Verdict> {
        match self.inputs.get(sample.input) {
            Some(input) => self
                .validators
                .iter()
                .map(|v| v.evaluate_prepared(input, &sample.output))
                .collect(),
            None => {
                let reason = format!(
                    "sample refers to input {}, but there are only {} inputs",
                    sample.input,
                    self.inputs.len()
                );
                vec![Verdict::error(reason); self.validators.len()]
            }
        }
    }

    /// Verdicts for a chunk of samples, in parallel: outer index = sample
    /// (in the chunk's order), inner = validator (in order).
    pub fn evaluate_chunk(&self, samples: &[Sample]) -> Vec<Vec<Verdict>> {
        // On the evaluation pool (large stacks, see `on_eval_stack`).
        on_eval_stack(|| {
            samples
                .par_iter()
                .with_min_len(MIN_SAMPLES_PER_TASK)
                .map(|s| self.evaluate_sample(s))
                .collect()
        })
    }

    /// The same as [`evaluate_chunk`](Self::evaluate_chunk) on one thread.
    pub fn evaluate_sequential(&self, samples: &[Sample]) -> Vec<Vec<Verdict>> {
        samples.iter().map(|s| self.evaluate_sample(s)).collect()
    }

    /// Pull samples from `samples`, `chunk_size` at a time (at least 1),
    /// evaluate each chunk in parallel and hand it with its verdicts to
    /// `on_chunk` before pulling the next. Verdicts are in the order of the
    /// samples, as in [`evaluate_chunk`](Self::evaluate_chunk).
    pub fn evaluate_stream<I, F>(&self, samples: I, chunk_size: usize, mut on_chunk: F)
    where
        I: IntoIterator<Item = Sample>,
        F: FnMut(&[Sample], Vec<Vec<Verdict>>),
    {
        let chunk_size = chunk_size.max(1);
        let mut buf = Vec::with_capacity(chunk_size);
        for s in samples {
            buf.push(s);
            if buf.len() == chunk_size {
                let verdicts = self.evaluate_chunk(&buf);
                on_chunk(&buf, verdicts);
                buf.clear();
            }
        }
        if !buf.is_empty() {
            let verdicts = self.evaluate_chunk(&buf);
            on_chunk(&buf, verdicts);
        }
    }
}

/// Every validator on every sample, in parallel: `result[s][k]` is the
/// verdict of `validators[k]` on `samples[s]` (paper §3.1: K validators on
/// each output). A sample whose `input` is not an index of `inputs` gets
/// `Error` verdicts; nothing panics.
pub fn evaluate_all(
    validators: &[Validator],
    inputs: &[Input],
    samples: &[Sample],
) -> Vec<Vec<Verdict>> {
    Evaluator::new(validators, inputs).evaluate_chunk(samples)
}
