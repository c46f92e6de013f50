//! `probity serve` against hostile or unusual clients: a lower-case auth
//! scheme, fields of the wrong type, `n > 1`, slow checks, and a server
//! asked to listen beyond loopback without a token.

mod common;

use common::{probity_cmd, sim_serve, start, text, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn guard_config(dir: &Path, upstream: &str, check: &str, token: bool) -> PathBuf {
    let path = dir.join("guard.toml");
    let token = if token {
        "token_env = \"HOSTILE_TOKEN\"\n"
    } else {
        ""
    };
    std::fs::write(
        &path,
        format!(
            "name = \"g\"\n{token}call_attempts = 1\n[upstream]\nprovider = \"openai\"\nbase_url = \"http://{upstream}/v1\"\nmodel = \"m\"\napi_key_env = \"HOSTILE_UPSTREAM_KEY\"\n[[validator]]\nname = \"c\"\ncheck = '''{check}'''\n"
        ),
    )
    .unwrap();
    path
}

fn serve(dir: &Path, config: &Path) -> Server {
    let mut cmd = probity_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .arg("--store")
        .arg(dir.join("runs.db"))
        .env("HOSTILE_TOKEN", "tok-12345")
        .env("HOSTILE_UPSTREAM_KEY", "upstream-key");
    start(cmd)
}

fn request(addr: &str, method: &str, path: &str, body: &str, headers: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn post(addr: &str, body: &str, auth: &str) -> String {
    request(
        addr,
        "POST",
        "/v1/chat/completions",
        body,
        &format!("authorization: {auth}\r\n"),
    )
}

const HI: &str = r#""messages":[{"role":"user","content":"hi"}]"#;

#[test]
fn requests_are_read_strictly_and_the_scheme_case_insensitively() {
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config(dir.path(), &upstream.1, "true", true);
    let g = serve(dir.path(), &config);
    let ok = format!("{{{HI}}}");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = post(&g.1, &ok, &format!("{scheme} tok-12345"));
        assert!(r.starts_with("HTTP/1.1 200"), "{scheme}: {r}");
    }
    assert!(post(&g.1, &ok, "Basic tok-12345").starts_with("HTTP/1.1 401"));
    assert!(post(&g.1, &ok, "bearer wrong").starts_with("HTTP/1.1 401"));
    for (body, needle) in [
        (format!("{{{HI},\"stream\":\"true\"}}"), "stream"),
        (format!("{{{HI},\"stream\":1}}"), "stream"),
        (
            format!("{{{HI},\"stream_options\":{{\"include_usage\":true}}}}"),
            "stream_options",
        ),
        (format!("{{{HI},\"n\":5}}"), "n = 5"),
        (format!("{{{HI},\"n\":0}}"), "`n`"),
        (format!("{{{HI},\"n\":\"2\"}}"), "`n`"),
        (format!("{{{HI},\"n\":1.5}}"), "`n`"),
        ("{\"messages\":[]}".to_string(), "messages"),
        ("[1,2]".to_string(), "object"),
    ] {
        let r = post(&g.1, &body, "Bearer tok-12345");
        assert!(r.starts_with("HTTP/1.1 400"), "{body}: {r}");
        assert!(r.contains(needle), "{body}: {r}");
    }
    let r = post(
        &g.1,
        &format!("{{{HI},\"n\":1,\"stream\":false}}"),
        "Bearer tok-12345",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn slow_checks_do_not_stall_health() {
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    // Runs into the expression time limit on every output.
    let config = guard_config(
        dir.path(),
        &upstream.1,
        "let a = []; for i in 0..50000 { a = [a]; } true",
        false,
    );
    let g = serve(dir.path(), &config);
    let addr = g.1.clone();
    let slow: Vec<_> = (0..6)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || post(&addr, &format!("{{{HI}}}"), "Bearer x"))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let health = request(&addr, "GET", "/health", "", "");
    let took = t.elapsed();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(took < Duration::from_secs(2), "/health took {took:?}");
    for h in slow {
        let r = h.join().unwrap();
        assert!(
            r.starts_with("HTTP/1.1 422") || r.starts_with("HTTP/1.1 502"),
            "{r}"
        );
    }
}

#[test]
fn listening_beyond_loopback_without_a_token_needs_a_flag() {
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config(dir.path(), &upstream.1, "true", false);
    let out = probity_cmd()
        .args(["serve", "--listen", "0.0.0.0:0", "--config"])
        .arg(&config)
        .arg("--store")
        .arg(dir.path().join("runs.db"))
        .env("HOSTILE_UPSTREAM_KEY", "upstream-key")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--insecure-no-token") && err.contains("token_env"),
        "{err}"
    );

    let mut child = probity_cmd()
        .args([
            "serve",
            "--insecure-no-token",
            "--listen",
            "0.0.0.0:0",
            "--config",
        ])
        .arg(&config)
        .arg("--store")
        .arg(dir.path().join("runs.db"))
        .env("HOSTILE_UPSTREAM_KEY", "upstream-key")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("listening on http://"), "{line:?}");
}
