//! Which inputs each check applies to (`when = "…"` on a `[[validator]]`
//! or `[[verifier]]`), checked when the file is loaded: a condition that
//! reads a field no input has, that cannot be decided on some input, or
//! that holds for no input is an error naming the table, its line, the
//! field or the input — before any call is made. The run decides each
//! output's applicability again through [`crate::checks::check::Checks`]
//! (the same condition on the same input: the same answer).

use probity_core::validator::{Condition, PreparedInput, Validator};
use probity_core::Input;
use serde::Deserialize;

/// One check's condition, as the loader sees it: the table it is in
/// (`[[validator]] #2 (refund)`) and its condition.
pub struct Scoped<'a> {
    pub table: String,
    pub when: &'a Condition,
}

/// The conditions of `validators` then `verifiers` (those that have one),
/// each named by its table (`line 12: [[validator]] #k (name)`, 1-based
/// among its kind; the line of its `when` in `text` when `text` is the
/// file).
pub fn scoped<'a>(
    text: &str,
    validators: &'a [Validator],
    verifiers: impl Iterator<Item = (&'a str, Option<&'a Condition>)>,
) -> Vec<Scoped<'a>> {
    let v = validators.iter().enumerate().filter_map(|(k, v)| {
        v.when.as_ref().map(|when| Scoped {
            table: table(text, "validator", k, &v.name),
            when,
        })
    });
    let w = verifiers.enumerate().filter_map(|(k, (name, when))| {
        when.map(|when| Scoped {
            table: table(text, "verifier", k, name),
            when,
        })
    });
    v.chain(w).collect()
}

/// `line L: [[kind]] #k (name)`, the line that of the table's `when`.
pub fn table(text: &str, kind: &str, index: usize, name: &str) -> String {
    let line = when_line(text, kind, index)
        .map(|l| format!("line {l}: "))
        .unwrap_or_default();
    format!("{line}[[{kind}]] #{} ({name})", index + 1)
}

#[derive(Deserialize)]
struct WhenOf {
    when: Option<toml::Spanned<String>>,
}

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    validator: Vec<WhenOf>,
    #[serde(default)]
    verifier: Vec<WhenOf>,
}

/// The 1-based line of the `when` of the `index`-th (0-based) table of
/// `kind` (`"validator"`, `"verifier"`) in `text`, when `text` is the TOML
/// file and has one.
pub(crate) fn when_line(text: &str, kind: &str, index: usize) -> Option<usize> {
    let t: Tables = toml::from_str(text).ok()?;
    let tables = if kind == "validator" {
        t.validator
    } else {
        t.verifier
    };
    let at = tables.get(index)?.when.as_ref()?.span().start;
    Some(text[..at.min(text.len())].matches('\n').count() + 1)
}

/// Check every condition against `inputs`: each field it reads is a field
/// of some input; it is decided (true or false) on every input; it holds
/// for at least one. Returns, per condition, how many inputs it holds for.
pub fn check(scoped: &[Scoped<'_>], inputs: &[Input]) -> Result<Vec<usize>, String> {
    let mut out = Vec::with_capacity(scoped.len());
    for s in scoped {
        for field in s.when.input_fields() {
            if !inputs.iter().any(|i| i.fields.contains_key(&field)) {
                let mut known: Vec<String> = inputs.iter().flat_map(|i| i.fields.keys()).collect();
                known.sort_unstable();
                known.dedup();
                return Err(format!(
                    "{}: field `when`: reads input field `{field}`, which no input has (the inputs' fields: {})",
                    s.table,
                    known.join(", ")
                ));
            }
        }
        let mut holds = 0;
        for input in inputs {
            match s.when.applies(&PreparedInput::new(input)) {
                Ok(true) => holds += 1,
                Ok(false) => {}
                Err(reason) => {
                    return Err(format!(
                        "{}: field `when` cannot be decided on input {:?}: {reason}",
                        s.table, input.id
                    ))
                }
            }
        }
        if holds == 0 {
            return Err(format!(
                "{}: field `when = {:?}` holds for none of the {} inputs: the check would judge nothing",
                s.table,
                s.when.source(),
                inputs.len()
            ));
        }
        out.push(holds);
    }
    Ok(out)
}
