//! `probity compare` and `probity run --baseline` end to end on stored
//! simulator runs whose true contraction rates differ (10 % vs 40 %) or
//! do not (two seeds at 10 %).

use crate::common;

use common::{probity, text};
use serde_json::Value;
use std::path::Path;

/// The example configuration with lenient minimums (so verdicts pass and
/// the exit code is the comparison's), M = 10, and the given simulator.
fn configure(dir: &Path, seed: u64, contractions: f64) {
    let path = dir.join("probity.toml");
    let base = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in base.lines() {
        let line = if line.starts_with("seed = ") {
            format!("seed = {seed}")
        } else if line.starts_with("contractions = ") {
            format!("contractions = {contractions}")
        } else if line.starts_with("outputs_per_input = ") {
            "outputs_per_input = 10".to_string()
        } else if line.starts_with("minimum_success_percentage = ") {
            "minimum_success_percentage = 0.5".to_string()
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
}

#[test]
fn compare_flags_a_real_regression_and_not_noise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);

    // Run 1: the baseline. No earlier run: --baseline is skipped with a notice.
    configure(d, 1, 0.10);
    let out = probity(d, &["run", "-q", "--baseline", "polite-assistant"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("nothing to compare"));

    // Run 2: same true rates, another seed: noise, not a regression.
    configure(d, 2, 0.10);
    let out = probity(d, &["run", "-q", "--baseline", "polite-assistant"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("probity compare"), "{stdout}");
    // (With these seeds contraction_validator happens to look better in
    // run 2, a chance event of about α/2: an improvement never fails CI.)
    assert!(!stdout.contains("REGRESSED"), "{stdout}");

    // Run 3: contractions 10 % → 40 %: a regression; CI fails.
    configure(d, 3, 0.40);
    let junit = d.join("junit.xml");
    let md = d.join("summary.md");
    let out = probity(
        d,
        &[
            "run",
            "-q",
            "--baseline",
            "polite-assistant",
            "--junit",
            junit.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("REGRESSED"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("name=\"regression: contraction_validator\""));
    assert!(xml.contains("type=\"regression\""));
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("Comparison with baseline run #2"));

    // probity compare 1 3: JSON verdicts and exit code.
    let out = probity(d, &["compare", "1", "3", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let j: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(j["schema"], "probity.compare.v1");
    assert_eq!(j["regressed"], true);
    assert_eq!(j["inputs"]["shared"], 20);
    let c = &j["checks"][0];
    assert_eq!(c["name"], "contraction_validator");
    assert_eq!(c["direction"], "regressed");
    assert_eq!(c["basis"], "paired");
    assert!(c["upper"].as_f64().unwrap() < 0.0);
    assert!(c["paired"]["n"].as_u64().unwrap() == 20);
    assert!(c["mde"].as_f64().unwrap() > 0.0);
    assert_eq!(j["checks"][1]["direction"], "no_detectable_change");

    // probity compare 1 2 (text): no detectable change, exit 0.
    let out = probity(d, &["compare", "1", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("no detectable change"));

    // The history and the trend.
    let out = probity(d, &["runs"]);
    assert!(text(&out.stdout).contains("sim seed 3"));
    let out = probity(d, &["report", "--trend", "polite-assistant"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.contains("sim seed"))
            .count(),
        3
    );
    let html = d.join("trend.html");
    let out = probity(
        d,
        &[
            "report",
            "--trend",
            "polite-assistant",
            "--format",
            "html",
            "-o",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("<svg class=\"trend\""));

    // Bad usage.
    assert_eq!(probity(d, &["compare", "1", "99"]).status.code(), Some(2));
    assert_eq!(
        probity(d, &["compare", "1", "2", "--power", "2"])
            .status
            .code(),
        Some(2)
    );
}

/// Two runs that share no check by name: nothing was compared, which is
/// not "no change" — exit 3 (README, exit codes), with every output still
/// written (the JSON on stdout or in a file, the Markdown beside it).
#[test]
fn runs_with_no_check_in_common_exit_3_with_their_outputs_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    configure(d, 1, 0.10);
    assert_eq!(probity(d, &["run", "-q"]).status.code(), Some(0));
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    let renamed = cfg
        .replace("contraction_validator", "contractions_v2")
        .replace("politeness_validator", "politeness_v2");
    std::fs::write(d.join("renamed.toml"), renamed).unwrap();
    assert_eq!(
        probity(d, &["run", "renamed.toml", "-q"]).status.code(),
        Some(0)
    );

    let out = probity(d, &["compare", "1", "2"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "NO CHECKS IN COMMON: runs 1 and 2 share no check by name; nothing was compared"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("only in the candidate (not compared): contractions_v2, politeness_v2"));

    let json = d.join("cmp.json");
    let md = d.join("cmp.md");
    let out = probity(
        d,
        &[
            "compare",
            "1",
            "2",
            "--format",
            "json",
            "-o",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["schema"], "probity.compare.v1");
    assert_eq!(j["checks"], serde_json::json!([]));
    assert_eq!(j["regressed"], false);
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("NO CHECKS IN COMMON"));
}

/// `--baseline` with an id no run has is refused before any call (exit 2):
/// before, the whole run was made and stored, then no report was written.
#[test]
fn a_baseline_id_that_names_no_run_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(probity(dir.path(), &["init"]).status.code(), Some(0));
    let out = probity(
        dir.path(),
        &["run", "-q", "--baseline", "999", "--junit", "junit.xml"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--baseline 999") && err.contains("no run 999"),
        "{err}"
    );
    let runs = probity(dir.path(), &["runs", "--json"]);
    assert!(text(&runs.stdout).trim().is_empty(), "a run was made");
}
