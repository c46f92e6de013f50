//! Validators (paper §2.1, §3.1): named checks with a message, a predicate
//! over the output (or over input and output), a minimum success percentage
//! and a weight.
//!
//! A validator is built in one of four ways:
//!
//! * from a Rust closure: [`Validator::new`]`("name")…`[`.check(|o| …)`](ValidatorBuilder::check)
//!   (the paper's `lambda o`) or [`.check_with_input(|i, o| …)`](ValidatorBuilder::check_with_input)
//!   (the paper's `lambda i, o`);
//! * from a built-in kind ([`Builtin`]: contains, regex, count, length, JSON
//!   schema, …) with [`ValidatorBuilder::builtin`];
//! * from an expression in the embedded, sandboxed Rhai language
//!   ([`Expression`]) with [`ValidatorBuilder::expression`];
//! * from configuration: a [`ValidatorSpec`] (a `[[validator]]` table) and
//!   [`ValidatorSpec::compile`].
//!
//! A [`ValidatorBuilder`] has no check, so a [`Validator`] without one cannot
//! exist. Applying a validator never panics and never hangs: a predicate that
//! cannot be evaluated (an expression that errs, runs out of operations or
//! returns a non-bool; a closure that panics) yields [`Verdict::Error`].
//! Many validators over many samples are evaluated in parallel with
//! [`evaluate_all`] or, batch by batch, with an [`Evaluator`].

pub mod builtin;
pub mod check;
pub mod condition;
pub mod eval;
pub mod expr;
pub mod prepared;
mod shapes;
pub mod spec;

pub use builtin::{Builtin, BuiltinError};
pub use check::{
    Check, Explained, InputOutputFn, OutputFn, Validator, ValidatorBuilder, ValidatorError,
    VerdictFn, DEFAULT_MINIMUM_SUCCESS_PERCENTAGE, DEFAULT_WEIGHT,
};
pub use condition::Condition;
pub use eval::{evaluate_all, Evaluator};
pub use expr::{on_eval_stack, spawn_on_eval_stack, CompileError, Expression};
pub use prepared::PreparedInput;
pub use spec::{BuiltinKind, SchemaSpec, ValidatorSpec};
