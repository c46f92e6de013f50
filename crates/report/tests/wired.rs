//! The facts of a run that every format shows: errors apart from failures
//! with their causes (and broken checks), the input beside every failing
//! output, the run's calls, tokens and reuse, each rate's inputs and scope,
//! each check's consistency, and a comparison's adjusted p-values.

use crate::common;

use common::{fields, rate, HOSTILE};
use probity_core::causes::Causes;
use probity_core::compare::{compare_check, CompareOptions, Comparison};
use probity_core::stats::{Consistency, InputConsistency, Interval, MultipleTesting, Scope};
use probity_core::Counts;
use probity_report::{render, ComparisonReport, FailingSample, Format, RunReport};
use serde_json::Value;

fn json(r: &RunReport) -> Value {
    serde_json::from_str(&render(r, Format::Json, false)).unwrap()
}

/// The common report with errors: 2 calls to the system failed (`HTTP
/// 503`, first at input hello · output #7), and politeness_validator could
/// not judge 3 of 196 outputs (2 × `judge timed out`, first at thanks-3 ·
/// output #4; 1 × `judge answered neither PASS nor FAIL`).
fn errors_report() -> RunReport {
    let mut r = common::report();
    let mut c = Causes::new(2);
    c.add_call_error((0, 7), "HTTP 503");
    c.add_call_error((1, 2), "HTTP 503");
    for i in 0..4 {
        for j in 0..49 {
            let errs: Vec<(usize, &str)> = match (i, j) {
                (2, 4) | (3, 9) => vec![(1, "judge timed out")],
                (3, 1) => vec![(1, "judge answered neither PASS nor FAIL")],
                _ => vec![],
            };
            c.add_output((i, j), errs);
        }
    }
    r.causes = c.sorted();
    r
}

/// The common report whose politeness_validator erred on every output:
/// `Function not found: lenght`.
fn broken_report() -> RunReport {
    let mut r = common::report();
    let mut c = Causes::new(2);
    for i in 0..4 {
        for j in 0..50 {
            c.add_output((i, j), [(1, "Function not found: lenght")]);
        }
    }
    r.causes = c.sorted();
    r.summary.checks[1].rate = rate(0, 0, 200, 0.0, 0.018, 1.0);
    r
}

fn consistency() -> Consistency {
    let band = |e: f64, l: f64, u: f64| Some((e, Interval { lower: l, upper: u }));
    Consistency::from_rows(
        3,
        vec![
            InputConsistency {
                index: 0,
                passes: 49,
                outputs: 50,
                pass_all_k: band(0.94, 0.85, 0.98),
                pass_any_k: band(1.0, 0.99, 1.0),
            },
            InputConsistency {
                index: 2,
                passes: 20,
                outputs: 50,
                pass_all_k: band(0.0588, 0.01, 0.2),
                pass_any_k: band(0.7918, 0.6, 0.9),
            },
        ],
        rate(61, 39, 0, 0.502, 0.708, 1.0),
        rate(97, 3, 0, 0.901, 0.992, 1.0),
    )
}

/// The common report with a consistency for politeness_validator and its
/// rate about 3 inputs only.
fn statistics_report() -> RunReport {
    let mut r = common::report();
    r.summary.checks[1].consistency = Some(consistency());
    r.summary.checks[1].rate.inputs = 3;
    r.summary.checks[1].rate.scope = Scope::TheseInputs;
    r
}

// ------------------------------------------------------------- 1. errors

