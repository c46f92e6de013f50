//! `[[variant]]` tables: one `probity run` samples every variant on the
//! same inputs and repetitions (the example's simulator, seed pinned),
//! stores each as a run of one group, and reports a variant × check
//! matrix with paired differences against the reference, Holm across
//! pairs × checks. A variant made worse (contractions 0.10 → 0.5) is
//! established worse with the right sign; a variant identical to the
//! reference is not called different; `--variant` runs a subset; a
//! killed variants run resumes variant by variant; sequential variants
//! share one input order; bad tables are errors naming file, line and key.

use crate::common;

use common::{json_runs, pin_seed, probity, text};
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const VARIANTS: &str = r#"
[[variant]]
name = "base"

[[variant]]
name = "same"

[[variant]]
name = "sloppy"
system.contractions = 0.5
prompt.system = "You are a busy assistant."
"#;

/// `probity init` in `dir`, the simulator pinned to seed 3, with
/// `tables` appended.
fn setup(dir: &Path, tables: &str) {
    assert_eq!(probity(dir, &["init"]).status.code(), Some(0));
    pin_seed(dir, 3);
    let path = dir.join("probity.toml");
    let cfg = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{cfg}{tables}")).unwrap();
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

/// The checks of the pair whose candidate is `candidate`.
fn pair<'a>(v: &'a Value, candidate: &str) -> &'a Vec<Value> {
    v["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["candidate"] == candidate)
        .unwrap_or_else(|| panic!("no pair with {candidate}: {v}"))["checks"]
        .as_array()
        .unwrap()
}

fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks.iter().find(|c| c["name"] == name).unwrap()
}

