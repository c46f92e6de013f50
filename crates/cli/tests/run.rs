//! `probity run` end to end on the built-in simulator, as a user runs it.

use crate::common;

use common::{json_runs, probity, text};
use serde_json::Value;

#[test]
fn init_then_run_reports_the_papers_validators_and_exits_on_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = probity(dir.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // init refuses to overwrite.
    let again = probity(dir.path(), &["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("exists"),
        "{}",
        text(&again.stderr)
    );
    common::pin_seed(dir.path(), 42);

    let out = probity(dir.path(), &["run", "--format", "json", "--quiet"]);
    let stdout = text(&out.stdout);
    // contraction_validator fails its 95% minimum on the simulator (true rate 90%).
    assert_eq!(
        out.status.code(),
        Some(1),
        "stderr: {}\nstdout: {stdout}",
        text(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).expect("JSON report");
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0]["name"], "contraction_validator");
    assert_eq!(checks[0]["verdict"]["decision"], "fail");
    assert_eq!(checks[1]["name"], "politeness_validator");
    let rate = &checks[0]["rate"];
    assert_eq!(rate["n"], 400);
    let (lo, hi) = (
        rate["lower"].as_f64().unwrap(),
        rate["upper"].as_f64().unwrap(),
    );
    assert!(
        lo < 0.90 && 0.90 < hi,
        "interval [{lo}, {hi}] should cover the simulator's true 0.90"
    );

    // The text report of the stored run renders (exit 0); with --check it
    // gives the same verdict.
    let out = probity(dir.path(), &["report", "polite-assistant"]);
    assert_eq!(out.status.code(), Some(0));
    let t = text(&out.stdout);
    assert!(
        t.contains("contraction_validator") && t.contains("politeness_validator"),
        "{t}"
    );
    let out = probity(dir.path(), &["report", "polite-assistant", "--check"]);
    assert_eq!(out.status.code(), Some(1));

    // A second run of the same config samples afresh: 400 calls, none reused.
    let out = probity(dir.path(), &["run", "--quiet", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let runs = json_runs(dir.path());
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["model_calls"], 400, "{:?}", runs[0]);
    assert_eq!(runs[0]["cached"], 0);
    // Told to reuse run 1, a third makes no model call and says so.
    let out = probity(
        dir.path(),
        &["run", "--quiet", "--format", "json", "--reuse", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
    let runs = json_runs(dir.path());
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["model_calls"], 0, "{:?}", runs[0]);
    assert_eq!(runs[0]["cached"], 400);
    assert_eq!(runs[0]["reused_from"], 1);
    assert!(runs[2]["model_calls"].as_u64().unwrap() >= 400);
    // A run id that names no run is a usage error, not 400 paid calls;
    // reuse that matches nothing says so.
    let out = probity(dir.path(), &["run", "--quiet", "--reuse", "99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no run 99"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(json_runs(dir.path()).len(), 3, "nothing was run");
    let out = probity(
        dir.path(),
        &[
            "run",
            "--quiet",
            "--reuse",
            "1",
            "--set",
            "prompt.system=Be brief.",
        ],
    );
    assert!(
        text(&out.stdout).contains("no output of run #1 matched these requests"),
        "{}",
        text(&out.stdout)
    );
    let runs = json_runs(dir.path());
    assert_eq!(
        (runs[0]["cached"].as_u64(), runs[0]["model_calls"].as_u64()),
        (Some(0), Some(400))
    );

    // Loosen the contraction rule and revalidate: still no model call.
    let cfg = std::fs::read_to_string(dir.path().join("probity.toml")).unwrap();
    std::fs::write(
        dir.path().join("loose.toml"),
        cfg.replace("count(output, \"'\") <= 3", "count(output, \"'\") <= 100"),
    )
    .unwrap();
    let out = probity(
        dir.path(),
        &[
            "revalidate",
            "1",
            "--config",
            "loose.toml",
            "--format",
            "json",
        ],
    );
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON report");
    assert_eq!(report["checks"][0]["rate"]["estimate"], 1.0);
    // The same name: no warning.
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
    let runs = json_runs(dir.path());
    assert_eq!(runs[0]["model_calls"], 0);
    assert_eq!(runs[0]["parent_run"], 1);
    // Another name's file: done, with a warning of where it is filed.
    std::fs::write(
        dir.path().join("other.toml"),
        cfg.replacen("name = \"polite-assistant\"", "name = \"other\"", 1),
    )
    .unwrap();
    let out = probity(dir.path(), &["revalidate", "1", "--config", "other.toml"]);
    assert!(
        text(&out.stderr)
            .contains("warning: other.toml is named \"other\", run 1 \"polite-assistant\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn configuration_errors_name_the_file_and_line_and_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(probity(dir.path(), &["init"]).status.code(), Some(0));
    common::pin_seed(dir.path(), 42);
    let cfg = std::fs::read_to_string(dir.path().join("probity.toml")).unwrap();

    let bad = cfg.replace(
        "outputs_per_input = 20",
        "outputs_per_input = 20\nrepetitions = 3",
    );
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = probity(dir.path(), &["run", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("repetitions") && err.contains("line"),
        "{err}"
    );

    let bad = cfg.replace("count(output, \"'\") <= 3", "count(output, \"'\") <=");
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = probity(dir.path(), &["run", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("contraction_validator"), "{err}");

    // nan or inf anywhere (here where serde would read it as null and
    // blame the table) is refused with its key and line.
    let bad = cfg.replace("contractions = 0.10", "contractions = nan");
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = probity(dir.path(), &["run", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.toml: line ")
            && err.contains("system.contractions = nan: not a finite number"),
        "{err}"
    );

    let bad = cfg.replace("inputs.jsonl", "missing.jsonl");
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = probity(dir.path(), &["run", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("missing.jsonl"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(
        dir.path().join("inputs.jsonl"),
        "{\"text\": \"hi\"}\nnot json\n",
    )
    .unwrap();
    let out = probity(dir.path(), &["run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("inputs.jsonl:2"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(dir.path().join("inputs.jsonl"), "").unwrap();
    let out = probity(dir.path(), &["run"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("inputs = \"inputs.jsonl\": the file holds no input"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(dir.path().join("inputs.jsonl"), "{\"text\": \"hi\"}\n").unwrap();
    let out = probity(
        dir.path(),
        &["run", "--store", "postgress://u:hunter2@127.0.0.1/db"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("store postgress://…") && !err.contains("hunter2"),
        "{err}"
    );
    assert!(!dir.path().join("postgress:").exists());

    for (set, says) in [
        ("name=", "must have a visible character"),
        ("name=a/b", "'/' separates a run's name"),
    ] {
        let out = probity(dir.path(), &["run", "--set", set]);
        assert_eq!(out.status.code(), Some(2), "{set}");
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }

    let out = probity(dir.path(), &["run", "nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nope.toml"),
        "{}",
        text(&out.stderr)
    );
}