#[test]
fn errors_and_their_causes_in_every_format() {
    let r = errors_report();
    let t = render(&r, Format::Text, false);
    println!("{t}");
    assert!(
        t.contains("      errors 2 calls to the system failed after their retries (not measured):"),
        "{t}"
    );
    assert!(
        t.contains("2 × HTTP 503 (first: input hello · output #7)"),
        "{t}"
    );
    assert!(
        t.contains("could not judge 3 outputs (errors, not failures):"),
        "{t}"
    );
    assert!(
        t.contains("2 × judge timed out (first: input thanks-3 · output #4)"),
        "{t}"
    );
    assert!(
        t.contains("1 × judge answered neither PASS nor FAIL (first: input question · output #1)"),
        "{t}"
    );
    // The check's errors are under the check, before the aggregate.
    assert!(t.find("judge timed out").unwrap() < t.find("aggregate").unwrap());

    let v = json(&r);
    let sys = &v["errors"]["system"];
    assert_eq!(sys["total"], 2);
    assert_eq!(sys["other"], 0);
    assert_eq!(sys["causes"][0]["message"], "HTTP 503");
    assert_eq!(sys["causes"][0]["count"], 2);
    assert_eq!(sys["causes"][0]["input"], 0);
    assert_eq!(sys["causes"][0]["input_label"], "hello");
    assert_eq!(sys["causes"][0]["repetition"], 7);
    assert_eq!(v["errors"]["outputs"], 4 * 49);
    let e = &v["checks"][1]["errors"];
    assert_eq!(e["total"], 3);
    assert_eq!(e["causes"][0]["message"], "judge timed out");
    assert_eq!(e["causes"][0]["count"], 2);
    assert_eq!(e["causes"][0]["input_label"], "thanks-3");
    assert_eq!(e["causes"][1]["count"], 1);
    assert_eq!(v["checks"][0]["errors"]["total"], 0);
    assert_eq!(v["checks"][1]["broken"], false);
    assert_eq!(v["summary"]["broken"], 0);

    let md = render(&r, Format::Markdown, false);
    println!("{md}");
    assert!(md.contains("### Errors (not failures)"), "{md}");
    assert!(
        md.contains("2 calls to the system failed after their retries (not measured):\n\n- 2 × HTTP 503 (first: input hello · output #7)"),
        "{md}"
    );
    assert!(
        md.contains("`politeness_validator` could not judge 3 outputs (errors, not failures):"),
        "{md}"
    );
    assert!(
        md.contains("- 2 × judge timed out (first: input thanks-3 · output #4)"),
        "{md}"
    );

    let h = render(&r, Format::Html, false);
    assert!(h.contains("<a href=\"#errors\">Errors (5)</a>"), "{h}");
    let sec = &h[h.find("<section id=\"errors\">").expect("errors section")..];
    let sec = &sec[..sec.find("</section>").unwrap()];
    assert!(
        sec.contains("The system: 2 calls to the system failed after their retries (not measured)"),
        "{sec}"
    );
    assert!(
        sec.contains("<tr><td class=\"num\">2</td><td><code>HTTP 503</code></td><td>input hello · output #7</td></tr>"),
        "{sec}"
    );
    assert!(
        sec.contains("data-validator=\"1\" id=\"errors-check-1\""),
        "{sec}"
    );
    assert!(sec.contains("<code>judge timed out</code>"), "{sec}");
    // Not without errors.
    let plain = render(&common::report(), Format::Html, false);
    assert!(!plain.contains("id=\"errors\"") && !plain.contains("#errors"));

    let x = render(&r, Format::Junit, false);
    assert!(
        x.contains("<property name=\"probity.errors.system\" value=\"2\"/>"),
        "{x}"
    );
    // The suite's own <system-out>, after its last test case.
    let tail = &x[x.rfind("</testcase>").unwrap()..];
    assert!(
        tail.contains("<system-out>2 calls to the system failed after their retries (not measured):\n  2 × HTTP 503 (first: input hello · output #7)</system-out>"),
        "{x}"
    );
    assert!(tail.contains("</testsuite>"), "{x}");
    assert!(
        x.contains("could not judge 3 outputs (errors, not failures):\n  2 × judge timed out (first: input thanks-3 · output #4)"),
        "{x}"
    );
}

