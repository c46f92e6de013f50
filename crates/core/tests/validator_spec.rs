//! `[[validator]]` specs: deserialisation, compilation, errors, round trips.

use probity_core::validator::{BuiltinKind, SchemaSpec, ValidatorError, ValidatorSpec};
use probity_core::{Input, Verdict};
use serde_json::json;

fn spec(v: serde_json::Value) -> ValidatorSpec {
    serde_json::from_value(v).unwrap()
}

fn field_error(v: serde_json::Value) -> (String, String) {
    match spec(v).compile().unwrap_err() {
        ValidatorError::InvalidField {
            validator, field, ..
        } => (validator, field),
        other => panic!("{other:?}"),
    }
}

#[test]
fn design_md_expression_specs() {
    let c = spec(json!({
        "name": "contraction_validator",
        "message": "Output contains too many contractions",
        "check": "count(output, \"'\") <= 3",
        "minimum_success_percentage": 0.95
    }));
    assert_eq!(c.weight, 1.0);
    let v = c.compile().unwrap();
    assert_eq!(v.message, "Output contains too many contractions");
    assert_eq!(v.minimum_success_percentage, 0.95);
    let i = Input::text("0", "hi");
    assert_eq!(
        v.evaluate(&i, "I can't and won't and don't and isn't"),
        Verdict::Fail
    );

    let p = spec(json!({
        "name": "politeness_validator",
        "message": "System seems to have forgotten its manners",
        "check": "if input.text.contains(\"Thank you\") { output.contains(\"You're welcome\") } else { true }",
        "minimum_success_percentage": 0.90
    }))
    .compile()
    .unwrap();
    assert_eq!(
        p.evaluate(&Input::text("0", "Thank you!"), "ok"),
        Verdict::Fail
    );
    assert_eq!(
        p.evaluate(&Input::text("0", "Thank you!"), "You're welcome"),
        Verdict::Pass
    );
}

#[test]
fn every_kind_compiles_and_checks() {
    let cases = [
        (json!({"kind": "contains", "value": "hi"}), "oh hi", "oh HI"),
        (
            json!({"kind": "contains", "value": "hi", "case_insensitive": true}),
            "oh HI",
            "oh",
        ),
        (
            json!({"kind": "not-contains", "value": "sorry"}),
            "fine",
            "so sorry",
        ),
        (
            json!({"kind": "not-contains", "value": "sorry", "case_insensitive": true}),
            "fine",
            "SORRY",
        ),
        (json!({"kind": "regex", "pattern": "^\\d+$"}), "123", "12a"),
        (
            json!({"kind": "count", "value": "'", "max": 3}),
            "a'b'c",
            "''''",
        ),
        (
            json!({"kind": "count", "value": "x", "case_insensitive": true, "min": 2}),
            "xX",
            "x",
        ),
        (
            json!({"kind": "count", "pattern": "\\d+", "min": 2, "max": 2}),
            "1 22",
            "1 22 333",
        ),
        (json!({"kind": "length", "min": 1, "max": 3}), "abc", "abcd"),
        (
            json!({"kind": "words", "max": 2}),
            "one two",
            "one two three",
        ),
        (
            json!({"kind": "equals", "value": "yes", "trim": true, "case_insensitive": true}),
            " YES ",
            "yes!",
        ),
        (
            json!({"kind": "starts-with", "value": "Dear"}),
            "Dear Sir",
            "Hi Dear",
        ),
        (json!({"kind": "ends-with", "value": "."}), "Done.", "Done"),
        (json!({"kind": "is-json"}), "[1]", "[1"),
        (
            json!({"kind": "json-schema", "schema": {"type": "array"}}),
            "[1]",
            "{}",
        ),
        (
            json!({"kind": "json-schema", "schema": "{\"type\": \"array\"}"}),
            "[]",
            "1",
        ),
    ];
    let i = Input::text("0", "");
    for (mut j, pass, fail) in cases {
        j["name"] = json!("v");
        let v = spec(j.clone())
            .compile()
            .unwrap_or_else(|e| panic!("{j}: {e}"));
        assert_eq!(v.evaluate(&i, pass), Verdict::Pass, "{j} on {pass:?}");
        assert_eq!(v.evaluate(&i, fail), Verdict::Fail, "{j} on {fail:?}");
        j["negate"] = json!(true);
        let n = spec(j.clone()).compile().unwrap();
        assert_eq!(n.evaluate(&i, pass), Verdict::Fail, "{j} on {pass:?}");
        assert_eq!(n.evaluate(&i, fail), Verdict::Pass, "{j} on {fail:?}");
    }
}

#[test]
fn negated_expression_spec() {
    let v = spec(json!({"name": "n", "check": "output == \"x\"", "negate": true}))
        .compile()
        .unwrap();
    let i = Input::text("0", "");
    assert_eq!(v.evaluate(&i, "x"), Verdict::Fail);
    assert_eq!(v.evaluate(&i, "y"), Verdict::Pass);
}

