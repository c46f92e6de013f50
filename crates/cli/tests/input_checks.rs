//! Test cases with their own checks, end to end on the simulator: a
//! `[[validator]]`'s `value` templated with each input's expected answer
//! passes and fails exactly the right cells; a check carried by some
//! inputs is a column applying to those alone; a promptfoo test file
//! (`vars` + `assert`) gives the results of the equivalent hand-written
//! probity.toml; and every bad input is refused before any call, naming
//! the file, the line or test, the check and the field.
//!
//! The simulator echoes the question's words ("You asked about tell me
//! about Paris."), so an expected city is in every output of an input
//! asking about it and in none of an input asking about another.

use crate::common;

use common::{probity, text};
use serde_json::{json, Value};
use std::path::Path;

const M: u64 = 4;

const CITIES: [&str; 10] = [
    "Paris", "Rome", "Oslo", "Lima", "Cairo", "Quito", "Dakar", "Hanoi", "Riga", "Perth",
];

/// The header of a configuration on the simulator, `strategy = "rows"`
/// (each check's rate per input in the JSON report).
fn head(inputs: &str, user: &str) -> String {
    format!(
        r#"name = "cases"

[system]
provider = "sim"
seed = 11

[prompt]
user = "{user}"

[experiment]
inputs = "{inputs}"
outputs_per_input = {M}
strategy = "rows"
"#
    )
}

