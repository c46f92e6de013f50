//! Checks carried by the inputs themselves (an input's `checks`, or a
//! promptfoo test's `assert`: docs/validators.md, "Checks an input
//! carries") compiled into columns of the tensor.
//!
//! Every distinct (kind, name) across the inputs is one column, applying
//! only to the inputs that carry it (on the others its cells are not
//! applicable, counted apart, exactly as with `when`), each input judged
//! by its own definition ([`Check::PerInput`], a judge's per-input rubric).
//! A check's text settings may be templates over its input's fields, as a
//! `[[validator]]`'s may ([`templated`]). Validator columns follow the
//! file's `[[validator]]` tables, judge columns its `[[verifier]]` tables,
//! in the order the inputs first carry them.
//!
//! Every error names where the input is (file and line, or `tests[k]`,
//! or `inline [[input]] #k`), the input, the check's place in it (`checks[2]`,
//! `assert[0]`) and the field.

use crate::checks::templated;
use crate::checks::verifier::{Verifier, VerifierSpec};
use crate::config::inputs::{Carried, InputError};
use crate::config::promptfoo::CarriedCheck;
use crate::provider::template::{is_template, render_check_text};
use crate::system::config::ProviderConfig;
use probity_core::validator::{BuiltinKind, Check, Validator, ValidatorSpec};
use probity_core::Input;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The kind of a check that is a judge's rubric.
pub const JUDGE: &str = "judge";

/// What a key of a carried check holds.
#[derive(Clone, Copy)]
enum Ty {
    Text,
    Number,
    Bool,
    Count,
    Any,
}

/// The keys a carried check may have: a `[[validator]]`'s (without
/// `when`: it applies to the input carrying it), and a judge's
/// `instructions`.
const KEYS: &[(&str, Ty)] = &[
    ("kind", Ty::Text),
    ("check", Ty::Text),
    ("name", Ty::Text),
    ("message", Ty::Text),
    ("minimum_success_percentage", Ty::Number),
    ("weight", Ty::Number),
    ("value", Ty::Text),
    ("pattern", Ty::Text),
    ("case_insensitive", Ty::Bool),
    ("min", Ty::Count),
    ("max", Ty::Count),
    ("trim", Ty::Bool),
    ("schema", Ty::Any),
    ("negate", Ty::Bool),
    ("instructions", Ty::Text),
];

/// The keys of a judge.
const JUDGE_KEYS: &[&str] = &[
    "kind",
    "name",
    "message",
    "minimum_success_percentage",
    "weight",
    "instructions",
];

const KINDS: &str = "contains, not-contains, regex, count, length, words, equals, starts-with, ends-with, is-json, json-schema, judge";

/// A column's settings, which every input carrying it must give alike.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    message: Option<String>,
    minimum_success_percentage: f64,
    weight: f64,
}

/// One column being gathered: its definition for each input.
struct Column {
    kind: String,
    name: String,
    /// Where it is first carried (`tests.jsonl:3: checks[0]`).
    first: String,
    settings: Settings,
    checks: HashMap<String, Check>,
    rubrics: HashMap<String, String>,
}

/// One carried check read for its input.
struct Read {
    kind: String,
    name: String,
    settings: Settings,
    def: Def,
}

enum Def {
    Check(Check),
    Rubric(String),
}

/// The columns the inputs' checks make: validators, then judges (with
/// `system` as their judge, as a `[[verifier]]` without its own). `taken`
/// are the names of the file's checks, which a carried check may not take.
pub(crate) fn columns(
    carried: &[Carried],
    inputs: &[Input],
    system: &ProviderConfig,
    taken: &[&str],
) -> Result<(Vec<Validator>, Vec<Verifier>), InputError> {
    let mut cols: Vec<Column> = Vec::new();
    for c in carried {
        let input = &inputs[c.input];
        let mut numbered: HashMap<&str, usize> = HashMap::new();
        for check in &c.checks {
            let count = numbered.entry(check.default_name.as_str()).or_default();
            *count += 1;
            let at = format!("input {:?}: {}", input.id, check.at);
            // `checks[1] (contains): field …`, or `checks[1]: field …`
            // before its name is known.
            let err = |message: String| InputError::Carried {
                origin: c.origin.clone(),
                message: match message.starts_with('(') {
                    true => format!("{at} {message}"),
                    false => format!("{at}: {message}"),
                },
            };
            let read = read(check, *count, input).map_err(&err)?;
            if taken.contains(&read.name.as_str()) {
                return Err(err(format!(
                    "its name `{}` is a [[validator]]'s or [[verifier]]'s in the configuration: give the input's check another `name`",
                    read.name
                )));
            }
            add(
                &mut cols,
                read,
                input,
                format!("{}: {}", c.origin, check.at),
            )
            .map_err(err)?;
        }
    }
    build(cols, system)
}

