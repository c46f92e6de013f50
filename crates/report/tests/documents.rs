//! Every document in every format: a comparison alone, a run carrying its
//! comparison with a baseline, a trend and a retry plan; untrusted names
//! escaped in each medium.

use crate::common;

use common::HOSTILE;
use probity_core::compare::{compare_check, CompareOptions, Comparison};
use probity_core::{AnalysisOptions, Counts, RetryPlan};
use probity_report::{
    render, ComparisonReport, Document, Format, PlanReport, PlanRun, RunInfo, TrendMark,
    TrendReport, TrendRun,
};
use serde_json::Value;

fn hostile() -> ComparisonReport {
    let c = |pass, fail| Counts {
        pass,
        fail,
        ..Counts::default()
    };
    let pairs: Vec<_> = (0..10).map(|i| (i, i)).collect();
    let mut k = compare_check(
        &vec![c(9, 1); 10],
        &vec![c(5, 5); 10],
        &pairs,
        &CompareOptions::default(),
    );
    k.name = "x\x1b[31m|<b>&\"'`\u{202e}\n".into();
    let run = |id| RunInfo {
        id,
        name: "<script>\x1b]0;t\x07".into(),
        system: r#"sim|v1|{"seed":1}"#.into(),
        system_label: "sim seed 1".into(),
        ..RunInfo::default()
    };
    ComparisonReport {
        baseline: run(1),
        candidate: run(2),
        comparison: Comparison {
            options: CompareOptions::default(),
            shared_inputs: 10,
            only_baseline_inputs: 0,
            only_candidate_inputs: 0,
            checks: vec![k],
            only_baseline_checks: vec!["<i>".into()],
            only_candidate_checks: vec![],
        },
        changed_inputs: vec!["\x1b[2J".into()],
    }
}

fn json(doc: Document<'_>) -> Value {
    serde_json::from_str(&render(doc, Format::Json, false)).unwrap()
}

#[test]
fn every_format_escapes_untrusted_names() {
    let r = hostile();
    assert!(r.regressed());
    let t = render(&r, Format::Text, false);
    assert!(!t.contains('\x1b') && !t.contains('\u{202e}'), "{t}");
    assert!(t.contains("REGRESSED"));
    let md = render(&r, Format::Markdown, false);
    assert!(
        md.contains("x\\|&lt;b&gt;") && !md.contains("<script>"),
        "{md}"
    );
    let x = render(&r, Format::Junit, false);
    assert!(!x.contains('\x1b') && !x.contains("<b>") && x.contains("type=\"regression\""));
    let h = render(&r, Format::Html, false);
    assert!(!h.contains("<script>") && !h.contains("<b>"));
    let j = json(Document::Comparison(&r));
    assert_eq!(j["checks"][0]["direction"], "regressed");
    assert_eq!(j["regressed"], true);
}

#[test]
fn a_run_with_a_baseline_carries_its_comparison_in_every_format() {
    let plain = common::report();
    let mut r = common::report();
    r.baseline = Some(hostile());
    let cmp = r.baseline.as_ref().unwrap();

    // Written into a writer (`render_to`), the same bytes.
    let mut written = Vec::new();
    probity_report::render_to(&r, Format::Json, false, &mut written).unwrap();
    assert_eq!(
        String::from_utf8(written).unwrap(),
        render(&r, Format::Json, false)
    );

    let t = render(&r, Format::Text, false);
    assert!(t.starts_with(&render(&plain, Format::Text, false)));
    assert!(t.ends_with(&render(cmp, Format::Text, false)), "{t}");

    let md = render(&r, Format::Markdown, false);
    assert!(md.starts_with(&render(&plain, Format::Markdown, false)));
    assert!(md.ends_with(&render(cmp, Format::Markdown, false)));

    let j = json(Document::Run(&r));
    assert_eq!(j["schema"], "probity.report.v1");
    assert_eq!(j["comparison"], json(Document::Comparison(cmp)));
    assert!(json(Document::Run(&plain)).get("comparison").is_none());

    let x = render(&r, Format::Junit, false);
    assert!(x.contains("name=\"regression: x"), "{x}");
    assert!(x.contains("type=\"regression\""));
    assert!(!render(&plain, Format::Junit, false).contains("regression"));

    let h = render(&r, Format::Html, false);
    let section = h
        .find("<section id=\"comparison\">")
        .expect("comparison section");
    assert!(section > h.find("<section id=\"failures\">").unwrap());
    assert!(section < h.find("<footer>").unwrap());
    assert!(h.contains("<a href=\"#comparison\">Comparison</a><a href=\"#failures\">"));
    assert!(!h.contains("<script>alert") && !h.contains("<b>"));
    let plain_html = render(&plain, Format::Html, false);
    assert!(!plain_html.contains("#comparison"));
}

fn trend() -> TrendReport {
    let r = common::rate(90, 10, 0, 0.82, 0.95, 1.0);
    TrendReport {
        name: HOSTILE.to_string(),
        checks: vec!["polite\x1b[31m<b>".into(), "json".into()],
        runs: (1..=3)
            .map(|id| TrendRun {
                run: RunInfo {
                    id,
                    name: HOSTILE.to_string(),
                    created_at: format!("2024-08-0{id}T12:00:00Z"),
                    ..RunInfo::default()
                },
                rates: vec![Some((r, 0.8)), (id != 2).then_some((r, 0.9))],
                marks: match id {
                    2 => vec![TrendMark::Reused(1), TrendMark::Overridden],
                    1 => vec![TrendMark::Revalidated(7)],
                    _ => Vec::new(),
                },
            })
            .collect(),
    }
}

