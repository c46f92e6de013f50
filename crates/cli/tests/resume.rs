//! Kill -9 in the middle of a run, then resume: nothing stored is lost and
//! nothing stored is asked for again — counted at the simulator, which runs
//! as `probity sim serve` on 127.0.0.1 and is reached through the
//! OpenAI-compatible provider.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn probity() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probity"));
    c.env("NO_COLOR", "1");
    c
}

/// Start `probity sim serve` on a free port; returns it with its address.
fn sim_serve(args: &[&str]) -> Server {
    let mut child = probity()
        .args(["sim", "serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("address line")
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    Server(child, addr)
}

/// `GET /stats` at the simulator: how many requests it has seen.
fn requests(addr: &str) -> u64 {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let json = &body[body.find("\r\n\r\n").unwrap() + 4..];
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    v["requests"].as_u64().unwrap()
}

fn write_config(dir: &Path, addr: &str) {
    let cfg = probity_engine::example::CONFIG
        .replace(
            "[system]\nprovider = \"sim\"\nseed = 42\ncontractions = 0.10\nomit_welcome = 0.15\n",
            &format!("[system]\nprovider = \"openai\"\nmodel = \"sim\"\nbase_url = \"http://{addr}/v1\"\nseed = 1\n"),
        )
        .replace("concurrency = 16", "concurrency = 4");
    assert!(cfg.contains("provider = \"openai\""));
    std::fs::write(dir.join("probity.toml"), cfg).unwrap();
    std::fs::write(dir.join("inputs.jsonl"), probity_engine::example::INPUTS).unwrap();
}

fn report(dir: &Path, run: &str) -> Value {
    let out = probity()
        .current_dir(dir)
        .args(["report", run, "--format", "json", "--store", "runs.db"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn kill_nine_then_resume_loses_nothing_and_asks_nothing_twice() {
    // 20 ms a request, 4 at a time: the 400 samples take about 2 s.
    let server = sim_serve(&["--latency-ms", "20"]);
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &server.1);

    let mut run = probity()
        .current_dir(dir.path())
        .args(["run", "--quiet", "--store", "runs.db"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while requests(&server.1) < 120 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    run.kill().unwrap(); // SIGKILL: no chance to clean up.
    run.wait().unwrap();

    let killed = report(dir.path(), "1");
    assert_eq!(killed["run"]["complete"], false);
    let missing_cells = killed["counts"]["missing"].as_u64().unwrap();
    assert_eq!(
        missing_cells % 2,
        0,
        "a sample's two cells are stored together"
    );
    let missing = missing_cells / 2;
    let stored = 400 - missing;
    assert!(
        stored >= 100 && missing > 0,
        "stored {stored}, missing {missing}"
    );

    let before = requests(&server.1);
    let out = probity()
        .current_dir(dir.path())
        .args([
            "run", "--resume", "--quiet", "--store", "runs.db", "--format", "json",
        ])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exactly the missing samples were requested: none of the stored ones.
    assert_eq!(requests(&server.1) - before, missing);
    let resumed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(resumed["run"]["id"], 1);
    assert_eq!(resumed["run"]["complete"], true);
    assert_eq!(resumed["counts"]["missing"], 0);
    assert_eq!(resumed["checks"][0]["rate"]["n"], 400);
}
