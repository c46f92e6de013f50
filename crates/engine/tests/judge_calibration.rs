//! A verifier calibrated on a labelled set (`calibration = "labels.jsonl"`,
//! paper §4, issue 23 item 4): the engine asks the judge about every
//! labelled pair, measures its sensitivity and specificity, and judges the
//! check on its corrected rate — against the simulated judge, whose error
//! rates are known, and an error-free judge of the same outputs as the
//! truth. Bad labelled sets are configuration errors naming the file and
//! line.

use probity_core::stats::Calibrated;
use probity_engine::config::Config;
use probity_engine::run::stored;
use probity_engine::store::Store;
use probity_engine::{run_with, Control, Sink};
use std::path::Path;

use crate::labels;

/// A sim system whose outputs omit "You're welcome" 30 % of the time,
/// checked by an error-free judge ("truth") and by a judge that passes 30 %
/// of failing outputs and fails 10 % of passing ones, calibrated on
/// `labels_file` ("noisy").
fn config(dir: &Path, labels_file: &str) -> Result<Config, String> {
    let inputs: String = (0..20)
        .map(|i| format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    let text = format!(
        r#"name = "calibrated"
[system]
provider = "sim"
seed = 11
omit_welcome = 0.3
contractions = 0
[experiment]
outputs_per_input = 20
concurrency = 4
call_attempts = 1

[[verifier]]
name = "truth"
instructions = "Say you're welcome."
minimum_success_percentage = 0.6
[verifier.system]
provider = "sim"

[[verifier]]
name = "noisy"
instructions = "Say you're welcome."
minimum_success_percentage = 0.6
calibration = "{labels_file}"
[verifier.system]
provider = "sim"
seed = 3
false_pass = 0.3
false_fail = 0.1
{inputs}"#
    );
    let path = dir.join("probity.toml");
    std::fs::write(&path, text).unwrap();
    Config::load(&path).map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_calibrated_judge_is_measured_and_its_rate_corrected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("data/labels.jsonl"),
        labels::sim_labels(300, |_, _| {}),
    )
    .unwrap();
    // The path is relative to the configuration file.
    let cfg = config(dir.path(), "data/labels.jsonl").unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let outcome = run_with(
        &cfg.experiment().unwrap(),
        Sink::Store(&mut store),
        Control::default(),
    )
    .await
    .unwrap();
    let s = &outcome.summary;
    let truth = s.checks[0].rate.estimate;
    assert!(s.checks[0].calibration.is_none());
    let noisy = &s.checks[1];
    let Some(Calibrated::Corrected(c)) = &noisy.calibration else {
        panic!("not corrected: {:?}", noisy.calibration);
    };
    // The judge's measured errors are the simulated judge's.
    let (se, sp) = (c.judge.sensitivity, c.judge.specificity);
    assert_eq!((se.of, sp.of), (150, 150));
    assert!(se.interval.contains(0.9), "sensitivity {se:?}");
    assert!(sp.interval.contains(0.7), "specificity {sp:?}");
    // The raw rate is biased (0.7·0.9 + 0.3·0.3 = 0.72 against 0.7 —
    // small here); the corrected interval covers the truth the error-free
    // judge measured on the same outputs.
    assert_eq!(c.raw, noisy.rate.estimate);
    assert!(c.interval.contains(truth), "truth {truth}, corrected {c:?}");
    assert!(
        (c.estimate - truth).abs() < 0.08,
        "{} vs {truth}",
        c.estimate
    );
    println!(
        "truth {truth:.3}; raw {:.3}; Se {:.3} Sp {:.3}; corrected {:.3} [{:.3}, {:.3}]",
        c.raw, se.estimate, sp.estimate, c.estimate, c.interval.lower, c.interval.upper
    );
    // The labelled pairs were judged by the noisy judge only: 300 calls.
    assert_eq!(outcome.totals.judge_calls, 2 * 400 + 300);
    // A stored run's report corrects it the same way.
    let back = stored::load(&store, outcome.run_id.unwrap()).unwrap();
    assert_eq!(back.summary.checks[1].calibration, noisy.calibration);
    assert_eq!(back.summary.checks[1].verdict, noisy.verdict);

    // Revalidated with the same checks, the labelled set is measured
    // again — from the verdicts the run kept in the store (no call; the
    // run's outputs come from the judge cache) — and the verdict is
    // corrected as the run's was (`tests/calibration_cache.rs` covers
    // what is asked again). With calls off and nothing kept it cannot be,
    // and the result says which verifier went uncalibrated.
    let id = outcome.run_id.unwrap();
    let again = probity_engine::run::revalidate::revalidate(&mut store, id, &cfg.recheck(), true)
        .await
        .unwrap();
    assert_eq!(again.judge_calls, 0);
    assert!(again.uncalibrated.is_empty());
    let re = stored::load(&store, again.run_id).unwrap();
    let Some(Calibrated::Corrected(r)) = &re.summary.checks[1].calibration else {
        panic!("not corrected: {:?}", re.summary.checks[1].calibration);
    };
    assert_eq!(r.judge.counts.reused, 300);
    assert_eq!(
        probity_core::stats::LabelCounts {
            reused: 0,
            ..r.judge.counts
        },
        c.judge.counts
    );
    assert_eq!((r.estimate, r.interval), (c.estimate, c.interval));
    assert_eq!(re.summary.checks[1].verdict, noisy.verdict);
    rusqlite::Connection::open(dir.path().join("runs.db"))
        .unwrap()
        .execute_batch("DELETE FROM calibration_verdicts")
        .unwrap();
    let off = probity_engine::run::revalidate::revalidate(&mut store, id, &cfg.recheck(), false)
        .await
        .unwrap();
    assert_eq!(off.uncalibrated, vec!["noisy".to_string()]);
    let re = stored::load(&store, off.run_id).unwrap();
    assert!(re.summary.checks[1].calibration.is_none());
}

#[tokio::test]
async fn a_bad_labelled_set_is_a_configuration_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = "{\"input\": \"Thank you\", \"output\": \"You're welcome\", \"label\": \"PASS\"}\n";
    std::fs::write(
        dir.path().join("bad.jsonl"),
        format!("{good}{{\"input\": \"x\", \"output\": \"y\", \"label\": \"PASSED\"}}\n"),
    )
    .unwrap();
    let Err(e) = config(dir.path(), "bad.jsonl") else {
        panic!("accepted")
    };
    assert!(e.contains("bad.jsonl line 2"), "{e}");
    assert!(e.contains("noisy"), "names the verifier: {e}");
    std::fs::write(dir.path().join("passes.jsonl"), good).unwrap();
    let Err(e) = config(dir.path(), "passes.jsonl") else {
        panic!("accepted")
    };
    assert!(
        e.contains("no FAIL example") && e.contains("specificity"),
        "{e}"
    );
    let Err(e) = config(dir.path(), "missing.jsonl") else {
        panic!("accepted")
    };
    assert!(e.contains("missing.jsonl"), "{e}");
}
