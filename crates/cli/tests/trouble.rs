//! A bad day, as a user meets it: a wrong key, an unreachable server, a
//! command that fails, a broken check, nothing to resume, a server that
//! cannot start. Each time `probity` names the cause, exits with a code
//! that is not a verdict (2: fix the configuration; 3: the run could not be
//! measured), and never prints a verdict about the model.

use crate::common;

use common::{json_runs, probity, probity_cmd, requests, sim_serve, text};
use std::path::Path;
use std::process::Output;

const CHECKS: &str = r#"
[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.95
"#;

/// A configuration of 20 inputs × 20 outputs with `system` as its
/// `[system]` table and `extra` appended (more checks, settings).
fn write_config(dir: &Path, system: &str, extra: &str) {
    let inputs: String = (0..20)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    let cfg = format!(
        "name = \"trouble\"\n[system]\n{system}\n[experiment]\noutputs_per_input = 20\n{extra}\n{CHECKS}\n{inputs}"
    );
    std::fs::write(dir.join("probity.toml"), cfg).unwrap();
}

/// `probity run` in `dir` with `OPENAI_KEY_FOR_TEST` set to `key`.
fn run_with_key(dir: &Path, key: &str) -> Output {
    probity_cmd()
        .current_dir(dir)
        .args(["run", "--quiet"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env("OPENAI_KEY_FOR_TEST", key)
        .output()
        .unwrap()
}

/// No verdict reached stdout: no PASS/FAIL line of a check.
fn assert_no_verdict(out: &Output) {
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("FAIL") && !stdout.contains("PASS"),
        "a verdict was printed:\n{stdout}"
    );
}

#[test]
fn a_wrong_key_stops_the_run_with_its_cause_not_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sim.toml"),
        "[faults]\nrequire_key = \"sk-right\"\n",
    )
    .unwrap();
    let server = sim_serve(&["--config", dir.path().join("sim.toml").to_str().unwrap()]);
    let system = format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"http://{}/v1\"\napi_key_env = \"OPENAI_KEY_FOR_TEST\"",
        server.1
    );
    write_config(dir.path(), &system, "");

    let out = run_with_key(dir.path(), "sk-wrong");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(
        err.contains("the first 10 calls to the system all failed with the same cause"),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    assert!(!err.contains("sk-wrong"), "the key leaked: {err}");
    assert_no_verdict(&out);
    // It stopped early instead of spending 400 calls on a wrong key.
    let seen = requests(&server.1);
    assert!(seen < 100, "{seen} requests");
    // CI asked for JUnit and JSON still gets them: no verdict, errors.
    let out = probity_cmd()
        .current_dir(dir.path())
        .args(["run", "--quiet", "--format", "json", "--junit", "junit.xml"])
        .env("PROBITY_STORE", dir.path().join("runs.db"))
        .env("OPENAI_KEY_FOR_TEST", "sk-wrong")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(json["run"]["complete"], false, "{json}");
    assert_eq!(
        json["summary"]["conclusion"],
        "NO VERDICT: no output was judged (run incomplete)"
    );
    assert_eq!(json["checks"][0]["verdict"]["decision"], "inconclusive");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("<error") && junit.contains("no-data"),
        "{junit}"
    );
    assert!(!junit.contains("sk-wrong"));
    // Its stored report gives no verdict either, and --check exits 3
    // (not measured), not 1 (a failing system).
    let out = probity(dir.path(), &["report", "1", "--check"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!text(&out.stdout).contains("sk-wrong"));
    let runs = text(&probity(dir.path(), &["runs"]).stdout);
    assert!(
        runs.lines()
            .any(|l| l.trim_start().starts_with("1 ") && l.ends_with("no verdict")),
        "{runs}"
    );
    let report = text(&out.stdout);
    assert!(
        report.contains("NO VERDICT: no output was judged"),
        "{report}"
    );
    assert!(!report.contains("FAIL"), "{report}");

    // With the right key the same configuration gives a verdict.
    let out = run_with_key(dir.path(), "sk-right");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    // Compared with the run that judged nothing: no comparison, not "no
    // detectable change", and exit 3.
    let right = json_runs(dir.path())[0]["id"].to_string();
    let out = probity(dir.path(), &["compare", "1", &right]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let page = text(&out.stdout);
    assert!(
        page.contains(
            "NO COMPARISON: no check has judged outputs in both runs (run 1 (incomplete)"
        ),
        "{page}"
    );
    assert!(!page.contains("NO DETECTABLE CHANGE"), "{page}");
}

#[test]
fn an_unreachable_server_stops_the_run_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1.
    write_config(
        dir.path(),
        "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"",
        "call_attempts = 2",
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("transport error"), "{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(err.contains("nothing was measured"), "{err}");
    assert_no_verdict(&out);
}

#[test]
fn a_command_that_fails_shows_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        r#"provider = "command"
command = ["sh", "-c", "echo 'Traceback: ModuleNotFoundError: No module named app' >&2; exit 3"]"#,
        "",
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("No module named app"), "{err}");
    assert!(err.contains("exit"), "{err}");
    assert_no_verdict(&out);
}

