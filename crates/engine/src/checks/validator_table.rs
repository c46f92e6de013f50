//! One `[[validator]]` table as configuration holds it: a built-in kind or
//! an expression (core's [`ValidatorSpec`]), or `kind = "program"` (a
//! [`ProgramSpec`], which runs a process and so lives in the engine).
//!
//! The table is read by its `kind`: `"program"` is read as a
//! [`ProgramSpec`], anything else as a [`ValidatorSpec`]; each denies the
//! keys it does not know, and an error lists the keys it accepts.

use crate::checks::program::ProgramSpec;
use probity_core::validator::{Validator, ValidatorError, ValidatorSpec};
use serde::{Deserialize, Deserializer, Serialize};
use std::path::Path;

/// A `[[validator]]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ValidatorTable {
    /// A built-in kind or an expression.
    Spec(ValidatorSpec),
    /// `kind = "program"`.
    Program(ProgramSpec),
}

impl<'de> Deserialize<'de> for ValidatorTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(d)?;
        let program = value.get("kind").and_then(|k| k.as_str()) == Some("program");
        if program {
            ProgramSpec::deserialize(value)
                .map(ValidatorTable::Program)
                .map_err(D::Error::custom)
        } else {
            ValidatorSpec::deserialize(value)
                .map(ValidatorTable::Spec)
                .map_err(D::Error::custom)
        }
    }
}

impl From<ValidatorSpec> for ValidatorTable {
    fn from(s: ValidatorSpec) -> Self {
        ValidatorTable::Spec(s)
    }
}

impl From<ProgramSpec> for ValidatorTable {
    fn from(s: ProgramSpec) -> Self {
        ValidatorTable::Program(s)
    }
}

impl ValidatorTable {
    /// The validator's name.
    pub fn name(&self) -> &str {
        match self {
            ValidatorTable::Spec(s) => &s.name,
            ValidatorTable::Program(p) => &p.name,
        }
    }

    /// Resolve relative paths (a program's) against `dir`, the
    /// configuration file's directory.
    pub fn resolve_paths(&mut self, dir: &Path) {
        if let ValidatorTable::Program(p) = self {
            p.resolve_paths(dir);
        }
    }

    /// Its settings that are templates (`value = "{{ expected }}"`),
    /// rendered per input ([`crate::checks::templated`]).
    pub fn templated(&self) -> Vec<&'static str> {
        match self {
            ValidatorTable::Spec(s) => crate::checks::templated::templated(s),
            ValidatorTable::Program(_) => Vec::new(),
        }
    }

    /// Build the validator, its templated settings (if any) compiled
    /// from a placeholder ([`crate::checks::templated::placeholder`]): the
    /// run renders them per input once the inputs are read
    /// ([`crate::checks::templated::resolve`]).
    pub fn compile_before_inputs(&self) -> Result<Validator, ValidatorError> {
        match self {
            ValidatorTable::Spec(s) => crate::checks::templated::placeholder(s).compile(),
            ValidatorTable::Program(p) => p.compile(),
        }
    }

    /// Build the validator; errors name the validator and the field. A
    /// templated setting is an error here: it needs the run's inputs
    /// ([`ValidatorTable::compile_before_inputs`]).
    pub fn compile(&self) -> Result<Validator, ValidatorError> {
        if let (ValidatorTable::Spec(s), Some(field)) = (self, self.templated().first()) {
            return Err(ValidatorError::InvalidField {
                validator: s.name.clone(),
                field: field.to_string(),
                reason: "is a template (`{{ … }}`): it is rendered with a run's inputs (probity run), and here there are none".into(),
            });
        }
        match self {
            ValidatorTable::Spec(s) => s.compile(),
            ValidatorTable::Program(p) => p.compile(),
        }
    }
}

/// The `[[validator]]` and `[[verifier]]` tables of a guard or traces
/// file compiled, each error naming its table; verifiers without a
/// `[verifier.system]` judge with `judge`.
pub(crate) fn compile_checks(
    validators: &[ValidatorTable],
    verifiers: &[crate::checks::verifier::VerifierSpec],
    judge: &crate::system::config::ProviderConfig,
) -> Result<(Vec<Validator>, Vec<crate::checks::verifier::Verifier>), String> {
    let validators = validators
        .iter()
        .map(|s| {
            s.compile()
                .map_err(|e| format!("[[validator]] {}: {e}", s.name()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let verifiers = verifiers
        .iter()
        .map(|s| {
            s.compile(judge)
                .map_err(|e| format!("[[verifier]] {}: {e}", s.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((validators, verifiers))
}

/// The bearer token a server asks of its clients, read from the
/// environment variable `token_env` names (registered for redaction, so
/// it never reaches a log); `None` without one.
pub(crate) fn token_from_env(token_env: Option<&str>) -> Result<Option<String>, String> {
    let Some(var) = token_env else {
        return Ok(None);
    };
    std::env::var(var)
        .ok()
        .filter(|t| !t.is_empty())
        .inspect(|t| crate::provider::redact::register(t))
        .map(Some)
        .ok_or_else(|| format!("token_env: environment variable `{var}` is not set"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_templated_value_needs_a_runs_inputs() {
        let table: ValidatorTable =
            toml::from_str("name = \"answer\"\nkind = \"contains\"\nvalue = \"{{ expected }}\"")
                .unwrap();
        assert_eq!(table.templated(), ["value"]);
        // Behind `probity serve` or over traces: refused, named.
        let err = table.compile().unwrap_err().to_string();
        assert!(
            err.starts_with("validator `answer`: field `value`: is a template"),
            "{err}"
        );
        // In a run: compiled from a placeholder, rendered once the inputs are read.
        assert!(table.compile_before_inputs().is_ok());
    }
}
