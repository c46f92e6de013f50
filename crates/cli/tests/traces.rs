//! `probity traces import` and `probity collect` (issue 37), on traces real
//! instrumentations wrote (crates/engine/src/traces/fixtures/README.md):
//! every span accounted for (mapped, or counted by reason), the run read by
//! `report` and `export` like any other, bad input named with nothing
//! stored, and the receiver's back-pressure.

use crate::common;

use common::{probity, probity_cmd, start, text};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engine/src/traces/fixtures")
        .join(name)
}

const CHECKS: &str = r#"
name = "prod"
[[validator]]
name = "short"
check = '''output.len() < 2000'''
minimum_success_percentage = 0.5

[[validator]]
name = "no_tool_calls"
check = '''!output.contains("\"type\":\"function\"")'''
"#;

fn config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("traces.toml");
    std::fs::write(&path, format!("{extra}\n{CHECKS}")).unwrap();
    path
}

fn jsonl(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn imported_spans_are_mapped_checked_and_exported_as_tests() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    config(d, "");
    let files: Vec<String> = [
        "v2_content.jsonl",
        "oi_protojson.jsonl",
        "llmetry_old.jsonl",
        "v2_nocontent.jsonl",
        "llmetry_nocontent.jsonl",
    ]
    .iter()
    .map(|f| fixture(f).display().to_string())
    .collect();
    let mut args = vec!["traces", "import", "--config", "traces.toml"];
    args.extend(files.iter().map(String::as_str));
    let out = probity(d, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(
        summary.contains("15 spans read, 9 mapped and checked"),
        "{summary}"
    );
    assert!(summary.contains("3 no_content (genai)"), "{summary}");
    assert!(summary.contains("3 no_content (openllmetry)"), "{summary}");
    // The run is a run: listed complete, with one input per mapped span.
    let runs = common::json_runs(d);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "complete");
    let id = runs[0]["id"].to_string();
    let report = probity(d, &["report", &id]);
    assert!(
        matches!(report.status.code(), Some(0 | 1)),
        "{}",
        text(&report.stderr)
    );
    assert!(text(&report.stdout).contains("no_tool_calls"));
    // Every span of all three conventions, whole.
    let out = probity(d, &["export", &id, "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = jsonl(&text(&out.stdout));
    // The same three requests by three instrumentations: the conversations
    // are equal, and kept once each with a count of 3 — except the tool
    // call answer's id, which differs per call and is not part of the input.
    assert_eq!(rows.len(), 3, "{rows:#?}");
    for r in &rows {
        assert_eq!(r["count"], json!(3));
        assert_eq!(r["trace_ids"].as_array().unwrap().len(), 3);
    }
    assert_eq!(
        rows[2]["messages"],
        json!([
            {"role": "user", "content": "weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
              "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "content": "12 C, rain", "tool_call_id": "call_1"}
        ])
    );
    // Only the span whose answer was a tool call fails no_tool_calls.
    let failing = probity(d, &["export", &id]);
    let failing = jsonl(&text(&failing.stdout));
    assert_eq!(failing.len(), 1, "{failing:#?}");
    assert_eq!(failing[0]["text"], json!("weather?"));
    assert_eq!(failing[0]["failed_checks"], json!(["no_tool_calls"]));
    assert_eq!(failing[0]["count"], json!(3));
}

#[test]
fn a_bad_line_is_named_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    config(d, "");
    let good = std::fs::read_to_string(fixture("v2_content.jsonl")).unwrap();
    let bad = d.join("bad.jsonl");
    let broken = good
        .lines()
        .next()
        .unwrap()
        .replacen("\"traceId\":\"", "\"traceId\":\"zz", 1);
    std::fs::write(&bad, format!("{good}\n{broken}\n")).unwrap();
    let out = probity(
        d,
        &["traces", "import", "--config", "traces.toml", "bad.jsonl"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.jsonl line 5")
            && err.contains("traceId")
            && err.contains("neither hex nor base64"),
        "{err}"
    );
    std::fs::write(&bad, "{\"resourceSpans\": 3}\n").unwrap();
    let out = probity(
        d,
        &["traces", "import", "--config", "traces.toml", "bad.jsonl"],
    );
    assert!(text(&out.stderr).contains("bad.jsonl line 1: resourceSpans: a number is not a list"));
    assert!(!d.join("runs.db").exists() || common::json_runs(d).is_empty());
    // A typo in a check is the configuration's error, named.
    std::fs::write(
        d.join("typo.toml"),
        "[[validator]]\nname = \"x\"\ncheck = '''outptu.len() < 3'''\n",
    )
    .unwrap();
    let out = probity(
        d,
        &[
            "traces",
            "import",
            "--config",
            "typo.toml",
            &fixture("v2_content.jsonl").display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("typo.toml"),
        "{}",
        text(&out.stderr)
    );
}

/// `probity collect` on a free port with `dir/traces.toml`.
fn collect(dir: &Path) -> common::Server {
    let mut cmd = probity_cmd();
    cmd.current_dir(dir)
        .args([
            "collect",
            "--config",
            "traces.toml",
            "--listen",
            "127.0.0.1:0",
            "--store",
        ])
        .arg(dir.join("runs.db"))
        .stderr(std::process::Stdio::piped());
    let mut server = start(cmd);
    server.1 = server
        .1
        .trim_end_matches("/traces")
        .trim_end_matches("/v1")
        .to_string();
    server
}

async fn metric(addr: &str, line_start: &str) -> Option<f64> {
    let text = common::metrics(addr).await;
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collect_takes_otlp_json_and_gzip_and_counts_what_it_cannot_map() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    config(d, "");
    let server = collect(d);
    let addr = server.1.clone();
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/traces");
    let body = std::fs::read_to_string(fixture("v2_content.jsonl")).unwrap();
    for line in body.lines() {
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .body(line.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "{}");
    }
    // gzip, as the collector's exporters send it.
    let nocontent = std::fs::read_to_string(fixture("v2_nocontent.jsonl")).unwrap();
    let mut gz = flate2_gzip(nocontent.lines().next().unwrap().as_bytes());
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(std::mem::take(&mut gz))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Not OTLP: 400 naming the field; an unknown encoding: 415.
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .body(r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"00"}]}]}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("resourceSpans[0].scopeSpans[0].spans[0]: no traceId"));
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .header("content-encoding", "br")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let mut mapped = None;
    for _ in 0..100 {
        mapped = metric(&addr, "probity_traces_mapped_total").await;
        if mapped == Some(3.0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(mapped, Some(3.0));
    assert_eq!(
        metric(
            &addr,
            "probity_traces_unmapped_total{reason=\"no_content\",convention=\"genai\"}"
        )
        .await,
        Some(1.0)
    );
    assert_eq!(
        metric(&addr, "probity_traces_malformed_exports_total").await,
        Some(2.0)
    );
    let log = server.stop_with_log();
    assert!(log.contains("3 mapped and checked"), "{log}");
    let runs = common::json_runs(d);
    assert_eq!(runs[0]["status"], "complete");
}

/// A gzip stream of `bytes` (stored blocks: no compressor needed), with
/// its CRC-32 — so the test needs no compression crate of its own.
fn flate2_gzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let chunks: Vec<&[u8]> = bytes.chunks(65535).collect();
    for (i, c) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = c.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*c);
    }
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    out.extend((!crc).to_le_bytes());
    out.extend((bytes.len() as u32).to_le_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_cannot_keep_up_answers_429_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A check that takes a second per output, and room for one span.
    std::fs::write(
        d.join("slow.py"),
        "import json, sys, time\nfor line in sys.stdin:\n    time.sleep(1)\n    print(json.dumps({\"verdict\": \"pass\"}), flush=True)\n",
    )
    .unwrap();
    std::fs::write(
        d.join("traces.toml"),
        "max_pending_spans = 1\n[[validator]]\nname = \"slow\"\nkind = \"program\"\ncommand = [\"python3\", \"slow.py\"]\nprocesses = 1\n",
    )
    .unwrap();
    let server = collect(d);
    let url = format!("http://{}/v1/traces", server.1);
    let client = reqwest::Client::new();
    let line = std::fs::read_to_string(fixture("v2_content.jsonl")).unwrap();
    let line = line.lines().next().unwrap().to_string();
    let post = || {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(line.clone())
            .send()
    };
    assert_eq!(post().await.unwrap().status(), 200);
    let r = post().await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    assert_eq!(
        metric(&server.1, "probity_traces_throttled_exports_total").await,
        Some(1.0)
    );
    // Once checked, the room is back.
    let mut status = 429;
    for _ in 0..60 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        status = post().await.unwrap().status().as_u16();
        if status == 200 {
            break;
        }
    }
    assert_eq!(status, 200);
    let log = server.stop_with_log();
    // Both spans taken were checked before the run closed.
    assert!(log.contains("2 mapped and checked"), "{log}");
}
