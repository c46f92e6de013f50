//! Validators as configuration: a `[[validator]]` table (docs/validators.md) is a
//! [`ValidatorSpec`]; [`ValidatorSpec::compile`] turns it into a
//! [`Validator`].
//!
//! ```toml
//! [[validator]]
//! name = "contraction_validator"
//! message = "Output contains too many contractions"
//! check = '''count(output, "'") <= 3'''
//! minimum_success_percentage = 0.95
//!
//! [[validator]]
//! name = "no_apology"
//! kind = "not-contains"
//! value = "sorry"
//! case_insensitive = true
//! minimum_success_percentage = 0.9
//! weight = 2
//!
//! [[validator]]
//! name = "answer_shape"
//! kind = "json-schema"
//! schema = { type = "object", required = ["answer"] }
//! ```
//!
//! The spec is one flat table, so unknown keys are rejected
//! (`deny_unknown_fields`) and [`compile`](ValidatorSpec::compile) rejects
//! keys that do not apply to the chosen kind.

use super::builtin::{Builtin, BuiltinError};
use super::check::{
    Check, Validator, ValidatorError, DEFAULT_MINIMUM_SUCCESS_PERCENTAGE, DEFAULT_WEIGHT,
};
use super::condition::Condition;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The built-in kinds, by their configuration names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuiltinKind {
    /// `value` [, `case_insensitive`]: the output contains `value`.
    Contains,
    /// `value` [, `case_insensitive`]: the output does not contain `value`.
    NotContains,
    /// `pattern`: the regex matches somewhere in the output.
    Regex,
    /// `value` (substring) [, `case_insensitive`] or `pattern` (regex), and
    /// `min` and/or `max`: bounds on the number of occurrences.
    Count,
    /// `min` and/or `max`: bounds on the length in characters.
    Length,
    /// `min` and/or `max`: bounds on the number of words.
    Words,
    /// `value` [, `case_insensitive`, `trim`]: the output equals `value`.
    Equals,
    /// `value` [, `case_insensitive`, `trim`].
    StartsWith,
    /// `value` [, `case_insensitive`, `trim`].
    EndsWith,
    /// No fields: the output is valid JSON.
    IsJson,
    /// `schema` (inline object or a string of JSON): the output is JSON
    /// satisfying the schema.
    JsonSchema,
}

impl BuiltinKind {
    /// The configuration name (`"not-contains"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinKind::Contains => "contains",
            BuiltinKind::NotContains => "not-contains",
            BuiltinKind::Regex => "regex",
            BuiltinKind::Count => "count",
            BuiltinKind::Length => "length",
            BuiltinKind::Words => "words",
            BuiltinKind::Equals => "equals",
            BuiltinKind::StartsWith => "starts-with",
            BuiltinKind::EndsWith => "ends-with",
            BuiltinKind::IsJson => "is-json",
            BuiltinKind::JsonSchema => "json-schema",
        }
    }

    /// The kind-specific keys this kind accepts.
    fn allowed(self) -> &'static [&'static str] {
        use BuiltinKind::*;
        match self {
            Contains | NotContains => &["value", "case_insensitive"],
            Regex => &["pattern"],
            Count => &["value", "pattern", "case_insensitive", "min", "max"],
            Length | Words => &["min", "max"],
            Equals | StartsWith | EndsWith => &["value", "case_insensitive", "trim"],
            IsJson => &[],
            JsonSchema => &["schema"],
        }
    }
}

impl fmt::Display for BuiltinKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON schema in configuration: inline (a TOML table / JSON object, or
/// `true`/`false`) or a string holding JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchemaSpec {
    /// A string containing the schema as JSON text.
    Text(String),
    /// The schema itself.
    Inline(Value),
}

/// One `[[validator]]` table (paper §2.1: name, message, predicate,
/// minimum_success_percentage; §3.3: weight).
///
/// Exactly one of `check` (a Rhai expression, see
/// [`Expression`](super::expr::Expression)) and `kind` (a [`BuiltinKind`] with its
/// fields) must be given. `negate = true` inverts any check (errors stay
/// errors). Defaults: `message` = `name`, `minimum_success_percentage` = 1.0,
/// `weight` = 1.0. Unknown keys are rejected when deserializing; keys that
/// do not apply to the kind are rejected by [`compile`](Self::compile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatorSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default = "default_msp")]
    pub minimum_success_percentage: f64,
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// A Rhai expression returning a bool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// A built-in kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<BuiltinKind>,
    /// The literal for contains / not-contains / count / equals /
    /// starts-with / ends-with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The regex for regex / count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Ignore case when matching `value` (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_insensitive: Option<bool>,
    /// Inclusive lower bound for count / length / words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<usize>,
    /// Inclusive upper bound for count / length / words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<usize>,
    /// Trim whitespace from the output first (equals / starts-with /
    /// ends-with; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<bool>,
    /// The schema for json-schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSpec>,
    /// Invert the check.
    #[serde(default, skip_serializing_if = "is_false")]
    pub negate: bool,
    /// The inputs it applies to: an expression over the input's fields
    /// ([`Condition`]); every input when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

fn default_msp() -> f64 {
    DEFAULT_MINIMUM_SUCCESS_PERCENTAGE
}
fn default_weight() -> f64 {
    DEFAULT_WEIGHT
}
fn is_false(b: &bool) -> bool {
    !*b
}

impl ValidatorSpec {
    /// A spec named `name` with defaults and no check (set `check` or
    /// `kind` before compiling).
    pub fn new(name: impl Into<String>) -> Self {
        ValidatorSpec {
            name: name.into(),
            message: None,
            minimum_success_percentage: DEFAULT_MINIMUM_SUCCESS_PERCENTAGE,
            weight: DEFAULT_WEIGHT,
            check: None,
            kind: None,
            value: None,
            pattern: None,
            case_insensitive: None,
            min: None,
            max: None,
            trim: None,
            schema: None,
            negate: false,
            when: None,
        }
    }