#[test]
fn a_check_that_could_not_judge_any_output_is_broken_in_every_format() {
    let r = broken_report();
    assert!(!r.passed());
    let concl = r.conclusion();
    assert_eq!(
        concl,
        "NO VERDICT: 1 of 2 checks broken (could not judge any output); of the others, 1 pass"
    );
    let t = render(&r, Format::Text, false);
    println!("{t}");
    let line = t
        .lines()
        .find(|l| l.contains("politeness_validator") && l.contains("%"))
        .unwrap();
    assert!(line.trim_start().starts_with("BROKEN"), "{line}");
    assert!(line.ends_with("no verdict about the system"), "{line}");
    assert!(
        t.contains("BROKEN: could not judge any of its 200 outputs (first: input hello · output #0), so it gives no verdict about the system: Function not found: lenght"),
        "{t}"
    );
    assert_eq!(t.lines().last().unwrap(), concl);

    let v = json(&r);
    assert_eq!(v["checks"][1]["broken"], true);
    assert_eq!(v["checks"][0]["broken"], false);
    assert_eq!(
        v["checks"][1]["errors"]["causes"][0]["message"],
        "Function not found: lenght"
    );
    assert_eq!(v["checks"][1]["errors"]["total"], 200);
    assert_eq!(v["summary"]["broken"], 1);
    assert_eq!(v["summary"]["conclusion"], concl);
    assert_eq!(v["passed"], false);

    let md = render(&r, Format::Markdown, false);
    println!("{md}");
    assert!(
        md.starts_with("## ⛔ probity: NO VERDICT — greeting-bot (run #12)\n"),
        "{md}"
    );
    assert!(
        md.contains("| ⛔ BROKEN | no verdict about the system |"),
        "{md}"
    );
    assert!(
        md.contains("| politeness\\_validator | 20 | no verdict: broken |"),
        "{md}"
    );
    assert!(
        md.contains("⛔ **politeness\\_validator** BROKEN: could not judge any of its 200 outputs"),
        "{md}"
    );
    assert!(md.contains("Function not found: lenght"), "{md}");

    let h = render(&r, Format::Html, false);
    assert!(
        h.contains("<span class=\"badge fail\">BROKEN</span></td><td><strong>politeness_validator</strong>"),
        "{h}"
    );
    assert!(
        h.contains("so it gives no verdict about the system: Function not found: lenght"),
        "{h}"
    );

    let x = render(&r, Format::Junit, false);
    assert!(
        x.contains("<error message=\"BROKEN: could not judge any of its 200 outputs (first: input hello · output #0), so it gives no verdict about the system: Function not found: lenght\" type=\"broken\">"),
        "{x}"
    );
    assert!(x.contains(r#"errors="1""#), "{x}");
    assert!(
        x.contains("<property name=\"probity.broken\" value=\"politeness_validator\"/>"),
        "{x}"
    );
}

// ------------------------------------------------------------- 2. inputs

#[test]
fn every_failing_output_shows_its_input_in_every_format() {
    let mut r = common::report();
    r.failures = vec![FailingSample {
        input: 2,
        repetition: 7,
        output: Some("Sure, no problem.".into()),
        failed: vec![1],
        ..FailingSample::default()
    }];
    let t = render(&r, Format::Text, false);
    assert!(t.contains("input thanks-3: text: Thanks a lot!"), "{t}");

    let md = render(&r, Format::Markdown, false);
    assert!(
        md.contains("Its input thanks-3:\n\n```json\n{\n  \"text\": \"Thanks a lot!\"\n}\n```\n"),
        "{md}"
    );

    let v = json(&r);
    assert_eq!(v["examples"][0]["input_fields"]["text"], "Thanks a lot!");
    let f = &v["failures"][0];
    assert_eq!(f["input"], 2);
    assert_eq!(f["input_label"], "thanks-3");
    assert_eq!(f["input_fields"]["text"], "Thanks a lot!");
    assert_eq!(f["repetition"], 7);
    assert_eq!(f["output"], "Sure, no problem.");
    assert_eq!(f["failed"], serde_json::json!([1]));

    let h = render(&r, Format::Html, false);
    let article = &h[h.find("<article class=\"failure").unwrap()..];
    let article = &article[..article.find("</article>").unwrap()];
    assert!(
        article.contains("<details class=\"input\"><summary>input thanks-3 (1 field)</summary>"),
        "{article}"
    );
    assert!(
        article.contains("<dt>text</dt><dd><pre class=\"output\">Thanks a lot!</pre></dd>"),
        "{article}"
    );

    let x = render(&r, Format::Junit, false);
    assert!(
        x.contains("its input thanks-3: {&quot;text&quot;:&quot;Thanks a lot!&quot;}")
            || x.contains("its input thanks-3: {\"text\":\"Thanks a lot!\"}"),
        "{x}"
    );
}

#[test]
fn a_hostile_input_field_is_escaped_in_every_format() {
    let mut r = common::report();
    let evil = format!("\x1b[31mred\x1b[0m\x07 {HOSTILE} ```\n# heading | cell");
    r.input_fields
        .insert(2, fields(&[("text", &evil), ("<b>name</b>", "v")]));
    r.failures = vec![FailingSample {
        input: 2,
        repetition: 7,
        output: Some("out".into()),
        failed: vec![1],
        ..FailingSample::default()
    }];

    let t = render(&r, Format::Text, false);
    assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
    assert!(t.chars().all(|c| c == '\n' || !c.is_control()), "{t:?}");
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("input thanks-3:"))
        .unwrap();
    assert!(line.contains("text: red\\u{7} <script>"), "{line}");

    let md = render(&r, Format::Markdown, false);
    assert!(!md.contains('\x1b'), "{md:?}");
    // The field in JSON (controls escaped), in a fence that outlasts its
    // backticks: nothing closes it.
    assert!(
        md.contains("````json\n{\n  \"<b>name</b>\": \"v\",\n  \"text\": \"\\u001b[31mred"),
        "{md}"
    );
    assert!(!md.contains("\n# heading"), "{md}");

    let v = json(&r);
    assert_eq!(v["failures"][0]["input_fields"]["text"], evil.as_str());

    let h = render(&r, Format::Html, false);
    assert_eq!(h.matches("<script").count(), 1, "extra <script>");
    assert!(!h.contains("<img") && !h.contains("<b>name"), "{h}");
    assert!(h.contains("<dt>&lt;b&gt;name&lt;/b&gt;</dt>"), "{h}");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!h.contains('\x1b') && !h.contains('\x07'));

    let x = render(&r, Format::Junit, false);
    assert!(!x.contains('\x1b') && !x.contains('\x07') && !x.contains("<script"));
    assert!(x.contains("&lt;script&gt;"), "{x}");
}