/// `check` of `input` read: its kind, its name (given, else its default
/// name, `_2`, `_3`, … on the second and later of that default in one
/// input), its settings and its definition, templates rendered for
/// `input`.
fn read(check: &CarriedCheck, count: usize, input: &Input) -> Result<Read, String> {
    let t = &check.table;
    check_keys(t)?;
    let kind = match (t.get("kind"), t.get("check")) {
        (Some(Value::String(k)), _) => k.clone(),
        (None, Some(_)) => "check".to_string(),
        _ => {
            return Err(
                "a check needs `kind` (a built-in kind or `judge`) or `check` (an expression)"
                    .into(),
            )
        }
    };
    let name = match t.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ if count > 1 => format!("{}_{count}", check.default_name),
        _ => check.default_name.clone(),
    };
    let name_for = |n: &str| format!("({n}): ");
    let number = |key: &str| t.get(key).and_then(Value::as_f64).unwrap_or(1.0);
    let settings = Settings {
        message: t.get("message").and_then(Value::as_str).map(str::to_string),
        minimum_success_percentage: number("minimum_success_percentage"),
        weight: number("weight"),
    };
    let def = if kind == JUDGE {
        if let Some(key) = t.keys().find(|k| !JUDGE_KEYS.contains(&k.as_str())) {
            return Err(format!(
                "{}field `{key}` does not apply to kind `judge`",
                name_for(&name)
            ));
        }
        let rubric = match t.get("instructions").and_then(Value::as_str) {
            Some(r) if !r.trim().is_empty() => r,
            _ => {
                return Err(format!(
                    "{}field `instructions`: a judge needs its rubric",
                    name_for(&name)
                ))
            }
        };
        let rubric = if is_template(rubric) {
            render_check_text("instructions", rubric, input)
                .map_err(|e| format!("{}field `instructions`: {e}", name_for(&name)))?
        } else {
            rubric.to_string()
        };
        Def::Rubric(rubric)
    } else {
        Def::Check(
            validator_check(t, &kind, &name, input)
                .map_err(|e| format!("{}{e}", name_for(&name)))?,
        )
    };
    Ok(Read {
        kind,
        name,
        settings,
        def,
    })
}

/// Every key known and of its type; no `when`.
fn check_keys(t: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in t {
        if key == "when" {
            return Err("field `when`: a check an input carries applies to that input; `when` belongs on a [[validator]] or [[verifier]]".into());
        }
        let Some((_, ty)) = KEYS.iter().find(|(k, _)| k == key) else {
            let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
            return Err(format!(
                "unknown field `{key}` (a check's fields: {})",
                keys.join(", ")
            ));
        };
        let fits = match ty {
            Ty::Text => value.is_string(),
            Ty::Number => value.as_f64().is_some(),
            Ty::Bool => value.is_boolean(),
            Ty::Count => value.as_u64().is_some(),
            Ty::Any => true,
        };
        if !fits {
            let what = match ty {
                Ty::Text => "a string",
                Ty::Number => "a number",
                Ty::Bool => "true or false",
                Ty::Count => "a whole number ≥ 0",
                Ty::Any => "any value",
            };
            return Err(format!("field `{key}` must be {what}, found {value}"));
        }
    }
    Ok(())
}