    fn present(&self) -> [(&'static str, bool); 7] {
        [
            ("value", self.value.is_some()),
            ("pattern", self.pattern.is_some()),
            ("case_insensitive", self.case_insensitive.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("trim", self.trim.is_some()),
            ("schema", self.schema.is_some()),
        ]
    }

    /// Build the validator: compile the expression, regex or schema once and
    /// check every field. Errors name the validator and the field at fault.
    pub fn compile(&self) -> Result<Validator, ValidatorError> {
        let v = self.compile_check()?;
        match &self.when {
            None => Ok(v),
            Some(src) => Ok(v.when(compile_condition(&self.name, src)?)),
        }
    }

    fn compile_check(&self) -> Result<Validator, ValidatorError> {
        let name = self.name.as_str();
        let bad = |field: &str, reason: String| ValidatorError::field(name, field, reason);
        if name.trim().is_empty() {
            return Err(bad("name", "must not be empty".into()));
        }
        let mut builder = Validator::new(name)
            .minimum_success_percentage(self.minimum_success_percentage)
            .weight(self.weight);
        if let Some(m) = &self.message {
            builder = builder.message(m.clone());
        }
        builder.validate()?;

        let kind = match (&self.check, self.kind) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "check",
                    "give either `check` or `kind`, not both".into(),
                ))
            }
            (None, None) => {
                return Err(bad(
                    "kind",
                    "a validator needs `check` (an expression) or `kind` (a built-in)".into(),
                ))
            }
            (Some(src), None) => {
                if let Some((f, _)) = self.present().iter().find(|(_, p)| *p) {
                    return Err(bad(f, "does not apply to a `check` expression".into()));
                }
                let v = builder.expression(src)?;
                if !self.negate {
                    return Ok(v);
                }
                let Check::Expression(e) = v.check else {
                    unreachable!("expression() builds an expression check")
                };
                return Ok(Validator {
                    check: Check::Expression(e.negate()),
                    ..v
                });
            }
            (None, Some(kind)) => kind,
        };

        if let Some((f, _)) = self
            .present()
            .iter()
            .find(|(f, p)| *p && !kind.allowed().contains(f))
        {
            return Err(bad(f, format!("does not apply to kind `{kind}`")));
        }

        let ci = self.case_insensitive.unwrap_or(false);
        let trim = self.trim.unwrap_or(false);
        let value = || {
            self.value
                .as_deref()
                .ok_or_else(|| bad("value", format!("kind `{kind}` requires `value`")))
        };
        let wrap = |e: BuiltinError| bad(e.field, e.reason);

        let builtin = match kind {
            BuiltinKind::Contains if ci => Builtin::contains_ci(value()?),
            BuiltinKind::Contains => Builtin::contains(value()?),
            BuiltinKind::NotContains if ci => Builtin::not_contains_ci(value()?),
            BuiltinKind::NotContains => Builtin::not_contains(value()?),
            BuiltinKind::Regex => {
                let p = self
                    .pattern
                    .as_deref()
                    .ok_or_else(|| bad("pattern", "kind `regex` requires `pattern`".into()))?;
                Builtin::regex(p).map_err(wrap)?
            }
            BuiltinKind::Count => match (&self.value, &self.pattern) {
                (Some(v), None) => Builtin::count(v, ci, self.min, self.max).map_err(wrap)?,
                (None, Some(p)) => {
                    if self.case_insensitive.is_some() {
                        return Err(bad(
                            "case_insensitive",
                            "applies to `value`; use `(?i)` in `pattern`".into(),
                        ));
                    }
                    Builtin::count_matches(p, self.min, self.max).map_err(wrap)?
                }
                _ => {
                    return Err(bad(
                        "value",
                        "kind `count` requires exactly one of `value` (substring) and `pattern` (regex)"
                            .into(),
                    ))
                }
            },
            BuiltinKind::Length => Builtin::length(self.min, self.max).map_err(wrap)?,
            BuiltinKind::Words => Builtin::words(self.min, self.max).map_err(wrap)?,
            BuiltinKind::Equals => Builtin::equals(value()?, ci, trim),
            BuiltinKind::StartsWith => Builtin::starts_with(value()?, ci, trim),
            BuiltinKind::EndsWith => Builtin::ends_with(value()?, ci, trim),
            BuiltinKind::IsJson => Builtin::is_json(),
            BuiltinKind::JsonSchema => {
                let schema = match &self.schema {
                    None => {
                        return Err(bad("schema", "kind `json-schema` requires `schema`".into()))
                    }
                    Some(SchemaSpec::Inline(v)) => v.clone(),
                    Some(SchemaSpec::Text(t)) => serde_json::from_str(t)
                        .map_err(|e| bad("schema", format!("not valid JSON: {e}")))?,
                };
                Builtin::json_schema(&schema).map_err(wrap)?
            }
        };
        let builtin = if self.negate {
            builtin.negate()
        } else {
            builtin
        };
        Ok(builder.builtin(builtin))
    }
}

/// Compile the `when` of check `name`: errors name the field and the
/// position in it.
pub fn compile_condition(name: &str, source: &str) -> Result<Condition, ValidatorError> {
    Condition::compile(source).map_err(|e| {
        let at = match (e.line, e.column) {
            (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
            _ => String::new(),
        };
        ValidatorError::field(
            name,
            "when",
            format!("{source:?} does not compile{at}: {}", e.message),
        )
    })
}
