//! A calibrated verifier in every format (issue 23 item 4): the raw rate,
//! the judge's sensitivity and specificity with intervals, the corrected
//! rate with its interval, and a warning when the judge is too weak.

use crate::common;

use probity_core::stats::{
    corrected_rate, Calibrated, CalibrationError, ClusterSum, JudgeAccuracy, LabelCounts,
    RunVariance,
};
use probity_report::{render, Format, RunReport};
use serde_json::Value;

/// The common report whose second check is a verifier calibrated on 30
/// PASS and 50 FAIL labels (Se 28/30, Sp 45/50) over 50 inputs × 20
/// outputs, against a minimum of 95 %: too weak for it.
fn calibrated_report() -> RunReport {
    let mut r = common::report();
    let clusters: Vec<ClusterSum> = (0..50)
        .map(|i| ClusterSum::from_passes(if i % 3 == 0 { 16 } else { 20 }, 20).unwrap())
        .collect();
    let labels = LabelCounts {
        pass_labels: 30,
        judged_pass: 28,
        fail_labels: 50,
        judged_fail: 45,
        errors: 2,
        reused: 0,
        sampling: None,
    };
    let a = JudgeAccuracy::measure(labels, 0.95).unwrap();
    let c = corrected_rate(&clusters, &a, 0.95, RunVariance::Clustered).unwrap();
    assert!(c.weak.is_some());
    r.summary.checks[1].calibration = Some(Calibrated::Corrected(c));
    r.summary.checks[1].verdict.threshold = 0.95;
    r
}

#[test]
fn every_format_shows_the_judge_the_corrected_rate_and_the_warning() {
    let r = calibrated_report();
    // Wilson intervals from statsmodels: [78.68, 98.15], [78.64, 95.65].
    let judge = "judge on 82 labelled pairs: sensitivity 93.3% [78.7, 98.2] (28/30), specificity 90.0% [78.6, 95.7] (45/50), 2 not judged (errors)";
    let Some(Calibrated::Corrected(cr)) = &r.summary.checks[1].calibration else {
        unreachable!()
    };
    let (estimate, bounds) = (
        format!("{:.1}%", 100.0 * cr.estimate),
        format!(
            "[{:.1}, {:.1}]",
            100.0 * cr.interval.lower,
            100.0 * cr.interval.upper
        ),
    );
    let corrected = format!("{estimate} {bounds}");
    let needs = cr.labels_needed;
    let (reach, power) = (needs.reach.unwrap(), needs.power.unwrap());
    assert!(reach.pass > 30, "{needs:?}");
    let needs_line = format!(
        "labels for a pass at 95%: reachable at all from {} PASS and {} FAIL labels; most of the run's power kept from {} PASS and {} FAIL (this set: 30 PASS, 50 FAIL)",
        reach.pass, reach.fail, power.pass, power.fail
    );
    // The row shows the corrected rate (the verdict's), the line under it
    // the judge's own.
    let own = format!(
        "the row is corrected for the judge's errors, and so is the verdict; the judge's own rate: {:.1}%",
        100.0 * r.summary.checks[1].rate.estimate
    );
    for f in [Format::Text, Format::Html, Format::Markdown] {
        let s = render(&r, f, false);
        let s = s
            .replace("\\[", "[")
            .replace("\\]", "]")
            .replace("&#39;", "'");
        assert!(s.contains(judge), "{f}: {s}");
        assert!(s.contains(&own), "{f}: {s}");
        assert!(s.contains(&estimate) && s.contains(&bounds), "{f}: {s}");
        assert!(s.contains(&needs_line), "{f}: {s}");
        assert!(s.contains("too weak for the minimum 95%"), "{f}: {s}");
    }
    let junit = render(&r, Format::Junit, false).replace("&apos;", "'");
    assert!(
        junit.contains(&format!(
            "rate {corrected} corrected for the judge's errors"
        )),
        "{junit}"
    );
    // A sequential run's verdicts are its sequences': the row keeps the
    // measured rate and the corrected one is shown beside it.
    let mut seq = r.clone();
    seq.summary.sequential = Some(probity_core::sequential::SequentialOutcome {
        seed: 1,
        design: probity_core::sequential::RoundDesign::Inputs,
        stop: Some(probity_core::sequential::StopReason::BudgetSpent),
        inputs: 50,
        samples: 1000,
        budget_inputs: 50,
        budget_samples: 1000,
        fixed_samples: None,
        rounds: 5,
        confidence: 0.95,
        checks: Vec::new(),
    });
    let text = render(&seq, Format::Text, false);
    assert!(
        text.contains(&format!("{corrected} (raw 93.2%); not the verdict's")),
        "{text}"
    );
    let v: Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let c = &v["checks"][1]["calibration"];
    assert_eq!(c["state"], "corrected");
    assert_eq!(c["judge"]["labelled"], 82);
    assert_eq!(c["judge"]["sensitivity"]["agreed"], 28);
    assert!((c["judge"]["specificity"]["estimate"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    assert!((c["raw"].as_f64().unwrap() - 0.932).abs() < 1e-12);
    let est = c["corrected"]["estimate"].as_f64().unwrap();
    assert!(
        (est - (0.932 + 0.9 - 1.0) / (28.0 / 30.0 + 0.9 - 1.0)).abs() < 1e-12,
        "{est}"
    );
    assert!(c["corrected"]["lower"].as_f64().unwrap() < est);
    assert_eq!(c["weak"]["reason"], "threshold");
    assert!(c["warning"].as_str().unwrap().contains("too weak"));
    assert!(v["checks"][0]["calibration"].is_null());
}

#[test]
fn a_rate_that_could_not_be_corrected_says_why_in_every_format() {
    let mut r = common::report();
    r.summary.checks[1].calibration = Some(Calibrated::Unusable {
        judge: None,
        problem: CalibrationError::NoFailLabels,
    });
    for f in [Format::Text, Format::Html, Format::Markdown] {
        let s = render(&r, f, false);
        assert!(
            s.contains("no corrected rate: the labelled set has no FAIL example"),
            "{f}: {s}"
        );
    }
    let v: Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let c = &v["checks"][1]["calibration"];
    assert_eq!(c["state"], "unusable");
    assert_eq!(c["problem"]["reason"], "no_fail_labels");
    assert!(c["judge"].is_null());
}

/// A judge whose verdicts on the labelled set were partly read from the
/// store (the same question asked by an earlier run) says how many, in
/// every format: 70 of its 82 pairs reused, 12 asked.
#[test]
fn the_judge_line_says_how_many_verdicts_were_reused() {
    let mut r = calibrated_report();
    let Some(Calibrated::Corrected(c)) = &mut r.summary.checks[1].calibration else {
        unreachable!("calibrated_report corrects check 1")
    };
    c.judge.counts.reused = 70;
    let judge = "judge on 82 labelled pairs (70 reused, 12 asked): sensitivity 93.3%";
    for f in [Format::Text, Format::Html, Format::Markdown] {
        let s = render(&r, f, false);
        assert!(s.contains(judge), "{f}: {s}");
    }
    let json: Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let j = &json["checks"][1]["calibration"]["judge"];
    assert_eq!(
        (&j["labelled"], &j["reused"]),
        (&Value::from(82), &Value::from(70))
    );
}
