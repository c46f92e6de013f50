use crate::common;

use probity_report::{render, Format};
use serde_json::Value;

fn parse(r: &probity_report::RunReport) -> Value {
    let s = render(r, Format::Json, false);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{s}"))
}

fn close(v: &Value, x: f64) -> bool {
    (v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) - x).abs() < 1e-12
}

#[test]
fn documented_top_level_fields() {
    let v = parse(&common::report());
    assert_eq!(v["schema"], "probity.report.v1");
    for key in [
        "run",
        "shape",
        "options",
        "passed",
        "summary",
        "counts",
        "checks",
        "aggregate",
        "profiles",
        "retry",
        "examples",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["passed"], false);
    assert_eq!(v["run"]["id"], 12);
    assert_eq!(v["run"]["name"], "greeting-bot");
    assert_eq!(v["run"]["model_calls"], 14);
    assert_eq!(v["run"]["cached"], 186);
    assert_eq!(v["run"]["complete"], true);
    assert!(close(&v["run"]["duration_s"], 12.34));
    assert_eq!(v["shape"]["inputs"], 4);
    assert_eq!(v["shape"]["outputs_per_input"], 50);
    assert_eq!(v["shape"]["checks"], 2);
    assert_eq!(v["options"]["interval"], "wilson");
    assert_eq!(v["options"]["errors"], "as-failure");
    assert_eq!(v["options"]["verdict"], "point");
    assert_eq!(v["options"]["strategy"], "all");
    assert_eq!(v["options"]["aggregate"], "min");
    assert!(close(&v["options"]["confidence"], 0.95));
    assert!(close(&v["options"]["retry_target"], 0.99));
    assert_eq!(v["summary"]["pass"], 1);
    assert_eq!(v["summary"]["fail"], 1);
    assert_eq!(v["summary"]["inconclusive"], 0);
    assert_eq!(v["counts"]["error"], 3);
}

#[test]
fn checks_carry_rate_verdict_and_worst_input() {
    let v = parse(&common::report());
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    let c = &checks[1];
    assert_eq!(c["index"], 1);
    assert_eq!(c["name"], "politeness_validator");
    assert_eq!(c["kind"], "validator");
    assert_eq!(c["message"], "System seems to have forgotten its manners");
    assert!(close(&c["threshold"], 0.90));
    assert!(close(&c["weight"], 1.0));
    let rate = &c["rate"];
    assert!(close(&rate["estimate"], 0.85));
    assert!(close(&rate["lower"], 0.801));
    assert!(close(&rate["upper"], 0.889));
    assert!(close(&rate["confidence"], 0.95));
    assert_eq!(rate["method"], "wilson");
    assert_eq!(rate["n"], 200);
    assert_eq!(rate["pass"], 170);
    assert_eq!(rate["fail"], 27);
    assert_eq!(rate["error"], 3);
    assert_eq!(rate["missing"], 0);
    assert!(close(&rate["design_effect"], 2.1));
    assert!(close(&rate["effective_n"], 200.0 / 2.1));
    let verdict = &c["verdict"];
    assert_eq!(verdict["decision"], "fail");
    assert_eq!(verdict["established"], false);
    assert_eq!(verdict["samples_needed"], 320);
    assert_eq!(verdict["more_samples_needed"], 120);
    assert_eq!(c["worst_input"]["index"], 2);
    assert_eq!(c["worst_input"]["label"], "thanks-3");
    assert!(c["breakdown"].as_array().unwrap().is_empty());
    assert_eq!(c["breakdown_by"], Value::Null);
    assert_eq!(checks[0]["verdict"]["decision"], "pass");
    assert_eq!(checks[0]["worst_input"], Value::Null);
}