// ------------------------------------------------------------- 3. calls

#[test]
fn calls_tokens_and_reuse_in_every_format() {
    let r = common::report();
    let line = "14 calls (4 to judges), 5120 tokens; 186 outputs reused from run #11";
    assert!(render(&r, Format::Text, false).contains(line));
    assert!(render(&r, Format::Markdown, false).contains(line));
    assert!(render(&r, Format::Html, false).contains(line));
    let x = render(&r, Format::Junit, false);
    assert!(
        x.contains(&format!(
            "<property name=\"probity.run.calls\" value=\"{line}\"/>"
        )),
        "{x}"
    );
    assert!(x.contains("<property name=\"probity.run.judge_calls\" value=\"4\"/>"));
    assert!(x.contains("<property name=\"probity.run.tokens\" value=\"5120\"/>"));
    assert!(x.contains("<property name=\"probity.run.reused_from\" value=\"11\"/>"));
    let v = json(&r);
    assert_eq!(v["run"]["model_calls"], 14);
    assert_eq!(v["run"]["judge_calls"], 4);
    assert_eq!(v["run"]["tokens"], 5120);
    assert_eq!(v["run"]["cached"], 186);
    assert_eq!(v["run"]["reused_from"], 11);

    // Every sample a fresh call, no tokens reported.
    let mut r = common::report();
    r.run.cached = 0;
    r.run.reused_from = None;
    r.run.tokens = 0;
    r.run.model_calls = 1;
    r.run.judge_calls = 0;
    let line = "1 call (0 to judges), no tokens reported; every sample called afresh";
    for f in [Format::Text, Format::Markdown, Format::Html, Format::Junit] {
        let s = render(&r, f, false);
        assert!(s.contains(line), "{f}: {s}");
    }
    assert_eq!(json(&r)["run"]["reused_from"], Value::Null);
}

// ------------------------------------------------------------- 4. statistics

