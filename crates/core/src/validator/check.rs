//! The validator: a named check with a message, a predicate, a minimum
//! success percentage and a weight (paper §2.1, §3.1), its builder, and how
//! a check is applied to one output (one cell of the tensor, §3.6).

use super::builtin::Builtin;
use super::condition::Condition;
use super::expr::Expression;
use super::prepared::PreparedInput;
use crate::model::Input;
use crate::verdict::Verdict;
use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Default [`Validator::minimum_success_percentage`]: `1.0`, i.e. every
/// output must pass. The paper (§2.1, §3.1) always states the threshold; a
/// validator that does not is treated like a unit test, the strictest reading.
pub const DEFAULT_MINIMUM_SUCCESS_PERCENTAGE: f64 = 1.0;

/// Default [`Validator::weight`]: `1.0` (paper §3.3: weights are relative).
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// A predicate over the output (the paper's `lambda o`).
pub type OutputFn = dyn Fn(&str) -> bool + Send + Sync;
/// A predicate over input and output (the paper's `lambda i, o`).
pub type InputOutputFn = dyn Fn(&Input, &str) -> bool + Send + Sync;
/// A check over input and output that gives its own verdict, an error with
/// its cause included: a check run outside Rust (a Python callable, a
/// program speaking JSON lines), whose failures to judge are Error cells.
/// It may give a reason with its verdict (a program's reason for a fail).
pub type VerdictFn = dyn Fn(&Input, &str) -> Explained + Send + Sync;
/// A verdict and the reason its check gave for it, if any (an error's
/// cause is in the verdict itself).
pub type Explained = (Verdict, Option<String>);

/// The predicate behind a validator.
#[derive(Clone)]
pub enum Check {
    /// A Rust closure over the output: the paper's `lambda o`.
    Output(Arc<OutputFn>),
    /// A Rust closure over input and output: the paper's `lambda i, o`.
    InputOutput(Arc<InputOutputFn>),
    /// A built-in kind (contains, regex, count, …), possibly negated.
    Builtin(Builtin),
    /// A compiled Rhai expression over `output`, `input` and `input_text`.
    Expression(Expression),
    /// A check that gives its own verdict (pass, fail, or an error with its
    /// cause): a Python callable, an external program. It may block (take
    /// a lock, wait for a process), so the engine runs it off its async
    /// workers.
    External(Arc<VerdictFn>),
    /// A check resolved for each input when the inputs are loaded (a
    /// templated `value`, a check an input carries), by input id. An
    /// input without one is not judged by it ([`Validator::applies`] is
    /// false there): its cells are not applicable.
    PerInput(Arc<HashMap<String, Check>>),
}

impl Check {
    /// Whether this check is, or holds for some input, a Rhai expression
    /// (evaluated off the async workers).
    pub fn has_expression(&self) -> bool {
        match self {
            Check::Expression(_) => true,
            Check::PerInput(by_id) => by_id.values().any(Check::has_expression),
            _ => false,
        }
    }

    /// Whether this check is, or holds for some input, an external check
    /// (which may block).
    pub fn has_external(&self) -> bool {
        match self {
            Check::External(_) => true,
            Check::PerInput(by_id) => by_id.values().any(Check::has_external),
            _ => false,
        }
    }
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::Output(_) => f.write_str("Output(<closure>)"),
            Check::InputOutput(_) => f.write_str("InputOutput(<closure>)"),
            Check::Builtin(b) => f.debug_tuple("Builtin").field(b).finish(),
            Check::Expression(e) => f.debug_tuple("Expression").field(&e.source()).finish(),
            Check::External(_) => f.write_str("External(<closure>)"),
            Check::PerInput(by_id) => {
                let mut ids: Vec<&String> = by_id.keys().collect();
                ids.sort_unstable();
                f.debug_tuple("PerInput").field(&ids).finish()
            }
        }
    }
}

