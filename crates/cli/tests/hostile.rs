//! The adversarial pass's reproducers, as a user meets them: a hostile
//! number in a configuration, a malformed dataset, a check over its
//! limits. Each is exit code 2 with a message naming the file and the
//! field (or line), or an Error cell with its reason: never a panic, an
//! abort or a hang.

use crate::common;

use common::{probity, text};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

const CHECK: &str = "[[validator]]\nname = \"short\"\ncheck = 'output.len() < 10000'\n";

fn write(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).unwrap();
}

/// A sim-system configuration with `experiment` in its `[experiment]`
/// table, `checks` as its checks and `inputs` appended.
fn config(experiment: &str, checks: &str, inputs: &str) -> String {
    format!(
        "name = \"hostile\"\n[system]\nprovider = \"sim\"\nseed = 1\n[experiment]\n{experiment}\n{checks}\n{inputs}"
    )
}

const ONE_INPUT: &str = "[[input]]\nid = \"a\"\ntext = \"hi\"\n";

fn run(dir: &Path) -> Output {
    probity(dir, &["run", "--quiet"])
}

/// Exit 2, and stderr names the configuration file and every `needles`.
fn assert_config_error(out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("probity.toml"), "no file named: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn huge_durations_are_refused_naming_the_field() {
    for (line, field) in [
        ("timeout_s = 1e308", "timeout_s"),
        ("deadline_s = 1e308", "deadline_s"),
        ("deadline_s = 9223372036854775807", "deadline_s"),
        ("deadline_s = -1", "deadline_s"),
        (
            "outputs_per_input = 2\n[retry]\nattempts = 2\ndeadline_s = 1e308",
            "deadline_s",
        ),
        (
            "outputs_per_input = 2\n[retry]\nattempts = 2\nattempt_timeout_s = 9223372036854775807",
            "attempt_timeout_s",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "probity.toml", &config(line, CHECK, ONE_INPUT));
        let out = run(dir.path());
        assert_config_error(&out, &[field]);
    }
}

#[test]
fn a_huge_outputs_per_input_is_refused_before_any_allocation() {
    for m in ["4294967295", "18446744073709551615", "2000000"] {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "probity.toml",
            &config(&format!("outputs_per_input = {m}"), CHECK, ONE_INPUT),
        );
        let t = Instant::now();
        let out = run(dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("outputs_per_input"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
}

#[test]
fn too_many_samples_are_refused() {
    // 20,000 inputs × 1,000 outputs = 2e7 samples: over the bound.
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..20_000)
        .map(|i| format!("{{\"text\": \"q{i}\"}}\n"))
        .collect();
    write(dir.path(), "in.jsonl", &rows);
    write(
        dir.path(),
        "probity.toml",
        &config("inputs = \"in.jsonl\"\noutputs_per_input = 1000", CHECK, ""),
    );
    assert_config_error(&run(dir.path()), &["samples"]);
}

#[test]
fn a_csv_with_an_unclosed_quote_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.csv",
        "id,text\na,hello\nb,\"unclosed\nc,world\nd,again\n",
    );
    write(
        dir.path(),
        "probity.toml",
        &config("inputs = \"in.csv\"\noutputs_per_input = 1", CHECK, ""),
    );
    let out = run(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in.csv:3"), "{err}");
    assert!(err.contains("never closed"), "{err}");
}

#[test]
fn a_csv_with_quoted_newlines_and_escaped_quotes_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.csv",
        "\u{feff}id,text\na,\"two\nlines\"\nb,\"say \"\"hi\"\"\"\nc,5\" tall\n",
    );
    write(
        dir.path(),
        "probity.toml",
        &config("inputs = \"in.csv\"\noutputs_per_input = 1", CHECK, ""),
    );
    let out = run(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn byte_order_marks_are_accepted_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "in.jsonl",
        "\u{feff}{\"text\": \"a\"}\n{\"text\": \"b\"}\n",
    );
    write(
        dir.path(),
        "probity.toml",
        &format!(
            "\u{feff}{}",
            config("inputs = \"in.jsonl\"\noutputs_per_input = 1", CHECK, "")
        ),
    );
    let out = run(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn malformed_jsonl_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.jsonl", "{\"text\": \"a\"}\n{\"text\": \n");
    write(
        dir.path(),
        "probity.toml",
        &config("inputs = \"in.jsonl\"\noutputs_per_input = 1", CHECK, ""),
    );
    let out = run(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in.jsonl:2"), "{err}");
}

/// A run whose check is `check`; stderr and the time it took.
fn run_check(check: &str, experiment: &str) -> (Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let checks = format!("[[validator]]\nname = \"hostile_check\"\ncheck = '''{check}'''\n");
    let inputs: String = (0..3)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"t{i}\"\n"))
        .collect();
    write(
        dir.path(),
        "probity.toml",
        &config(
            &format!("outputs_per_input = 2\n{experiment}"),
            &checks,
            &inputs,
        ),
    );
    let t = Instant::now();
    let out = run(dir.path());
    (out, t.elapsed())
}

#[test]
fn sleep_in_a_check_is_an_error_cell_and_does_not_outlive_the_deadline() {
    let (out, took) = run_check("sleep(20); true", "deadline_s = 2");
    let err = text(&out.stderr);
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hostile_check") && err.contains("sleep"),
        "{err}"
    );
}

#[test]
fn deeply_nested_arrays_in_a_check_are_an_error_cell_not_an_abort() {
    let (out, took) = run_check("let a = []; for i in 0..50000 { a = [a]; } true", "");
    let err = text(&out.stderr);
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("hostile_check"), "{err}");
    assert!(
        err.contains("time limit") || err.contains("operations"),
        "{err}"
    );
}

#[test]
fn template_work_is_capped() {
    for (prompt, needle) in [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            "fuel",
        ),
        ("{{ \"a\" * 100000000 }}", "MiB"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config("outputs_per_input = 1", CHECK, ONE_INPUT).replace(
            "[experiment]",
            &format!("[prompt]\nuser = '''{prompt}'''\n[experiment]"),
        );
        write(dir.path(), "probity.toml", &cfg);
        let t = Instant::now();
        let out = run(dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("prompt") && err.contains(needle), "{err}");
        assert!(t.elapsed() < Duration::from_secs(30));
    }
}

#[test]
fn five_thousand_checks_run_in_linear_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let checks: String = (0..5002)
        .map(|k| format!("[[validator]]\nname = \"v{k}\"\ncheck = 'output.len() < 100000'\n"))
        .collect();
    write(
        dir.path(),
        "probity.toml",
        &config("outputs_per_input = 20", &checks, ONE_INPUT),
    );
    let t = Instant::now();
    let out = run(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
}