#[test]
fn inputs_and_scope_go_with_every_rate() {
    let r = statistics_report();
    let note = "interval about these 3 inputs only (fewer than 5): no verdict about the system is established";
    let t = render(&r, Format::Text, false);
    println!("{t}");
    assert!(t.contains("over 20 inputs"), "{t}");
    assert!(
        t.contains("over 3 inputs · 3 errors counted as failures"),
        "{t}"
    );
    assert!(t.contains(note), "{t}");
    let md = render(&r, Format::Markdown, false);
    println!("{md}");
    assert!(
        md.contains("| check | inputs | interval is about | pass^k | pass@k |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| contraction\\_validator | 20 | the system (inputs drawn from a population) |"
        ),
        "{md}"
    );
    assert!(
        md.contains(&format!("| politeness\\_validator | 3 | ⚠️ {note} |")),
        "{md}"
    );
    let h = render(&r, Format::Html, false);
    assert!(
        h.contains(&format!(
            "<div class=\"scope\"><strong>{note}</strong></div>"
        )),
        "{h}"
    );
    assert!(h.contains("over 20 inputs"));
    let x = render(&r, Format::Junit, false);
    assert!(x.contains(note) && x.contains("over 3 inputs"), "{x}");
    let v = json(&r);
    assert_eq!(v["checks"][0]["rate"]["inputs"], 20);
    assert_eq!(v["checks"][0]["rate"]["scope"], "population");
    assert_eq!(v["checks"][1]["rate"]["inputs"], 3);
    assert_eq!(v["checks"][1]["rate"]["scope"], "these_inputs");
    // Every rate carries them: profiles, aggregate, retry.
    assert_eq!(v["profiles"]["inputs"][0]["rate"]["inputs"], 20);
    assert_eq!(v["aggregate"]["rate"]["scope"], "population");
    assert!(v["retry"]["measured_rate"]["inputs"].is_u64());

    // One input.
    let mut r = common::report();
    r.summary.checks[0].rate.inputs = 1;
    r.summary.checks[0].rate.scope = Scope::TheseInputs;
    let t = render(&r, Format::Text, false);
    assert!(
        t.contains(
            "interval about this one input only: no verdict about the system is established"
        ),
        "{t}"
    );
}