#[test]
fn aggregate_profiles_retry_examples() {
    let v = parse(&common::report());
    let a = &v["aggregate"];
    assert_eq!(a["method"], "min");
    assert!(close(&a["rate"]["lower"], 0.78));
    assert_eq!(a["worst_check"]["index"], 1);
    assert_eq!(a["worst_check"]["name"], "politeness_validator");
    assert_eq!(a["per_check"].as_array().unwrap().len(), 2);
    assert!(close(&a["per_check"][0]["confidence"], 0.975));

    let inputs = v["profiles"]["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 4);
    assert_eq!(inputs[3]["label"], "question");
    assert!(close(&inputs[2]["rate"]["estimate"], 0.6));
    let outputs = v["profiles"]["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 50);
    assert_eq!(outputs[0]["label"], Value::Null);

    let r = &v["retry"];
    assert!(close(&r["target"], 0.99));
    assert!(close(&r["p_independent"], 0.962 * 0.85));
    assert_eq!(r["measured"]["attempts"], 3);
    assert_eq!(r["measured"]["retries"], 2);
    assert_eq!(r["conservative"]["attempts"], 4);
    assert!(close(&r["measured"]["expected_attempts"], 1.0 / 0.83));
    assert!(close(&r["measured_rate"]["estimate"], 0.83));
    assert!(close(&r["dependence_ratio"], 0.83 / (0.962 * 0.85)));
    assert!(close(&r["phi"][0][1], 0.12));
    let per_input = r["per_input"].as_array().unwrap();
    assert_eq!(per_input.len(), 4);
    // An input that never passes needs no finite number of attempts.
    assert_eq!(per_input[3]["attempts"], Value::Null);
    assert_eq!(per_input[3]["retries"], Value::Null);

    let ex = &v["examples"][0];
    assert_eq!(ex["check"], 1);
    assert_eq!(ex["check_name"], "politeness_validator");
    assert_eq!(ex["input_label"], "thanks-3");
    assert_eq!(ex["repetition"], 7);
    // JSON keeps the output verbatim (JSON escaping makes it safe).
    assert_eq!(
        ex["output"],
        "\x1b[31mSure\x1b[0m, no problem.\nAnything else?\x07"
    );
}

#[test]
fn non_finite_floats_become_null() {
    let mut r = common::report();
    r.summary.checks[0].rate.design_effect = f64::NAN;
    r.summary.checks[0].rate.effective_n = f64::INFINITY;
    r.summary.checks[1].rate.interval.lower = f64::NEG_INFINITY;
    r.summary.retry.empirical.as_mut().unwrap().phi[0][1] = Some(f64::NAN);
    r.run.duration_s = Some(f64::NAN);
    r.retry_target = f64::NAN;
    let s = render(&r, Format::Json, false);
    assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
    let v: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["checks"][0]["rate"]["design_effect"], Value::Null);
    assert_eq!(v["checks"][0]["rate"]["effective_n"], Value::Null);
    assert_eq!(v["checks"][1]["rate"]["lower"], Value::Null);
    assert_eq!(v["retry"]["phi"][0][1], Value::Null);
    assert_eq!(v["run"]["duration_s"], Value::Null);
    assert_eq!(v["options"]["retry_target"], Value::Null);
}

#[test]
fn passing_report_passes() {
    let v = parse(&common::passing_report());
    assert_eq!(v["passed"], true);
    assert_eq!(
        v["summary"]["conclusion"],
        "PASS: 2 of 2 checks meet their minimum"
    );
    assert!(v["examples"].as_array().unwrap().is_empty());
}

/// Every key the JSON report emits is documented in SCHEMA.md.
#[test]
fn every_field_is_documented() {
    let doc = include_str!("../SCHEMA.md");
    let mut r = common::report();
    // Fill the breakdown so its entries are walked too.
    r.summary.strategy = probity_core::Strategy::Rows;
    r.summary.checks[1].breakdown = r.summary.input_profile.clone();
    // And a guarded system, so its fields are walked too.
    r.guarded = Some(common::retry_check(true));
    // And a sequential outcome.
    r.summary.sequential = Some(probity_core::sequential::SequentialOutcome {
        seed: 1,
        design: Default::default(),
        stop: Some(probity_core::sequential::StopReason::Settled),
        inputs: 4,
        samples: 200,
        budget_inputs: 4,
        budget_samples: 200,
        fixed_samples: None,
        rounds: 1,
        confidence: 0.95,
        checks: vec![probity_core::sequential::CheckSequence {
            name: "c".into(),
            threshold: 0.9,
            estimate: 0.95,
            lower: 0.91,
            upper: 0.99,
            inputs: 4,
            state: probity_core::sequential::SequenceState::Pass,
            needed_inputs: Some(4),
            needed_outputs: None,
        }],
    });
    let v = parse(&r);
    fn walk(v: &Value, doc: &str, path: &str) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    assert!(
                        doc.contains(&format!("`{k}`")),
                        "field {path}.{k} is not documented in SCHEMA.md"
                    );
                    walk(v, doc, &format!("{path}.{k}"));
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, doc, &format!("{path}[]"))),
            _ => {}
        }
    }
    walk(&v, doc, "");
}

#[test]
fn breakdown_by_rows_is_labelled() {
    let mut r = common::report();
    r.summary.strategy = probity_core::Strategy::Rows;
    r.summary.checks[1].breakdown = r.summary.input_profile.clone();
    r.summary.checks[1].breakdown_below = 2;
    let v = parse(&r);
    let c = &v["checks"][1];
    assert_eq!(c["breakdown_by"], "inputs");
    assert_eq!(c["breakdown_below"], 2);
    assert_eq!(c["breakdown"][2]["label"], "thanks-3");
    let t = render(&r, Format::Text, false);
    assert!(t.contains("rows: 2 of 4 inputs below 90%"), "{t}");
}

