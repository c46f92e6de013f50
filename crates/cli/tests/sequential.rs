//! `probity run --sequential` and `probity plan --thresholds` as a user
//! runs them: the early stop in the run's output, the stored outcome in
//! `probity report`, the sample-size plan, and bad arguments.

use crate::common;

use common::{probity, text};
use serde_json::Value;
use std::path::Path;

/// The init example with replies that fail the contraction check 60 % of
/// the time (minimum 95 %) and never forget their manners.
fn write_config(dir: &Path) {
    let cfg = probity_engine::config::example::CONFIG
        .replace("contractions = 0.10", "contractions = 0.60")
        .replace("omit_welcome = 0.15", "omit_welcome = 0.0");
    assert!(cfg.contains("contractions = 0.60"));
    std::fs::write(dir.join("probity.toml"), cfg).unwrap();
    std::fs::write(
        dir.join("inputs.jsonl"),
        probity_engine::config::example::INPUTS,
    )
    .unwrap();
}

#[test]
fn a_sequential_run_stops_early_and_its_report_says_why() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let out = probity(dir.path(), &["run", "--sequential", "--quiet"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("sequential: stopped after"), "{stdout}");
    assert!(
        stdout.contains("contraction_validator: ") && stdout.contains("established fail"),
        "{stdout}"
    );

    // Stored: `probity report` shows it in every format.
    let json = probity(dir.path(), &["report", "1", "--format", "json"]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let s = &v["sequential"];
    // Output rounds (20 inputs): savings count against the fixed run of
    // 20 × 20; the group-sequential design may take up to 20 % more
    // outputs per input when no look settles a check (issue 35 item 2;
    // 25 for the politeness check's 90 %).
    assert_eq!(s["fixed_samples"], 400, "{s}");
    assert_eq!(s["budget_samples"], 500, "{s}");
    assert!(s["samples"].as_u64().unwrap() < 400, "{s}");
    assert_eq!(
        s["samples_saved"].as_u64().unwrap() + s["samples"].as_u64().unwrap(),
        400
    );
    assert_eq!(s["checks"][0]["state"], "fail");
    assert!(s["checks"][0]["upper"].as_f64().unwrap() < 0.95);
    // 20 inputs: output rounds, about these inputs; the politeness check
    // (never fails, minimum 90 %) settles a pass on them within a few
    // rounds, so the run stops settled, well before the budget.
    assert_eq!(s["design"], "outputs", "{s}");
    assert_eq!(s["checks"][1]["state"], "pass", "{s}");
    assert_eq!(s["stop"], "settled", "{s}");
    assert!(s["samples"].as_u64().unwrap() <= 200, "{s}");
    assert_eq!(v["checks"][0]["verdict"]["established"], true);
    assert_eq!(v["run"]["complete"], true);
    for format in ["text", "markdown", "html", "junit"] {
        let out = probity(dir.path(), &["report", "1", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}");
        let body = text(&out.stdout);
        assert!(
            body.contains("sequential: stopped after"),
            "{format}: {body}"
        );
        assert!(body.contains("every verdict is established"), "{format}");
        assert!(body.contains("these 20 inputs"), "{format}: {body}");
        if format == "text" {
            assert!(
                body.contains("the fixed run of 20 × 20 takes 400"),
                "{body}"
            );
            assert!(body.contains("repeated confidence intervals"), "{body}");
        }
    }
}

#[test]
fn resuming_a_fixed_run_as_a_sequential_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    // A fixed-size run stopped with no verdict (every call fails).
    let cfg = std::fs::read_to_string(dir.path().join("probity.toml"))
        .unwrap()
        .replace("omit_welcome = 0.0", "omit_welcome = 0.0\nerror_rate = 1.0");
    std::fs::write(dir.path().join("probity.toml"), cfg).unwrap();
    let out = probity(dir.path(), &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let out = probity(dir.path(), &["run", "--quiet", "--resume", "--sequential"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("made without sequential testing") && err.contains("resume it without it"),
        "{err}"
    );
}

#[test]
fn plan_gives_the_fixed_size_and_the_sequential_cost() {
    let dir = tempfile::tempdir().unwrap();
    let out = probity(
        dir.path(),
        &[
            "plan",
            "--rates",
            "0.5",
            "--thresholds",
            "0.95",
            "--outputs",
            "5",
            "--icc",
            "0.2",
            "--sims",
            "100",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Half the outputs failing a 95 % minimum: the default interval of 5
    // inputs establishes the fail in every simulated run, so the fewest
    // inputs (5) reach the power.
    assert!(
        stdout.contains("fixed run: 5 inputs (25 samples)"),
        "{stdout}"
    );
    // Half the outputs failing a 95% minimum: a sequential run with that
    // budget settles the failure in most runs (the smallest budget tried
    // that does so in 80% of them), never a pass.
    assert!(
        stdout.contains("budget 5 × 5 = 25 samples, the smallest budget tried"),
        "{stdout}"
    );
    assert!(
        stdout.contains("check 1: established pass 0.0%, established fail"),
        "{stdout}"
    );
    assert!(stdout.contains("samples: mean"), "{stdout}");

    for (args, needle) in [
        (
            vec!["plan", "--rates", "0.9,0.8", "--thresholds", "0.9"],
            "--thresholds: 1 minimums for 2 rates",
        ),
        (
            vec![
                "plan",
                "--rates",
                "0.9",
                "--thresholds",
                "0.8",
                "--icc",
                "1.5",
            ],
            "--icc",
        ),
        (
            vec!["plan", "--rates", "0.9", "--thresholds", "0.9"],
            "--inputs: check 1: its rate equals its minimum",
        ),
        (
            vec!["plan", "--rates", "0.9", "--thresholds", "95"],
            "threshold 95",
        ),
    ] {
        let out = probity(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(needle),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