#[test]
fn consistency_per_check_in_every_format() {
    let r = statistics_report();
    let line = "pass^3 61.0% [50.2, 70.8] · pass@3 97.0% [90.1, 99.2] (means over 20 inputs with ≥ 3 judged outputs)";
    for f in [Format::Text, Format::Html, Format::Junit] {
        let s = render(&r, f, false);
        assert!(s.contains(line), "{f}: {s}");
    }
    let md = render(&r, Format::Markdown, false);
    assert!(
        md.contains("| k = 3: 61.0% \\[50.2, 70.8\\] | k = 3: 97.0% \\[90.1, 99.2\\] |"),
        "{md}"
    );
    // Per input in JSON …
    let v = json(&r);
    let c = &v["checks"][1]["consistency"];
    assert_eq!(c["k"], 3);
    assert!((c["mean_pass_all_k"]["estimate"].as_f64().unwrap() - 0.61).abs() < 1e-12);
    assert!((c["mean_pass_any_k"]["lower"].as_f64().unwrap() - 0.901).abs() < 1e-12);
    assert_eq!(c["mean_pass_all_k"]["inputs"], 20);
    let p = &c["per_input"][1];
    assert_eq!(p["index"], 2);
    assert_eq!(p["label"], "thanks-3");
    assert_eq!(p["passes"], 20);
    assert_eq!(p["outputs"], 50);
    assert!((p["pass_all_k"]["estimate"].as_f64().unwrap() - 0.0588).abs() < 1e-12);
    assert!((p["pass_any_k"]["upper"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    assert!(v["checks"][0]["consistency"].is_null());
    // … and in HTML, worst pass^k first.
    let h = render(&r, Format::Html, false);
    assert!(h.contains("<a href=\"#consistency\">Consistency</a>"));
    let sec = &h[h.find("<section id=\"consistency\">").unwrap()..];
    let sec = &sec[..sec.find("</section>").unwrap()];
    assert!(sec.contains("2. politeness_validator (k = 3)"), "{sec}");
    let a = sec
        .find("<tr class=\"filterable\" data-input=\"2\"><td>thanks-3</td><td class=\"num\">20 of 50</td><td>5.9% [1.0, 20.0]</td><td>79.2% [60.0, 90.0]</td></tr>")
        .expect("thanks-3 row");
    let b = sec
        .find("<td>hello</td><td class=\"num\">49 of 50</td><td>94.0% [85.0, 98.0]</td><td>100.0% [99.0, 100.0]</td>")
        .expect("hello row");
    assert!(a < b);
}

// ------------------------------------------------------------- comparison

fn comparison(multiple: MultipleTesting) -> ComparisonReport {
    let c = |pass, fail| Counts {
        pass,
        fail,
        ..Counts::default()
    };
    let opts = CompareOptions {
        multiple,
        ..CompareOptions::default()
    };
    let pairs: Vec<_> = (0..10).map(|i| (i, i)).collect();
    let mut a = compare_check(&vec![c(9, 1); 10], &vec![c(5, 5); 10], &pairs, &opts);
    a.name = "json_valid".into();
    a.p_value = 0.004;
    a.p_adjusted = if multiple == MultipleTesting::Holm {
        0.008
    } else {
        0.004
    };
    let mut b = a.clone();
    b.name = "polite".into();
    b.p_value = 0.3;
    b.p_adjusted = 0.3;
    ComparisonReport {
        baseline: probity_report::RunInfo {
            id: 1,
            ..Default::default()
        },
        candidate: probity_report::RunInfo {
            id: 2,
            ..Default::default()
        },
        comparison: Comparison {
            options: opts,
            shared_inputs: 10,
            only_baseline_inputs: 0,
            only_candidate_inputs: 0,
            checks: vec![a, b],
            only_baseline_checks: vec![],
            only_candidate_checks: vec![],
        },
        changed_inputs: vec![],
    }
}

#[test]
fn comparisons_show_adjusted_p_values_and_the_correction() {
    let holm = comparison(MultipleTesting::Holm);
    let t = render(&holm, Format::Text, false);
    println!("{t}");
    assert!(t.contains("p-values Holm-adjusted across 2 checks"), "{t}");
    assert!(t.contains("p = 0.004, Holm-adjusted 0.008"), "{t}");
    let md = render(&holm, Format::Markdown, false);
    assert!(md.contains("| p | Holm-adjusted p |"), "{md}");
    assert!(md.contains("| 0.004 | 0.008 |"), "{md}");
    let h = render(&holm, Format::Html, false);
    assert!(h.contains("Holm-<br>adjusted p"), "{h}");
    assert!(
        h.contains("<td class=\"num\">0.004</td><td class=\"num\">0.008</td>"),
        "{h}"
    );
    let x = render(&holm, Format::Junit, false);
    assert!(x.contains("p = 0.004, Holm-adjusted 0.008"), "{x}");
    let v: Value = serde_json::from_str(&render(&holm, Format::Json, false)).unwrap();
    assert_eq!(v["options"]["multiple"], "holm");
    assert_eq!(v["checks"][0]["p_value"], 0.004);
    assert_eq!(v["checks"][0]["p_adjusted"], 0.008);
    assert_eq!(v["checks"][0]["baseline"]["scope"], "population");
    assert!(v["checks"][0]["candidate"]["inputs"].is_u64());

    let none = comparison(MultipleTesting::None);
    let off = "no correction across 2 checks: control of the false-regression rate across K checks is off";
    for f in [Format::Text, Format::Markdown, Format::Html] {
        let s = render(&none, f, false);
        assert!(s.contains(off), "{f}: {s}");
    }
    assert!(render(&none, Format::Text, false).contains("p = 0.004 (uncorrected)"));
    assert!(render(&none, Format::Junit, false).contains("p = 0.004 (uncorrected)"));
    let v: Value = serde_json::from_str(&render(&none, Format::Json, false)).unwrap();
    assert_eq!(v["options"]["multiple"], "none");

    // A run's report carries it in its comparison section.
    let mut r = common::report();
    r.baseline = Some(holm);
    assert!(render(&r, Format::Text, false).contains("Holm-adjusted 0.008"));
    assert_eq!(json(&r)["comparison"]["checks"][0]["p_adjusted"], 0.008);
}

/// Each verifier's judge calls appear beside the run's calls, in every
/// format.
#[test]
fn judge_calls_per_check_in_every_format() {
    let mut r = common::report();
    r.run.judge_calls_by_check = vec![("helpful".into(), 3), ("topical".into(), 1)];
    for f in Format::ALL {
        let out = render(&r, f, false);
        if f == Format::Json {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["run"]["judge_calls_by_check"]["helpful"], 3);
            assert_eq!(v["run"]["judge_calls_by_check"]["topical"], 1);
        } else {
            assert!(
                out.contains("4 to judges: helpful 3, topical 1"),
                "{f}: {out}"
            );
        }
    }
}
