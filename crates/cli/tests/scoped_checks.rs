//! Checks that apply to some inputs only (`when = "…"`), end to end on
//! the simulator: inputs a check does not apply to are not judged (no
//! judge call), counted apart, and outside its rate and interval — which
//! are exactly those of the same check run on its inputs alone; the store
//! (SQLite and PostgreSQL) gives the same back; a bad `when` is refused
//! before any call, naming the file, the line and the field or input.

use crate::common;

use common::{probity, text};
use probity_engine::store::postgres::testing::TestDatabase;
use serde_json::Value;
use std::path::Path;

const M: u64 = 6;

/// 20 inputs: 4 about refunds, 16 greetings (2 of them thanks).
fn inputs(only_refunds: bool) -> String {
    let mut out = String::new();
    for i in 0..20 {
        let refund = i % 5 == 0;
        if only_refunds && !refund {
            continue;
        }
        let (topic, text) = if refund {
            ("refund", format!("I want a refund for order {i}"))
        } else if i % 7 == 1 {
            ("greeting", format!("Thank you for the help with {i}!"))
        } else {
            ("greeting", format!("Hello number {i}"))
        };
        out.push_str(&format!(
            "{{\"id\":\"q{i:02}\",\"text\":\"{text}\",\"topic\":\"{topic}\"}}\n"
        ));
    }
    out
}

fn config(when: Option<&str>) -> String {
    let when = when.map(|w| format!("when = '{w}'\n")).unwrap_or_default();
    format!(
        r#"name = "scoped"

[system]
provider = "sim"
seed = 5
contractions = 0.3

[experiment]
inputs = "inputs.jsonl"
outputs_per_input = {M}

[[validator]]
name = "short"
kind = "words"
max = 400

[[verifier]]
name = "refund_judge"
{when}instructions = "PASS when the answer handles the refund politely."
minimum_success_percentage = 0.5
"#
    )
}

fn write(dir: &Path, config: &str, inputs: &str) {
    std::fs::write(dir.join("probity.toml"), config).unwrap();
    std::fs::write(dir.join("inputs.jsonl"), inputs).unwrap();
}