/// What is wrong with a validator's definition. Every variant names the
/// validator; field errors name the offending field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValidatorError {
    /// A field has a value outside its domain, is missing, or does not
    /// apply to the validator's kind.
    #[error("validator `{validator}`: field `{field}`: {reason}")]
    InvalidField {
        validator: String,
        field: String,
        reason: String,
    },
    /// The expression in `check` does not compile. `line` and `column` are
    /// 1-based positions in the expression's source, when Rhai reports one.
    #[error("validator `{validator}`: field `check` does not compile{}: {message}", position(*line, *column))]
    Compile {
        validator: String,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
}

fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    }
}

impl ValidatorError {
    /// The name of the validator at fault.
    pub fn validator(&self) -> &str {
        match self {
            ValidatorError::InvalidField { validator, .. }
            | ValidatorError::Compile { validator, .. } => validator,
        }
    }

    pub(crate) fn field(
        validator: &str,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ValidatorError::InvalidField {
            validator: validator.to_string(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// A named check (paper §2.1): `name`, `message` shown when it fails,
/// `minimum_success_percentage` in `[0, 1]` that its success percentage must
/// reach, `weight` (finite, ≥ 0) used by weighted aggregation (paper §3.3),
/// and the `check` itself.
///
/// Build one with [`Validator::new`], which returns a [`ValidatorBuilder`];
/// a validator always has a check. The fields are public, so a validator can
/// be modified after construction: call [`Validator::validate`] before
/// relying on the threshold and weight (the engine and
/// [`ValidatorSpec::compile`] do).
#[derive(Clone, Debug)]
pub struct Validator {
    pub name: String,
    pub message: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    pub check: Check,
    /// The inputs it applies to (`when = "…"`): all when `None`. On the
    /// others its cells are `NotApplicable` ([`Validator::applies`]).
    pub when: Option<Condition>,
}

/// A validator without its check yet: set `message`,
/// `minimum_success_percentage` and `weight`, then finish with
/// [`check`](Self::check), [`check_with_input`](Self::check_with_input),
/// [`builtin`](Self::builtin) or [`expression`](Self::expression).
///
/// Defaults: `message` = the name, `minimum_success_percentage` =
/// [`DEFAULT_MINIMUM_SUCCESS_PERCENTAGE`] (1.0), `weight` =
/// [`DEFAULT_WEIGHT`] (1.0).
#[derive(Clone, Debug)]
#[must_use = "a ValidatorBuilder does nothing until it is given a check"]
pub struct ValidatorBuilder {
    name: String,
    message: Option<String>,
    minimum_success_percentage: f64,
    weight: f64,
}

impl ValidatorBuilder {
    /// The message reported when the validator fails.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The share of outputs, in `[0, 1]`, that must pass (paper §2.2).
    pub fn minimum_success_percentage(mut self, p: f64) -> Self {
        self.minimum_success_percentage = p;
        self
    }

    /// The weight in weighted aggregation (paper §3.3); finite and ≥ 0.
    pub fn weight(mut self, w: f64) -> Self {
        self.weight = w;
        self
    }

    /// Check the threshold and the weight: see [`Validator::validate`].
    pub fn validate(&self) -> Result<(), ValidatorError> {
        validate_fields(&self.name, self.minimum_success_percentage, self.weight)
    }

    fn finish(self, check: Check) -> Validator {
        Validator {
            message: self.message.unwrap_or_else(|| self.name.clone()),
            name: self.name,
            minimum_success_percentage: self.minimum_success_percentage,
            weight: self.weight,
            check,
            when: None,
        }
    }

    /// Finish with a closure over the output: the paper's `lambda o` (§2.1).
    pub fn check<F>(self, f: F) -> Validator
    where
        F: Fn(&str) -> bool + Send + Sync + 'static,
    {
        self.finish(Check::Output(Arc::new(f)))
    }

    /// Finish with a closure over input and output: the paper's
    /// conditional `lambda i, o` (§2.1).
    pub fn check_with_input<F>(self, f: F) -> Validator
    where
        F: Fn(&Input, &str) -> bool + Send + Sync + 'static,
    {
        self.finish(Check::InputOutput(Arc::new(f)))
    }

    /// Finish with a check that gives its own [`Verdict`]: an error verdict
    /// (with its cause) is an Error cell, not a failure. For checks run
    /// outside Rust; a panic is an Error cell too.
    pub fn check_verdict<F>(self, f: F) -> Validator
    where
        F: Fn(&Input, &str) -> Verdict + Send + Sync + 'static,
    {
        self.check_explained(move |input: &Input, output: &str| (f(input, output), None))
    }

    /// [`check_verdict`](Self::check_verdict) with a reason beside the
    /// verdict: a fail's reason is kept with the cell, as a verifier's is.
    pub fn check_explained<F>(self, f: F) -> Validator
    where
        F: Fn(&Input, &str) -> Explained + Send + Sync + 'static,
    {
        self.finish(Check::External(Arc::new(f)))
    }

    /// Finish with a built-in kind.
    pub fn builtin(self, builtin: Builtin) -> Validator {
        self.finish(Check::Builtin(builtin))
    }

    /// Finish with a Rhai expression, compiled once here. Fails with
    /// [`ValidatorError::Compile`] (with line and column) when the source
    /// does not compile, and with [`ValidatorError::InvalidField`] when the
    /// threshold or the weight is out of range.
    pub fn expression(self, source: &str) -> Result<Validator, ValidatorError> {
        self.validate()?;
        let expr = Expression::compile(source).map_err(|e| ValidatorError::Compile {
            validator: self.name.clone(),
            line: e.line,
            column: e.column,
            message: e.message,
        })?;
        Ok(self.finish(Check::Expression(expr)))
    }
}

fn validate_fields(name: &str, p: f64, w: f64) -> Result<(), ValidatorError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ValidatorError::field(
            name,
            "minimum_success_percentage",
            format!("{p} is not in [0, 1]"),
        ));
    }
    if !w.is_finite() || w < 0.0 {
        return Err(ValidatorError::field(
            name,
            "weight",
            format!("{w} is not a finite number ≥ 0"),
        ));
    }
    Ok(())
}

impl Validator {
    /// Start building a validator called `name`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(name: impl Into<String>) -> ValidatorBuilder {
        ValidatorBuilder {
            name: name.into(),
            message: None,
            minimum_success_percentage: DEFAULT_MINIMUM_SUCCESS_PERCENTAGE,
            weight: DEFAULT_WEIGHT,
        }
    }