#[test]
fn unknown_keys_are_rejected() {
    let r: Result<ValidatorSpec, _> =
        serde_json::from_value(json!({"name": "v", "kind": "contains", "valeu": "x"}));
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("valeu"), "{msg}");
    let r: Result<ValidatorSpec, _> =
        serde_json::from_value(json!({"name": "v", "kind": "containz"}));
    assert!(r.is_err());
}

#[test]
fn spec_errors_name_validator_and_field() {
    assert_eq!(
        field_error(json!({"name": "a"})),
        ("a".into(), "kind".into())
    );
    assert_eq!(
        field_error(json!({"name": "b", "check": "true", "kind": "is-json"})),
        ("b".into(), "check".into())
    );
    assert_eq!(
        field_error(json!({"name": "c", "kind": "contains"})),
        ("c".into(), "value".into())
    );
    assert_eq!(
        field_error(json!({"name": "d", "kind": "contains", "value": "x", "pattern": "y"})),
        ("d".into(), "pattern".into())
    );
    assert_eq!(
        field_error(json!({"name": "e", "kind": "regex", "pattern": "("})),
        ("e".into(), "pattern".into())
    );
    assert_eq!(
        field_error(json!({"name": "f", "kind": "length"})),
        ("f".into(), "min".into())
    );
    assert_eq!(
        field_error(json!({"name": "g", "kind": "words", "min": 5, "max": 1})),
        ("g".into(), "max".into())
    );
    assert_eq!(
        field_error(json!({"name": "h", "kind": "json-schema"})),
        ("h".into(), "schema".into())
    );
    assert_eq!(
        field_error(json!({"name": "i", "kind": "json-schema", "schema": {"type": 12}})),
        ("i".into(), "schema".into())
    );
    assert_eq!(
        field_error(json!({"name": "j", "kind": "json-schema", "schema": "{not json"})),
        ("j".into(), "schema".into())
    );
    assert_eq!(
        field_error(json!({"name": "k", "kind": "count", "value": "x", "pattern": "y", "max": 1})),
        ("k".into(), "value".into())
    );
    assert_eq!(
        field_error(json!({"name": "l", "kind": "is-json", "minimum_success_percentage": 1.5})),
        ("l".into(), "minimum_success_percentage".into())
    );
    assert_eq!(
        field_error(json!({"name": "m", "kind": "is-json", "weight": -2})),
        ("m".into(), "weight".into())
    );
    assert_eq!(
        field_error(json!({"name": "n", "check": "true", "value": "x"})),
        ("n".into(), "value".into())
    );
    assert_eq!(
        field_error(json!({"name": " ", "kind": "is-json"})).1,
        "name"
    );
    // A compile error names the validator with line and column.
    match spec(json!({"name": "o", "check": "output.len() >"}))
        .compile()
        .unwrap_err()
    {
        ValidatorError::Compile {
            validator,
            line,
            column,
            ..
        } => {
            assert_eq!(validator, "o");
            assert_eq!(line, Some(1));
            assert!(column.is_some());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn specs_round_trip_through_json() {
    let specs = [
        json!({"name": "contraction_validator", "message": "too many", "check": "count(output, \"'\") <= 3",
               "minimum_success_percentage": 0.95, "weight": 1.0}),
        json!({"name": "p", "check": "true", "minimum_success_percentage": 0.9, "weight": 3.0, "negate": true}),
        json!({"name": "c", "kind": "count", "value": "'", "case_insensitive": false, "max": 3,
               "minimum_success_percentage": 1.0, "weight": 2.0}),
        json!({"name": "s", "kind": "json-schema", "schema": {"type": "object", "required": ["a"]},
               "minimum_success_percentage": 1.0, "weight": 1.0}),
        json!({"name": "t", "kind": "json-schema", "schema": "{\"type\": \"object\"}",
               "minimum_success_percentage": 1.0, "weight": 1.0}),
        json!({"name": "e", "kind": "ends-with", "value": ".", "trim": true,
               "minimum_success_percentage": 0.5, "weight": 0.0}),
    ];
    for j in specs {
        let s: ValidatorSpec = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(serde_json::to_value(&s).unwrap(), j);
        let back: ValidatorSpec =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        back.compile().unwrap();
    }
    let s: ValidatorSpec =
        serde_json::from_value(json!({"name": "t", "kind": "json-schema", "schema": "{}"}))
            .unwrap();
    assert_eq!(s.kind, Some(BuiltinKind::JsonSchema));
    assert!(matches!(s.schema, Some(SchemaSpec::Text(_))));
    assert_eq!(BuiltinKind::StartsWith.to_string(), "starts-with");
}

#[test]
fn spec_built_in_code() {
    let mut s = ValidatorSpec::new("v");
    s.kind = Some(BuiltinKind::Words);
    s.min = Some(1);
    let v = s.compile().unwrap();
    assert_eq!(v.message, "v");
    assert_eq!(v.evaluate(&Input::text("0", ""), "word"), Verdict::Pass);
}
