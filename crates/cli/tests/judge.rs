//! The judge cache from the command line (`probity run` twice, `probity
//! revalidate` with verifiers, `--no-calls`), and `probity serve`'s run
//! status across a kill and graceful shutdowns (SIGINT, SIGTERM).

use crate::common;

use common::{json_runs, probity, text};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

fn write_config(dir: &Path, file: &str, max_apostrophes: u32, instructions: &str) {
    let inputs: String = (0..3)
        .map(|i| format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    std::fs::write(
        dir.join(file),
        format!(
            r#"name = "judged"
[system]
provider = "sim"
contractions = 0.3
[experiment]
outputs_per_input = 4
call_attempts = 1

[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= {max_apostrophes}'''
minimum_success_percentage = 0.5

[[verifier]]
name = "judge"
instructions = "{instructions}"
minimum_success_percentage = 0.5

{inputs}"#
        ),
    )
    .unwrap();
}

const OUTPUTS: u64 = 3 * 4;

#[test]
fn rerun_and_revalidate_with_verifiers_use_the_judge_cache() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_config(d, "probity.toml", 3, "Be polite.");
    let first = probity(d, &["run", "--quiet", "--format", "json"]);
    assert!(
        matches!(first.status.code(), Some(0 | 1)),
        "{}",
        text(&first.stderr)
    );
    let again = probity(d, &["run", "--quiet", "--format", "json", "--reuse", "1"]);
    assert!(matches!(again.status.code(), Some(0 | 1)));
    let runs = json_runs(d);
    // One system call and one judge call per output, then none at all.
    assert_eq!(runs[1]["model_calls"], 2 * OUTPUTS, "{:?}", runs[1]);
    assert_eq!(runs[0]["model_calls"], 0, "{:?}", runs[0]);
    assert_eq!(runs[0]["cached"], OUTPUTS);

    // Changed validators, same verifier: no judge call.
    write_config(d, "loose.toml", 100, "Be polite.");
    let out = probity(d, &["revalidate", "1", "--config", "loose.toml"]);
    let err = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(
        err.contains(&format!(
            "judges: 0 calls, {OUTPUTS} judgements from the cache"
        )),
        "{err}"
    );
    assert_eq!(json_runs(d)[0]["model_calls"], 0);

    // Changed instructions, --no-calls: unjudged Error cells, a failing verdict.
    write_config(d, "terse.toml", 100, "Be terse.");
    let out = probity(
        d,
        &[
            "revalidate",
            "1",
            "--config",
            "terse.toml",
            "--no-calls",
            "--format",
            "json",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "judges: 0 calls, 0 judgements from the cache, {OUTPUTS} not judged"
        )),
        "{err}"
    );
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("JSON report");
    assert_eq!(report["checks"][1]["name"], "judge");
    // Nothing judged: no verdict (never a fail about the system).
    assert_eq!(
        report["checks"][1]["verdict"]["decision"], "inconclusive",
        "{report}"
    );
    let id = json_runs(d)[0]["id"].as_i64().unwrap();
    let store = probity_engine::store::Store::open(&d.join("runs.db")).unwrap();
    for s in store.samples(id).unwrap() {
        assert_eq!(s.cells[1], probity_core::Cell::Error);
        assert!(s
            .reasons
            .contains(&(1, "not judged: --no-calls".to_string())));
    }
    drop(store);

    // Changed instructions with calls: one judge call per output.
    let out = probity(d, &["revalidate", "1", "--config", "terse.toml"]);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "judges: {OUTPUTS} calls, 0 judgements from the cache"
        )),
        "{err}"
    );
    assert_eq!(json_runs(d)[0]["model_calls"], OUTPUTS);
}

struct Server {
    child: Child,
    addr: String,
    _stdout: BufReader<ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_probity"))
        .current_dir(dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--config", "guard.toml"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("address line: {line:?}"))
        .trim_end_matches("/v1")
        .to_string();
    // The port is bound before the run is created; /health answers once
    // the server (and its run) is up.
    let mut health = String::new();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.write_all(b"GET /health HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    conn.read_to_string(&mut health).unwrap();
    assert!(health.contains("200"), "{health}");
    Server {
        child,
        addr,
        _stdout: stdout,
    }
}

/// Send `signal` (INT, TERM) with `kill` and wait for the server's exit code.
fn stop(mut server: Server, signal: &str) -> Option<i32> {
    let pid = server.child.id().to_string();
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(status.success());
    server.child.wait().unwrap().code()
}

fn status_of(dir: &Path, id: i64) -> String {
    json_runs(dir)
        .into_iter()
        .find(|r| r["id"] == id)
        .map(|r| r["status"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_marks_its_run_complete_on_shutdown_and_killed_runs_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("guard.toml"),
        "name = \"live\"\n[upstream]\nprovider = \"sim\"\n[retry]\nattempts = 2\n[[validator]]\nname = \"short\"\ncheck = '''len(output) < 100000'''\n",
    )
    .unwrap();

    // Killed outright: its run stays "running" in the store (read
    // directly: `probity runs` would mark it interrupted, its process gone).
    let killed = serve(d);
    drop(killed);
    let store = probity_engine::store::Store::open(&d.join("runs.db")).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, probity_engine::store::RunStatus::Running);
    let killed_id = runs[0].id;
    drop(store);

    // The next server marks it interrupted; SIGINT completes its own run.
    let server = serve(d);
    assert_eq!(status_of(d, killed_id), "interrupted");
    let r = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", server.addr))
        .json(&serde_json::json!({"messages": [{"role": "user", "content": "Thank you!"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(stop(server, "INT"), Some(0));
    let runs = json_runs(d);
    assert_eq!(runs[0]["status"], "complete", "{:?}", runs[0]);
    assert_eq!(runs[0]["inputs"], 1, "{:?}", runs[0]);
    assert_eq!(status_of(d, killed_id), "interrupted");

    // SIGTERM too.
    let server = serve(d);
    assert_eq!(stop(server, "TERM"), Some(0));
    let runs = json_runs(d);
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["status"], "complete", "{:?}", runs[0]);
}

async fn ask(client: &reqwest::Client, addr: &str, text: &str) -> u16 {
    client
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&serde_json::json!({"messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn write_guard(dir: &Path) {
    std::fs::write(
        dir.join("guard.toml"),
        "name = \"live\"\n[upstream]\nprovider = \"sim\"\n[[validator]]\nname = \"short\"\ncheck = '''len(output) < 100000'''\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_store_each_record_their_own_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_guard(d);
    let (a, b) = (serve(d), serve(d));
    // The second replica's start left the first one's run alone.
    let runs = json_runs(d);
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["status"] == "running"), "{runs:?}");
    let client = reqwest::Client::new();
    for i in 0..12 {
        let server = if i % 3 == 0 { &a } else { &b };
        assert_eq!(
            ask(&client, &server.addr, &format!("Thank you {i}!")).await,
            200
        );
    }
    assert_eq!(stop(a, "TERM"), Some(0));
    assert_eq!(stop(b, "TERM"), Some(0));
    let runs = json_runs(d);
    let mut inputs: Vec<i64> = runs.iter().map(|r| r["inputs"].as_i64().unwrap()).collect();
    inputs.sort();
    assert_eq!(inputs, [4, 8], "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "complete"), "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_keeps_what_it_answered_before_the_commit_window() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_guard(d);
    let server = serve(d);
    let client = reqwest::Client::new();
    for i in 0..20 {
        assert_eq!(
            ask(&client, &server.addr, &format!("Thank you {i}!")).await,
            200
        );
    }
    // Past the commit window (probity_engine::serve::COMMIT_EVERY, 50 ms)
    // every answered request is stored, even under kill -9.
    tokio::time::sleep(probity_engine::serve::COMMIT_EVERY * 4).await;
    drop(server);
    // Listed after the kill: interrupted (its process is gone), every
    // answered request kept.
    let runs = json_runs(d);
    assert_eq!(runs[0]["status"], "interrupted", "{:?}", runs[0]);
    assert_eq!(runs[0]["inputs"], 20, "{:?}", runs[0]);
    let store = probity_engine::store::Store::open(&d.join("runs.db")).unwrap();
    assert_eq!(
        store
            .samples(runs[0]["id"].as_i64().unwrap())
            .unwrap()
            .len(),
        20
    );
}
