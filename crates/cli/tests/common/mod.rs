//! Running the `probity` binary as a user does, shared by the CLI tests.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// `probity ARGS` in `dir`, with the run store in `dir/runs.db` and no colour.
pub fn probity(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_probity"))
        .current_dir(dir)
        .args(args)
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run probity")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `probity runs --json` in `dir`: the stored runs, newest first.
pub fn json_runs(dir: &Path) -> Vec<Value> {
    let out = probity(dir, &["runs", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `probity sim serve` child process and its address; killed on drop.
pub struct Server(pub Child, pub String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    /// Send `signal` (`TERM`, `INT`) with `kill` and wait for the exit code.
    pub fn stop(mut self, signal: &str) -> Option<i32> {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.0.wait().unwrap().code()
    }

    /// Stop with SIGTERM; what the server wrote on standard error (which
    /// must have been piped).
    #[allow(dead_code)]
    pub fn stop_with_log(mut self) -> String {
        use std::io::Read;
        let mut stderr = self.0.stderr.take().expect("stderr piped");
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
        let mut log = String::new();
        stderr.read_to_string(&mut log).unwrap();
        log
    }
}

/// The `probity` binary as a command, without colour.
pub fn probity_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probity"));
    c.env("NO_COLOR", "1");
    c
}

/// `probity serve` on a free port with the guard file `config`, its run
/// store in `dir/runs.db` (start it with [`start`]).
#[allow(dead_code)] // not every test binary starts a guard
pub fn serve_cmd(dir: &Path, config: &Path) -> Command {
    let mut cmd = probity_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .arg("--store")
        .arg(dir.join("runs.db"));
    cmd
}

/// Start `probity sim serve` on a free port; returns it with its address.
pub fn sim_serve(args: &[&str]) -> Server {
    let mut cmd = probity_cmd();
    cmd.args(["sim", "serve", "--listen", "127.0.0.1:0"])
        .args(args);
    start(cmd)
}

/// Start a server command (`probity sim serve`, `probity serve`) whose
/// first line on stdout is `listening on http://ADDR/v1`; returns it with
/// its `ADDR`.
pub fn start(mut cmd: Command) -> Server {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("address line: {line:?}"))
        .trim_end_matches("/v1")
        .to_string();
    Server(child, addr)
}

/// `GET /stats` at the simulator: how many requests it has seen.
pub fn requests(addr: &str) -> u64 {
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

/// Pin the simulator of `dir/probity.toml` (as `probity init` wrote it)
/// to `seed`, so the test's runs are reproducible: unpinned, every run
/// samples afresh.
pub fn pin_seed(dir: &Path, seed: u64) {
    let path = dir.join("probity.toml");
    let cfg = std::fs::read_to_string(&path).unwrap();
    let pinned = cfg.replacen(
        "[system]\nprovider = \"sim\"\n",
        &format!("[system]\nprovider = \"sim\"\nseed = {seed}\n"),
        1,
    );
    assert_ne!(pinned, cfg, "no simulator to pin in {}", path.display());
    std::fs::write(&path, pinned).unwrap();
}

/// `GET /metrics` of the server at `addr` (`host:port`), as text.
#[allow(dead_code)]
pub async fn metrics(addr: &str) -> String {
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A line to the person running the tests, shown even though cargo
/// captures test output (`eprintln!` is captured; a direct write to
/// standard error is not): a test skipped says so.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
