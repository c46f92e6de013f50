//! Cost in money (issue 40): a price on the provider tables turns the
//! tokens the providers reported into a cost in every format of `probity
//! run`/`report`, the system's and the judges' apart, per variant, for a
//! guarded run's retries and for a `probity serve` run; a run stored
//! before usage was kept reads "cost not known", never 0; a bad price is
//! an error naming the file, line and field.
//!
//! The expected figures are computed here from token counts read from the
//! store's sample and attempt rows (a path of their own: the per-call
//! rows, not the run's usage counters) times the prices written in the
//! test.

use crate::common;

use common::{probity, text};
use serde_json::Value;
use std::path::Path;

const SYSTEM_IN: f64 = 2.5;
const SYSTEM_OUT: f64 = 10.0;
const JUDGE_IN: f64 = 0.4;
const JUDGE_OUT: f64 = 1.6;

fn write(dir: &Path, extra: &str, judge: &str) {
    let inputs: String = (0..4)
        .map(|i| format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    std::fs::write(
        dir.join("probity.toml"),
        format!(
            r#"name = "priced"
[system]
provider = "sim"
seed = 7
contractions = 0.3
price = {{ input_per_million = {SYSTEM_IN}, output_per_million = {SYSTEM_OUT} }}
[experiment]
outputs_per_input = 5
call_attempts = 1
{extra}
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.5
{judge}
{inputs}"#
        ),
    )
    .unwrap();
}

const JUDGE: &str = r#"
[[verifier]]
name = "judge"
instructions = "Be polite."
minimum_success_percentage = 0.5
[verifier.system]
provider = "sim"
price = { input_per_million = 0.4, output_per_million = 1.6 }
"#;

fn db(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("runs.db")).unwrap()
}

/// `(input tokens, output tokens)` of run `run`'s stored samples.
fn sample_tokens(dir: &Path, run: i64) -> (u64, u64) {
    db(dir)
        .query_row(
            "SELECT SUM(input_tokens), SUM(output_tokens) FROM samples WHERE run_id = ?1",
            [run],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
        )
        .unwrap()
}

