//! `probity runs`: the verdicts column read from the decisions stored when
//! each run finished, the same as rebuilding each run from its samples.

use crate::common;

use common::{json_runs, probity, text};
use probity_core::stats::Decision;
use probity_engine::run::stored;
use probity_engine::store::Store;

#[test]
fn runs_shows_the_verdicts_a_rebuild_gives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    let out = probity(d, &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = probity(d, &["revalidate", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out.stderr));

    // What `probity runs` printed before the decisions were stored.
    let store = Store::open(&d.join("runs.db")).unwrap();
    let rebuilt = |id: i64| {
        let s = stored::load(&store, id).unwrap().summary;
        let passed = s
            .checks
            .iter()
            .filter(|c| c.verdict.decision == Decision::Pass)
            .count();
        format!("{passed}/{} pass", s.checks.len())
    };
    for id in [1, 2] {
        assert!(store.run(id).unwrap().verdicts.is_some(), "run {id}");
    }
    let out = probity(d, &["runs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, id) in rows.iter().zip([2, 1]) {
        assert!(row.trim_start().starts_with(&id.to_string()), "{table}");
        assert!(row.ends_with(&format!("  {}", rebuilt(id))), "{table}");
    }
    // One of the two checks of `probity init` fails.
    assert!(table.contains("1/2 pass"), "{table}");
    // And in the JSON lines, each check's decision.
    let runs = json_runs(d);
    assert_eq!(runs[1]["verdicts"], serde_json::json!(["fail", "pass"]));
}

#[test]
fn a_reader_that_closes_early_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    for args in [&["runs", "--json"][..], &["runs"], &["report", "1"]] {
        // `probity … | head -0`: the pipe's reader is gone before a byte.
        let mut child = common::probity_cmd()
            .current_dir(d)
            .env("PROBITY_STORE", d.join("runs.db"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}

/// Variants of one name whose names share a prefix stay told apart in
/// the table: every name is shown whole; the variants report counts "1 variant" and
/// says there is no pair to test, not "across all 0 tests".
#[test]
fn variant_names_keep_their_variant_part_and_counts_agree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    let two = format!(
        "{cfg}\n[[variant]]\nname = \"baseline-v1\"\n\n[[variant]]\nname = \"baseline-v2\"\nsystem.seed = 43\n"
    );
    std::fs::write(d.join("two.toml"), two).unwrap();
    assert_eq!(
        probity(d, &["run", "two.toml", "-q"]).status.code(),
        Some(1)
    );
    let one = format!("{cfg}\n[[variant]]\nname = \"a-very-long-variant-name-x\"\n");
    std::fs::write(d.join("one.toml"), one).unwrap();
    let out = probity(d, &["run", "one.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(
        report.contains("(group 3), 1 variant, reference"),
        "{report}"
    );
    assert!(
        report.contains("no pair of variants to compare (1 variant)")
            && !report.contains("0 tests"),
        "{report}"
    );

    let out = probity(d, &["runs"]);
    let table = text(&out.stdout);
    let name = |id: i64| -> String {
        let row = table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{id}  ")))
            .unwrap_or_else(|| panic!("{table}"));
        row.trim_start()[id.to_string().len()..]
            .trim_start()
            .split("  ")
            .next()
            .unwrap()
            .to_string()
    };
    // Names whole, never cut: a cut name would read like another run's.
    assert_eq!(name(1), "polite-assistant/baseline-v1", "{table}");
    assert_eq!(name(2), "polite-assistant/baseline-v2", "{table}");
    assert_eq!(
        name(3),
        "polite-assistant/a-very-long-variant-name-x",
        "{table}"
    );
}
