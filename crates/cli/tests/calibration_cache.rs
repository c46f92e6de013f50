//! A calibrated verifier's labelled set from the command line: `probity
//! run` twice on one store asks the judge about the 200 labelled pairs
//! once, and the second run's report says it reused them; `--fresh-labels`
//! and a changed judge setting ask them all again.

use crate::common;
use crate::labels;

use common::{probity, text};
use std::path::Path;

fn write_config(dir: &Path, false_pass: f64) {
    write_config_at(dir, false_pass, 0.6);
}

/// A calibrated verifier (`noisy`, its judge a simulator that passes a
/// failing output at `false_pass`) with `minimum`, on 10 inputs × 4
/// outputs, and its 200 labelled pairs.
pub(crate) fn write_config_at(dir: &Path, false_pass: f64, minimum: f64) {
    let labels = labels::sim_labels(200, |_, _| {});
    std::fs::write(dir.join("labels.jsonl"), labels).unwrap();
    let inputs: String = (0..10)
        .map(|i| format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    std::fs::write(
        dir.join("probity.toml"),
        format!(
            r#"name = "calibrated"
[system]
provider = "sim"
seed = 11
omit_welcome = 0.3
contractions = 0
[experiment]
outputs_per_input = 4
call_attempts = 1

[[verifier]]
name = "noisy"
instructions = "Say you're welcome."
minimum_success_percentage = {minimum}
calibration = "labels.jsonl"
[verifier.system]
provider = "sim"
seed = 3
false_pass = {false_pass}
false_fail = 0.1
{inputs}"#
        ),
    )
    .unwrap();
}

/// The report's header (its judge calls) and the judge's line.
fn run(dir: &Path) -> (String, String) {
    run_with(dir, &[])
}

fn run_with(dir: &Path, more: &[&str]) -> (String, String) {
    let out = probity(dir, &[&["run", "probity.toml", "--quiet"], more].concat());
    let stdout = text(&out.stdout);
    assert!(out.status.code().is_some(), "{}", text(&out.stderr));
    let line = |needle: &str| {
        stdout
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {stdout}"))
            .trim()
            .to_string()
    };
    (line("to judges"), line("judge on"))
}

#[test]
fn a_second_run_reports_the_labelled_verdicts_it_reused() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 0.3);
    let (head, judge) = run(dir.path());
    // 40 outputs judged, and the 200 labelled pairs.
    assert!(head.contains("(240 to judges"), "{head}");
    assert!(
        judge.starts_with("judge on 200 labelled pairs: sensitivity"),
        "{judge}"
    );
    let (head, again) = run(dir.path());
    assert!(head.contains("(40 to judges"), "{head}");
    assert_eq!(
        again,
        judge.replace(
            "judge on 200 labelled pairs:",
            "judge on 200 labelled pairs (200 reused, 0 asked):"
        )
    );
    // --fresh-labels: every pair asked again, nothing read; the next run
    // reads the fresh answers.
    let (head, fresh) = run_with(dir.path(), &["--fresh-labels"]);
    assert!(head.contains("(240 to judges"), "{head}");
    assert_eq!(fresh, judge);
    let (head, _) = run(dir.path());
    assert!(head.contains("(40 to judges"), "{head}");
    // Another judge setting: another question, every pair asked.
    write_config(dir.path(), 0.25);
    let (head, judge) = run(dir.path());
    assert!(head.contains("(240 to judges"), "{head}");
    assert!(!judge.contains("reused"), "{judge}");
}

/// Before its first output, `probity run` says when a calibrated judge's
/// labels cannot make a pass at the check's minimum reachable (issue 35
/// item 4), with the labels of each kind needed — the same counts the
/// report prints after the run — and says nothing when they can.
#[test]
fn a_run_says_before_its_outputs_when_its_labels_cannot_reach_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    // Se ≈ 0.9, Sp ≈ 0.7 on 100 + 100 labels: the best lower bound is about
    // 92 % (J² u² = (1 − u)² dSe² + u² dSp², Wilson half-widths ≈ 0.05 and
    // 0.09 at 100 labels), under a 99 % minimum, above a 60 % one.
    write_config_at(dir.path(), 0.3, 0.99);
    let out = probity(dir.path(), &["run", "probity.toml", "--quiet"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let before = stderr
        .lines()
        .find(|l| l.contains("labels for a pass at 99%"))
        .unwrap_or_else(|| panic!("no label line before the run: {stderr}"));
    assert!(
        before.starts_with("warning: check noisy: labels for a pass at 99%: reachable at all from"),
        "{before}"
    );
    assert!(
        before.ends_with(
            "(this set: 100 PASS, 100 FAIL): with this set no pass can be established, whatever the outputs"
        ),
        "{before}"
    );
    // The labels needed for reach depend on the labels only: the report
    // after the run says the same counts.
    let reach = |l: &str| {
        let from = l.find("reachable at all from").unwrap();
        let to = l[from..].find(" labels").unwrap();
        l[from..from + to].to_string()
    };
    let after = stdout
        .lines()
        .find(|l| l.contains("labels for a pass at 99%"))
        .unwrap_or_else(|| panic!("no label line in the report: {stdout}"));
    assert_eq!(reach(before), reach(after), "{before}\n{after}");
    // A minimum the set can reach: nothing said before the run.
    write_config_at(dir.path(), 0.3, 0.6);
    let out = probity(dir.path(), &["run", "probity.toml", "--quiet"]);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("labels for a pass"), "{stderr}");
}
