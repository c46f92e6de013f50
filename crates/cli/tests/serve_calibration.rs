//! `probity serve` with a calibrated verifier (`calibration = …`, paper §4,
//! issue 23 item 4): the judge answers its labelled set before the guard
//! listens, the counts are stored with the live run, and the run's report,
//! `/metrics` and the live table correct the verifier's rate for the
//! judge's errors. Checked against the simulated judge, whose error rates
//! are known, with an error-free simulated judge of the same outputs as the
//! truth. A judge that cannot answer its labels stops the guard with the
//! file and the cause; one that misses some is a warning.

use crate::common;
use crate::labels;

use common::{serve_cmd, start, text};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A guard over a simulated upstream that omits "You're welcome" 30 % of
/// the time (true rate 0.7), checked by an error-free judge ("truth") and
/// by a judge that fails 30 % of passing outputs and passes 5 % of failing
/// ones (Se 0.7, Sp 0.95: its own rate is 0.7·0.7 + 0.05·0.3 = 0.505),
/// calibrated on `data/labels.jsonl` (relative to the guard's file).
/// `judge` is extra keys of the noisy judge's table.
fn guard(dir: &Path, judge: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(
        dir.join("data/labels.jsonl"),
        labels::sim_labels(400, |_, _| {}),
    )
    .unwrap();
    let path = dir.join("guard.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "calibrated-guard"
call_attempts = 1
on_nothing_passed = "last"
[upstream]
provider = "sim"
seed = 4
omit_welcome = 0.3
contractions = 0
[retry]
attempts = 1
[[verifier]]
name = "truth"
instructions = "Say you're welcome when thanked."
minimum_success_percentage = 0.6
[verifier.system]
provider = "sim"
[[verifier]]
name = "noisy"
instructions = "Say you're welcome when thanked."
minimum_success_percentage = 0.6
calibration = "data/labels.jsonl"
[verifier.system]
provider = "sim"
seed = 8
false_pass = 0.05
false_fail = 0.3
{judge}
"#
        ),
    )
    .unwrap();
    path
}

