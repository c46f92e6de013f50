//! A sequential run's report in every format: that it was sequential, why
//! and when it stopped, the samples saved against the budget, each
//! check's confidence sequence — with hostile check names escaped.

use crate::common;

use probity_core::sequential::{CheckSequence, SequenceState, SequentialOutcome, StopReason};
use probity_report::{render, Format, RunReport};

const HOSTILE: &str = "<script>alert(1)</script> | *x* \u{1b}[31m";

fn outcome() -> SequentialOutcome {
    SequentialOutcome {
        seed: 42,
        design: Default::default(),
        stop: Some(StopReason::Futile),
        inputs: 30,
        samples: 1500,
        budget_inputs: 4,
        budget_samples: 200,
        fixed_samples: None,
        rounds: 4,
        confidence: 0.95,
        checks: vec![
            CheckSequence {
                name: HOSTILE.to_string(),
                threshold: 0.95,
                estimate: 0.62,
                lower: 0.41,
                upper: 0.79,
                inputs: 30,
                state: SequenceState::Fail,
                needed_inputs: Some(30),
                needed_outputs: None,
            },
            CheckSequence {
                name: "politeness_validator".to_string(),
                threshold: 0.9,
                estimate: 0.9,
                lower: 0.8,
                upper: 0.97,
                inputs: 30,
                state: SequenceState::Futile,
                needed_inputs: Some(900),
                needed_outputs: None,
            },
        ],
    }
}

fn report() -> RunReport {
    let mut r = common::report();
    r.summary.checks[0].info.name = HOSTILE.to_string();
    r.summary = r.summary.with_sequential(&outcome());
    // The budget matches the report's shape: 4 inputs × 50 outputs.
    let mut o = outcome();
    o.inputs = 3;
    o.samples = 150;
    r.summary.sequential = Some(o);
    r
}

#[test]
fn every_format_says_why_it_stopped_and_what_it_saved() {
    let r = report();
    for format in [
        Format::Text,
        Format::Markdown,
        Format::Html,
        Format::Junit,
        Format::Json,
    ] {
        let out = render(&r, format, false);
        if format == Format::Json {
            continue;
        }
        assert!(
            out.contains("sequential: stopped after 3 of 4 inputs (150 of 200 samples, 50 saved"),
            "{format:?}:\n{out}"
        );
        assert!(
            out.contains("no open check can settle within the budget"),
            "{format:?}"
        );
        assert!(out.contains("seed 42"), "{format:?}");
        assert!(out.contains("established fail"), "{format:?}");
        assert!(
            out.contains("cannot settle within the budget: it would need ~900 inputs in all (45000 samples; 870 more)"),
            "{format:?}:\n{out}"
        );
        // Markup media escape the name; a terminal needs no escaping of
        // `<`, only of control characters.
        if format != Format::Text {
            assert!(!out.contains("<script>alert"), "{format:?}");
        }
        assert!(!out.contains('\u{1b}'), "{format:?}");
    }
}

#[test]
fn the_json_report_carries_the_sequences() {
    let out = render(&report(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let s = &v["sequential"];
    assert_eq!(s["stop"], "futile");
    assert_eq!(s["samples_saved"], 50);
    assert_eq!(s["budget_samples"], 200);
    assert_eq!(s["seed"], 42);
    assert_eq!(s["checks"][0]["name"], HOSTILE);
    assert_eq!(s["checks"][0]["state"], "fail");
    assert_eq!(s["checks"][0]["upper"], 0.79);
    assert_eq!(s["checks"][1]["needed_samples"], 45000);
    // The checks' verdicts and intervals are the sequences'.
    assert_eq!(v["checks"][0]["rate"]["upper"], 0.79);
    assert_eq!(v["checks"][0]["verdict"]["established"], true);
    assert_eq!(v["checks"][1]["verdict"]["established"], false);
    // A fixed-size run: null.
    let fixed = render(&common::report(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
    assert!(v["sequential"].is_null());
}

/// A stop reason is whole in the terminal, however long the headline (an
/// outputs-per-input round's is the longest): cut, it ended mid-word.
#[test]
fn the_terminal_says_the_whole_stop_reason() {
    let mut r = report();
    let o = r.summary.sequential.as_mut().unwrap();
    o.design = probity_core::sequential::RoundDesign::Outputs;
    o.budget_inputs = 20;
    o.budget_samples = 400;
    o.samples = 140;
    let out = render(&r, Format::Text, false);
    let line = out
        .lines()
        .find(|l| l.contains("sequential: stopped after"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.trim_end()
            .ends_with("of the budget): no open check can settle within the budget"),
        "{line}"
    );
}

/// Output rounds under the group-sequential design (issue 35 item 2): the
/// headline counts the savings against the fixed run of N × M and names
/// the design's maximum beside it, whole, in the terminal; the method line
/// says the intervals are repeated confidence intervals, valid after an
/// early stop; JSON carries `fixed_samples`.
#[test]
fn output_rounds_name_the_fixed_run_beside_the_maximum() {
    let mut r = report();
    let o = r.summary.sequential.as_mut().unwrap();
    o.design = probity_core::sequential::RoundDesign::Outputs;
    o.budget_inputs = 20;
    o.budget_samples = 480;
    o.fixed_samples = Some(400);
    o.samples = 140;
    let out = render(&r, Format::Text, false);
    let line = out
        .lines()
        .find(|l| l.contains("sequential: stopped after"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("stopped after 7 outputs per input"), "{line}");
    assert!(
        line.contains("the fixed run of 20 × 20 takes 400: 260 saved = 65.0%"),
        "{line}"
    );
    assert!(
        line.contains("up to 24 per input, 480 samples, 80 more"),
        "{line}"
    );
    assert!(
        line.trim_end().ends_with(
            "at least as often as the fixed run): no open check can settle within the budget"
        ),
        "{line}"
    );
    assert!(
        out.contains("repeated confidence intervals, valid after an early stop"),
        "{out}"
    );
    // Past the fixed run's size: no "saved", the extra said as it is.
    let o = r.summary.sequential.as_mut().unwrap();
    o.samples = 460;
    let out = render(&r, Format::Text, false);
    assert!(out.contains("60 more than the fixed run"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    assert_eq!(v["sequential"]["fixed_samples"], 400);
    assert_eq!(v["sequential"]["budget_samples"], 480);
    assert_eq!(v["sequential"]["samples_saved"], 0);
}

/// After an early stop no rate shows a design effect — not a check's, not
/// the aggregate's: the fixed-sample variance behind it is not valid after
/// optional stopping (issue 35 item 2). The same report run to its end
/// shows it (the data are clustered), so the test can fail.
#[test]
fn no_design_effect_is_shown_after_an_early_stop() {
    let mut fixed = common::report();
    // Clustered data: every output of input 0 fails, the rest pass.
    let a = &mut fixed.summary.aggregate.rate;
    a.design_effect = 3.0;
    a.effective_n = a.n as f64 / 3.0;
    let shown = render(&fixed, Format::Text, false);
    assert!(shown.contains("design effect 3.00"), "{shown}");
    fixed.summary = fixed.summary.with_sequential(&outcome());
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render(&fixed, format, false);
        assert!(!out.contains("design effect"), "{format:?}:\n{out}");
    }
}
