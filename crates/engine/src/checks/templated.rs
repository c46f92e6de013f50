//! Templates in a built-in check's text settings: `value = "{{ expected }}"`
//! (and `pattern`), rendered for each input with the judge rubrics' engine
//! and rules ([`render_check_text`]: minijinja, strict undefined, every
//! field by name and as `input`). They are rendered when the file is
//! loaded, for every input the check applies to, so a field an input lacks
//! stops the run before any call, naming the check, the field, the input
//! and the missing field; the check then holds one compiled check per
//! input ([`Check::PerInput`]).

use crate::provider::template::{is_template, render_check_text};
use probity_core::validator::{Check, Validator, ValidatorSpec};
use probity_core::Input;
use std::collections::HashMap;
use std::sync::Arc;

/// The settings of a built-in kind that may be templates.
pub const FIELDS: [&str; 2] = ["value", "pattern"];

fn slot<'a>(spec: &'a mut ValidatorSpec, field: &str) -> &'a mut Option<String> {
    match field {
        "value" => &mut spec.value,
        _ => &mut spec.pattern,
    }
}

/// The settings of `spec` that are templates (`{{ … }}`).
pub fn templated(spec: &ValidatorSpec) -> Vec<&'static str> {
    let mut spec = spec.clone();
    FIELDS
        .into_iter()
        .filter(|f| slot(&mut spec, f).as_deref().is_some_and(is_template))
        .collect()
}

/// `spec` with each template replaced by a plain text: compiled when the
/// file is read, to check its other settings before the inputs are.
pub fn placeholder(spec: &ValidatorSpec) -> ValidatorSpec {
    let mut plain = spec.clone();
    for field in templated(spec) {
        *slot(&mut plain, field) = Some("x".into());
    }
    plain
}

/// `spec` with its templates rendered for `input`; `Err` names the field,
/// the input and what could not be rendered (a missing field).
pub fn render(spec: &ValidatorSpec, input: &Input) -> Result<ValidatorSpec, String> {
    let mut out = spec.clone();
    for field in templated(spec) {
        let source = slot(&mut out, field).take().unwrap_or_default();
        let text = render_check_text(field, &source, input)
            .map_err(|e| format!("field `{field}`: {e}"))?;
        *slot(&mut out, field) = Some(text);
    }
    Ok(out)
}

/// The compiled check of `spec` rendered for `input` (its `when` left to
/// the column).
pub fn check_for(spec: &ValidatorSpec, input: &Input) -> Result<Check, String> {
    let mut rendered = render(spec, input)?;
    rendered.when = None;
    rendered
        .compile()
        .map(|v| v.check)
        .map_err(|e| format!("for input {:?}: {e}", input.id))
}

/// Each validator of `specs` with a templated setting, found by name in
/// `validators` (compiled from [`placeholder`]), gets its check rendered
/// for every input it applies to. An input whose `when` cannot be decided
/// is left to the applicability check, which names it. `Err` names the
/// table (`[[validator]] #k (name)`) and the input.
pub fn resolve<'a>(
    specs: impl Iterator<Item = (usize, &'a ValidatorSpec)>,
    validators: &mut [Validator],
    inputs: &[Input],
) -> Result<(), String> {
    for (k, spec) in specs {
        if templated(spec).is_empty() {
            continue;
        }
        let table = format!("[[validator]] #{} ({})", k + 1, spec.name);
        let Some(v) = validators.iter_mut().find(|v| v.name == spec.name) else {
            continue;
        };
        let mut by_id = HashMap::new();
        for input in inputs {
            let applies = v.when.as_ref().map_or(Ok(true), |c| c.applies_to(input));
            if applies != Ok(true) {
                continue;
            }
            let check = check_for(spec, input).map_err(|e| format!("{table}: {e}"))?;
            by_id.insert(input.id.clone(), check);
        }
        v.check = Check::PerInput(Arc::new(by_id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use probity_core::validator::{BuiltinKind, PreparedInput};
    use probity_core::Verdict;

    fn input(id: &str, expected: &str) -> Input {
        let mut i = Input::text(id, "q");
        i.fields.insert("expected".into(), expected.into());
        i
    }

    #[test]
    fn a_templated_value_is_each_inputs_own_and_a_missing_field_is_named() {
        let mut spec = ValidatorSpec::new("answer");
        spec.kind = Some(BuiltinKind::Contains);
        spec.value = Some("{{ expected }}".into());
        assert_eq!(templated(&spec), ["value"]);
        let mut validators = vec![placeholder(&spec).compile().unwrap()];
        let inputs = [input("a", "Paris"), input("b", "Rome")];
        resolve([(0, &spec)].into_iter(), &mut validators, &inputs).unwrap();
        let v = &validators[0];
        let on = |i: &Input, o: &str| v.evaluate_prepared(&PreparedInput::new(i), o);
        assert_eq!(on(&inputs[0], "It is Paris."), Verdict::Pass);
        assert_eq!(on(&inputs[1], "It is Paris."), Verdict::Fail);
        assert_eq!(on(&inputs[1], "Rome, of course"), Verdict::Pass);
        // An input met later (no check of its own) is not judged by it.
        let other = input("c", "Paris");
        assert_eq!(v.applies(&PreparedInput::new(&other)), Ok(false));

        let err = resolve(
            [(2, &spec)].into_iter(),
            &mut validators,
            &[Input::text("q7", "no expected here")],
        )
        .unwrap_err();
        assert_eq!(
            err,
            "[[validator]] #3 (answer): field `value`: cannot render the value template (line 1) for input \"q7\": `expected` is undefined (no field `expected`)"
        );
    }

    #[test]
    fn a_templated_pattern_that_renders_to_a_bad_regex_names_the_input() {
        let mut spec = ValidatorSpec::new("shape");
        spec.kind = Some(BuiltinKind::Regex);
        spec.pattern = Some("^{{ expected }}$".into());
        let mut validators = vec![placeholder(&spec).compile().unwrap()];
        let err = resolve(
            [(0, &spec)].into_iter(),
            &mut validators,
            &[input("ok", "a+"), input("bad", "(")],
        )
        .unwrap_err();
        assert!(
            err.starts_with(
                "[[validator]] #1 (shape): for input \"bad\": validator `shape`: field `pattern`"
            ),
            "{err}"
        );
    }
}
