use crate::common;

use probity_core::stats::Decision;
use probity_report::{render, Format};

#[test]
fn shows_figures_verdicts_and_conclusion() {
    let r = common::report();
    let t = render(&r, Format::Text, false);
    println!("{t}");
    // Header.
    assert!(
        t.contains("run #12 greeting-bot: 4 inputs × 50 outputs × 2 checks"),
        "{t}"
    );
    // The calls, judge calls, tokens and reuse of the run (was "14 model
    // calls, 186 served from cache", which called reused outputs a cache).
    assert!(
        t.contains("12.3s · 14 calls (4 to judges), 5120 tokens; 186 outputs reused from run #11"),
        "{t}"
    );
    // The checks table.
    assert!(t.contains("contraction_validator"), "{t}");
    assert!(t.contains("96.2%  [94.1, 97.6]  ≥ 95%  established"), "{t}");
    assert!(
        t.contains(
            "85.0%  [80.1, 88.9]  ≥ 90%  not established: ~120 more samples would settle it"
        ),
        "{t}"
    );
    let pass_line = t
        .lines()
        .find(|l| l.contains("contraction_validator"))
        .unwrap();
    assert!(pass_line.trim_start().starts_with("PASS"), "{pass_line}");
    let fail_line = t
        .lines()
        .find(|l| l.contains("politeness_validator") && l.contains("85.0%"))
        .unwrap();
    assert!(fail_line.trim_start().starts_with("FAIL"), "{fail_line}");
    // Message under the failing check only.
    assert!(t.contains("System seems to have forgotten its manners"));
    assert!(!t.contains("Output contains too many contractions"));
    // Errors apart, design effect only above 1.05.
    assert!(t.contains("3 errors counted as failures"), "{t}");
    assert!(
        t.contains("design effect 2.10, effective n 95 of 200"),
        "{t}"
    );
    assert!(!t.contains("design effect 1.02"), "{t}");
    // Aggregate with the worst validator.
    assert!(
        t.contains("min 85.0% [78.0, 90.1], worst check politeness_validator"),
        "{t}"
    );
    // Worst inputs: 3 lowest, labelled.
    let worst = t.lines().find(|l| l.contains("worst inputs")).unwrap();
    assert!(worst.contains("thanks-3 60.0% [50.0, 69.0]"), "{worst}");
    assert!(
        worst.contains("question") && worst.contains("bye"),
        "{worst}"
    );
    assert!(!worst.contains("hello"), "{worst}");
    assert!(worst.find("thanks-3") < worst.find("question"));
    // Example failure of the failing check, on one line.
    assert!(
        t.contains("example (thanks-3, output #7): Sure, no problem.\\nAnything else?\\u{7}"),
        "{t}"
    );
    assert!(t.contains("reason: no \"You're welcome\""), "{t}");
    // Retry plan.
    assert!(t.contains("P(pass all) under independence: 81.8%"), "{t}");
    assert!(
        t.contains("measured joint pass rate: 83.0% [77.0, 88.0]; ratio to independence 1.02"),
        "{t}"
    );
    assert!(t.contains("3 attempts (2 retries) at the measured rate, 4 attempts (3 retries) at its lower bound"), "{t}");
    assert!(
        t.contains("expected attempts per call: 1.20 (0.20 retries)"),
        "{t}"
    );
    // Conclusion.
    assert_eq!(
        t.lines().last().unwrap(),
        "FAIL: 1 of 2 checks below minimum"
    );
}

#[test]
fn passing_run_concludes_pass() {
    let t = render(&common::passing_report(), Format::Text, false);
    assert_eq!(
        t.lines().last().unwrap(),
        "PASS: 2 of 2 checks meet their minimum"
    );
    assert!(!t.contains("FAIL"));
}

#[test]
fn inconclusive_and_excluded_errors() {
    let mut r = common::report();
    r.summary.options.errors = probity_core::ErrorPolicy::Exclude;
    r.summary.checks[1].verdict.decision = Decision::Inconclusive;
    let t = render(&r, Format::Text, false);
    assert!(t.contains("INCONCLUSIVE"), "{t}");
    assert!(t.contains("3 errors excluded"), "{t}");
    assert!(t.contains("FAIL: 1 of 2 checks inconclusive"), "{t}");
}

#[test]
fn model_output_cannot_reach_the_terminal_raw() {
    let mut r = common::report();
    r.examples[0].output =
        "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2J\r\u{202e}evil\u{9b}1m".to_string();
    r.summary.checks[1].info.name = "bad\x1b[31mname".to_string();
    r.input_labels[2] = "in\x1bput\n2".to_string();
    let t = render(&r, Format::Text, false);
    assert!(!t.contains('\x1b'), "{t:?}");
    assert!(!t.contains("[31m"), "{t:?}");
    assert!(
        !t.contains('\u{202e}') && !t.contains('\u{9b}') && !t.contains('\r'),
        "{t:?}"
    );
    assert!(t.contains("red  \\r\\u{202e}evil"), "{t}");
    assert!(t.contains("badname"), "{t}");
    // No control character at all except newlines.
    assert!(t.chars().all(|c| c == '\n' || !c.is_control()), "{t:?}");
}