fn run_ok(dir: &Path) -> String {
    let out = probity(dir, &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn report(dir: &Path) -> Value {
    let out = probity(dir, &["report", "1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {}", report["checks"]))
}

/// A check's pass rate on each input, by input label.
fn per_input(report: &Value, name: &str) -> Vec<(String, f64)> {
    check(report, name)["breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["label"].as_str().unwrap().to_string(),
                e["rate"]["estimate"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Ten inputs asking about a city; the expected answer of the last three
/// is another city (a wrong expectation: every output fails it).
fn expecting() -> String {
    CITIES
        .iter()
        .enumerate()
        .map(|(i, city)| {
            let expected = if i >= 7 { CITIES[i - 7] } else { city };
            format!(
                "{}\n",
                json!({"id": format!("c{i}"), "text": format!("Tell me about {city}"), "expected": expected})
            )
        })
        .collect()
}

#[test]
fn a_templated_expected_value_passes_and_fails_the_right_cells() {
    let dir = tempfile::tempdir().unwrap();
    let config = head("inputs.jsonl", "{{ input.text }}")
        + r#"
[[validator]]
name = "expected_city"
kind = "contains"
value = "{{ expected }}"

[[validator]]
name = "by_expression"
check = "output.contains(input.expected)"
"#;
    std::fs::write(dir.path().join("probity.toml"), config).unwrap();
    std::fs::write(dir.path().join("inputs.jsonl"), expecting()).unwrap();
    run_ok(dir.path());
    let r = report(dir.path());
    let rates = per_input(&r, "expected_city");
    let want: Vec<(String, f64)> = (0..10)
        .map(|i| (format!("c{i}"), if i < 7 { 1.0 } else { 0.0 }))
        .collect();
    assert_eq!(rates, want);
    let rate = &check(&r, "expected_city")["rate"];
    assert_eq!(
        (rate["pass"].as_u64(), rate["fail"].as_u64()),
        (Some(7 * M), Some(3 * M))
    );
    assert_eq!(check(&r, "expected_city")["applies_to"], Value::Null);
    // The same as the expression a user had to write before.
    assert_eq!(rate, &check(&r, "by_expression")["rate"]);
}

/// Ten inputs about cities; those in `carrying` carry their own checks.
fn carrying(carrying: &[usize]) -> String {
    CITIES
        .iter()
        .enumerate()
        .map(|(i, city)| {
            let mut line = json!({"id": format!("c{i}"), "text": format!("Tell me about {city}"), "city": city});
            if carrying.contains(&i) {
                line["checks"] = json!([
                    {"kind": "contains", "value": "{{ city }}"},
                    {"kind": "judge", "instructions": "PASS when the answer is about {{ city }}."},
                ]);
            }
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn a_check_carried_by_3_of_10_inputs_applies_to_those_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = head("inputs.jsonl", "{{ input.text }}")
        + r#"
[[validator]]
name = "short"
kind = "words"
max = 400
"#;
    std::fs::write(dir.path().join("probity.toml"), config).unwrap();
    std::fs::write(dir.path().join("inputs.jsonl"), carrying(&[1, 4, 8])).unwrap();
    let stdout = run_ok(dir.path());
    assert_eq!(
        stdout
            .matches("applies to 3 of 10 inputs (7 not applicable)")
            .count(),
        2,
        "{stdout}"
    );
    let r = report(dir.path());
    let names: Vec<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["short", "contains", "judge"]);
    for name in ["contains", "judge"] {
        let c = check(&r, name);
        assert_eq!(c["applies_to"], json!({"inputs": 3, "of": 10}), "{name}");
        assert_eq!(c["rate"]["n"], 3 * M, "{name}");
        let labels: Vec<String> = per_input(&r, name).into_iter().map(|(l, _)| l).collect();
        assert_eq!(labels, ["c1", "c4", "c8"], "{name}");
    }
    assert_eq!(check(&r, "contains")["rate"]["pass"], 3 * M);
    assert_eq!(check(&r, "judge")["kind"], "verifier");
    // The judge is asked about the 3 inputs carrying it, nothing else.
    let runs = common::json_runs(dir.path());
    assert_eq!(runs[0]["judge_calls"], 3 * M, "{}", runs[0]);
    assert_eq!(check(&r, "short")["rate"]["n"], 10 * M);
}

/// Five promptfoo tests: each asks about a city and asserts it is named
/// (case-insensitively: the variable is in lower case) and judged; two
/// also assert no apology.
fn promptfoo_tests() -> Vec<Value> {
    CITIES[..5]
        .iter()
        .enumerate()
        .map(|(i, city)| {
            let mut asserts = vec![
                json!({"type": "icontains", "value": "{{ city }}"}),
                json!({"type": "llm-rubric", "value": "PASS when the answer is about {{ city }}."}),
            ];
            if i % 2 == 1 {
                asserts.push(json!({"type": "not-contains", "value": "sorry"}));
            }
            json!({"description": format!("about {city}"), "vars": {"question": format!("Tell me about {city}"), "city": city.to_lowercase()}, "assert": asserts})
        })
        .collect()
}

/// The same test written as probity.toml by hand.
const HAND_WRITTEN: &str = r#"
[[validator]]
name = "icontains"
kind = "contains"
case_insensitive = true
value = "{{ city }}"

[[validator]]
name = "not-contains"
when = 'input.city == "rome" || input.city == "lima"'
kind = "not-contains"
value = "sorry"

[[verifier]]
name = "llm-rubric"
instructions = "PASS when the answer is about {{ city }}."
"#;

#[test]
fn a_promptfoo_file_runs_as_the_equivalent_hand_written_probity_toml() {
    let tests = promptfoo_tests();
    let prompt = "{{ input.question }}";
    let hand = tempfile::tempdir().unwrap();
    std::fs::write(
        hand.path().join("probity.toml"),
        head("inputs.jsonl", prompt) + HAND_WRITTEN,
    )
    .unwrap();
    let vars: String = tests.iter().map(|t| format!("{}\n", t["vars"])).collect();
    std::fs::write(hand.path().join("inputs.jsonl"), vars).unwrap();
    run_ok(hand.path());
    let want = report(hand.path());

    // As promptfoo's JSON file, and as JSON lines; no check in the file.
    let as_json = json!({"tests": tests}).to_string();
    let as_lines: String = tests.iter().map(|t| format!("{t}\n")).collect();
    for (file, body) in [("tests.json", as_json), ("tests.jsonl", as_lines)] {
        let dir = tempfile::tempdir().unwrap();
        // promptfoo's own prompt: the variable by name.
        std::fs::write(dir.path().join("probity.toml"), head(file, "{{question}}")).unwrap();
        std::fs::write(dir.path().join(file), body).unwrap();
        run_ok(dir.path());
        let got = report(dir.path());
        for name in ["icontains", "not-contains", "llm-rubric"] {
            let (g, w) = (check(&got, name), check(&want, name));
            for key in ["rate", "applies_to", "kind", "breakdown"] {
                assert_eq!(g[key], w[key], "{file}: {name}: {key}");
            }
        }
        // Named in lower case, found in any case: every output passes.
        assert_eq!(check(&got, "icontains")["rate"]["pass"], 5 * M);
        assert_eq!(
            check(&got, "not-contains")["applies_to"],
            json!({"inputs": 2, "of": 5})
        );
        assert_eq!(
            common::json_runs(dir.path())[0]["judge_calls"],
            common::json_runs(hand.path())[0]["judge_calls"]
        );
    }
}

/// Runs `config` over `file` holding `body`: refused (exit 2) before any
/// call, nothing stored; the error.
fn refused(config: &str, file: &str, body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probity.toml"), config).unwrap();
    std::fs::write(dir.path().join(file), body).unwrap();
    let out = probity(dir.path(), &["run", "probity.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(common::json_runs(dir.path()).is_empty(), "nothing stored");
    text(&out.stderr).trim().to_string()
}

/// An input file of two good lines then `bad`, under a file with one
/// check.
fn refused_line(bad: Value) -> String {
    let config = head("in.jsonl", "{{ input.text }}")
        + "\n[[validator]]\nname = \"short\"\nkind = \"words\"\nmax = 400\n";
    let good = r#"{"id":"a","text":"Tell me about Paris","checks":[{"kind":"contains","value":"Paris"}]}
{"id":"b","text":"Tell me about Rome"}
"#;
    refused(&config, "in.jsonl", &format!("{good}{bad}\n"))
}

#[test]
fn every_bad_input_is_refused_naming_file_line_check_and_field() {
    // A templated value an input cannot fill.
    let config = head("in.jsonl", "{{ input.text }}")
        + "\n[[validator]]\nname = \"expected_city\"\nkind = \"contains\"\nvalue = \"{{ expected }}\"\n";
    let err = refused(
        &config,
        "in.jsonl",
        "{\"id\":\"a\",\"text\":\"x\",\"expected\":\"x\"}\n{\"id\":\"b\",\"text\":\"y\"}\n",
    );
    assert_eq!(
        err,
        "error: probity.toml: [[validator]] #1 (expected_city): field `value`: cannot render the value template (line 1) for input \"b\": `expected` is undefined (no field `expected`)"
    );

    let cases = [
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "containz", "value": "x"}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (containz): field `kind`: unknown kind `containz` (the kinds: contains, not-contains, regex, count, length, words, equals, starts-with, ends-with, is-json, json-schema, judge)",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": "x"}, {"kind": "regex", "patern": "x"}]}),
            "error: in.jsonl:3: input \"c\": checks[1]: unknown field `patern` (a check's fields: kind, check, name, message, minimum_success_percentage, weight, value, pattern, case_insensitive, min, max, trim, schema, negate, instructions)",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": 3}]}),
            "error: in.jsonl:3: input \"c\": checks[0]: field `value` must be a string, found 3",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "starts-with"}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (starts-with): field `value`: kind `starts-with` requires `value`",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "regex", "pattern": "(unclosed"}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (regex): field `pattern`:",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": "{{ answer }}"}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (contains): field `value`: cannot render the value template (line 1) for input \"c\": `answer` is undefined (no field `answer`)",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": "x", "minimum_success_percentage": 0.5}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (contains): its message, minimum_success_percentage or weight differ from those at in.jsonl:1: checks[0] (one check, one threshold)",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": "x", "name": "short"}]}),
            "error: in.jsonl:3: input \"c\": checks[0]: its name `short` is a [[validator]]'s or [[verifier]]'s in the configuration: give the input's check another `name`",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "contains", "value": "x", "when": "true"}]}),
            "error: in.jsonl:3: input \"c\": checks[0]: field `when`: a check an input carries applies to that input; `when` belongs on a [[validator]] or [[verifier]]",
        ),
        (
            json!({"id": "c", "text": "t", "checks": [{"kind": "judge"}]}),
            "error: in.jsonl:3: input \"c\": checks[0] (judge): field `instructions`: a judge needs its rubric",
        ),
        (
            json!({"id": "c", "text": "t", "checks": {"kind": "contains"}}),
            "error: in.jsonl:3: field `checks` must be a list of checks, found an object",
        ),
        (
            json!({"vars": {"text": "t"}, "assert": [{"type": "contains", "value": "t"}, {"type": "javascript", "value": "output.length < 9"}]}),
            "error: in.jsonl:3: assert[1]: assertion type `javascript` is not supported: probity runs no promptfoo code assertion; write it as a [[validator]] with `check = …` (an expression over `output` and `input`) or `kind = \"program\"`",
        ),
        (
            json!({"vars": {"text": "t"}, "assert": [{"type": "similar", "value": "t"}]}),
            "error: in.jsonl:3: assert[0]: assertion type `similar` is not supported:",
        ),
        (
            json!({"vars": {"text": "t"}, "assert": [{"type": "icontains", "value": "t", "weight": 2}]}),
            "error: in.jsonl:3: assert[0]: type `icontains`: key `weight` is not read by probity (it reads type, value, metric): each check is reported apart, not summed into a score",
        ),
    ];
    // An inline input's check, and a plain JSON list's.
    let config = "[system]\nprovider = \"sim\"\n\n[[input]]\ntext = \"a\"\n\n[[input]]\ntext = \"b\"\n\n[[input.checks]]\nkind = \"contains\"\nvalue = \"b\"\nmax = 3\n";
    let err = refused(config, "unused.txt", "");
    assert_eq!(
        err,
        "error: inline [[input]] #2: input \"2\": checks[0] (contains): field `max`: does not apply to kind `contains`"
    );
    let list = json!([{"text": "a"}, {"text": "b", "checks": [{"check": "output.len() >"}]}]);
    let err = refused(
        &head("in.json", "{{ input.text }}"),
        "in.json",
        &list.to_string(),
    );
    assert!(
        err.starts_with("error: in.json: [1]: input \"2\": checks[0] (check): validator `check`: field `check` does not compile"),
        "{err}"
    );
    for (bad, want) in cases {
        let err = refused_line(bad.clone());
        assert!(err.starts_with(want), "{bad}\n got: {err}\nwant: {want}");
    }
}