fn report_json(dir: &Path, store: Option<&str>) -> Value {
    let mut args = vec!["report", "1", "--format", "json"];
    if let Some(s) = store {
        args.extend(["--store", s]);
    }
    let out = probity(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

#[test]
fn a_check_with_when_judges_its_inputs_alone_and_its_interval_is_theirs() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &config(Some(r#"input.topic == "refund""#)),
        &inputs(false),
    );
    let out = probity(dir.path(), &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("applies to 4 of 20 inputs (16 not applicable)"),
        "{stdout}"
    );
    let scoped = report_json(dir.path(), None);
    let judge = check(&scoped, "refund_judge");
    assert_eq!(
        judge["applies_to"],
        serde_json::json!({"inputs": 4, "of": 20})
    );
    assert_eq!(judge["rate"]["inputs"], 4);
    // Judged: 4 inputs × M; nothing counted for the other 16.
    let r = &judge["rate"];
    let judged =
        r["pass"].as_u64().unwrap() + r["fail"].as_u64().unwrap() + r["error"].as_u64().unwrap();
    assert_eq!(judged, 4 * M, "{r}");
    assert_eq!(r["missing"], 0);
    // No judge call for an input the judge does not apply to.
    let runs = common::json_runs(dir.path());
    assert_eq!(runs[0]["judge_calls"], 4 * M, "{}", runs[0]);
    // The check that applies everywhere is untouched.
    assert_eq!(check(&scoped, "short")["applies_to"], Value::Null);
    assert_eq!(check(&scoped, "short")["rate"]["n"], 20 * M);

    // The same judge, no `when`, on the 4 refund inputs alone: the same
    // counts, estimate and interval (the simulator's outputs depend on
    // the input, not on its neighbours).
    let alone = tempfile::tempdir().unwrap();
    write(alone.path(), &config(None), &inputs(true));
    let out = probity(alone.path(), &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let alone = report_json(alone.path(), None);
    let a = &check(&alone, "refund_judge")["rate"];
    for key in ["pass", "fail", "n", "inputs", "estimate", "lower", "upper"] {
        assert_eq!(r[key], a[key], "{key}: scoped {r} vs alone {a}");
    }
    assert_eq!(check(&alone, "refund_judge")["applies_to"], Value::Null);
}

#[test]
fn not_applicable_cells_round_trip_through_postgres_as_through_sqlite() {
    let Some(db) = TestDatabase::create() else {
        panic!("PROBITY_TEST_PG is not set: this test needs a PostgreSQL server");
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &config(Some(r#"input.topic == "refund""#)),
        &inputs(false),
    );
    for store in [db.url(), "sqlite.db"] {
        let out = probity(dir.path(), &["run", "probity.toml", "--store", store]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            text(&out.stderr)
        );
    }
    let pg = report_json(dir.path(), Some(db.url()));
    let lite = report_json(dir.path(), Some("sqlite.db"));
    assert_eq!(pg["checks"], lite["checks"]);
    assert_eq!(
        check(&pg, "refund_judge")["applies_to"],
        serde_json::json!({"inputs": 4, "of": 20})
    );
    // Revalidated from the stored outputs (no snapshot): the same cells.
    let out = probity(
        dir.path(),
        &["revalidate", "1", "--store", db.url(), "--no-calls"],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("applies to 4 of 20 inputs"), "{stdout}");
}

fn refused(when: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &config(Some(when)), &inputs(false));
    let out = probity(dir.path(), &["run", "probity.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(common::json_runs(dir.path()).is_empty(), "nothing stored");
    text(&out.stderr)
}

#[test]
fn a_bad_when_is_refused_before_any_call_naming_file_line_and_field() {
    // The `when` is on line 19 of the file `config` writes.
    let typo = refused(r#"input.topic == "refund"))"#);
    assert!(
        typo.contains("probity.toml: line 19: [[verifier]] #1 (refund_judge)"),
        "{typo}"
    );
    assert!(
        typo.contains("field `when`") && typo.contains("does not compile"),
        "{typo}"
    );

    let unknown = refused(r#"input.topik == "refund""#);
    assert!(unknown.contains("probity.toml: line 19:"), "{unknown}");
    assert!(
        unknown.contains("reads input field `topik`, which no input has"),
        "{unknown}"
    );
    assert!(
        unknown.contains("id, text, topic") || unknown.contains("text, topic"),
        "{unknown}"
    );

    let not_bool = refused("input.topic");
    assert!(
        not_bool.contains("cannot be decided on input \"q00\""),
        "{not_bool}"
    );
    assert!(not_bool.contains("not a bool"), "{not_bool}");

    let output = refused(r#"output.contains("refund")"#);
    assert!(
        output.contains("field `when`") && output.contains("output"),
        "{output}"
    );

    let none = refused(r#"input.topic == "billing""#);
    assert!(none.contains("holds for none of the 20 inputs"), "{none}");
}

/// A judge's rubric may use the input's fields (`{{ topic }}`): rendered
/// per input, checked for every input it applies to before any call.
fn templated(rubric: &str) -> String {
    config(Some(r#"input.topic == "refund""#)).replace(
        "instructions = \"PASS when the answer handles the refund politely.\"",
        &format!("instructions = \"{rubric}\""),
    )
}

#[test]
fn a_judge_rubric_uses_the_inputs_fields_and_a_missing_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &templated("PASS when the answer handles the {{ topic }} of {{ input.id }} politely."),
        &inputs(false),
    );
    let out = probity(dir.path(), &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let runs = common::json_runs(dir.path());
    assert_eq!(runs[0]["judge_calls"], 4 * M, "{}", runs[0]);

    // A field no input has: refused before any call, naming the file, the
    // table, the field, the input and the missing field.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &templated("PASS when the answer names {{ country }}."),
        &inputs(false),
    );
    let out = probity(dir.path(), &["run", "probity.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(common::json_runs(dir.path()).is_empty(), "nothing stored");
    let err = text(&out.stderr);
    assert!(
        err.contains("probity.toml: [[verifier]] #1 (refund_judge): field `instructions`"),
        "{err}"
    );
    assert!(err.contains("input \"q00\""), "{err}");
    assert!(err.contains("no field `country`"), "{err}");
}
