//! An input prepared once for all of its outputs: expressions see it as the
//! Rhai map `input` and the string `input_text`, built at most once per
//! input however many outputs and validators are checked against it.

use super::expr::RhaiInput;
use crate::model::Input;
use std::borrow::Cow;
use std::sync::OnceLock;

/// An input together with its lazily built expression form (`input` map and
/// `input_text`), shared by all outputs of that input and all threads.
#[derive(Debug)]
pub struct PreparedInput<'a> {
    input: Cow<'a, Input>,
    rhai: OnceLock<RhaiInput>,
}

impl<'a> PreparedInput<'a> {
    /// Wrap `input`; nothing is converted until an expression needs it.
    pub fn new(input: &'a Input) -> Self {
        PreparedInput {
            input: Cow::Borrowed(input),
            rhai: OnceLock::new(),
        }
    }

    /// The input.
    pub fn input(&self) -> &Input {
        &self.input
    }

    pub(crate) fn rhai(&self) -> &RhaiInput {
        self.rhai.get_or_init(|| RhaiInput::new(&self.input))
    }
}

impl PreparedInput<'static> {
    /// Own `input`: for a prepared input shared across tasks (`Arc`).
    pub fn owned(input: Input) -> Self {
        PreparedInput {
            input: Cow::Owned(input),
            rhai: OnceLock::new(),
        }
    }
}