#[test]
fn too_many_failed_calls_spend_the_error_budget_and_give_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    // 30% of calls fail, on every retry (sticky, as a system that is down
    // for those inputs): far more than the default budget of 5%.
    write_config(
        dir.path(),
        "provider = \"sim\"\nerror_rate = 0.3\nsticky_errors = true",
        "",
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("error budget of 5% of 400 samples"), "{err}");
    assert!(err.contains("errors:"), "{err}");
    assert_no_verdict(&out);
    // Counted as failures by choice, with no budget: a verdict.
    write_config(
        dir.path(),
        "provider = \"sim\"\nerror_rate = 0.3\nsticky_errors = true",
        "errors = \"as-failure\"\nerror_budget = 1.0",
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn a_check_reading_a_field_no_input_has_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        "provider = \"sim\"",
        r#"
[[validator]]
name = "right_category"
check = '''input.category == "billing"'''
"#,
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("right_category") && err.contains("`category`") && err.contains("text"),
        "{err}"
    );
    // Refused before anything was called or stored.
    assert!(!dir.path().join("runs.db").exists());
}

#[test]
fn a_check_that_errs_on_every_output_is_broken_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        "provider = \"sim\"",
        r#"
[[validator]]
name = "length_check"
check = '''lenght(output) > 0'''
"#,
    );
    let out = probity(dir.path(), &["run", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("erred on every one of the first 10 outputs")
            && err.contains("broken")
            && err.contains("`length_check`"),
        "{err}"
    );
    assert!(err.contains("lenght"), "{err}");
    assert_no_verdict(&out);
    // The stored run's --check exits as the run did: 2, fix the check.
    let out = probity(dir.path(), &["report", "1", "--check"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
}

/// Samples stored in the store at `dir/runs.db`.
fn stored_samples(dir: &Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join("runs.db")).unwrap();
    db.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
        .unwrap()
}

/// Issue 24, item 2: a check that runs into its time limit on every output
/// (each evaluation takes a second) stops the run after the first outputs,
/// not after all 400 of them, and with three such checks after the same
/// few outputs.
#[test]
fn a_check_that_times_out_on_its_first_outputs_stops_the_run_early() {
    const SLOW: &str = "let a = []; for i in 0..50000 { a = [a]; } true";
    for k in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        let checks: String = (0..k)
            .map(|x| format!("[[validator]]\nname = \"slow_{x}\"\ncheck = '''{SLOW}'''\n"))
            .collect();
        write_config(dir.path(), "provider = \"sim\"", &checks);
        let out = probity(dir.path(), &["run", "--quiet"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        for x in 0..k {
            assert!(err.contains(&format!("`slow_{x}`")), "{err}");
        }
        assert!(
            err.contains("time limit") && err.contains("broken"),
            "{err}"
        );
        assert_no_verdict(&out);
        // The first 10 outputs are kept; outputs whose checks had not run
        // when the run stopped are not waited for (nor stored).
        assert_eq!(stored_samples(dir.path()), 10, "{k} checks: {err}");
        let runs = common::json_runs(dir.path());
        assert_eq!(runs[0]["status"], "interrupted");
        assert!(runs[0]["model_calls"].as_u64().unwrap() <= 10 + 16);
    }
}

#[test]
fn resume_with_nothing_to_resume_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "provider = \"sim\"", "");
    let out = probity(dir.path(), &["run", "--quiet", "--resume"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to resume"), "{err}");
    // A run that completed is not resumable either; an interrupted one is
    // named when resumed (see resume.rs).
    assert!(matches!(
        probity(dir.path(), &["run", "--quiet"]).status.code(),
        Some(0 | 1)
    ));
    let out = probity(dir.path(), &["run", "--quiet", "--resume"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn serve_checks_its_configuration_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("guard.toml"),
        format!(
            "[upstream]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"PROBITY_TEST_UNSET_KEY\"\n{CHECKS}"
        ),
    )
    .unwrap();
    let out = probity_cmd()
        .current_dir(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("PROBITY_STORE", dir.path().join("runs.db"))
        .env_remove("PROBITY_TEST_UNSET_KEY")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("PROBITY_TEST_UNSET_KEY"), "{err}");
    assert!(!text(&out.stdout).contains("listening"));
}

#[test]
fn a_changed_system_behind_the_same_config_is_sampled_afresh() {
    let dir = tempfile::tempdir().unwrap();
    // The system answers with whatever answer.txt holds (the command runs
    // in the configuration's directory).
    write_config(
        dir.path(),
        r#"provider = "command"
command = ["sh", "-c", "cat answer.txt"]"#,
        "",
    );
    std::fs::write(dir.path().join("answer.txt"), "I am glad to help.").unwrap();
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Same configuration, changed system: the new run calls it again and
    // sees the change.
    std::fs::write(
        dir.path().join("answer.txt"),
        "I can't, I won't, I don't, it isn't.",
    )
    .unwrap();
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("every sample called afresh"));
}

#[test]
fn no_output_replaces_the_store_the_configuration_or_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    let store = d.join("runs.db");
    std::fs::create_dir(d.join("sub")).unwrap();
    let before = std::fs::read(&store).unwrap();
    for args in [
        &["report", "1", "-o", "runs.db"][..],
        &["report", "1", "--junit", "./sub/../runs.db"],
        &["compare", "1", "1", "--markdown", "runs.db-wal"],
        &["export", "1", "--out", "runs.db"],
        // Refused before any call: no second run is made.
        &["run", "--quiet", "--junit", "runs.db"],
        &["run", "--quiet", "-o", "probity.toml"],
        &["run", "--quiet", "--markdown", "inputs.jsonl"],
    ] {
        let out = probity(d, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("writing there would destroy it"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read(&store).unwrap(), before);
    assert!(std::fs::read_to_string(d.join("probity.toml"))
        .unwrap()
        .contains("[[validator]]"));
    assert_eq!(json_runs(d).len(), 1);
}

/// Standard error closed by its reader (`probity … 2>&1 | head`, a log
/// collector gone): the lines for a person are dropped, the command does
/// its work and keeps its exit code (a panic was 101).
#[test]
fn a_closed_standard_error_drops_lines_never_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // every write now fails: a broken pipe
        writer
    };
    let init = probity_cmd()
        .current_dir(dir.path())
        .args(["init", "demo"])
        .stderr(closed())
        .output()
        .unwrap();
    assert_eq!(init.status.code(), Some(0));
    assert!(dir.path().join("demo/probity.toml").is_file());
    let run = probity_cmd()
        .current_dir(dir.path())
        .args(["run", "demo/probity.toml", "--outputs", "5"])
        .env("PROBITY_STORE", dir.path().join("runs.db"))
        .stderr(closed())
        .output()
        .unwrap();
    // The verdict is the demo's (exit 0 or 1), its report on stdout.
    assert!(matches!(run.status.code(), Some(0 | 1)), "{:?}", run.status);
    assert!(text(&run.stdout).contains("contraction_validator"));
    // An error goes to standard error too: its exit code is kept.
    let missing = probity_cmd()
        .current_dir(dir.path())
        .args(["run", "nothing-here.toml"])
        .stderr(closed())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

/// `probity run` in `dir` on a slowed simulator, asked for JUnit and
/// Markdown reports, returned once `stored` samples are in its store.
fn slow_run_with_reports(dir: &Path, stored: i64) -> std::process::Child {
    write_config(dir, "provider = \"sim\"\nlatency_ms = 20", "");
    let child = probity_cmd()
        .current_dir(dir)
        .args(["run", "-q", "--concurrency", "2"])
        .args(["--junit", "junit.xml", "--markdown", "summary.md"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The store may not hold its tables yet.
    let stored_so_far = || {
        rusqlite::Connection::open(dir.join("runs.db"))
            .and_then(|db| db.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)))
            .unwrap_or(0i64)
    };
    while stored_so_far() < stored {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// SIGTERM (a CI job cancelled, `timeout` run out) stops a run as Ctrl-C
/// does: what is stored is kept, the reports are written, the run is
/// listed interrupted (exit 3, no verdict), and `--resume` finishes it.
#[test]
fn sigterm_stops_a_run_keeps_its_samples_and_writes_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let child = slow_run_with_reports(dir.path(), 20);
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("interrupted: stopping"), "{err}");
    assert!(err.contains("--resume"), "{err}");
    for report in ["junit.xml", "summary.md"] {
        let written = std::fs::read_to_string(dir.path().join(report)).unwrap();
        assert!(written.contains("contraction_validator"), "{report}");
    }
    let stored = stored_samples(dir.path());
    assert!((20..400).contains(&stored), "{stored}");
    assert_eq!(common::json_runs(dir.path())[0]["status"], "interrupted");
    let resumed = probity(dir.path(), &["run", "-q", "--resume"]);
    assert!(
        matches!(resumed.status.code(), Some(0 | 1)),
        "{}",
        text(&resumed.stderr)
    );
    assert_eq!(stored_samples(dir.path()), 400);
}

/// The store failing for good mid-run (here its samples table dropped by
/// another hand): the run stops with the store's own error, says that the
/// reports asked for were not written and why, and exits 3, no verdict.
#[test]
fn a_store_that_fails_mid_run_is_named_with_what_became_of_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let child = slow_run_with_reports(dir.path(), 10);
    let c = rusqlite::Connection::open(dir.path().join("runs.db")).unwrap();
    c.execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE samples;")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no such table: samples"), "{err}");
    assert!(
        err.contains("no report was written (junit.xml, summary.md)"),
        "{err}"
    );
    assert!(!err.contains("see the error it reported"), "{err}");
    assert_no_verdict(&out);
}
