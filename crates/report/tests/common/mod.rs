//! Hand-built summaries for the report tests (no statistics are computed:
//! every figure is set directly so the tests can look for it).
#![allow(dead_code)]

use probity_core::aggregate::AggregateResult;
use probity_core::retry::EmpiricalJoint;
use probity_core::stats::{Decision, Interval, ThresholdVerdict};
use probity_core::{
    Aggregate, AnalysisOptions, CheckInfo, CheckKind, CheckSummary, Counts, ProfileEntry,
    RateEstimate, RetryPlan, Strategy, Summary,
};
use probity_report::{Example, RunInfo, RunReport};

/// A rate of `pass` out of `pass + fail + error` with the given interval
/// and design effect.
pub fn rate(pass: u64, fail: u64, error: u64, lower: f64, upper: f64, deff: f64) -> RateEstimate {
    let n = pass + fail + error;
    RateEstimate {
        estimate: if n == 0 { 0.0 } else { pass as f64 / n as f64 },
        counts: Counts {
            pass,
            fail,
            error,
            missing: 0,
        },
        n,
        design_effect: deff,
        effective_n: n as f64 / deff,
        confidence: 0.95,
        interval: Interval { lower, upper },
        // Enough inputs for a claim about the system (see
        // probity_core::stats::MIN_INPUTS).
        inputs: 20,
        scope: probity_core::stats::Scope::Population,
    }
}

pub fn check(
    name: &str,
    message: &str,
    threshold: f64,
    rate: RateEstimate,
    decision: Decision,
    established: bool,
    samples_needed: Option<u64>,
) -> CheckSummary {
    CheckSummary {
        info: CheckInfo {
            name: name.to_string(),
            message: message.to_string(),
            minimum_success_percentage: threshold,
            weight: 1.0,
            kind: CheckKind::Validator,
        },
        rate,
        verdict: ThresholdVerdict {
            decision,
            threshold,
            established,
            samples_needed,
            why_not: None,
        },
        breakdown: Vec::new(),
        consistency: None,
        calibration: None,
        applies_to: None,
        breakdown_below: 0,
        worst_input: None,
        example_failure: None,
    }
}

fn entry(index: usize, rate: RateEstimate) -> ProfileEntry {
    ProfileEntry { index, rate }
}

/// 4 inputs × 50 outputs × 2 checks: contraction_validator passes
/// (96.2% [94.1, 97.6] ≥ 95%, established), politeness_validator fails
/// (85.0% [80.1, 88.9] ≥ 90%, 3 errors, design effect 2.1, not
/// established, 320 samples needed).
pub fn summary() -> Summary {
    // 200 outputs; 192.4 would be 96.2%: use 1000-cell style counts
    // scaled so the estimate is exactly 0.962.
    let contraction = check(
        "contraction_validator",
        "Output contains too many contractions",
        0.95,
        rate(962, 38, 0, 0.941, 0.976, 1.02),
        Decision::Pass,
        true,
        None,
    );
    let mut politeness = check(
        "politeness_validator",
        "System seems to have forgotten its manners",
        0.90,
        rate(170, 27, 3, 0.801, 0.889, 2.1),
        Decision::Fail,
        false,
        Some(320),
    );
    politeness.worst_input = Some(entry(2, rate(20, 30, 0, 0.268, 0.537, 1.0)));
    politeness.example_failure = Some((2, 7));
    let inputs = vec![
        entry(0, rate(98, 2, 0, 0.93, 0.995, 1.0)),
        entry(1, rate(90, 10, 0, 0.82, 0.945, 1.0)),
        entry(2, rate(60, 40, 0, 0.50, 0.69, 1.0)),
        entry(3, rate(80, 17, 3, 0.71, 0.87, 1.0)),
    ];
    let outputs = (0..50)
        .map(|j| entry(j, rate(7, 1, 0, 0.5, 0.98, 1.0)))
        .collect();
    let agg_rate = RateEstimate {
        confidence: 0.95,
        interval: Interval {
            lower: 0.78,
            upper: 0.901,
        },
        ..politeness.rate
    };
    Summary {
        shape: (4, 50, 2),
        options: options(),
        strategy: Strategy::All,
        counts: Counts {
            pass: 1132,
            fail: 65,
            error: 3,
            missing: 0,
        },
        aggregate: AggregateResult {
            method: Aggregate::Min,
            rate: agg_rate,
            worst_validator: Some(1),
            per_validator: vec![
                RateEstimate {
                    confidence: 0.975,
                    ..contraction.rate
                },
                RateEstimate {
                    confidence: 0.975,
                    ..politeness.rate
                },
            ],
        },
        checks: vec![contraction, politeness],
        input_profile: inputs,
        output_profile: outputs,
        retry: RetryPlan {
            rates: vec![0.962, 0.85],
            p_independent: 0.962 * 0.85,
            empirical: Some(EmpiricalJoint {
                overall: rate(166, 34, 0, 0.77, 0.88, 1.3),
                per_input: vec![
                    rate(48, 2, 0, 0.87, 0.99, 1.0),
                    rate(45, 5, 0, 0.79, 0.96, 1.0),
                    rate(30, 20, 0, 0.46, 0.73, 1.0),
                    rate(0, 50, 0, 0.0, 0.07, 1.0),
                ],
                phi: vec![vec![Some(1.0), Some(0.12)], vec![Some(0.12), Some(1.0)]],
            }),
        },
        sequential: None,
    }
}