    /// Replace the message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Replace the minimum success percentage.
    pub fn minimum_success_percentage(mut self, p: f64) -> Self {
        self.minimum_success_percentage = p;
        self
    }

    /// Replace the weight.
    pub fn weight(mut self, w: f64) -> Self {
        self.weight = w;
        self
    }

    /// Apply only to the inputs `when` holds for.
    pub fn when(mut self, when: Condition) -> Self {
        self.when = Some(when);
        self
    }

    /// Whether this validator applies to `input`: its `when` holds (always,
    /// without one) and, for a [`Check::PerInput`], the input has its own
    /// check; `Err` with the cause when its condition cannot be decided.
    pub fn applies(&self, input: &PreparedInput<'_>) -> Result<bool, String> {
        if let Check::PerInput(by_id) = &self.check {
            if !by_id.contains_key(&input.input().id) {
                return Ok(false);
            }
        }
        self.when.as_ref().map_or(Ok(true), |c| c.applies(input))
    }

    /// `Ok` when `minimum_success_percentage` is in `[0, 1]` and `weight` is
    /// finite and ≥ 0; otherwise [`ValidatorError::InvalidField`] naming the
    /// validator and the field.
    pub fn validate(&self) -> Result<(), ValidatorError> {
        validate_fields(&self.name, self.minimum_success_percentage, self.weight)
    }

    /// [`validate`](Self::validate), returning the validator: for chains
    /// such as `Validator::new("v").weight(w).check(f).validated()?`.
    pub fn validated(self) -> Result<Self, ValidatorError> {
        self.validate()?;
        Ok(self)
    }

    /// The input fields the check reads by name (expressions only: a
    /// closure or built-in kind reads none by name), which the dataset must
    /// provide; see [`Expression::input_fields`].
    pub fn input_fields(&self) -> Vec<String> {
        match &self.check {
            Check::Expression(e) => e.input_fields(),
            _ => Vec::new(),
        }
    }