#[test]
fn a_worse_variant_is_established_worse_and_an_identical_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    let out = probity(d, &["run", "-q", "--format", "json"]);
    // Every variant fails contraction_validator (0.95 minimum): exit 1.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = json(&out);
    assert_eq!(v["schema"], "probity.variants.v1");
    assert_eq!(v["reference"], "base");
    assert_eq!(v["group"], 1);
    // 2 pairs × 2 checks, corrected together.
    assert_eq!(v["tests"], 4);
    assert_eq!(v["options"]["multiple"], "holm");
    let names: Vec<&str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["base", "same", "sloppy"]);

    // The matrix: the sloppy variant's contraction rate is far lower.
    let rate = |i: usize, k: &str| {
        v["variants"][i]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == k)
            .unwrap()["estimate"]
            .as_f64()
            .unwrap()
    };
    assert!(rate(0, "contraction_validator") > 0.85);
    assert!(rate(2, "contraction_validator") < 0.65);
    // Paired by design: the same seed, inputs and repetitions give the
    // identical variant the very same outputs.
    assert_eq!(
        rate(0, "contraction_validator"),
        rate(1, "contraction_validator")
    );

    // sloppy − base: worse on contractions, with the right sign; not on
    // politeness (its rate was not changed).
    let sloppy = pair(&v, "sloppy");
    let c = check(sloppy, "contraction_validator");
    assert_eq!(c["verdict"], "worse");
    assert_eq!(c["basis"], "paired");
    assert!(c["upper"].as_f64().unwrap() < 0.0, "{c}");
    assert!(c["p_adjusted"].as_f64().unwrap() <= 0.05);
    assert!(c["p_adjusted"].as_f64().unwrap() >= c["p_value"].as_f64().unwrap());
    assert_eq!(
        check(sloppy, "politeness_validator")["verdict"],
        "no_established_difference"
    );
    // same − base: nothing established.
    for c in pair(&v, "same") {
        assert_eq!(c["verdict"], "no_established_difference", "{c}");
        assert_eq!(c["difference"], 0.0);
    }
    let established = v["established"].as_array().unwrap();
    assert_eq!(established.len(), 1, "{established:?}");
    assert_eq!(established[0]["better"], "base");
    assert_eq!(established[0]["worse"], "sloppy");
    assert_eq!(established[0]["check"], "contraction_validator");
    assert!(established[0]["lower"].as_f64().unwrap() > 0.0);
    // Cost per variant: every sample a call.
    for x in v["variants"].as_array().unwrap() {
        assert_eq!(x["cost"]["calls"], 400, "{x}");
        assert_eq!(x["cost"]["samples"], 400);
        assert_eq!(x["cost"]["latency_ms"]["n"], 400);
        assert_eq!(x["report"]["schema"], "probity.report.v1");
    }

    // Stored as three runs of one group, named NAME/VARIANT.
    let runs = json_runs(d);
    assert_eq!(runs.len(), 3);
    for r in &runs {
        assert_eq!(r["variant"]["group"], 1, "{r}");
        assert_eq!(r["variant"]["reference"], "base");
    }
    let mut names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "polite-assistant/base",
            "polite-assistant/same",
            "polite-assistant/sloppy"
        ]
    );

    // `probity report RUN --variants` of any of its runs: the same report.
    let again = json(&probity(
        d,
        &[
            "report",
            "polite-assistant/same",
            "--variants",
            "--format",
            "json",
        ],
    ));
    assert_eq!(again["established"], v["established"]);
    assert_eq!(again["differences"], v["differences"]);
    assert_eq!(again["variants"][2]["cost"], v["variants"][2]["cost"]);
    let out = probity(d, &["report", "1", "--variants", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    assert!(
        t.contains("probity variants: polite-assistant (group 1), 3 variants, reference base"),
        "{t}"
    );
    assert!(t.contains("sloppy (run 3)"), "{t}");
    assert!(t.contains("cost per variant"), "{t}");
    assert!(t.contains("sloppy − base"), "{t}");
    assert!(
        t.contains("3 variants: 1 established difference: base better than sloppy on contraction_validator"),
        "{t}"
    );
    // Every pair: three pairs, Holm over 6 tests; sloppy worse than both.
    let all = json(&probity(
        d,
        &[
            "report",
            "1",
            "--variants",
            "--all-pairs",
            "--format",
            "json",
        ],
    ));
    assert_eq!(all["reference"], Value::Null);
    assert_eq!(all["tests"], 6);
    assert_eq!(all["established"].as_array().unwrap().len(), 2);
    // Markdown, HTML and JUnit render it.
    let md = text(&probity(d, &["report", "1", "--variants", "--format", "markdown"]).stdout);
    assert!(md.contains("| contraction\\_validator | 9"), "{md}");
    assert!(
        md.contains("| sloppy − base | contraction\\_validator | ⬇️ worse |"),
        "{md}"
    );
    let html = text(&probity(d, &["report", "1", "--variants", "--format", "html"]).stdout);
    assert!(html.contains("id=\"variant-matrix\""));
    assert_eq!(html.matches("class=\"variant-input\"").count(), 20);
    assert_eq!(html.matches("class=\"variant-side\"").count(), 60);
    let junit = text(&probity(d, &["report", "1", "--variants", "--format", "junit"]).stdout);
    assert_eq!(junit.matches("<testsuite ").count(), 4, "{junit}");
    assert!(junit.contains("base better than sloppy: contraction_validator"));
    // A run that is no variant has no variants report.
    let out = probity(d, &["report", "1", "--variants", "--store", "other.db"]);
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn variant_runs_a_subset_and_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    let out = probity(
        d,
        &[
            "run",
            "-q",
            "--variant",
            "sloppy",
            "--variant",
            "same",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = json(&out);
    // In the file's order; the reference is the first chosen.
    let names: Vec<&str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["same", "sloppy"]);
    assert_eq!(v["reference"], "same");
    assert_eq!(v["tests"], 2);
    assert_eq!(json_runs(d).len(), 2);
    let out = probity(d, &["run", "-q", "--variant", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "probity.toml: --variant \"nope\": no [[variant]] of that name (the file's variants: base, same, sloppy)"
        ),
        "{}",
        text(&out.stderr)
    );
    // `reference = true` picks the reference.
    let marked = VARIANTS.replace(
        "name = \"sloppy\"\n",
        "name = \"sloppy\"\nreference = true\n",
    );
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &marked);
    let v = json(&probity(dir.path(), &["run", "-q", "--format", "json"]));
    assert_eq!(v["reference"], "sloppy");
    assert_eq!(pair(&v, "base").len(), 2);
    assert_eq!(
        check(pair(&v, "base"), "contraction_validator")["verdict"],
        "better"
    );
}

#[test]
fn bad_variant_tables_name_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    let lines = cfg.lines().count();
    let with = |tables: &str| {
        std::fs::write(d.join("probity.toml"), format!("{cfg}{tables}")).unwrap();
        let out = probity(d, &["run", "-q"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
        text(&out.stderr)
    };
    // A misspelt field of [system]: its line and the variant.
    let e = with(
        "\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\nsystem.contractoins = 0.5\n",
    );
    assert!(
        e.contains(&format!(
            "probity.toml: line {}: [[variant]] \"b\": system.contractoins: unknown field `contractoins`",
            lines + 7
        )),
        "{e}"
    );
    // A duplicate name.
    let e = with("\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"a\"\n");
    assert!(
        e.contains(&format!(
            "line {}: [[variant]] #2 (\"a\"): the name is already that of [[variant]] #1 (line {})",
            lines + 6,
            lines + 2
        )),
        "{e}"
    );
    // A key a variant cannot set.
    let e = with("\n[[variant]]\nname = \"a\"\nexperiment.outputs_per_input = 3\n");
    assert!(
        e.contains(&format!(
            "line {}: [[variant]] #1 (\"a\"): unknown key `experiment`",
            lines + 4
        )),
        "{e}"
    );
    // --variant without variants.
    std::fs::write(d.join("probity.toml"), &cfg).unwrap();
    let out = probity(d, &["run", "-q", "--variant", "a"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--variant and --all-pairs need [[variant]] tables"));
    assert!(json_runs(d).is_empty(), "no run was started");
}

#[test]
fn a_killed_variants_run_resumes_variant_by_variant() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    // 20 ms a sample, 4 at a time: each variant's 400 samples take ~2 s.
    let path = d.join("probity.toml");
    let cfg = std::fs::read_to_string(&path)
        .unwrap()
        .replace("seed = 3\n", "seed = 3\nlatency_ms = 20\n")
        .replace("concurrency = 16", "concurrency = 4");
    std::fs::write(&path, cfg).unwrap();
    let mut run = common::probity_cmd()
        .current_dir(d)
        .args(["run", "-q"])
        .env("PROBITY_STORE", d.join("runs.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it (SIGKILL) while the second variant is being sampled.
    let start = Instant::now();
    while json_runs(d).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "never got to the second variant"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    run.kill().unwrap();
    run.wait().unwrap();
    let runs = json_runs(d);
    assert_eq!(runs.len(), 2);
    let status = |runs: &[Value], name: &str| {
        runs.iter()
            .find(|r| r["name"] == name)
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    assert_eq!(
        status(&runs, "polite-assistant/base").as_deref(),
        Some("complete")
    );
    assert_ne!(
        status(&runs, "polite-assistant/same").as_deref(),
        Some("complete")
    );

    let out = probity(d, &["run", "-q", "--resume", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("variant \"base\" (1 of 3): run 1 is complete"),
        "{err}"
    );
    assert!(err.contains("variant \"same\" (2 of 3): resuming"), "{err}");
    assert!(err.contains("variant \"sloppy\" (3 of 3)"), "{err}");
    let v = json(&out);
    assert_eq!(v["complete"], true);
    assert_eq!(v["group"], 1);
    // Each variant's one run, complete, every sample stored once.
    let runs = json_runs(d);
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in &runs {
        assert_eq!(r["status"], "complete");
        assert_eq!(r["variant"]["group"], 1);
    }
    for x in v["variants"].as_array().unwrap() {
        assert_eq!(x["cost"]["samples"], 400);
    }
    // Resumed, the identical variant still matches the reference exactly
    // (the simulator is seeded per input and repetition).
    for c in pair(&v, "same") {
        assert_eq!(c["difference"], 0.0, "{c}");
    }
    assert_eq!(
        check(pair(&v, "sloppy"), "contraction_validator")["verdict"],
        "worse"
    );
    // Nothing left to resume.
    let out = probity(d, &["run", "-q", "--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nothing to resume"));
}

#[test]
fn sequential_variants_share_one_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    let out = probity(d, &["run", "-q", "--sequential", "--format", "json"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let v = json(&out);
    let seeds: Vec<Value> = json_runs(d)
        .iter()
        .map(|r| r["settings"]["sequential"]["seed"].clone())
        .collect();
    assert_eq!(seeds.len(), 3);
    assert!(seeds[0].is_u64(), "{seeds:?}");
    assert!(seeds.iter().all(|s| *s == seeds[0]), "{seeds:?}");
    for x in v["variants"].as_array().unwrap() {
        assert!(
            x["report"]["sequential"].is_object(),
            "{}",
            x["report"]["sequential"]
        );
    }
    // The identical variant visits the same inputs and gives the same
    // outputs: no difference at all.
    for c in pair(&v, "same") {
        assert_eq!(c["difference"], 0.0, "{c}");
        assert_eq!(c["verdict"], "no_established_difference");
    }
}

#[test]
fn a_variants_run_on_postgres_reads_back_as_on_sqlite() {
    use probity_engine::store::postgres::testing::TestDatabase;
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    let on = |store: &str, args: &[&str], code: i32| {
        let out = common::probity_cmd()
            .current_dir(d)
            .args(args)
            .env("PROBITY_STORE", store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        json(&out)
    };
    let sqlite = d.join("runs.db").display().to_string();
    let run = ["run", "-q", "--format", "json"];
    let (a, b) = (on(&sqlite, &run, 1), on(db.url(), &run, 1));
    assert_eq!(a["differences"], b["differences"]);
    assert_eq!(a["established"], b["established"]);
    // Read back from PostgreSQL by any run of the group.
    let again = on(
        db.url(),
        &["report", "3", "--variants", "--format", "json"],
        0,
    );
    assert_eq!(again["group"], b["group"]);
    assert_eq!(again["differences"], b["differences"]);
    assert_eq!(
        db.query("SELECT count(DISTINCT variant_group)::text FROM runs"),
        ["1"]
    );
}

/// `probity revalidate` of a variant's run reads the file's `[[variant]]`
/// tables and applies the run's own variant (its checks re-run on the
/// stored outputs give the stored rates); a run of a variant the file no
/// longer has is an error naming the run's variant and the file's; a run
/// made before the file had variants is revalidated with the file's base.
#[test]
fn a_variant_run_revalidates_with_its_own_variant() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    pin_seed(d, 3);
    let plain = probity(d, &["run", "-q", "--outputs", "3", "--format", "json"]);
    let path = d.join("probity.toml");
    let cfg = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{cfg}{VARIANTS}")).unwrap();
    let out = probity(d, &["run", "-q", "--outputs", "3", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rates = |v: &Value| -> Vec<(String, u64, u64)> {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let r = &c["rate"];
                (
                    c["name"].as_str().unwrap().to_string(),
                    r["pass"].as_u64().unwrap(),
                    r["fail"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    for (run, stored) in [("polite-assistant/sloppy", None), ("1", Some(json(&plain)))] {
        let stored =
            stored.unwrap_or_else(|| json(&probity(d, &["report", run, "--format", "json"])));
        let out = probity(d, &["revalidate", run, "--format", "json"]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{run}: {}",
            text(&out.stderr)
        );
        assert_eq!(rates(&json(&out)), rates(&stored), "{run}");
    }
    // Without the variant, the run cannot be revalidated from this file.
    let cfg = std::fs::read_to_string(&path).unwrap();
    let at = cfg.find("[[variant]]\nname = \"sloppy\"").unwrap();
    std::fs::write(&path, &cfg[..at]).unwrap();
    let out = probity(d, &["revalidate", "polite-assistant/sloppy"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("variant \"sloppy\"")
            && err.contains("probity.toml")
            && err.contains("its variants: base, same"),
        "{err}"
    );
    // Nor from a file with no variants at all: its re-check would be
    // filed as the base's run, and taken for the base's history.
    std::fs::write(&path, &cfg[..cfg.find("[[variant]]").unwrap()]).unwrap();
    let runs_before = probity(d, &["runs", "--json"]).stdout.len();
    let out = probity(d, &["revalidate", "polite-assistant/sloppy"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("variant \"sloppy\"") && err.contains("this file has no [[variant]]"),
        "{err}"
    );
    assert_eq!(probity(d, &["runs", "--json"]).stdout.len(), runs_before);
}

/// `probity report RUN --variants --reference NAME` compares the stored
/// variants with another reference than the run's, without sampling
/// again: the worse variant as reference makes the base one "better";
/// an unknown name lists the group's variants.
#[test]
fn a_stored_variants_report_takes_another_reference() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, VARIANTS);
    let out = probity(d, &["run", "-q", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(json(&out)["reference"], "base");
    let report = |extra: &[&str]| {
        let mut args = vec!["report", "polite-assistant/same", "--variants"];
        args.extend_from_slice(extra);
        probity(d, &args)
    };
    let v = json(&report(&["--reference", "sloppy", "--format", "json"]));
    assert_eq!(v["reference"], "sloppy");
    assert_eq!(v["tests"], 4);
    assert_eq!(
        check(pair(&v, "base"), "contraction_validator")["verdict"],
        "better"
    );
    // The stored reference is still the default.
    assert_eq!(json(&report(&["--format", "json"]))["reference"], "base");
    let out = report(&["--reference", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "--reference \"nope\": the variants run of run 2 has no variant of that name (its variants: base, same, sloppy)"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        report(&["--reference", "base", "--all-pairs"])
            .status
            .code(),
        Some(2)
    );
}

const MATRIX: &str = r#"
[matrix]
prompt.system = { polite = "You are a polite assistant.", busy = "You are a busy assistant." }
system.contractions = { tidy = 0.1, sloppy = 0.5 }
"#;

#[test]
fn a_matrix_runs_its_product_as_variants_compared_with_holm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, MATRIX);
    let out = probity(d, &["run", "-q", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = json(&out);
    assert_eq!(v["schema"], "probity.variants.v1");
    let names: Vec<&str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "prompt=polite · contractions=tidy",
            "prompt=polite · contractions=sloppy",
            "prompt=busy · contractions=tidy",
            "prompt=busy · contractions=sloppy",
        ]
    );
    assert_eq!(v["reference"], "prompt=polite · contractions=tidy");
    // 3 pairs × 2 checks, Holm across all six.
    assert_eq!(v["tests"], 6);
    assert_eq!(v["options"]["multiple"], "holm");
    for sloppy in [
        "prompt=polite · contractions=sloppy",
        "prompt=busy · contractions=sloppy",
    ] {
        let c = check(pair(&v, sloppy), "contraction_validator");
        assert_eq!(c["verdict"], "worse", "{sloppy}: {c}");
        assert!(c["p_adjusted"].as_f64().unwrap() >= c["p_value"].as_f64().unwrap());
    }
    let c = check(
        pair(&v, "prompt=busy · contractions=tidy"),
        "contraction_validator",
    );
    assert_ne!(c["verdict"], "worse", "{c}");
    // Four runs of one group, NAME/VARIANT.
    let runs = json_runs(d);
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().any(|r| r["name"]
        .as_str()
        .unwrap()
        .ends_with("/prompt=busy · contractions=sloppy")));

    // The text report names every combination; one is run alone by name.
    let out = probity(
        d,
        &[
            "run",
            "-q",
            "--variant",
            "prompt=busy · contractions=sloppy",
            "--variant",
            "prompt=polite · contractions=tidy",
        ],
    );
    let report = text(&out.stdout);
    assert!(
        report.contains("prompt=busy · contractions=sloppy"),
        "{report}"
    );
    assert!(
        !report.contains("prompt=busy · contractions=tidy"),
        "{report}"
    );
}

#[test]
fn bad_matrices_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d, "\n[matrix]\nsystem.contractions = []\n");
    let out = probity(d, &["run", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    let line = std::fs::read_to_string(d.join("probity.toml"))
        .unwrap()
        .lines()
        .position(|l| l.starts_with("system.contractions"))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!(
            "probity.toml: line {line}: [matrix]: system.contractions: an empty list"
        )),
        "{err}"
    );
    // A misspelt field: named with its line, before any call.
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    std::fs::write(
        d.join("probity.toml"),
        cfg.replace(
            "system.contractions = []",
            "system.contractoins = [0.1, 0.2]",
        ),
    )
    .unwrap();
    let out = probity(d, &["run", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("line {line}: [matrix] variant \"contractoins=0.1\": system.contractoins: unknown field")),
        "{err}"
    );
    assert!(json_runs(d).is_empty(), "nothing stored");
    // Over 64 combinations.
    let seeds: Vec<String> = (0..9).map(|i| i.to_string()).collect();
    std::fs::write(
        d.join("probity.toml"),
        cfg.replace(
            "system.contractions = []",
            &format!(
                "system.seed = [{0}]\nsystem.contractions = [{0}]",
                seeds.join(", ")
            ),
        ),
    )
    .unwrap();
    let out = probity(d, &["run", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("81 combinations (system.seed 9 × system.contractions 9), more than 64"),
        "{err}"
    );
}
