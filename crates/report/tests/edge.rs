use crate::common;

use probity_core::retry::RetryPlan;
use probity_report::{render, Format};

/// A run with nothing in it renders in every format without panicking.
#[test]
fn empty_run_renders_everywhere() {
    let mut r = common::report();
    r.summary.shape = (0, 0, 0);
    r.summary.checks.clear();
    r.summary.input_profile.clear();
    r.summary.output_profile.clear();
    r.summary.aggregate.per_validator.clear();
    r.summary.aggregate.worst_validator = None;
    r.summary.retry = RetryPlan {
        rates: vec![],
        p_independent: 1.0,
        empirical: None,
    };
    r.examples.clear();
    r.input_labels.clear();
    r.run.duration_s = None;
    r.run.complete = false;
    for f in Format::ALL {
        let s = render(&r, f, true);
        assert!(!s.is_empty());
    }
    let t = render(&r, Format::Text, false);
    assert!(
        // A summary with no checks shows nothing: never a pass.
        t.contains("NO VERDICT: no checks to judge (run incomplete)"),
        "{t}"
    );
    let v: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    assert_eq!(v["checks"].as_array().unwrap().len(), 0);
    assert_eq!(v["run"]["complete"], false);
}

/// Examples and labels that point nowhere do not panic.
#[test]
fn dangling_indices_are_tolerated() {
    let mut r = common::report();
    r.examples[0].input = 99;
    r.examples.push(probity_report::Example {
        check: 42,
        input: 7,
        repetition: 0,
        output: "x".into(),
        reason: None,
    });
    r.input_labels.truncate(1);
    for f in Format::ALL {
        render(&r, f, false);
    }
    let t = render(&r, Format::Text, false);
    assert!(t.contains("example (#99, output #7)"), "{t}");
}

/// A check that never passes: retry plans say so instead of dividing by 0.
#[test]
fn zero_pass_rate_retry_plan() {
    let mut r = common::report();
    let e = r.summary.retry.empirical.as_mut().unwrap();
    e.overall = common::rate(0, 200, 0, 0.0, 0.018, 1.0);
    r.summary.retry.p_independent = 0.0;
    let t = render(&r, Format::Text, false);
    assert!(t.contains("no number of attempts (pass rate 0)"), "{t}");
    assert!(!t.contains("expected attempts per call"), "{t}");
    let v: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    assert_eq!(v["retry"]["measured"]["attempts"], serde_json::Value::Null);
    assert_eq!(v["retry"]["dependence_ratio"], serde_json::Value::Null);
}