    /// The input fields its `when` reads by name.
    pub fn condition_fields(&self) -> Vec<String> {
        self.when
            .as_ref()
            .map_or_else(Vec::new, Condition::input_fields)
    }

    /// Apply the check to one output of `input`: one cell `R[i][j][k]` of
    /// the reliability tensor (paper §3.6).
    ///
    /// Never panics: a closure that panics, or an expression that fails,
    /// gives [`Verdict::Error`]. For many outputs of the same input, prefer
    /// [`Evaluator`] (or [`evaluate_prepared`](Self::evaluate_prepared)),
    /// which converts each input for expressions once instead of per call.
    pub fn evaluate(&self, input: &Input, output: &str) -> Verdict {
        match &self.check {
            Check::Expression(e) => e.evaluate(input, output),
            _ => self.evaluate_prepared(&PreparedInput::new(input), output),
        }
    }

    /// [`evaluate`](Self::evaluate) with an input prepared once for many
    /// outputs.
    pub fn evaluate_prepared(&self, input: &PreparedInput<'_>, output: &str) -> Verdict {
        explain(&self.check, input, output).0
    }
}

impl Validator {
    /// Whether every output that begins with `prefix` fails this validator,
    /// whatever follows — so a streamed answer can be abandoned as soon as
    /// its prefix settles the verdict. `false` when that cannot be known
    /// (closures, programs, most expressions): only ever a sure failure.
    /// Built-in kinds follow [`Builtin::fails_on_prefix`]; expressions of a
    /// few exact shapes (`count(output, "'") <= 3`, …) follow
    /// [`Expression::fails_on_prefix`], whose verdict on the whole output is
    /// then a fail (never a pass).
    pub fn fails_on_prefix(&self, prefix: &str) -> bool {
        match &self.check {
            Check::Builtin(b) => b.fails_on_prefix(prefix),
            Check::Expression(e) => e.fails_on_prefix(prefix),
            _ => false,
        }
    }

    /// Whether [`Validator::fails_on_prefix`] can ever be true for this
    /// validator, whatever the prefix.
    pub fn may_fail_on_prefix(&self) -> bool {
        match &self.check {
            Check::Builtin(b) => b.may_fail_on_prefix(),
            Check::Expression(e) => e.may_fail_on_prefix(),
            _ => false,
        }
    }

    /// [`evaluate_prepared`](Self::evaluate_prepared), with the reason the
    /// check gave for its verdict (only an external check gives one).
    pub fn explain_prepared(&self, input: &PreparedInput<'_>, output: &str) -> Explained {
        explain(&self.check, input, output)
    }
}

/// `check` applied to one output of `input`, with the reason it gave (only
/// an external check gives one). A [`Check::PerInput`] applies the input's
/// own check; an input without one is an Error cell naming it (the engine
/// asks [`Validator::applies`] first, so it never sees one).
fn explain(check: &Check, input: &PreparedInput<'_>, output: &str) -> Explained {
    match check {
        Check::Output(f) => (guard(|| Verdict::from_bool(f(output))), None),
        Check::InputOutput(f) => (guard(|| Verdict::from_bool(f(input.input(), output))), None),
        Check::Builtin(b) => (Verdict::from_bool(b.check(output)), None),
        Check::Expression(e) => (
            e.evaluate_converted(e.uses_input().then(|| input.rhai()), output),
            None,
        ),
        Check::External(f) => {
            let mut reason = None;
            let verdict = guard(|| {
                let (v, r) = f(input.input(), output);
                reason = r;
                v
            });
            (verdict, reason)
        }
        Check::PerInput(by_id) => match by_id.get(&input.input().id) {
            Some(own) => explain(own, input, output),
            None => (
                Verdict::error(format!(
                    "this check has no definition for input {:?}",
                    input.input().id
                )),
                None,
            ),
        },
    }
}

/// Run a user closure, turning a panic into an `Error` verdict.
fn guard(f: impl FnOnce() -> Verdict) -> Verdict {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(verdict) => verdict,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Verdict::error(format!("check panicked: {what}"))
        }
    }
}
