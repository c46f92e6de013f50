//! Servers on a laptop (issue 39, item 3): `concurrency = "auto"` against
//! a stand-in (`probity sim serve --slots N`) that answers one request at
//! a time, and against one answering all at once; where it settled is
//! stored with the run and said by every report format.

use crate::common;

use common::{probity, sim_serve, text};
use serde_json::Value;
use std::path::Path;

/// `n` inputs × `m` outputs from the stand-in at `addr`, concurrency auto.
fn write_config(dir: &Path, addr: &str, n: usize, m: usize) {
    let inputs: String = (0..n)
        .map(|i| format!("[[input]]\nid = \"q{i}\"\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    let cfg = format!(
        r#"name = "auto"
[system]
provider = "openai"
base_url = "http://{addr}/v1"
model = "sim"
[experiment]
outputs_per_input = {m}
concurrency = "auto"
[[validator]]
name = "not_empty"
kind = "length"
min = 1
{inputs}"#
    );
    std::fs::write(dir.join("probity.toml"), cfg).unwrap();
}

/// Run the file in `dir`; the stored run's `run.calls` (JSON report).
fn run_auto(dir: &Path) -> Value {
    let out = probity(dir, &["run", "-q"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = probity(dir, &["report", "1", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    report["run"]["calls"].clone()
}

#[test]
fn auto_concurrency_settles_at_one_or_two_on_a_one_at_a_time_server() {
    let server = sim_serve(&["--slots", "1", "--latency-ms", "20"]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server.1, 10, 4);
    let calls = run_auto(dir.path());
    let auto = &calls["auto_concurrency"];
    assert_eq!(auto["settled"], true, "{calls}");
    let chosen = auto["chosen"].as_u64().unwrap();
    assert!((1..=2).contains(&chosen), "{calls}");
    // 1, then 2 — which bought no throughput — at most one step more.
    let tried = auto["tried"].as_array().unwrap();
    assert!((2..=3).contains(&tried.len()), "{calls}");
    assert_eq!(calls["processes"], 1);
    assert!(calls["call_s"].as_f64().unwrap() > 0.0, "{calls}");
    // Every format says it, the stored run's report as much as the run's.
    let said = format!("concurrency auto: {chosen} at a time");
    for format in ["text", "markdown", "html"] {
        let out = probity(dir.path(), &["report", "1", "--format", format]);
        let page = text(&out.stdout);
        assert!(page.contains(&said), "{format}:\n{page}");
        assert!(page.contains("wall "), "{format}:\n{page}");
    }
}

#[test]
fn auto_concurrency_climbs_on_a_server_answering_all_at_once() {
    let server = sim_serve(&["--latency-ms", "100"]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server.1, 50, 4);
    let calls = run_auto(dir.path());
    let auto = &calls["auto_concurrency"];
    let chosen = auto["chosen"].as_u64().unwrap();
    assert!(chosen >= 8, "{calls}");
    assert_eq!(auto["most"], 32, "{calls}");
}