fn report(dir: &Path, run: &str, format: &str) -> String {
    let out = probity(dir, &["report", run, "--format", format]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn a_priced_run_reports_its_cost_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "", JUDGE);
    let out = probity(d, &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let (sys_in, sys_out) = sample_tokens(d, 1);
    assert!(sys_in > 0 && sys_out > 0);
    let system = sys_in as f64 / 1e6 * SYSTEM_IN + sys_out as f64 / 1e6 * SYSTEM_OUT;

    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    let cost = &json["run"]["cost"];
    assert_eq!(cost["status"], "priced", "{cost}");
    assert_eq!(cost["currency"], "USD");
    assert_eq!(cost["system"]["input_tokens"], sys_in);
    assert_eq!(cost["system"]["output_tokens"], sys_out);
    assert_eq!(cost["system"]["answered_calls"], 20);
    assert!(
        close(cost["system"]["cost"].as_f64().unwrap(), system),
        "{cost}"
    );
    // The judges: 20 outputs judged, each call priced at the judge's price.
    let judges = &cost["judges"];
    assert_eq!(judges["answered_calls"], 20, "{cost}");
    let (j_in, j_out) = (
        judges["input_tokens"].as_u64().unwrap(),
        judges["output_tokens"].as_u64().unwrap(),
    );
    assert!(j_in > 0 && j_out > 0);
    let judge = j_in as f64 / 1e6 * JUDGE_IN + j_out as f64 / 1e6 * JUDGE_OUT;
    assert!(close(judges["cost"].as_f64().unwrap(), judge), "{cost}");
    let total = system + judge;
    assert!(close(cost["total"].as_f64().unwrap(), total), "{cost}");
    // Every call reported its usage: no coverage note.
    assert_eq!(cost["calls_with_usage"], cost["answered_calls"]);
    // The run's tokens are the same calls' tokens.
    assert_eq!(
        json["run"]["tokens"].as_u64().unwrap(),
        sys_in + sys_out + j_in + j_out
    );

    // Said the same way in text, markdown and HTML: total, then each part.
    let said = format!(
        "cost {} USD (system {}, judges {})",
        probity_core::cost::amount_text(total),
        probity_core::cost::amount_text(system),
        probity_core::cost::amount_text(judge)
    );
    for format in ["text", "markdown", "html"] {
        let r = report(d, "1", format);
        assert!(r.contains(&said), "{format}: no {said:?} in\n{r}");
        assert!(!r.contains("covers"), "{format}");
    }
    // `probity run` prints it too.
    assert!(text(&out.stdout).contains(&said), "{}", text(&out.stdout));
}

#[test]
fn a_guarded_run_says_what_its_retries_cost() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "[retry]\nattempts = 3\non = \"validators\"", "");
    let out = probity(d, &["run", "probity.toml"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    // The retries: attempts after the first that made an answered call.
    let (r_in, r_out): (i64, i64) = db(d)
        .query_row(
            "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM attempts
             WHERE run_id = 1 AND attempt > 1 AND error IS NULL AND call_attempts > 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        r_in > 0,
        "contractions = 0.3 leaves some first attempts failing"
    );
    let retries = r_in as f64 / 1e6 * SYSTEM_IN + r_out as f64 / 1e6 * SYSTEM_OUT;
    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    let cost = &json["run"]["cost"];
    assert!(
        close(cost["retries"]["cost"].as_f64().unwrap(), retries),
        "{cost}"
    );
    let system = cost["system"]["cost"].as_f64().unwrap();
    let said = format!(
        "retries cost {} USD of the system's {} ({:.0}%)",
        probity_core::cost::amount_text(retries),
        probity_core::cost::amount_text(system),
        100.0 * retries / system
    );
    for format in ["text", "markdown", "html"] {
        let r = report(d, "1", format);
        let said = match format {
            "html" => said.replace('\'', "&#39;"),
            _ => said.clone(),
        };
        assert!(r.contains(&said), "{format}: no {said:?} in\n{r}");
    }
}

#[test]
fn a_run_stored_before_usage_was_kept_has_no_cost_never_zero() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "", "");
    probity(d, &["run", "probity.toml"]);
    // The store as schema 14 left it: no usage column (its runs priced
    // by a configuration, as if written by hand before).
    db(d)
        .execute_batch("ALTER TABLE runs DROP COLUMN usage; PRAGMA user_version = 14;")
        .unwrap();
    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert_eq!(
        json["run"]["cost"]["status"], "not_recorded",
        "{}",
        json["run"]
    );
    assert!(json["run"]["cost"].get("total").is_none());
    for format in ["text", "markdown", "html"] {
        let r = report(d, "1", format);
        assert!(r.contains("cost not known"), "{format}:\n{r}");
        assert!(!r.contains("cost 0"), "{format}");
    }
    // The store was migrated (usage column back, NULL for the old run);
    // a new run is priced again.
    probity(d, &["run", "probity.toml"]);
    let json: Value = serde_json::from_str(&report(d, "2", "json")).unwrap();
    assert_eq!(json["run"]["cost"]["status"], "priced");
}