/// A built-in kind or expression check for `input`, compiled with its
/// templates rendered; an expression may read only fields `input` has.
fn validator_check(
    t: &Map<String, Value>,
    kind: &str,
    name: &str,
    input: &Input,
) -> Result<Check, String> {
    if t.contains_key("kind")
        && serde_json::from_value::<BuiltinKind>(Value::String(kind.into())).is_err()
    {
        return Err(format!(
            "field `kind`: unknown kind `{kind}` (the kinds: {KINDS})"
        ));
    }
    if t.contains_key("instructions") {
        return Err(format!(
            "field `instructions` applies to kind `judge`, not `{kind}`"
        ));
    }
    let mut table = t.clone();
    table.insert("name".into(), Value::String(name.into()));
    let spec: ValidatorSpec =
        serde_json::from_value(Value::Object(table)).map_err(|e| e.to_string())?;
    let spec = templated::render(&spec, input)?;
    let v = spec.compile().map_err(|e| match e {
        probity_core::validator::ValidatorError::InvalidField { field, reason, .. } => {
            format!("field `{field}`: {reason}")
        }
        other => other.to_string(),
    })?;
    if let Some(field) = v
        .input_fields()
        .into_iter()
        .find(|f| !input.fields.contains_key(f))
    {
        return Err(format!(
            "field `check` reads input field `{field}`, which this input does not have"
        ));
    }
    Ok(v.check)
}

/// Add `read` to its column (by kind and name), or start one; `at` is
/// where it is. The same name for two kinds, settings that differ from
/// the column's, or one input carrying a column twice are errors.
fn add(cols: &mut Vec<Column>, read: Read, input: &Input, at: String) -> Result<(), String> {
    let col = match cols.iter_mut().position(|c| c.name == read.name) {
        Some(k) => &mut cols[k],
        None => {
            cols.push(Column {
                kind: read.kind.clone(),
                name: read.name.clone(),
                first: at,
                settings: read.settings.clone(),
                checks: HashMap::new(),
                rubrics: HashMap::new(),
            });
            cols.last_mut().expect("just pushed")
        }
    };
    let name = &read.name;
    if col.kind != read.kind {
        return Err(format!(
            "({name}): the name `{name}` is a `{}` check at {}: two kinds cannot share a name",
            col.kind, col.first
        ));
    }
    if col.settings != read.settings {
        return Err(format!(
            "({name}): its message, minimum_success_percentage or weight differ from those at {} (one check, one threshold)",
            col.first
        ));
    }
    let again = match read.def {
        Def::Check(c) => col.checks.insert(input.id.clone(), c).is_some(),
        Def::Rubric(r) => col.rubrics.insert(input.id.clone(), r).is_some(),
    };
    if again {
        return Err(format!(
            "({name}): this input carries two checks named `{name}`; give one a `name`"
        ));
    }
    Ok(())
}

/// The carried checks as written, for the configuration's hash: runs
/// whose inputs carry other checks ask other questions.
pub(crate) fn as_json(carried: &[Carried]) -> String {
    let all: Vec<Value> = carried
        .iter()
        .map(|c| {
            let checks: Vec<Value> = c
                .checks
                .iter()
                .map(|k| serde_json::json!([k.default_name, k.table]))
                .collect();
            serde_json::json!([c.input, checks])
        })
        .collect();
    Value::Array(all).to_string()
}

/// The gathered columns as validators and verifiers.
fn build(
    cols: Vec<Column>,
    system: &ProviderConfig,
) -> Result<(Vec<Validator>, Vec<Verifier>), InputError> {
    let (mut validators, mut verifiers) = (Vec::new(), Vec::new());
    for col in cols {
        let err = |message: String| InputError::Carried {
            origin: col.first.clone(),
            message: format!("({}): {message}", col.name),
        };
        let s = &col.settings;
        if col.kind == JUDGE {
            let spec = VerifierSpec {
                name: col.name.clone(),
                message: s.message.clone().unwrap_or_default(),
                instructions: "the rubric each input carries".into(),
                minimum_success_percentage: s.minimum_success_percentage,
                weight: s.weight,
                structured: Default::default(),
                system: None,
                calibration: None,
                when: None,
            };
            let mut v = spec.compile(system).map_err(err)?;
            v.per_input = Some(Arc::new(col.rubrics));
            verifiers.push(v);
        } else {
            let v = Validator {
                message: s.message.clone().unwrap_or_else(|| col.name.clone()),
                name: col.name.clone(),
                minimum_success_percentage: s.minimum_success_percentage,
                weight: s.weight,
                check: Check::PerInput(Arc::new(col.checks)),
                when: None,
            };
            validators.push(v.validated().map_err(|e| err(e.to_string()))?);
        }
    }
    Ok((validators, verifiers))
}
