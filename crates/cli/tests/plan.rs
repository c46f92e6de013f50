//! `probity plan` as a user runs it: output and exit codes.

use std::process::Command;

fn probity(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_probity"))
        .args(args)
        .output()
        .expect("run probity");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn worked_example_exits_zero() {
    let (code, out, _) = probity(&["plan", "--rates", "0.95,0.90,0.85", "--target", "0.99"]);
    assert_eq!(code, 0);
    assert!(out.contains("0.72675"), "{out}");
    assert!(out.contains("1.376"), "{out}");
    assert!(out.contains("→ 4 attempts (3 retries)"), "{out}");
}

#[test]
fn bad_arguments_exit_two_with_a_clear_message() {
    let (code, _, err) = probity(&["plan", "--rates", "0.95,1.2"]);
    assert_eq!(code, 2);
    assert!(err.contains("pass rate #2 is 1.2"), "{err}");

    let (code, _, err) = probity(&["plan", "--rates", ""]);
    assert_eq!(code, 2);
    assert!(err.contains("--rates"), "{err}");

    let (code, _, err) = probity(&["plan", "--rates", "0.9", "--target", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--target"), "{err}");

    // The retry target's old name: refused, naming the new one (a
    // `--confidence` that silently meant something else would mislead).
    let (code, _, err) = probity(&["plan", "--rates", "0.9", "--confidence", "0.99"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--confidence 0.99: the retry target of `probity plan` is now --target"),
        "{err}"
    );

    let (code, _, _) = probity(&["plan"]);
    assert_eq!(code, 2);
}

#[test]
fn zero_and_one_rates_do_not_crash() {
    let (code, out, _) = probity(&["plan", "--rates", "0,0.5"]);
    assert_eq!(code, 0);
    assert!(out.contains("none suffices"), "{out}");
    let (code, out, _) = probity(&["plan", "--rates", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("→ 1 attempt (0 retries)"), "{out}");
}

/// Counts past what u64 holds are said to be so, never a saturated or
/// wrapped product passed off as exact (`… × 10 = 18446744073709551615`).
#[test]
fn counts_past_u64_are_said_to_be_so() {
    let max = u64::MAX.to_string();
    // N ≈ 8.9e18 inputs given: × 10 outputs is past u64.
    let (code, _, err) = probity(&[
        "plan",
        "--rates",
        "0.95",
        "--thresholds",
        "0.9",
        "--inputs",
        "8858244202317505536",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "the budget 8858244202317505536 × 10 outputs = more samples than a 64-bit count holds"
        ),
        "{err}"
    );
    assert!(!err.contains(&max), "{err}");
    // A rate a hair from its minimum: the fixed N is past u64 itself.
    let (code, _, err) = probity(&[
        "plan",
        "--rates",
        "0.95",
        "--thresholds",
        "0.949999999999999",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fixed-size run's 2^64 or more inputs"),
        "{err}"
    );
    assert!(!err.contains(&max), "{err}");
    let (code, out, err) = probity(&[
        "plan",
        "--rates",
        "0.95",
        "--thresholds",
        "0.949999999999999",
        "--inputs",
        "100",
        "--sims",
        "10",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("N × M = 2^64 or more × 10 = 2^64 or more samples"),
        "{out}"
    );
    assert!(!out.contains(&max), "{out}");
    // An exact product stays exact.
    let (_, _, err) = probity(&[
        "plan",
        "--rates",
        "0.95",
        "--thresholds",
        "0.9",
        "--inputs",
        "2000000",
    ]);
    assert!(
        err.contains("2000000 × 10 outputs = 20000000 samples"),
        "{err}"
    );
}

/// An extreme target is written as a number, not hundreds of digits.
#[test]
fn an_extreme_target_is_written_with_an_exponent() {
    let (code, out, _) = probity(&["plan", "--rates", "0.95,0.9", "--target", "1e-300"]);
    assert_eq!(code, 0);
    let line = out.lines().find(|l| l.contains("attempts for")).unwrap();
    assert!(line.contains("m = ln(1 − 1e-300)"), "{line}");
    assert!(line.len() < 150, "{line}");
    assert!(!out.contains("0000000000"), "{out}");
    let (_, out, _) = probity(&["plan", "--rates", "0.95,0.9", "--target", "0.99"]);
    assert!(
        out.contains("attempts for 99%      m = ln(1 − 0.99)"),
        "{out}"
    );
}

/// Issue 35 items 3 and 4: a calibrated verifier's check is sized at its
/// corrected rate, not the judge's own pass rate; the plan says the
/// labels' own width is left out (its sizes are the least a run needs),
/// and when the labels alone leave the minimum possible it says that no
/// size suffices, and why, instead of a number.
#[test]
fn a_calibrated_judges_check_is_sized_at_its_corrected_rate() {
    use crate::common::{probity as in_dir, text};
    let mut seen = [false; 2];
    for minimum in [0.3, 0.8] {
        let dir = tempfile::tempdir().unwrap();
        crate::calibration_cache::write_config_at(dir.path(), 0.3, minimum);
        let run = in_dir(dir.path(), &["run", "probity.toml", "--quiet"]);
        assert!(run.status.code().is_some(), "{}", text(&run.stderr));
        let json = in_dir(dir.path(), &["report", "1", "--format", "json"]);
        let report: serde_json::Value = serde_json::from_slice(&json.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", text(&json.stderr)));
        let cal = &report["checks"][0]["calibration"];
        let corrected = cal["corrected"]["estimate"].as_f64().expect("corrected");
        let raw = cal["raw"].as_f64().unwrap();
        let (lo, hi) = (
            cal["labels_only"]["lower"].as_f64().unwrap(),
            cal["labels_only"]["upper"].as_f64().unwrap(),
        );
        let labels_hold = lo <= minimum && minimum <= hi;
        seen[usize::from(labels_hold)] = true;
        let plan = in_dir(dir.path(), &["plan", "1", "--sequential", "--sims", "40"]);
        let out = text(&plan.stdout);
        if labels_hold {
            assert_eq!(plan.status.code(), Some(2), "{out}");
            assert!(
                text(&plan.stderr).contains(
                    "--inputs: noisy: the judge's labels alone leave its minimum possible (label more outputs)"
                ),
                "{}",
                text(&plan.stderr)
            );
            continue;
        }
        assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
        let line = out.lines().find(|l| l.contains("noisy  rate")).unwrap();
        assert!(
            line.contains(&format!("rate {:.1}%", 100.0 * corrected)),
            "{line} (corrected {corrected}, raw {raw})"
        );
        assert!(line.contains("fixed run: at least "), "{line}");
        assert!(
            out.contains(&format!(
                "the corrected rate (the judge passes {:.1}%); its labels alone leave [{:.1}, {:.1}]",
                100.0 * raw,
                100.0 * lo,
                100.0 * hi
            )),
            "{out}"
        );
        assert!(out.contains("the sizes are the least a run needs"), "{out}");
    }
    assert_eq!(
        seen,
        [true, true],
        "both cases met: labels that settle, labels that cannot"
    );
}
