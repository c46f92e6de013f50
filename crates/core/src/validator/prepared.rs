//! An input prepared once for all of its outputs: expressions see it as the
//! Rhai map `input` and the string `input_text`, built at most once per
//! input however many outputs and validators are checked against it.

use super::expr::RhaiInput;
use crate::model::Input;
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// An input together with its lazily built expression form (`input` map and
/// `input_text`), shared by all outputs of that input and all threads.
#[derive(Debug)]
pub struct PreparedInput<'a> {
    input: Source<'a>,
    rhai: OnceLock<RhaiInput>,
}

/// Where the input is: borrowed, owned, or one of a run's inputs shared
/// with every task (no copy of a million inputs).
#[derive(Debug)]
enum Source<'a> {
    Borrowed(Cow<'a, Input>),
    Shared(Arc<[Input]>, usize),
}

impl<'a> PreparedInput<'a> {
    /// Wrap `input`; nothing is converted until an expression needs it.
    pub fn new(input: &'a Input) -> Self {
        PreparedInput {
            input: Source::Borrowed(Cow::Borrowed(input)),
            rhai: OnceLock::new(),
        }
    }

    /// The input.
    pub fn input(&self) -> &Input {
        match &self.input {
            Source::Borrowed(input) => input,
            Source::Shared(inputs, i) => &inputs[*i],
        }
    }

    pub(crate) fn rhai(&self) -> &RhaiInput {
        self.rhai.get_or_init(|| RhaiInput::new(self.input()))
    }
}

impl PreparedInput<'static> {
    /// Own `input`: for a prepared input shared across tasks (`Arc`).
    pub fn owned(input: Input) -> Self {
        PreparedInput {
            input: Source::Borrowed(Cow::Owned(input)),
            rhai: OnceLock::new(),
        }
    }

    /// Input `i` of `inputs`, shared (an `Arc` clone, not a copy).
    /// Panics when `i` is out of range, as indexing does.
    pub fn shared(inputs: &Arc<[Input]>, i: usize) -> Self {
        assert!(i < inputs.len(), "input {i} of {}", inputs.len());
        PreparedInput {
            input: Source::Shared(inputs.clone(), i),
            rhai: OnceLock::new(),
        }
    }
}