pub fn report() -> RunReport {
    RunReport {
        run: RunInfo {
            id: 12,
            name: "greeting-bot".to_string(),
            created_at: "2024-08-30T12:00:00Z".to_string(),
            config_hash: "1a2b3c4d".to_string(),
            system: "sim/polite-v1".to_string(),
            system_label: "sim/polite-v1".to_string(),
            duration_s: Some(12.34),
            model_calls: 14,
            cached: 186,
            judge_calls: 4,
            tokens: 5120,
            reused_from: Some(11),
            judge_calls_by_check: Vec::new(),
            complete: true,
            calls: None,
            cost: Default::default(),
        },
        summary: summary(),
        input_labels: vec![
            "hello".to_string(),
            "bye".to_string(),
            "thanks-3".to_string(),
            "question".to_string(),
        ],
        examples: vec![Example {
            check: 1,
            input: 2,
            repetition: 7,
            output: "\x1b[31mSure\x1b[0m, no problem.\nAnything else?\x07".to_string(),
            reason: Some("no \"You're welcome\"".to_string()),
        }],
        retry_target: 0.99,
        tensor: None,
        failures: Vec::new(),
        guarded: None,
        baseline: None,
        live: None,
        causes: probity_core::causes::Causes::default(),
        input_fields: ["Hello!", "Bye now", "Thanks a lot!", "What time is it?"]
            .iter()
            .map(|t| fields(&[("text", t)]))
            .enumerate()
            .collect(),
    }
}

/// Input fields from `(name, value)` pairs of strings.
pub fn fields(pairs: &[(&str, &str)]) -> serde_json::Map<String, serde_json::Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect()
}

/// The same report with every check passing.
pub fn passing_report() -> RunReport {
    let mut r = report();
    let c = &mut r.summary.checks[1];
    c.rate = rate(190, 10, 0, 0.91, 0.975, 1.0);
    c.verdict.decision = Decision::Pass;
    c.verdict.established = true;
    c.verdict.samples_needed = None;
    r.examples.clear();
    r
}

/// Text that would run script or break out of markup if it reached HTML
/// unescaped.
pub const HOSTILE: &str =
    "<script>alert(1)</script> \"><img src=x onerror=alert(1)> it's </textarea>";

/// The cell of a synthetic tensor: check 0 fails on every (i+2)-th output,
/// check 1 on every 7th output of inputs ≥ 2, check 2 on even outputs of
/// input 4 and errors on output 3 of input 1; output 19 of input 3 is
/// missing.
// `is_multiple_of` is newer than the workspace's rust-version (1.85).
#[allow(clippy::manual_is_multiple_of)]
pub fn synthetic_cell(i: usize, j: usize, k: usize) -> probity_core::Cell {
    use probity_core::Cell;
    if i == 3 && j == 19 {
        return Cell::Missing;
    }
    let fail = match k {
        0 => j % (i + 2) == 0,
        1 => i >= 2 && (i + j) % 7 == 0,
        _ => {
            if i == 1 && j == 3 {
                return Cell::Error;
            }
            i == 4 && j % 2 == 0
        }
    };
    if fail {
        Cell::Fail
    } else {
        Cell::Pass
    }
}