#[test]
fn calls_without_usage_are_said_not_free() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A command system: it reports no usage.
    std::fs::write(
        d.join("probity.toml"),
        r#"name = "unreported"
[system]
provider = "command"
command = ["cat"]
price = { input_per_million = 1, output_per_million = 1 }
[experiment]
outputs_per_input = 2
call_attempts = 1
[[validator]]
name = "short"
check = "len(output) < 1000"
[[input]]
text = "hello"
[[input]]
text = "world"
"#,
    )
    .unwrap();
    let out = probity(d, &["run", "probity.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = report(d, "1", "text");
    assert!(
        r.contains("cost 0 USD; covers 0 of 4 answered calls (4 reported no usage)"),
        "{r}"
    );
    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert_eq!(json["run"]["cost"]["calls_with_usage"], 0);
    assert_eq!(json["run"]["cost"]["answered_calls"], 4);
}

#[test]
fn a_bad_price_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "", "");
    // In the file: the file, the line and the field.
    for (price, says) in [
        (
            "{ input_per_million = -1, output_per_million = 1 }",
            "price.input_per_million = -1",
        ),
        (
            "{ input_per_million = 1, output_per_million = \"ten\" }",
            "invalid type",
        ),
        (
            "{ input_per_million = 1, output_per_million = 1, per_token = 1 }",
            "unknown field `per_token`",
        ),
        (
            "{ input_per_million = 1 }",
            "missing field `output_per_million`",
        ),
        (
            "{ input_per_million = 1, output_per_million = 1, currency = \"\" }",
            "price.currency",
        ),
    ] {
        std::fs::write(
            d.join("bad.toml"),
            format!("name = \"bad\"\n[system]\nprovider = \"sim\"\nprice = {price}\n[[validator]]\nname = \"v\"\ncheck = \"true\"\n[[input]]\ntext = \"hi\"\n"),
        )
        .unwrap();
        let out = probity(d, &["run", "bad.toml"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{price}: {err}");
        assert!(err.contains(says), "{price}: {err}");
        assert!(
            err.contains("bad.toml") && err.contains("line"),
            "{price}: {err}"
        );
    }
    // From `--set`: the argument and the field.
    for (set, says) in [
        (
            "system.price.input_per_million=-1",
            "price.input_per_million = -1",
        ),
        ("system.price.per_token=1", "unknown field `per_token`"),
    ] {
        let out = probity(d, &["run", "probity.toml", "--set", set]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(says) && err.contains(set), "{set}: {err}");
    }
    // Nothing was stored.
    assert!(common::json_runs(d).is_empty());
    // `--set` sets a price as a file does: the cost follows it.
    let out = probity(
        d,
        &[
            "run",
            "probity.toml",
            "--set",
            "system.price.input_per_million=0",
            "--set",
            "system.price.output_per_million=0",
        ],
    );
    assert!(
        text(&out.stdout).contains("cost 0 USD;"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn each_variant_is_priced_at_its_own_price() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "",
        "[[variant]]\nname = \"cheap\"\n[[variant]]\nname = \"dear\"\nsystem.price = { input_per_million = 25, output_per_million = 100 }\n",
    );
    // The text report names each variant's cost (runs 1 and 2).
    let out = probity(d, &["run", "probity.toml"]);
    let t = text(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    assert!(t.matches("cost ").count() >= 2, "{t}");
    // The JSON (runs 3 and 4): each at its own price.
    let out = probity(d, &["run", "probity.toml", "--format", "json"]);
    let v: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let variants = v["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    for (variant, run, (pin, pout)) in [
        (&variants[0], 3, (SYSTEM_IN, SYSTEM_OUT)),
        (&variants[1], 4, (25.0, 100.0)),
    ] {
        let (i, o) = sample_tokens(d, run);
        let want = i as f64 / 1e6 * pin + o as f64 / 1e6 * pout;
        let money = &variant["cost"]["money"];
        assert!(close(money["total"].as_f64().unwrap(), want), "{money}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_a_price_counts_cost_in_metrics_and_its_shutdown_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = d.join("guard.toml");
    std::fs::write(
        &config,
        r#"name = "live"
[upstream]
provider = "sim"
seed = 3
price = { input_per_million = 2.5, output_per_million = 10, currency = "EUR" }
[retry]
attempts = 2
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
"#,
    )
    .unwrap();
    let mut cmd = common::serve_cmd(d, &config);
    cmd.stderr(std::process::Stdio::piped());
    let guard = common::start(cmd);
    let base = format!("http://{}", guard.1);
    let client = reqwest::Client::new();
    for i in 0..5 {
        let r = client
            .post(format!("{base}/v1/chat/completions"))
            .json(&serde_json::json!({"model": "m", "messages": [{"role": "user", "content": format!("Tip {i}?")}]}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success() || r.status() == 422);
    }
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let counted: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("probity_cost_total{"))
        .map(|l| {
            assert!(l.contains("currency=\"EUR\""), "{l}");
            l.rsplit(' ').next().unwrap().parse::<f64>().unwrap()
        })
        .sum();
    let log = guard.stop_with_log();
    // The attempts' tokens as stored, at the price.
    let (i, o): (i64, i64) = db(d)
        .query_row(
            "SELECT SUM(input_tokens), SUM(output_tokens) FROM attempts WHERE error IS NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let want = i as f64 / 1e6 * 2.5 + o as f64 / 1e6 * 10.0;
    assert!(
        (counted - want).abs() < 1e-9,
        "{counted} vs {want}\n{metrics}"
    );
    let said = format!("cost {} EUR", probity_core::cost::amount_text(want));
    assert!(log.contains(&said), "no {said:?} in\n{log}");
    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert!(close(json["run"]["cost"]["total"].as_f64().unwrap(), want));
}

/// On PostgreSQL as on SQLite: the same seeded run stores the same usage,
/// so its report gives the same cost, judges apart.
#[test]
fn a_run_on_postgres_is_priced_as_on_sqlite() {
    let Some(db) = probity_engine::store::postgres::testing::TestDatabase::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "", JUDGE);
    probity(d, &["run", "probity.toml"]);
    let sqlite: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    let pg = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_probity"))
            .current_dir(d)
            .args(args)
            .env("PROBITY_STORE", db.url())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    pg(&["run", "probity.toml"]);
    let out = pg(&["report", "1", "--format", "json"]);
    let on_pg: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(on_pg["run"]["cost"]["status"], "priced");
    assert_eq!(on_pg["run"]["cost"], sqlite["run"]["cost"]);
}
