//! `probity export`: a run's failing inputs as an inputs file that
//! `probity run` reads — from a test run and from live traffic.

use crate::common;

use common::{probity, probity_cmd, start, text};
use probity_core::Cell;
use probity_engine::store::Store;
use serde_json::Value;
use std::collections::BTreeSet;

fn rows(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_test_runs_failing_inputs_become_a_regression_inputs_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    let out = probity(d, &["export", "1", "--out", "failing.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported = rows(&std::fs::read_to_string(d.join("failing.jsonl")).unwrap());

    // The inputs with a failed or erred cell, read from the store.
    let store = Store::open(&d.join("runs.db")).unwrap();
    let inputs = store.inputs(1).unwrap();
    let failing: BTreeSet<String> = store
        .samples(1)
        .unwrap()
        .iter()
        .filter(|s| {
            s.cells
                .iter()
                .any(|c| matches!(c, Cell::Fail | Cell::Error))
        })
        .map(|s| inputs[s.input_idx].id.clone())
        .collect();
    assert!(!failing.is_empty() && failing.len() < inputs.len());
    let ids: BTreeSet<String> = exported
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, failing);
    for r in &exported {
        assert!(r["text"].is_string(), "{r}");
        let checks = r["failed_checks"].as_array().unwrap();
        assert!(!checks.is_empty(), "{r}");
        assert!(
            r["reasons"].as_array().is_some_and(|a| !a.is_empty()),
            "{r}"
        );
        assert_eq!(r["source_run"], 1);
    }
    // --all: every input.
    let all = probity(d, &["export", "1", "--all"]);
    assert_eq!(rows(&text(&all.stdout)).len(), inputs.len());

    // `probity run` reads it as its inputs.
    let cfg = std::fs::read_to_string(d.join("probity.toml"))
        .unwrap()
        .replace("inputs = \"inputs.jsonl\"", "inputs = \"failing.jsonl\"");
    std::fs::write(d.join("regression.toml"), cfg).unwrap();
    let out = probity(d, &["run", "regression.toml", "--quiet"]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let runs = common::json_runs(d);
    assert_eq!(runs[0]["inputs"], failing.len(), "{:?}", runs[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_requests_that_failed_are_exported_with_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("guard.toml"),
        "name = \"live\"\n[upstream]\nprovider = \"sim\"\n[retry]\nattempts = 2\n[[validator]]\nname = \"no_roses\"\nmessage = \"Do not talk about roses\"\ncheck = '''!output.contains(\"roses\")'''\n",
    )
    .unwrap();
    let mut cmd = probity_cmd();
    cmd.current_dir(d)
        .args(["serve", "--listen", "127.0.0.1:0", "--config", "guard.toml"])
        .env("PROBITY_STORE", d.join("runs.db"));
    let server = start(cmd);
    let client = reqwest::Client::new();
    for text in [
        "How do I prune roses?",
        "How do I water basil?",
        "Are roses hardy?",
    ] {
        client
            .post(format!("http://{}/v1/chat/completions", server.1))
            .json(&serde_json::json!({"messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": text}]}))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(server.stop("TERM"), Some(0));
    let out = probity(d, &["export", "live"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported = rows(&text(&out.stdout));
    // The sim repeats the question's topic: both rose requests fail, on
    // every attempt; the basil one passes.
    let texts: Vec<&str> = exported
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["How do I prune roses?", "Are roses hardy?"]);
    for r in &exported {
        assert_eq!(r["failed_checks"], serde_json::json!(["no_roses"]));
        assert_eq!(r["published"], false);
        assert_eq!(r["messages"][0]["role"], "system");
        assert_eq!(r["messages"][1]["content"], r["text"]);
        assert!(
            r["reasons"].to_string().contains("Do not talk about roses"),
            "{r}"
        );
    }
}

/// `--since`: every run of the name created since a time, each row naming
/// its run; a malformed time is a usage error naming the flag.
#[test]
fn since_exports_every_run_of_the_name_since_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    for _ in 0..2 {
        assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    }
    let out = probity(
        d,
        &[
            "export",
            "polite-assistant",
            "--all",
            "--since",
            "2000-01-01",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported = rows(&text(&out.stdout));
    assert_eq!(exported.len(), 40);
    let runs: BTreeSet<i64> = exported
        .iter()
        .map(|r| r["source_run"].as_i64().unwrap())
        .collect();
    assert_eq!(runs, BTreeSet::from([1, 2]));
    let later = probity(
        d,
        &["export", "1", "--all", "--since", "2999-01-01T00:00:00Z"],
    );
    assert_eq!(later.status.code(), Some(0));
    assert_eq!(text(&later.stdout), "");
    let bad = probity(d, &["export", "1", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--since \"yesterday\""),
        "{}",
        text(&bad.stderr)
    );
}

/// The export/replay round trip of a conversation: a four-message
/// conversation with a tool call, served by the guard, is exported whole,
/// and `probity run` on the export sends it whole — what the system under
/// test read (written down by the program itself) is what the client
/// sent, message for message. The judge is shown it whole too. A provider
/// that cannot carry it refuses it by input and message, never passing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_conversation_is_exported_and_replayed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let conversation = serde_json::json!([
        {"role": "user", "content": "Book me seat 4A on the 9:15 to Lyon."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "book_seat", "arguments": "{\"seat\":\"4A\",\"train\":\"9:15\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"booked\":true,\"car\":7}"},
        {"role": "user", "content": "And in French?"}
    ]);
    std::fs::write(
        d.join("guard.toml"),
        "name = \"live\"\n[upstream]\nprovider = \"sim\"\n[[validator]]\nname = \"any\"\ncheck = \"true\"\n",
    )
    .unwrap();
    let mut cmd = probity_cmd();
    cmd.current_dir(d)
        .args(["serve", "--listen", "127.0.0.1:0", "--config", "guard.toml"])
        .env("PROBITY_STORE", d.join("runs.db"));
    let server = start(cmd);
    let status = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", server.1))
        .json(&serde_json::json!({"messages": conversation}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert_eq!(server.stop("TERM"), Some(0));

    let out = probity(d, &["export", "live", "--all", "--out", "chats.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported = rows(&std::fs::read_to_string(d.join("chats.jsonl")).unwrap());
    assert_eq!(exported.len(), 1);
    assert_eq!(exported[0]["messages"], conversation);
    assert_eq!(exported[0]["text"], "And in French?");

    // The system under test and the judge write down what they read.
    let system = "f=$(mktemp got.XXXXXX); cat > \"$f\"; echo 'Réservé.'";
    let judge =
        "f=$(mktemp judged.XXXXXX); cat > \"$f\"; echo '{\"verdict\": \"PASS\", \"reasons\": []}'";
    let config = |stdin: &str| {
        format!(
            "name = \"replay\"\n[system]\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", {system:?}]\nstdin = \"{stdin}\"\n\
             [prompt]\nsystem = \"You book trains.\"\n\
             [experiment]\ninputs = \"chats.jsonl\"\noutputs_per_input = 2\n\
             [[validator]]\nname = \"any\"\ncheck = \"true\"\n\
             [[verifier]]\nname = \"french\"\ninstructions = \"PASS when the answer is in French.\"\n\
             [verifier.system]\nprovider = \"command\"\ncommand = [\"sh\", \"-c\", {judge:?}]\nstdin = \"json\"\n"
        )
    };
    std::fs::write(d.join("replay.toml"), config("json")).unwrap();
    let out = probity(d, &["run", "replay.toml", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let read = |prefix: &str| -> Vec<Value> {
        let mut got: Vec<Value> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect();
        got.sort_by_key(|v| v.to_string());
        got
    };
    let got = read("got.");
    assert_eq!(got.len(), 2, "one call per output");
    for g in &got {
        // The conversation has no system message: `[prompt] system` comes first.
        let mut expected =
            vec![serde_json::json!({"role": "system", "content": "You book trains."})];
        expected.extend(conversation.as_array().unwrap().iter().cloned());
        assert_eq!(g["messages"], Value::Array(expected));
    }
    let judged = read("judged.");
    assert_eq!(judged.len(), 2);
    let shown = judged[0]["messages"][1]["content"].as_str().unwrap();
    for part in [
        "<message index=\"1\" role=\"assistant\">\n<tool_call id=\"call_1\" name=\"book_seat\">\n{&quot;seat&quot;:&quot;4A&quot;,&quot;train&quot;:&quot;9:15&quot;}\n</tool_call>",
        "<message index=\"2\" role=\"tool\" tool_call_id=\"call_1\">",
        "<message index=\"3\" role=\"user\">\nAnd in French?\n</message>",
        "<output>\nRéservé.\n</output>",
    ] {
        assert!(shown.contains(part), "{part} not in {shown}");
    }

    // A provider that has room for text only refuses the conversation,
    // naming the input and the message: no output, no verdict, exit 3.
    std::fs::write(d.join("prompt.toml"), config("prompt")).unwrap();
    let out = probity(d, &["run", "prompt.toml", "--quiet"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot send input \"request-1\": message 2 (assistant): stdin = \"prompt\" sends text only"),
        "{err}"
    );
}