#[test]
fn a_trend_renders_in_every_format() {
    let t = trend();
    let text = render(&t, Format::Text, false);
    assert!(text.starts_with("trend of "), "{text}");
    assert!(!text.contains('\x1b'));
    assert!(text.contains("90.0% [82.0, 95.0]"));
    // Runs unlike the others are marked, and the marks explained.
    let row = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    assert!(
        row("2 ").trim_end().ends_with("reused #1 · --set"),
        "{text}"
    );
    assert!(row("1 ").trim_end().ends_with("revalidated #7"), "{text}");
    assert!(!row("3 ").contains('#'), "{text}");
    assert!(text.contains("--set: the latest run's file with other settings"));

    let j = json(Document::Trend(&t));
    assert_eq!(j["schema"], "probity.trend.v1");
    assert_eq!(j["runs"].as_array().unwrap().len(), 3);
    assert!(j["runs"][1]["rates"][1].is_null());
    assert_eq!(
        j["runs"][1]["marks"],
        serde_json::json!(["reused #1", "--set"])
    );
    assert_eq!(j["runs"][2]["marks"], serde_json::json!([]));

    let md = render(&t, Format::Markdown, false);
    assert!(md.starts_with("### probity trend\n\n```text\n"), "{md}");
    assert!(md.contains(&text));

    let h = render(&t, Format::Html, false);
    assert_eq!(h.matches("<svg class=\"trend\"").count(), 2);
    assert!(h.contains("<td>reused #1 · --set</td>"), "{h}");
    assert!(!h.contains("<script>") && !h.contains("<b>") && !h.contains('\x1b'));

    // A trend checks nothing: JUnit gets its text.
    assert_eq!(render(&t, Format::Junit, false), text);
}

fn measured_plan() -> PlanReport {
    let r = common::tensor_report(5, 20);
    let t = r.tensor.as_ref().unwrap();
    PlanReport {
        plan: RetryPlan::from_tensor(t, &AnalysisOptions::default()).unwrap(),
        target: 0.99,
        run: Some(PlanRun {
            run: r.run.clone(),
            shape: (5, 20),
            checks: vec!["a".into(), "<b>".into(), "c".into()],
            input_labels: r.input_labels.clone(),
            analysis: AnalysisOptions::default(),
            guarded: Some(common::retry_check(false)),
        }),
        sample_size: None,
    }
}

#[test]
fn a_plan_from_assumed_rates_renders_in_every_format() {
    let p = PlanReport {
        plan: RetryPlan::from_rates(&[0.95, 0.90, 0.85]).unwrap(),
        target: 0.99,
        run: None,
        sample_size: None,
    };
    let text = render(&p, Format::Text, true);
    assert!(text.starts_with("Retry plan (paper §4.2), validators assumed independent\n"));
    assert!(text.contains("= 3.55 → 4 attempts (3 retries)"), "{text}");
    assert_eq!(text, render(&p, Format::Text, false));

    let j = json(Document::Plan(&p));
    assert_eq!(j["schema"], "probity.plan.v1");
    assert!(j["run"].is_null() && j["guarded"].is_null());
    assert!((j["retry"]["p_independent"].as_f64().unwrap() - 0.72675).abs() < 1e-9);
    assert_eq!(j["retry"]["independent"]["attempts"], 4);
    assert_eq!(j["retry"]["target"], 0.99);

    let md = render(&p, Format::Markdown, false);
    assert!(
        md.starts_with("### probity retry plan\n\n```text\n"),
        "{md}"
    );
    assert!(md.contains(&text));
    let h = render(&p, Format::Html, false);
    assert!(h.contains("<pre>Retry plan (paper §4.2)"), "{h}");
    assert_eq!(render(&p, Format::Junit, false), text);
}

#[test]
fn a_plan_of_a_stored_run_renders_in_every_format() {
    let p = measured_plan();
    let text = render(&p, Format::Text, false);
    assert!(
        text.starts_with("Retry plan (paper §4.2) from run 7 (run "),
        "{text}"
    );
    assert!(text.contains("Per input (§4.2.3)"));
    assert!(text.contains("Guarded system (§4.2): at most 3 attempts"));
    assert!(text.contains("prediction did not hold"));
    assert!(!text.contains('\x1b'));

    let j = json(Document::Plan(&p));
    assert_eq!(j["run"]["id"], 7);
    assert_eq!(j["run"]["inputs"], 5);
    assert_eq!(j["run"]["checks"][1], "<b>");
    assert_eq!(j["retry"]["per_input"].as_array().unwrap().len(), 5);
    assert_eq!(j["retry"]["per_input"][0]["label"], "hello");
    assert_eq!(j["guarded"]["outcome"], "not-held");

    let h = render(&p, Format::Html, false);
    assert!(!h.contains("<script>") && !h.contains("<b>"), "{h}");
    assert!(h.contains("&lt;script&gt;"));
}
