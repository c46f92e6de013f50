//! Keys never leak through a hostile server's answers: a provider that
//! answers 200 with malformed JSON echoing the request (its
//! `Authorization` header, its path) has the key masked in the store, the
//! printed errors, the HTML report and the answers of `probity serve`.

use crate::common;

use common::{probity_cmd, start, text};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Output, Stdio};

const KEY: &str = "sk-hostile-test-key-0123456789abcdef";

/// A server that answers every request with HTTP 200 and a body that is
/// not JSON but repeats the request line and headers.
fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let answer = format!("{{not json, you sent: {head}");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            });
        }
    });
    addr
}

fn write_config(dir: &Path, system: &str) {
    std::fs::write(
        dir.join("probity.toml"),
        format!(
            "name = \"keys\"\n[system]\n{system}\n[experiment]\noutputs_per_input = 2\ncall_attempts = 1\n[[validator]]\nname = \"short\"\ncheck = 'output.len() < 10000'\n[[input]]\ntext = \"hi\"\n[[input]]\ntext = \"there\"\n"
        ),
    )
    .unwrap();
}

fn run(dir: &Path) -> Output {
    probity_cmd()
        .current_dir(dir)
        .args(["run"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env("HOSTILE_KEY", KEY)
        .output()
        .unwrap()
}

/// No trace of the key in the run's output, the store's file or the HTML
/// report; returns stderr.
fn assert_no_key_anywhere(dir: &Path, out: &Output) -> String {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
    for f in ["runs.db", "runs.db-wal"] {
        if let Ok(bytes) = std::fs::read(dir.join(f)) {
            let hay = String::from_utf8_lossy(&bytes);
            assert!(!hay.contains(KEY), "the key is in {f}");
        }
    }
    let report = probity_cmd()
        .current_dir(dir)
        .args(["report", "keys", "--format", "html"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .output()
        .unwrap();
    let html = text(&report.stdout);
    assert!(!html.is_empty(), "{}", text(&report.stderr));
    assert!(!html.contains(KEY), "the key is in the HTML report");
    stderr
}

#[test]
fn openai_malformed_200_echoing_the_key_is_redacted() {
    let addr = echo_server();
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &format!("provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://{addr}/v1\"\napi_key_env = \"HOSTILE_KEY\""),
    );
    let out = run(dir.path());
    let err = assert_no_key_anywhere(dir.path(), &out);
    assert!(err.contains("***"), "the echo was not shown masked: {err}");
}

#[test]
fn anthropic_malformed_200_echoing_the_key_is_redacted() {
    let addr = echo_server();
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &format!("provider = \"anthropic\"\nmodel = \"m\"\nbase_url = \"http://{addr}\"\napi_key_env = \"HOSTILE_KEY\""),
    );
    let out = run(dir.path());
    assert_no_key_anywhere(dir.path(), &out);
}

#[test]
fn http_provider_key_in_the_url_path_is_redacted_when_echoed() {
    let addr = echo_server();
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        &format!("provider = \"http\"\nurl = \"http://{addr}/v1/${{ENV:HOSTILE_KEY}}/complete\""),
    );
    let out = run(dir.path());
    assert_no_key_anywhere(dir.path(), &out);
}

#[test]
fn serve_does_not_answer_its_clients_with_the_upstream_key() {
    let addr = echo_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"g\"\ncall_attempts = 1\n[upstream]\nprovider = \"openai\"\nbase_url = \"http://{addr}/v1\"\nmodel = \"m\"\napi_key_env = \"HOSTILE_KEY\"\n[[validator]]\nname = \"short\"\ncheck = 'output.len() < 10000'\n"
        ),
    )
    .unwrap();
    let mut cmd = common::serve_cmd(dir.path(), &config);
    cmd.env("HOSTILE_KEY", KEY).stderr(Stdio::piped());
    let server = start(cmd);
    let guard = server.1.clone();
    let body = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let answer = raw_post(&guard, body, "");
    drop(server);
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(
        !answer.contains(KEY),
        "the key reached the client: {answer}"
    );
}

/// POST `body` to the guard at `addr`; the raw answer.
pub fn raw_post(addr: &str, body: &str, extra_headers: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}