#[test]
fn guarded_is_null_without_a_retry_policy() {
    let v = parse(&common::report());
    assert!(v.as_object().unwrap().contains_key("guarded"));
    assert!(v["guarded"].is_null());
}

#[test]
fn guarded_measured_beside_predictions() {
    let v = parse(&common::guarded_report(true));
    let g = &v["guarded"];
    assert_eq!(g["attempts"], 3);
    assert_eq!(g["retries"], 2);
    assert_eq!(g["held"], true);
    assert_eq!(g["outcome"], "held");
    assert!(g["rule"]
        .as_str()
        .unwrap()
        .contains("lie inside the per-input model"));
    let m = &g["measured"];
    assert_eq!(m["requests"], 200);
    assert_eq!(m["histogram"], serde_json::json!([120, 40, 20]));
    assert_eq!(m["nothing_published"], 20);
    assert!(close(&m["success_within"]["estimate"], 0.9));
    assert!(close(&m["success_within"]["lower"], 0.85));
    assert_eq!(m["success_within"]["method"], "wilson");
    assert!(close(&m["attempts_used"]["estimate"], 1.6));
    assert!(close(&m["attempts_used"]["upper"], 1.7));
    assert_eq!(m["calls"], 410);
    assert!(close(&m["calls_per_request"], 2.05));
    assert_eq!(m["tokens"], 12345);
    let p = g["predictions"].as_array().unwrap();
    let models: Vec<&str> = p.iter().map(|p| p["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["independence", "joint", "per-input"]);
    assert!(close(&p[1]["success_within"]["lower"], 0.88));
    assert!(close(&p[1]["attempts_used"]["estimate"], 1.62));
    assert!(close(&p[0]["p"]["lower"], 0.8177));

    let v = parse(&common::guarded_report(false));
    assert_eq!(v["guarded"]["held"], false);
    assert_eq!(v["guarded"]["outcome"], "not-held");

    // No joint rate: nothing to test.
    let mut r = common::guarded_report(false);
    r.guarded.as_mut().unwrap().predictions.truncate(1);
    let v = parse(&r);
    assert_eq!(v["guarded"]["outcome"], "untested");
    assert_eq!(v["guarded"]["predictions"].as_array().unwrap().len(), 1);
}

#[test]
fn guarded_non_finite_figures_are_null() {
    let mut r = common::guarded_report(true);
    let g = r.guarded.as_mut().unwrap();
    g.measured.attempts.estimate = f64::NAN;
    g.predictions[1].attempts.upper = f64::INFINITY;
    g.measured.samples = 0;
    let s = render(&r, Format::Json, false);
    let v: Value = serde_json::from_str(&s).unwrap();
    assert!(v["guarded"]["measured"]["attempts_used"]["estimate"].is_null());
    assert!(v["guarded"]["predictions"][1]["attempts_used"]["upper"].is_null());
    assert!(close(&v["guarded"]["measured"]["calls_per_request"], 0.0));
}

/// Every "not established" says why and what would settle it (core's
/// `NotEstablished`), in JSON as data and as the sentence: with 2 inputs
/// (the real summary of a 2 × 20 tensor) the reason is too few inputs,
/// 5 would do; with 40 the interval contains the minimum and a sample
/// size is named.
#[test]
fn not_established_says_why_and_what_would_settle_it() {
    let few = common::tensor_report(2, 20);
    let v = parse(&few);
    let why = &v["checks"][0]["verdict"]["why_not"];
    assert_eq!(why["reason"], "too_few_inputs", "{why}");
    assert_eq!(
        (why["inputs"].as_u64(), why["inputs_needed"].as_u64()),
        (Some(2), Some(5))
    );
    let text = why["text"].as_str().unwrap();
    assert!(text.contains("2 inputs are too few"), "{text}");
    assert!(text.contains("at least 5 inputs would (3 more)"), "{text}");
    let t = render(&few, Format::Text, false);
    assert!(t.contains("not established: 2 inputs are too few"), "{t}");

    let many = common::tensor_report(40, 20);
    let v = parse(&many);
    let reasons: Vec<&Value> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["verdict"])
        .collect();
    for verdict in &reasons {
        if verdict["established"] == true {
            assert!(verdict.get("why_not").is_none(), "{verdict}");
        } else {
            assert!(verdict["why_not"]["reason"].is_string(), "{verdict}");
        }
    }
}

/// Written straight into a writer (`render_to`, for large reports), the
/// JSON report is byte for byte the rendered one (with a baseline:
/// `documents.rs`); other formats too.
#[test]
fn the_report_written_to_a_writer_is_the_rendered_one() {
    let plain = common::report();
    for format in [probity_report::Format::Json, probity_report::Format::Text] {
        let mut out = Vec::new();
        probity_report::render_to(&plain, format, false, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            probity_report::render(&plain, format, false),
            "{format:?}"
        );
    }
}
