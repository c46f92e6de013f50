//! Which inputs a check applies to: `when = "…"` on a `[[validator]]` or
//! `[[verifier]]`, an expression over the input's fields in the project's
//! expression language ([`Expression`]), decided before any output exists.
//!
//! A check whose condition is false for an input does not judge that
//! input's outputs: their cells are [`Cell::NotApplicable`](crate::Cell),
//! counted apart, never as passes, and outside its rate, interval and
//! profile.

use super::expr::{CompileError, Expression};
use super::prepared::PreparedInput;
use crate::model::Input;
use crate::verdict::Verdict;

/// A compiled `when` condition: a bool expression over `input` and
/// `input_text` (naming `output` is a compile error).
#[derive(Clone, Debug)]
pub struct Condition(Expression);

impl Condition {
    /// Compile `source`; errors carry the line and column in it.
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        Expression::compile_over_input(source).map(Condition)
    }

    /// The condition as written.
    pub fn source(&self) -> &str {
        self.0.source()
    }

    /// The input fields it reads by name ([`Expression::input_fields`]).
    pub fn input_fields(&self) -> Vec<String> {
        self.0.input_fields()
    }

    /// Whether the check applies to `input`: `Err` with the cause when the
    /// condition cannot be decided (a field the input lacks, a value that
    /// is not a bool).
    pub fn applies(&self, input: &PreparedInput<'_>) -> Result<bool, String> {
        let converted = self.0.uses_input().then(|| input.rhai());
        match self.0.evaluate_converted(converted, "") {
            Verdict::Pass => Ok(true),
            Verdict::Fail => Ok(false),
            Verdict::Error { reason } => Err(format!("`when = {:?}`: {reason}", self.source())),
        }
    }

    /// [`Condition::applies`] on an input not prepared.
    pub fn applies_to(&self, input: &Input) -> Result<bool, String> {
        self.applies(&PreparedInput::new(input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: serde_json::Value) -> Input {
        let serde_json::Value::Object(map) = v else {
            unreachable!()
        };
        let mut fields = crate::model::Fields::new();
        for (k, v) in map {
            fields.insert(k, v);
        }
        Input {
            id: "a".into(),
            fields,
        }
    }

    #[test]
    fn a_condition_reads_the_input_and_never_the_output() {
        let c = Condition::compile(r#"input.topic == "refund""#).unwrap();
        assert_eq!(c.applies_to(&input(json!({"topic": "refund"}))), Ok(true));
        assert_eq!(
            c.applies_to(&input(json!({"topic": "greeting"}))),
            Ok(false)
        );
        let missing = c.applies_to(&input(json!({"text": "hi"}))).unwrap_err();
        assert!(missing.contains("no field `topic`"), "{missing}");
        let err = Condition::compile(r#"output.contains("x")"#).unwrap_err();
        assert!(err.message.contains("output"), "{}", err.message);
        let not_bool = Condition::compile("input.topic")
            .unwrap()
            .applies_to(&input(json!({"topic": "refund"})))
            .unwrap_err();
        assert!(not_bool.contains("not a bool"), "{not_bool}");
    }
}