#[test]
fn long_output_is_truncated_to_one_line() {
    let mut r = common::report();
    r.examples[0].output = "word ".repeat(200) + "\nsecond line";
    let t = render(&r, Format::Text, false);
    let line = t.lines().find(|l| l.contains("example (")).unwrap();
    let shown = line.split("): ").nth(1).unwrap();
    assert_eq!(shown.chars().count(), 200);
    assert!(shown.ends_with('…'));
}

#[test]
fn colour_only_when_asked() {
    let r = common::report();
    assert!(!render(&r, Format::Text, false).contains('\x1b'));
    let c = render(&r, Format::Text, true);
    assert!(
        c.contains("\x1b[1;31m") && c.contains("\x1b[1;32m"),
        "{c:?}"
    );
    // Colour never touches the model output, which stays escaped.
    assert!(!c.contains("\x1b[31mSure"));
}

#[test]
fn format_names_parse() {
    for (name, f) in Format::NAMES.iter().zip(Format::ALL) {
        assert_eq!(name.parse::<Format>().unwrap(), f);
        assert_eq!(f.to_string(), *name);
    }
    assert_eq!("MD".parse::<Format>().unwrap(), Format::Markdown);
    assert_eq!("html".parse::<Format>().unwrap(), Format::Html);
    let e = "pdf".parse::<Format>().unwrap_err();
    assert!(e.to_string().contains("text, json, junit, markdown, html"));
}

#[test]
fn guarded_system_beside_its_prediction() {
    let t = render(&common::report(), Format::Text, false);
    assert!(!t.contains("Guarded system"), "{t}");

    let t = render(&common::guarded_report(true), Format::Text, false);
    println!("{t}");
    assert!(
        t.contains(
            "Guarded system (§4.2): at most 3 attempts per request (2 retries), 200 requests"
        ),
        "{t}"
    );
    assert!(
        t.contains("published at attempt   1: 120 · 2: 40 · 3: 20; nothing published: 20"),
        "{t}"
    );
    let block = &t[t.find("Guarded system").unwrap()..];
    let row = |name: &str| {
        block
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{t}"))
            .to_string()
    };
    let measured = row("measured");
    assert!(measured.contains("90.0% [85.0, 94.0]"), "{measured}");
    assert!(measured.contains("1.60 [1.50, 1.70]"), "{measured}");
    let joint = row("joint model");
    assert!(joint.contains("60.0% [55.0, 65.0]"), "{joint}");
    assert!(joint.contains("92.0% [88.0, 95.0]"), "{joint}");
    assert!(row("independence model").contains("81.8%"), "{t}");
    assert!(row("per-input model").contains("1.60 [1.30, 2.10]"), "{t}");
    assert!(
        // 12345 tokens over 200 requests × 1.60 attempts = 320 attempts.
        t.contains("spent: 410 calls (2.05 per request, judge calls included), 12345 tokens (38.6 per attempt)"),
        "{t}"
    );
    assert!(
        t.contains(
            "prediction held: the measured P(success within m) and attempts used lie inside"
        ),
        "{t}"
    );
    // Before the conclusion, which stays last.
    let at = t.find("Guarded system").unwrap();
    assert!(at < t.find("FAIL: 1 of 2 checks below minimum").unwrap());
    assert!(t.trim_end().ends_with("FAIL: 1 of 2 checks below minimum"));

    let t = render(&common::guarded_report(false), Format::Text, false);
    assert!(
        t.contains("prediction did not hold: the measured ")
            && t.contains("outside the per-input model's interval"),
        "{t}"
    );
    // Colour marks the verdict; nothing else of the block is painted.
    let c = render(&common::guarded_report(false), Format::Text, true);
    assert!(c.contains("\x1b[1;31mprediction did not hold"), "{c}");
}

/// The method line names the interval the verdicts come from: the profile
/// likelihood over clustered inputs, Clopper–Pearson with one output per
/// input (the default's exact interval there).
#[test]
fn the_method_line_names_the_interval_used() {
    let clustered = render(&common::tensor_report(20, 4), Format::Text, false);
    assert!(
        clustered.contains("95% intervals (profile likelihood, clustered by input)"),
        "{clustered}"
    );
    let single = render(&common::tensor_report(20, 1), Format::Text, false);
    assert!(
        single.contains("95% intervals (clopper-pearson, one output per input)"),
        "{single}"
    );
}
