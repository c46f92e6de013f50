//! Expression validators (paper §2.1): the paper's examples, sandboxing and
//! failure modes.

use probity_core::validator::{Expression, Validator, ValidatorError};
use probity_core::{Input, Verdict};
use serde_json::json;

fn expr(src: &str) -> Expression {
    Expression::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn none() -> Input {
    Input::text("0", "")
}

fn is_error(v: &Verdict) -> bool {
    matches!(v, Verdict::Error { .. })
}

const CONTRACTION: &str = r#"count(output, "'") <= 3"#;
const POLITENESS: &str =
    r#"if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }"#;

#[test]
fn paper_contraction_validator() {
    let v = Validator::new("contraction_validator")
        .message("Output contains too many contractions")
        .minimum_success_percentage(0.95)
        .expression(CONTRACTION)
        .unwrap();
    assert_eq!(v.minimum_success_percentage, 0.95);
    let i = none();
    assert_eq!(
        v.evaluate(&i, "I can't and won't and don't and isn't"),
        Verdict::Fail
    );
    assert_eq!(v.evaluate(&i, "I can't and won't and don't"), Verdict::Pass);
    assert_eq!(v.evaluate(&i, "I cannot and will not."), Verdict::Pass);
    assert_eq!(v.evaluate(&i, ""), Verdict::Pass);
    assert_eq!(v.evaluate(&i, "''''"), Verdict::Fail);
}

#[test]
fn paper_politeness_validator() {
    let v = Validator::new("politeness_validator")
        .message("System seems to have forgotten its manners")
        .minimum_success_percentage(0.90)
        .expression(POLITENESS)
        .unwrap();
    let thanked = Input::text("a", "Thank you for the help!");
    let plain = Input::text("b", "What is the capital of France?");
    assert_eq!(
        v.evaluate(&thanked, "You're welcome! Happy to help."),
        Verdict::Pass
    );
    assert_eq!(v.evaluate(&thanked, "No problem."), Verdict::Fail);
    assert_eq!(v.evaluate(&plain, "Paris."), Verdict::Pass);
    assert_eq!(v.evaluate(&plain, "You're welcome"), Verdict::Pass);
}

#[test]
fn paper_politeness_in_python_like_form() {
    // The paper's `"You're welcome" in o if "Thank you" in i else True`.
    let e = expr(r#"if "Thank you" in input_text { "You're welcome" in output } else { true }"#);
    let thanked = Input::text("a", "Thank you!");
    assert_eq!(e.evaluate(&thanked, "You're welcome"), Verdict::Pass);
    assert_eq!(e.evaluate(&thanked, "Sure."), Verdict::Fail);
    assert_eq!(e.evaluate(&Input::text("b", "Hi"), "Sure."), Verdict::Pass);
}

#[test]
fn input_fields_are_a_map() {
    let mut i = Input::text("x", "hello");
    i.fields.insert("lang".into(), json!("fr"));
    i.fields.insert("max_words".into(), json!(3));
    i.fields.insert("tags".into(), json!(["a", "b"]));
    let e =
        expr(r#"input.lang == "fr" && words(output) <= input.max_words && input.tags.len() == 2"#);
    assert_eq!(e.evaluate(&i, "oui oui oui"), Verdict::Pass);
    assert_eq!(e.evaluate(&i, "oui oui oui oui"), Verdict::Fail);
    // Reading a field the input lacks is an error naming the field, never
    // a silent `()` that compares false and blames the output.
    let e = expr(r#"input.missing == "x""#);
    match e.evaluate(&i, "") {
        Verdict::Error { reason } => assert!(
            reason.contains("no field `missing`") && reason.contains(r#""missing" in input"#),
            "{reason}"
        ),
        other => panic!("expected an error, got {other:?}"),
    }
    // Testing for it is fine.
    assert_eq!(
        expr(r#"!("missing" in input)"#).evaluate(&i, ""),
        Verdict::Pass
    );
    assert_eq!(expr(r#""lang" in input"#).evaluate(&i, ""), Verdict::Pass);
}

#[test]
fn the_fields_an_expression_reads_are_known_before_it_runs() {
    let e = expr(
        r#"if input.text.contains("Thank you") { input["tone"] == "warm" } else { input.keys().len() > 0 && input_text != "" && input . lang == "fr" }"#,
    );
    assert_eq!(e.input_fields(), vec!["text", "tone", "lang"]);
    assert!(expr(r#"output.len() < 10"#).input_fields().is_empty());
}

#[test]
fn helpers() {
    let i = none();
    let cases = [
        (r#"count("a-a-a", "-") == 2"#, true),
        (r#"count("aaaa", "aa") == 2"#, true), // non-overlapping, as Python
        (r#"count("abc", "") == 0"#, true),
        (r#"matches(output, "^[A-Z][a-z]+\\.$")"#, true),
        (r#"matches(output, "\\d")"#, false),
        (r#"count_matches("a1b22c333", "\\d+") == 3"#, true),
        (r#"words("  one two\tthree\nfour ") == 4"#, true),
        (r#"chars("héllo") == 5"#, true),
        (
            r#"lower("HeLLo") == "hello" && upper("a") == "A" && trim("  x ") == "x""#,
            true,
        ),
        (r#"json("{\"a\": [1, 2, {\"b\": true}]}").a[2].b"#, true),
        (r#"json("not json") == ()"#, true),
        (r#"is_json("[1, 2]") && !is_json("[1, 2")"#, true),
        (r#"output.contains("Hello")"#, true),
        (r#""ell" in output"#, true),
    ];
    for (src, want) in cases {
        assert_eq!(
            expr(src).evaluate(&i, "Hello."),
            Verdict::from_bool(want),
            "{src}"
        );
    }
}

#[test]
fn invalid_regex_is_an_error_verdict() {
    let v = expr(r#"matches(output, "(unclosed")"#).evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
}

#[test]
fn infinite_loop_is_stopped() {
    let v = expr("loop {} true").evaluate(&none(), "x");
    match v {
        Verdict::Error { reason } => assert!(reason.contains("Too many operations"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let v = expr("let n = 0; while true { n += 1; } true").evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
}

#[test]
fn runaway_recursion_is_stopped() {
    let v = expr("fn f(n) { f(n + 1) } f(0)").evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
}

#[test]
fn huge_string_is_stopped() {
    let v = expr(r#"let s = "a"; loop { s += s; } true"#).evaluate(&none(), "x");
    match v {
        Verdict::Error { reason } => {
            assert!(reason.to_lowercase().contains("too large"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let v = expr(r#"let a = []; loop { a += [1, 2, 3, 4]; a += a; } true"#).evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
}

#[test]
fn non_bool_result_is_an_error() {
    for src in ["1 + 1", r#""true""#, "()", "count(output, \"x\")"] {
        match expr(src).evaluate(&none(), "x") {
            Verdict::Error { reason } => assert!(reason.contains("not a bool"), "{src}: {reason}"),
            other => panic!("{src}: {other:?}"),
        }
    }
}

#[test]
fn runtime_error_is_an_error_verdict() {
    let v = expr(r#"throw "nope""#).evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
    let v = expr("output.no_such_method()").evaluate(&none(), "x");
    assert!(is_error(&v), "{v:?}");
}

#[test]
fn compile_error_has_line_and_column() {
    let err = Validator::new("broken")
        .expression("true &&\n  (1 +")
        .unwrap_err();
    match &err {
        ValidatorError::Compile {
            validator,
            line,
            column,
            ..
        } => {
            assert_eq!(validator, "broken");
            assert_eq!(*line, Some(2));
            assert!(column.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("broken"));
    assert!(err.to_string().contains("line 2"));
}

#[test]
fn undeclared_variables_are_compile_errors() {
    let err = Expression::compile("outptu.len() > 0").unwrap_err();
    assert_eq!(err.line, Some(1));
    assert_eq!(err.column, Some(1));
}

#[test]
fn sandbox_has_no_eval_import_or_output() {
    assert!(Expression::compile(r#"eval("true")"#).is_err());
    assert!(Expression::compile(r#"import "std" as s; true"#).is_err());
    // print and debug are silent no-ops.
    assert_eq!(
        expr(r#"print("x"); debug("y"); true"#).evaluate(&none(), ""),
        Verdict::Pass
    );
}

#[test]
fn assignments_do_not_leak_between_evaluations() {
    use probity_core::validator::Evaluator;
    use probity_core::Sample;
    let vs = vec![
        Validator::new("clobber")
            .expression(r#"output = "x"; input.text = "changed"; let extra = 1; output == "x""#)
            .unwrap(),
        Validator::new("reads")
            .expression(
                r#"input.text == "Thank you" && output == "y" && input_text == "Thank you""#,
            )
            .unwrap(),
    ];
    let inputs = vec![Input::text("0", "Thank you")];
    let ev = Evaluator::new(&vs, &inputs);
    let samples: Vec<Sample> = (0..50)
        .map(|j| Sample {
            input: 0,
            repetition: j,
            output: "y".into(),
        })
        .collect();
    for row in ev.evaluate_sequential(&samples) {
        assert_eq!(row, vec![Verdict::Pass, Verdict::Pass]);
    }
}

#[test]
fn negated_expression_keeps_errors() {
    let e = expr(CONTRACTION).negate();
    assert_eq!(e.evaluate(&none(), "a'b"), Verdict::Fail);
    assert_eq!(e.evaluate(&none(), "a'b'c'd'e"), Verdict::Pass);
    assert!(is_error(&expr("1").negate().evaluate(&none(), "")));
    assert!(!e.negate().is_negated());
}

#[test]
fn concurrent_evaluation_agrees() {
    let e = expr(r#"matches(output, "'") == (count(output, "'") > 0)"#);
    std::thread::scope(|s| {
        for t in 0..4 {
            let e = &e;
            s.spawn(move || {
                for k in 0..200 {
                    let o = "x'".repeat((k + t) % 5);
                    assert_eq!(e.evaluate(&none(), &o), Verdict::Pass);
                }
            });
        }
    });
}