/// `name{labels} value` of `metric` whose labels contain `needle`.
fn gauge(metrics: &str, metric: &str, needle: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(&format!("{metric}{{")) && l.contains(needle))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calibrated_verifier_is_corrected_in_the_live_run_and_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let config = guard(dir.path(), "");
    let mut cmd = serve_cmd(dir.path(), &config);
    cmd.stderr(std::process::Stdio::piped());
    let server = start(cmd);
    let base = format!("http://{}", server.1);
    let client = reqwest::Client::new();
    let requests = 600;
    for i in 0..requests {
        let r = client
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": format!("Thank you for the advice, part {i}!")}]}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
    }
    let metrics = common::metrics(&server.1).await;
    let log = server.stop_with_log();
    assert!(!log.contains("warning"), "{log}");

    // /metrics: the judge's own rate, its corrected rate with its bounds,
    // and the judge's accuracy, for the calibrated verifier only.
    let noisy = "check=\"noisy\",attempt=\"first\"";
    let raw = gauge(&metrics, "probity_check_pass_rate", noisy).expect("raw gauge");
    let corrected =
        gauge(&metrics, "probity_check_corrected_pass_rate", noisy).expect("corrected gauge");
    let lower = gauge(&metrics, "probity_check_corrected_pass_rate_lower", noisy).unwrap();
    let upper = gauge(&metrics, "probity_check_corrected_pass_rate_upper", noisy).unwrap();
    assert!(lower <= corrected && corrected <= upper, "{metrics}");
    assert!(gauge(
        &metrics,
        "probity_check_corrected_pass_rate",
        "check=\"truth\""
    )
    .is_none());
    let se = gauge(&metrics, "probity_judge_sensitivity", "check=\"noisy\"").unwrap();
    let sp = gauge(&metrics, "probity_judge_specificity", "check=\"noisy\"").unwrap();
    assert!(
        (se - 0.7).abs() < 0.08 && (sp - 0.95).abs() < 0.04,
        "{se} {sp}"
    );

    // The stored run's report: the judge's accuracy on 400 labels, its
    // rate corrected, nearer the truth (the error-free judge's rate on the
    // same outputs) than the judge's own, and its interval covers it.
    let store = dir.path().join("runs.db");
    let report = |format: &str| {
        let out = common::probity_cmd()
            .args(["report", "calibrated-guard", "--format", format, "--store"])
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let checks = json["checks"].as_array().unwrap();
    let truth = checks[0]["rate"]["estimate"].as_f64().unwrap();
    assert!(checks[0]["calibration"].is_null());
    let cal = &checks[1]["calibration"];
    assert_eq!(cal["state"], "corrected", "{cal}");
    let judge = &cal["judge"];
    assert_eq!(judge["labelled"], 400, "{judge}");
    assert_eq!(
        (&judge["sensitivity"]["of"], &judge["specificity"]["of"]),
        (&json!(200), &json!(200))
    );
    let s = &judge["sensitivity"];
    assert!(
        s["lower"].as_f64().unwrap() <= 0.7 && 0.7 <= s["upper"].as_f64().unwrap(),
        "{s}"
    );
    let estimate = cal["corrected"]["estimate"].as_f64().unwrap();
    let (lo, hi) = (
        cal["corrected"]["lower"].as_f64().unwrap(),
        cal["corrected"]["upper"].as_f64().unwrap(),
    );
    let judged = cal["raw"].as_f64().unwrap();
    println!(
        "truth {truth:.3}; judged {judged:.3}; corrected {estimate:.3} [{lo:.3}, {hi:.3}]; metrics raw {raw:.3}, corrected {corrected:.3} [{lower:.3}, {upper:.3}]"
    );
    assert!((0.6..0.8).contains(&truth), "{truth}");
    assert!(
        (estimate - truth).abs() < (judged - truth).abs(),
        "corrected {estimate} is no nearer the truth {truth} than the judge's {judged}"
    );
    assert!(lo <= truth && truth <= hi, "[{lo}, {hi}] misses {truth}");
    // The report reads what the server showed: the same corrected figures.
    assert!((estimate - corrected).abs() < 1e-9 && (lo - lower).abs() < 1e-9);
    assert!((judged - raw).abs() < 1e-9);
    // The row shows the corrected rate, the verdict is the corrected
    // interval's; the live table labels the judge's own figures.
    let text_report = report("text");
    assert!(
        text_report.contains("the row is corrected for the judge's errors"),
        "{text_report}"
    );
    assert!(
        text_report.contains("judge on 400 labelled pairs"),
        "{text_report}"
    );
    let live = &json["live"]["checks"][1]["first"];
    assert_eq!(live["corrected"]["state"], "corrected", "{live}");
    // The epoch (all 600 requests: epochs are 1,000) is corrected too, with
    // its own, smaller share of α: the same rate, a wider interval.
    let recent = &live["recent"]["corrected"];
    assert_eq!(recent["state"], "corrected", "{live}");
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
    assert!((f(recent, "rate") - f(&live["corrected"], "rate")).abs() < 1e-9);
    assert!(
        f(recent, "lower") <= f(&live["corrected"], "lower")
            && f(recent, "upper") >= f(&live["corrected"], "upper"),
        "{live}"
    );
    assert!(json["live"]["checks"][0]["first"]["recent"]
        .get("corrected")
        .is_none());
    assert!(text_report.contains("corrected "), "{text_report}");
    // The judge's own rate (0.505 expected) is below the 0.6 minimum, so
    // an uncorrected verdict would fail; corrected, it is no fail.
    assert!(judged < 0.6, "{judged}");
    assert_ne!(checks[1]["verdict"]["decision"], "fail", "{}", checks[1]);
    // The labelled calls count as the verifier's: 400 + one per request.
    let runs = common::probity_cmd()
        .args(["runs", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let line: Value = serde_json::from_str(text(&runs.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(
        line["judge_calls_by_check"],
        json!([requests, requests + 400]),
        "{line}"
    );
    println!("{text_report}");

    // Started again on the same store, the guard reads the judge's kept
    // verdicts on its labels back: no judge call before it listens; with
    // --fresh-labels it asks the judge every labelled pair again.
    let restart = |extra: &[&str]| {
        let mut cmd = serve_cmd(dir.path(), &config);
        cmd.args(extra).stderr(std::process::Stdio::piped());
        let log = start(cmd).stop_with_log();
        assert!(!log.contains("warning"), "{log}");
        let runs = common::probity_cmd()
            .args(["runs", "--json", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        let lines: Vec<Value> = text(&runs.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let newest = lines
            .iter()
            .max_by_key(|l| l["id"].as_i64())
            .unwrap()
            .clone();
        (lines.len(), newest)
    };
    let (runs, again) = restart(&[]);
    assert_eq!(runs, 2);
    assert_eq!(again["judge_calls_by_check"], json!([0, 0]), "{again}");
    let (runs, fresh) = restart(&["--fresh-labels"]);
    assert_eq!(runs, 3);
    assert_eq!(fresh["judge_calls_by_check"], json!([0, 400]), "{fresh}");
}

#[test]
fn a_judge_that_cannot_answer_its_labels_stops_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let config = guard(dir.path(), "error_rate = 1.0");
    let out = serve_cmd(dir.path(), &config).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("[[verifier]] noisy"), "{err}");
    assert!(err.contains("labels.jsonl"), "{err}");
    assert!(err.contains("could not judge 400 of the 400"), "{err}");
    assert!(err.contains("line 1: judge call failed"), "{err}");
    assert!(err.contains("simulated judge error"), "{err}");
    assert!(
        !text(&out.stdout).contains("listening"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_bad_labels_file_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = guard(dir.path(), "");
    let mut bad = labels::sim_labels(400, |_, _| {});
    bad.push_str("{\"input\": \"x\", \"output\": \"y\", \"label\": \"maybe\"}\n");
    std::fs::write(dir.path().join("data/labels.jsonl"), bad).unwrap();
    let out = serve_cmd(dir.path(), &config).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("labels.jsonl line 401"), "{err}");
    assert!(err.contains("\"maybe\""), "{err}");
}

#[test]
fn a_judge_that_misses_some_labels_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = guard(dir.path(), "error_rate = 0.1");
    let mut cmd = serve_cmd(dir.path(), &config);
    cmd.stderr(std::process::Stdio::piped());
    let server = start(cmd);
    let log = server.stop_with_log();
    let warning = log
        .lines()
        .find(|l| l.starts_with("warning: [[verifier]] noisy"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(warning.contains("labels.jsonl"), "{warning}");
    assert!(warning.contains("of the 400 labelled pairs"), "{warning}");
    assert!(warning.contains("left out"), "{warning}");
}
