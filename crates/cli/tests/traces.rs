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

/// `n` GenAI v1.37 chat spans in one OTLP JSON line; every fifth answer
/// uses contractions (five apostrophes: the simulator's judge and the
/// contraction validator both fail it), so exactly a fifth fail.
fn contraction_spans(n: usize) -> String {
    let kv = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let spans: Vec<Value> = (0..n)
        .map(|i| {
            let answer = if i % 5 == 0 {
                "It isn't hard: you'll see it's there, and it's quick, isn't it."
            } else {
                "Open the settings and choose reset."
            };
            let input = json!([{"role": "user", "parts": [{"type": "text", "content": format!("Question {i}: how do I reset my password?")}]}]);
            let output = json!([{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]);
            json!({"traceId": format!("{:032x}", i + 1), "spanId": format!("{:016x}", i + 1), "name": "chat m",
                "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000500000000",
                "attributes": [kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "m"),
                    kv("gen_ai.input.messages", &input.to_string()), kv("gen_ai.output.messages", &output.to_string())]})
        })
        .collect();
    json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string()
}

const JUDGED: &str = r#"
[[validator]]
name = "contractions"
check = '''count(output, "'") <= 3'''

[[verifier]]
name = "judge"
instructions = "Write words out in full."
[verifier.system]
provider = "sim"
"#;

/// The judged spans of an imported run: (judged, not judged, judged and
/// failed by the judge), from `probity export --all`, each judged span's
/// verdict checked against the validator's (the same rule).
fn judged_rows(d: &Path) -> (usize, usize, usize) {
    let id = common::json_runs(d)[0]["id"].to_string();
    let out = probity(d, &["export", &id, "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (mut judged, mut not, mut failed) = (0, 0, 0);
    for r in jsonl(&text(&out.stdout)) {
        assert_eq!(r["count"], json!(1), "{r}");
        let fails: Vec<&str> = r["failed_checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        if r["judged"] == json!(true) {
            judged += 1;
            let by_judge = fails.contains(&"judge");
            assert_eq!(by_judge, fails.contains(&"contractions"), "{r}");
            failed += usize::from(by_judge);
        } else {
            assert_eq!(r["judged"], json!(false), "{r}");
            assert!(!fails.contains(&"judge"), "{r}");
            not += 1;
        }
    }
    (judged, not, failed)
}

#[test]
fn judges_see_a_random_share_of_the_spans_and_the_sample_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 2000;
    std::fs::write(d.join("spans.jsonl"), contraction_spans(n)).unwrap();
    std::fs::write(
        d.join("traces.toml"),
        format!("name = \"sampled\"\njudge_share = 0.25\n{JUDGED}"),
    )
    .unwrap();
    let out = probity(
        d,
        &["traces", "import", "--config", "traces.toml", "spans.jsonl"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    let (judged, not, failed) = judged_rows(d);
    assert_eq!(judged + not, n);
    assert!(
        summary.contains(&format!(
            "judged: {judged} (a random sample: judge_share), not judged: {not} outside the sample, 0 over"
        )),
        "{summary}"
    );
    // Binomial(2000, 0.25): mean 500, sd 19.4; five sd either side.
    assert!((judged as f64 - 500.0).abs() < 5.0 * 19.37, "{judged}");
    // The sample is drawn blind to the content: the judge's failure rate
    // on it estimates the population's 0.2 without bias. Given the sample's
    // size m, its failures are hypergeometric (N = 2000, K = 400): sd
    // sqrt(m p (1-p) (N-m)/(N-1)), about 0.0155 as a share at m = 500.
    let m = judged as f64;
    let sd = (m * 0.2 * 0.8 * (2000.0 - m) / 1999.0).sqrt();
    assert!(
        (failed as f64 - 0.2 * m).abs() < 5.0 * sd,
        "{failed} of {judged}"
    );
    // One judge call per judged span, and none for the others.
    let runs = common::json_runs(d);
    assert_eq!(runs[0]["judge_calls"], json!(judged), "{}", runs[0]);
}

#[test]
fn a_judge_budget_caps_the_calls_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spans.jsonl"), contraction_spans(300)).unwrap();
    std::fs::write(
        d.join("traces.toml"),
        format!("judge_budget_per_hour = 40\n{JUDGED}"),
    )
    .unwrap();
    let out = probity(
        d,
        &["traces", "import", "--config", "traces.toml", "spans.jsonl"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(
        summary.contains("judged: 40 (a random sample: judge_share), not judged: 0 outside the sample, 260 over judge_budget_per_hour"),
        "{summary}"
    );
    assert!(summary.contains("leave out the later spans"), "{summary}");
    let (judged, not, _) = judged_rows(d);
    assert_eq!((judged, not), (40, 260));
    // A share out of range, or one with no judge to apply to, is refused
    // with the file and the key named.
    for (body, says) in [
        (format!("judge_share = 1.5\n{JUDGED}"), "judge_share = 1.5"),
        (
            format!("judge_budget_per_hour = 0\n{JUDGED}"),
            "judge_budget_per_hour = 0",
        ),
        (
            format!("judge_share = 0.5\n{CHECKS}"),
            "apply to [[verifier]]s, and there is none",
        ),
    ] {
        std::fs::write(d.join("bad.toml"), body).unwrap();
        let out = probity(
            d,
            &["traces", "import", "--config", "bad.toml", "spans.jsonl"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("bad.toml") && err.contains(says), "{err}");
    }
}
