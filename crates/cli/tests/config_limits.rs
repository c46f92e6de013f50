//! Configurations whose trouble is their size or their pace, met before
//! any call: a dotted key nested too deep (named with its line, in every
//! configuration file), command-line overrides applied before the size
//! checks, and rate limits that make a run long or impossible.

use crate::common;

use common::{probity, probity_cmd, text};
use std::path::Path;
use std::process::Output;

const CHECK: &str = "[[validator]]\nname = \"short\"\ncheck = 'output.len() < 10000'\n";
const ONE_INPUT: &str = "[[input]]\nid = \"a\"\ntext = \"hi\"\n";

fn write(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).unwrap();
}

/// A sim-system configuration with `experiment` in its `[experiment]`
/// table, `checks` as its checks and `rest` appended.
fn config(experiment: &str, checks: &str, rest: &str) -> String {
    format!(
        "name = \"limits\"\n[system]\nprovider = \"sim\"\nseed = 1\n[experiment]\n{experiment}\n{checks}\n{rest}"
    )
}

/// Exit 2 with no panic; stderr names `file` and every one of `needles`.
fn assert_usage_error(out: &Output, file: &str, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(file), "no file named: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// `[a.a.a…]`, `depth` keys deep.
fn deep_header(depth: usize) -> String {
    format!("[{}]\nx = 1\n", vec!["a"; depth].join("."))
}

#[test]
fn a_too_deep_dotted_header_names_file_line_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // Lines 1–11 are the configuration; the header is line 12.
    let body = config("", CHECK, &format!("{ONE_INPUT}\n{}", deep_header(100)));
    let line = body.lines().position(|l| l.starts_with("[a.a")).unwrap() + 1;
    write(dir.path(), "probity.toml", &body);
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(
        &out,
        "probity.toml",
        &[&format!("line {line}"), "nested 100 deep", "at most 80"],
    );
}

#[test]
fn a_too_deep_dotted_key_in_a_serve_config_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.toml");
    let key = vec!["k"; 90].join(".");
    std::fs::write(
        &path,
        format!("name = \"g\"\n[upstream]\nprovider = \"sim\"\n{key} = 1\n{CHECK}"),
    )
    .unwrap();
    let out = probity_cmd()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--store")
        .arg(dir.path().join("runs.db"))
        .output()
        .unwrap();
    assert_usage_error(&out, "guard.toml", &["line 4", "nested 90 deep"]);
}

#[test]
fn a_too_deep_dotted_header_in_a_sim_serve_config_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.toml");
    std::fs::write(&path, format!("[model]\nseed = 1\n{}", deep_header(81))).unwrap();
    let out = probity_cmd()
        .args(["sim", "serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_usage_error(&out, "sim.toml", &["line 3", "nested 81 deep"]);
}

#[test]
fn outputs_flag_applies_before_the_sample_count_bound() {
    // 10,001 inputs × 1,000 outputs is over the 10,000,000-sample bound;
    // with --outputs 1 it is 10,001 samples.
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..10_001)
        .map(|i| format!("{{\"text\": \"q{i}\"}}\n"))
        .collect();
    write(dir.path(), "in.jsonl", &rows);
    write(
        dir.path(),
        "probity.toml",
        &config("inputs = \"in.jsonl\"\noutputs_per_input = 1000", CHECK, ""),
    );
    let refused = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(&refused, "probity.toml", &["samples"]);

    let out = probity(
        dir.path(),
        &["run", "--quiet", "--outputs", "1", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["shape"]["outputs_per_input"], 1, "{report}");
    assert_eq!(report["shape"]["inputs"], 10_001, "{report}");
}

#[test]
fn outputs_flag_applies_before_the_outputs_per_input_bound() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &config("outputs_per_input = 2000000", CHECK, ONE_INPUT),
    );
    let refused = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(&refused, "probity.toml", &["outputs_per_input"]);
    let out = probity(dir.path(), &["run", "--quiet", "--outputs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // And the other way: a flag over the bound is refused, named as the
    // flag (the file is not at fault).
    let over = probity(dir.path(), &["run", "--quiet", "--outputs", "2000001"]);
    assert_usage_error(
        &over,
        "--outputs",
        &["must be from 1 to 1,000,000, not 2000001"],
    );
}

/// 20 inputs × 20 outputs: 400 samples, one call each.
fn paced(limits: &str) -> String {
    let inputs: String = (0..20)
        .map(|i| format!("[[input]]\ntext = \"question number {i}, please\"\n"))
        .collect();
    config(&format!("outputs_per_input = 20\n{limits}"), CHECK, &inputs)
}

#[test]
fn an_absurd_request_rate_is_a_configuration_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("requests_per_minute = 1e-7"),
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(
        &out,
        "probity.toml",
        &["requests_per_minute", "400 calls", "more than 10 years"],
    );
    assert!(!dir.path().join("runs.db").exists() || common::json_runs(dir.path()).is_empty());
}

/// A rate of 1e-300 is written as 1e-300 in the message, not as three
/// hundred digits.
#[test]
fn an_absurd_rate_is_written_as_a_number_not_hundreds_of_digits() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("requests_per_minute = 1e-300"),
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(
        &out,
        "probity.toml",
        &[
            "requests_per_minute = 1e-300 would make",
            "at requests_per_minute = 1e-300 take",
        ],
    );
    let err = text(&out.stderr);
    assert!(err.len() < 400 && !err.contains("00000000"), "{err}");
}

#[test]
fn an_absurd_token_rate_is_a_configuration_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("tokens_per_minute = 1e-6"),
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(
        &out,
        "probity.toml",
        &["tokens_per_minute", "prompt tokens", "more than 10 years"],
    );
}

#[test]
fn a_deadline_the_rate_cannot_meet_is_refused_naming_both_keys() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("requests_per_minute = 1.5\ndeadline_s = 600"),
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_usage_error(
        &out,
        "probity.toml",
        &[
            "deadline_s = 600",
            "requests_per_minute = 1.5",
            "400 calls",
            "4 h 25 min",
        ],
    );
    // The figure is for what the run will take: with --outputs 1, 20
    // calls at 1.5 a minute, 12 min 20 s — still past 10 minutes.
    let out = probity(dir.path(), &["run", "--quiet", "--outputs", "1"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("20 calls") && err.contains("12 min 20 s"),
        "{err}"
    );
}

#[test]
fn a_long_run_says_how_long_before_it_starts() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("requests_per_minute = 1.5"),
    );
    let mut child = probity_cmd()
        .current_dir(dir.path())
        .args(["run", "--quiet"])
        .env("PROBITY_STORE", dir.path().join("runs.db"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        line.trim_end(),
        "rate limits: 400 calls at requests_per_minute = 1.5 take at least 4 h 25 min"
    );
}

#[test]
fn a_rate_that_keeps_up_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "probity.toml",
        &paced("requests_per_minute = 500\ndeadline_s = 60"),
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("rate limits"), "{err}");
}