#[test]
fn a_bad_promptfoo_file_is_refused_naming_the_test_or_the_key() {
    let config = |file: &str| head(file, "{{ input.question }}");
    let tests = json!({"tests": [
        {"vars": {"question": "a"}, "assert": [{"type": "equals", "value": "a"}]},
        {"vars": {"question": "b"}, "assert": [{"type": "not-llm-rubric", "value": "x"}]}
    ]});
    let err = refused(&config("tests.json"), "tests.json", &tests.to_string());
    assert_eq!(
        err,
        "error: tests.json: tests[1]: assert[0]: assertion type `not-llm-rubric` is not supported: a negated rubric is not read; write the rubric the other way round"
    );
    let err = refused(
        &config("tests.json"),
        "tests.json",
        &json!({"providers": ["openai:gpt-4o"], "tests": []}).to_string(),
    );
    assert!(
        err.starts_with(
            "error: tests.json: key `providers`: probity reads only `tests` of a promptfoo file"
        ),
        "{err}"
    );
    let err = refused(
        &config("tests.yaml"),
        "tests.yaml",
        "- vars: {question: a}\n",
    );
    assert!(
        err.contains("not YAML: convert it once with `yq -o json tests.yaml > tests.json`"),
        "{err}"
    );
    // A file with no check at all: neither in the configuration nor in
    // the inputs.
    let err = refused(
        &config("tests.json"),
        "tests.json",
        &json!([{"vars": {"question": "a"}}]).to_string(),
    );
    assert!(err.contains("no input carries a check"), "{err}");
}
