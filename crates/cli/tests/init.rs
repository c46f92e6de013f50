//! `probity init --provider …`: every example is written, refuses to
//! overwrite, and runs: the sim and command examples end to end with no
//! network (a verdict: exit 0 or 1), the http one against `probity sim
//! serve`, and the keyed ones fail cleanly (exit 2, naming the variable)
//! when their key variable is unset.

use crate::common;

use common::{sim_serve, text};
use std::path::Path;
use std::process::{Command, Output};

const KEY_VARS: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HTTP_API_KEY"];

/// `probity ARGS` run from `cwd`, with the store in `store` and no key
/// variable set.
fn probity(cwd: &Path, store: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probity"));
    c.current_dir(cwd)
        .args(args)
        .env("PROBITY_STORE", store)
        .env("NO_COLOR", "1");
    for v in KEY_VARS {
        c.env_remove(v);
    }
    c.output().expect("run probity")
}

fn init(root: &Path, provider: &str) -> std::path::PathBuf {
    let dir = root.join(provider);
    let out = probity(
        root,
        &root.join("runs.db"),
        &["init", dir.to_str().unwrap(), "--provider", provider],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.join("probity.toml").is_file());
    assert!(dir.join("inputs.jsonl").is_file());
    dir
}

/// A verdict, never a configuration error (2) or an incomplete run (3).
fn assert_verdict(out: &Output, what: &str) {
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn default_is_the_sim_example_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let out = probity(tmp.path(), &tmp.path().join("runs.db"), &["init", "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(tmp.path().join("demo/probity.toml")).unwrap();
    assert_eq!(written, probity_engine::config::example::CONFIG);
    assert!(!tmp.path().join("demo/system.py").exists());
}

#[test]
fn sim_example_runs_from_another_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = init(tmp.path(), "sim");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let config = dir.join("probity.toml");
    let out = probity(
        &elsewhere,
        &tmp.path().join("runs.db"),
        &["run", config.to_str().unwrap(), "--outputs", "3"],
    );
    assert_verdict(&out, "sim example");
}

#[test]
fn command_example_runs_end_to_end_from_another_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = init(tmp.path(), "command");
    let script = dir.join("system.py");
    assert!(script.is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "system.py is executable: {mode:o}");
    }
    // Run from a directory that is not the config's: `system.py` and the
    // inputs resolve against the config file's directory.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let config = dir.join("probity.toml");
    let out = probity(
        &elsewhere,
        &tmp.path().join("runs.db"),
        &["run", config.to_str().unwrap(), "--outputs", "2"],
    );
    assert_verdict(&out, "command example");
    // Every call produced an output: no Error cell anywhere in the report.
    let report = probity(
        &elsewhere,
        &tmp.path().join("runs.db"),
        &["report", "1", "--format", "json"],
    );
    assert_verdict(&report, "report of the command example");
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_no_errors(&json);
}

/// Every `"error"` count in a JSON report is 0.
fn assert_no_errors(v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == "error" {
                    if let Some(n) = x.as_u64() {
                        assert_eq!(n, 0, "an error cell: {m:?}");
                    }
                }
                assert_no_errors(x);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(assert_no_errors),
        _ => {}
    }
}

#[test]
fn keyed_examples_fail_cleanly_without_their_key() {
    let tmp = tempfile::tempdir().unwrap();
    for (provider, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("http", "HTTP_API_KEY"),
    ] {
        let dir = init(tmp.path(), provider);
        let config = dir.join("probity.toml");
        let out = probity(
            tmp.path(),
            &tmp.path().join("runs.db"),
            &["run", config.to_str().unwrap()],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{provider}: {stderr}");
        assert!(stderr.contains(var), "{provider}: {stderr}");
        assert!(!stderr.contains("panicked"), "{provider}: {stderr}");
    }
}

#[test]
fn http_example_runs_against_sim_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = init(tmp.path(), "http");
    let server = sim_serve(&[]);
    let url = format!("http://{}/v1", server.1);
    let config = dir.join("probity.toml");
    let text_in = std::fs::read_to_string(&config).unwrap();
    let pointed = text_in.replace("http://127.0.0.1:8089/v1", &url);
    assert_ne!(pointed, text_in, "the example aims at 127.0.0.1:8089");
    std::fs::write(&config, pointed).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_probity"))
        .current_dir(tmp.path())
        .args(["run", config.to_str().unwrap(), "--outputs", "2"])
        .env("PROBITY_STORE", tmp.path().join("runs.db"))
        .env("NO_COLOR", "1")
        .env("HTTP_API_KEY", "anything")
        .output()
        .unwrap();
    assert_verdict(&out, "http example against sim serve");
}

#[test]
fn init_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = init(tmp.path(), "command");
    std::fs::write(dir.join("system.py"), "mine").unwrap();
    std::fs::remove_file(dir.join("probity.toml")).unwrap();
    std::fs::remove_file(dir.join("inputs.jsonl")).unwrap();
    let out = probity(
        tmp.path(),
        &tmp.path().join("runs.db"),
        &["init", dir.to_str().unwrap(), "--provider", "command"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("system.py"),
        "{}",
        text(&out.stderr)
    );
    // Nothing was written: the check comes before any write.
    assert_eq!(
        std::fs::read_to_string(dir.join("system.py")).unwrap(),
        "mine"
    );
    assert!(!dir.join("probity.toml").exists());
    let out = probity(
        tmp.path(),
        &tmp.path().join("runs.db"),
        &[
            "init",
            dir.to_str().unwrap(),
            "--provider",
            "command",
            "--force",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_ne!(
        std::fs::read_to_string(dir.join("system.py")).unwrap(),
        "mine"
    );
}

#[test]
fn unknown_provider_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = probity(
        tmp.path(),
        &tmp.path().join("runs.db"),
        &["init", "x", "--provider", "nope"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