/// A report built by the core from a real tensor of `n` inputs × `m`
/// outputs × 3 checks (see [`synthetic_cell`], repeated every 5 inputs),
/// with hostile text in the run name, input ids, check names, messages,
/// outputs and reasons, and every failing output listed.
pub fn tensor_report(n: usize, m: usize) -> RunReport {
    use probity_core::{ReliabilityTensor, Summary};
    use probity_report::FailingSample;
    let mut t = ReliabilityTensor::new(n, m, 3).unwrap();
    for i in 0..n {
        for j in 0..m {
            for k in 0..3 {
                t.set(i, j, k, synthetic_cell(i % 5, j, k)).unwrap();
            }
        }
    }
    let info = |name: &str, message: &str, min: f64| CheckInfo {
        name: name.to_string(),
        message: message.to_string(),
        minimum_success_percentage: min,
        weight: 1.0,
        kind: CheckKind::Validator,
    };
    let checks = vec![
        info(
            "contraction_validator",
            "Output contains too many contractions",
            0.7,
        ),
        info(
            "polite<b>'\"",
            "System forgot its manners <script>alert(2)</script>",
            0.9,
        ),
        info(HOSTILE, HOSTILE, 0.95),
    ];
    let summary = Summary::build(&t, &checks, Strategy::All, Aggregate::Min, &options());
    let labels = [
        "hello",
        HOSTILE,
        "\"><img src=x onerror=alert(1)>",
        "it's",
        "</textarea>",
    ];
    let input_labels = (0..n)
        .map(|i| {
            if i < 5 {
                labels[i].to_string()
            } else {
                format!("input-{i}")
            }
        })
        .collect();
    // The one Error cell pattern of the tensor: check 2 on output 3 of
    // every input i with i % 5 == 1, with a hostile message.
    let mut causes = probity_core::causes::Causes::new(3);
    for i in 0..n {
        for j in 0..m {
            let errs: Vec<(usize, String)> = (0..3)
                .filter(|&k| synthetic_cell(i % 5, j, k) == probity_core::Cell::Error)
                .map(|k| (k, format!("predicate error {HOSTILE}")))
                .collect();
            causes.add_output((i, j), errs.iter().map(|(k, s)| (*k, s.as_str())));
        }
    }
    let causes = causes.sorted();
    let input_fields = (0..n)
        .map(|i| {
            (
                i,
                fields(&[("text", &format!("input {i}: {HOSTILE}")), (HOSTILE, "x")]),
            )
        })
        .collect();
    let mut failures = FailingSample::from_tensor(&t, 0);
    for f in &mut failures {
        f.output = Some(format!("output {}/{}: {HOSTILE}", f.input, f.repetition));
        f.reasons = f
            .failed
            .iter()
            .chain(&f.errored)
            .map(|&k| (k, format!("reason {k}: {HOSTILE}")))
            .collect();
    }
    RunReport {
        run: RunInfo {
            id: 7,
            name: format!("run {HOSTILE}"),
            created_at: "2024-08-30T12:00:00Z".to_string(),
            config_hash: "1a2b3c4d".to_string(),
            system: "sim/<i>polite</i>".to_string(),
            system_label: "sim/<i>polite</i>".to_string(),
            duration_s: Some(3.2),
            model_calls: (n * m) as u64,
            cached: 0,
            judge_calls: 0,
            tokens: 0,
            reused_from: None,
            complete: true,
            calls: None,
            judge_calls_by_check: vec![(format!("judge {HOSTILE}"), 3)],
            cost: Default::default(),
        },
        summary,
        input_labels,
        examples: Vec::new(),
        retry_target: 0.99,
        tensor: Some(t),
        failures,
        guarded: None,
        baseline: None,
        live: None,
        causes,
        input_fields,
    }
}

/// A guarded system (m = 3, 200 requests) whose joint-rate prediction
/// held (`held`) or missed both measured intervals (`!held`).
pub fn retry_check(held: bool) -> probity_core::guarded::RetryCheck {
    use probity_core::guarded::{Band, GuardedMeasurement, Prediction, RetryCheck};
    let band = |estimate, lower, upper| Band {
        estimate,
        lower,
        upper,
    };
    let measured = GuardedMeasurement {
        m: 3,
        samples: 200,
        histogram: vec![120, 40, 20],
        nothing_published: 20,
        success: rate(180, 20, 0, 0.85, 0.94, 1.2),
        attempts: band(1.6, 1.5, 1.7),
        calls: 410,
        tokens: 12345,
        retry_calls: 140,
        retry_tokens: 4100,
    };
    let (joint_s, joint_a) = if held {
        (band(0.92, 0.88, 0.95), band(1.62, 1.55, 1.7))
    } else {
        (band(0.985, 0.97, 0.995), band(1.25, 1.2, 1.3))
    };
    RetryCheck {
        measured,
        predictions: vec![
            Prediction {
                model: "independence".to_string(),
                p: band(0.8177, 0.8177, 0.8177),
                success_within: band(0.9939, 0.9939, 0.9939),
                attempts: band(1.22, 1.22, 1.22),
            },
            Prediction {
                model: "joint".to_string(),
                p: band(0.6, 0.55, 0.65),
                success_within: joint_s,
                attempts: joint_a,
            },
            Prediction {
                model: "per-input".to_string(),
                p: band(0.6, 0.4, 0.8),
                success_within: band(0.9, 0.75, 0.99),
                attempts: band(1.6, 1.3, 2.1),
            },
        ],
        held,
    }
}

/// [`report`] of a run with a retry policy.
pub fn guarded_report(held: bool) -> RunReport {
    let mut r = report();
    r.guarded = Some(retry_check(held));
    r
}

/// The fixtures' analysis settings: errors count as failures (the figures
/// the tests expect were written so; the default is to exclude them).
pub fn options() -> AnalysisOptions {
    AnalysisOptions {
        errors: probity_core::ErrorPolicy::AsFailure,
        ..AnalysisOptions::default()
    }
}

/// A line to the person running the tests, shown even though cargo
/// captures test output (`eprintln!` is captured; a direct write to
/// standard error is not): a test skipped says so.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
