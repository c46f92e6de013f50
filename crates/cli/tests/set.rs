//! `probity run --set KEY=VALUE`: a field of the configuration replaced
//! from the command line, checked like the file, stored and hashed with
//! the run; an A/B against the file's own system with `--baseline`.

use crate::common;

use common::{json_runs, probity, text};

#[test]
fn set_overrides_fields_and_is_stored_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 3);

    // The file's system: contraction_validator fails (10% of answers).
    let out = probity(d, &["run", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("FAIL contraction_validator"));

    // A system that never overuses contractions, and a looser minimum.
    let out = probity(
        d,
        &[
            "run",
            "-q",
            "--set",
            "system.contractions=0.0",
            "--set",
            "validator.1.minimum_success_percentage=0.5",
            "--set",
            "prompt.system=Be brief. Never = rude.",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("PASS contraction_validator  100.0%"),
        "{stdout}"
    );
    assert!(stdout.contains("≥ 50%"), "{stdout}");
    // Stored with the run as overridden, under another hash.
    let runs = json_runs(d);
    assert_eq!(runs.len(), 2);
    assert_ne!(runs[0]["config_hash"], runs[1]["config_hash"]);
    let stored = runs[0]["config"].as_str().unwrap();
    assert!(stored.contains("contractions = 0.0"), "{stored}");
    assert!(stored.contains("Be brief. Never = rude."), "{stored}");

    // A/B: a worse system against the file's as baseline.
    let out = probity(
        d,
        &[
            "run",
            "-q",
            "--set",
            "system.omit_welcome=0.7",
            "--baseline",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("REGRESSED"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_bad_set_is_a_usage_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    for (arg, says) in [
        ("system", "expected KEY=VALUE"),
        ("system.nope=1", "nope"),
        ("system.contractions=2.0", "contractions"),
        ("validator.9.name=x", "there is no validator.9"),
        ("name.x=1", "name is a string, not a table"),
        (
            "experiment.outputs_per_input=99999999999999999999",
            "99999999999999999999 is too large",
        ),
        // Named by the --set, not by a line of the rewritten file.
        (
            "experiment.outputs_per_input=abc",
            "--set experiment.outputs_per_input=\"abc\": invalid type: string \"abc\"",
        ),
        ("experiment=3", "--set experiment=3: invalid type"),
    ] {
        let out = probity(d, &["run", "-q", "--set", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "--set {arg}: {err}");
    }
    // Nothing was run.
    assert!(json_runs(d).is_empty());
}
