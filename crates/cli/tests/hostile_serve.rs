//! `probity serve` against hostile or unusual clients and upstreams: a
//! lower-case auth scheme, fields of the wrong type, `n > 1`, slow checks,
//! a server asked to listen beyond loopback without a token, an upstream
//! echoing the API key encoded, a thousand connections at once, a client
//! stalling in its body.

use crate::common;

use base64::Engine as _;
use common::{probity_cmd, sim_serve, start, text, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The upstream API key serve reads from `HOSTILE_UPSTREAM_KEY`. `~~~?~?`
/// puts the characters 62 and 63 in its base64 at every alignment.
const UPSTREAM_KEY: &str = "sk-live-~~~?~?-Hostile/0123456789abcdefXYZ";

fn guard_config(dir: &Path, upstream: &str, check: &str, token: bool) -> PathBuf {
    guard_config_with(dir, upstream, check, token, "")
}

/// [`guard_config`] with `extra` top-level lines.
fn guard_config_with(dir: &Path, upstream: &str, check: &str, token: bool, extra: &str) -> PathBuf {
    let path = dir.join("guard.toml");
    let token = if token {
        "token_env = \"HOSTILE_TOKEN\"\n"
    } else {
        ""
    };
    std::fs::write(
        &path,
        format!(
            "name = \"g\"\n{token}{extra}call_attempts = 1\n[upstream]\nprovider = \"openai\"\nbase_url = \"http://{upstream}/v1\"\nmodel = \"m\"\napi_key_env = \"HOSTILE_UPSTREAM_KEY\"\n[[validator]]\nname = \"c\"\ncheck = '''{check}'''\n"
        ),
    )
    .unwrap();
    path
}

fn serve(dir: &Path, config: &Path) -> Server {
    start(serve_cmd(dir, config))
}

/// `probity serve` on a free port with `config`, its store in `dir`, the
/// token and the upstream key in its environment.
fn serve_cmd(dir: &Path, config: &Path) -> std::process::Command {
    let mut cmd = common::serve_cmd(dir, config);
    cmd.env("HOSTILE_TOKEN", "tok-12345")
        .env("HOSTILE_UPSTREAM_KEY", UPSTREAM_KEY);
    cmd
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
    // A body declared over max_body_mb is refused as too large at once,
    // not waited for until body_timeout_s (which would be a 408).
    let mut s = std::net::TcpStream::connect(&g.1).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer tok-12345\r\ncontent-type: application/json\r\ncontent-length: 999999999999\r\nconnection: close\r\n\r\n{{"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 413"), "{out}");
    // Unknown paths answer in OpenAI's error shape.
    let r = request(&g.1, "GET", "/v1/no-such-path", "", "");
    assert!(
        r.starts_with("HTTP/1.1 404") && r.contains("\"error\""),
        "{r}"
    );
    let r = request(&g.1, "GET", "/v1/chat/completions", "", "");
    assert!(
        r.starts_with("HTTP/1.1 405") && r.contains("use POST"),
        "{r}"
    );
    // Every request refused before it was guarded is counted: the nine
    // bodies above that are no request, and the one too large.
    let m = request(
        &g.1,
        "GET",
        "/metrics",
        "",
        "authorization: Bearer tok-12345\r\n",
    );
    assert!(m.contains("\nprobity_malformed_total 10\n"), "{m}");
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
        // The check could not judge: the guard's error, not a rejection.
        assert!(
            (r.starts_with("HTTP/1.1 500") && r.contains("x-probity-outcome: check-error"))
                || r.starts_with("HTTP/1.1 502"),
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
        .env("HOSTILE_UPSTREAM_KEY", UPSTREAM_KEY)
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
        .env("HOSTILE_UPSTREAM_KEY", UPSTREAM_KEY)
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

/// A fake upstream on a free port that answers its first `answers`
/// requests with `status` in turn and the JSON `body`, then stops.
fn echoing_upstream(statuses: &'static [u16], body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for (conn, status) in listener.incoming().zip(statuses.iter().cycle().take(16)) {
            let Ok(mut conn) = conn else { continue };
            if read_request(&mut conn).is_some() {
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} Oops\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        }
    });
    addr
}

/// Reads one HTTP request (headers and a `content-length` body).
fn read_request(conn: &mut TcpStream) -> Option<Vec<u8>> {
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(conn);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// `key` with `/` as `\/` and the other characters at even positions as
/// JSON `\uXXXX` escapes, upper-case hex at positions divisible by 3.
fn json_mix(key: &str) -> String {
    key.chars()
        .enumerate()
        .map(|(i, c)| match (i % 2, i % 3) {
            _ if c == '/' => "\\/".to_string(),
            (0, 0) => format!("\\u{:04X}", c as u32),
            (0, _) => format!("\\u{:04x}", c as u32),
            _ => c.to_string(),
        })
        .collect()
}

/// `key` with every character but letters percent-encoded, in either case.
fn percent_mix(key: &str) -> String {
    key.bytes()
        .enumerate()
        .map(|(i, b)| match (b.is_ascii_alphabetic(), i % 2) {
            (true, _) => char::from(b).to_string(),
            (false, 0) => format!("%{b:02x}"),
            (false, _) => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether `key` can be read from `text`: literally, or after decoding
/// JSON escapes, percent-encoding and base64 (either alphabet, any
/// alignment) up to two layers deep in any order.
fn reveals(text: &str, key: &str) -> bool {
    let mut texts = vec![text.to_string()];
    for _ in 0..2 {
        let decoded: Vec<String> = texts
            .iter()
            .flat_map(|t| [json_unescape(t), percent_decode(t)])
            .collect();
        texts.extend(decoded);
    }
    texts
        .iter()
        .any(|t| t.contains(key) || base64_runs_reveal(t, key.as_bytes()))
}

/// `text` with JSON's string escapes decoded (lenient: anything else is
/// kept as it is).
fn json_unescape(text: &str) -> String {
    let mut units: Vec<u16> = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            units.extend(c.encode_utf16(&mut [0; 2]).iter());
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u16::from_str_radix(&hex, 16) {
                    Ok(u) => units.push(u),
                    Err(_) => units.extend("\\u".encode_utf16().chain(hex.encode_utf16())),
                }
            }
            Some(e) => {
                let c = match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    other => other,
                };
                units.extend(c.encode_utf16(&mut [0; 2]).iter());
            }
            None => units.push(u16::from(b'\\')),
        }
    }
    String::from_utf16_lossy(&units)
}

/// `text` with `%XX` decoded and `+` read as a space (lenient).
fn percent_decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether some run of base64 characters in `text`, decoded from any of its
/// first four characters, contains `key`.
fn base64_runs_reveal(text: &str, key: &[u8]) -> bool {
    use base64::engine::{general_purpose, DecodePaddingMode, GeneralPurpose};
    // Any run is decoded, whatever the bits after its last whole byte.
    let lenient = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        general_purpose::NO_PAD
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    let b64 = |c: char| c.is_ascii_alphanumeric() || "+/-_".contains(c);
    text.split(|c: char| !b64(c)).any(|run| {
        let run = run.replace('-', "+").replace('_', "/");
        (0..4.min(run.len())).any(|skip| {
            let chars = &run[skip..];
            // One character alone encodes no whole byte.
            let chars = &chars[..chars.len() - usize::from(chars.len() % 4 == 1)];
            lenient
                .decode(chars)
                .is_ok_and(|bytes| bytes.windows(key.len()).any(|w| w == key))
        })
    })
}

#[test]
fn the_decoding_check_finds_every_encoding_of_the_key() {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let key = UPSTREAM_KEY;
    assert!(!reveals("nothing to see", key));
    for encoded in [
        key.to_string(),
        json_mix(key),
        percent_mix(key),
        STANDARD.encode(format!("u:{key}")),
        URL_SAFE_NO_PAD.encode(format!("us:{key}!")),
        percent_mix(&STANDARD.encode(key)),
    ] {
        assert!(reveals(&format!("x {encoded} y"), key), "{encoded}");
    }
}

/// Every text and blob column of every table in the SQLite file at `path`.
fn store_texts(path: &Path) -> Vec<String> {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut stmt = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap();
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut texts = Vec::new();
    for table in tables {
        let mut stmt = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        texts.push(String::from_utf8_lossy(t).into_owned())
                    }
                    _ => {}
                }
            }
        }
    }
    texts
}

#[test]
fn an_upstream_echoing_the_key_encoded_is_quoted_masked() {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let key = UPSTREAM_KEY;
    let message = format!(
        "Incorrect API key provided: {}. Request: https://api.example/v1?key={}&alt={}. Authorization: Basic {}; token {}; raw {}",
        json_mix(key),
        percent_mix(key),
        percent_mix(&STANDARD.encode(format!("user:{key}"))),
        STANDARD.encode(format!("user:{key}")),
        URL_SAFE_NO_PAD.encode(format!("k={key}!")),
        STANDARD.encode(key),
    );
    let body = format!(
        r#"{{"error":{{"message":"{message}","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    assert!(
        serde_json::from_str::<serde_json::Value>(&body).is_ok(),
        "{body}"
    );
    assert!(reveals(&body, key));
    let upstream = echoing_upstream(&[400, 500], body);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config(dir.path(), &upstream, "true", false);
    let mut cmd = serve_cmd(dir.path(), &config);
    cmd.stderr(Stdio::piped());
    let mut g = start(cmd);
    let mut answers = Vec::new();
    // The 400 is the client's to see (passed back, masked), the 500 a 502
    // that names the failure, never the upstream's words.
    for status in ["400", "502"] {
        let r = post(&g.1, &format!("{{{HI}}}"), "Bearer x");
        assert!(r.starts_with(&format!("HTTP/1.1 {status}")), "{r}");
        if status == "400" {
            assert!(
                r.contains("***"),
                "the upstream's body is quoted, masked: {r}"
            );
        } else {
            assert!(
                !r.contains("Incorrect API key") && r.contains("HTTP 500"),
                "a 5xx's body reached the client: {r}"
            );
        }
        answers.push(r);
    }
    // A graceful stop: every answered request is stored.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &g.0.id().to_string()])
        .status();
    let _ = g.0.wait();
    let mut stderr = String::new();
    g.0.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let stored = store_texts(&dir.path().join("runs.db"));
    assert!(
        stored.iter().any(|t| t.contains("Incorrect API key")),
        "the store keeps the upstream's error"
    );
    for text in answers.iter().chain(&stored).chain([&stderr]) {
        assert!(!reveals(text, key), "the key can be decoded from: {text}");
    }
}

#[test]
fn a_thousand_simultaneous_connections_are_all_accepted() {
    const THREADS: usize = 50;
    const EACH: usize = 20;
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config(dir.path(), &upstream.1, "true", false);
    let g = serve(dir.path(), &config);
    let addr: std::net::SocketAddr = g.1.parse().unwrap();
    assert!(addr.ip().is_loopback());
    // All threads connect at once, as a load test's clients do. A SYN the
    // kernel drops for a full accept queue (tokio's default backlog, 128)
    // is sent again after a second: a connection that needs it fails here
    // (a loopback connect otherwise takes microseconds).
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                (0..EACH)
                    .map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(900)))
                    .collect::<Result<Vec<_>, _>>()
            })
        })
        .collect();
    let conns: Vec<TcpStream> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap().expect("connect"))
        .collect();
    assert_eq!(conns.len(), THREADS * EACH);
    // A sample is answered on its connection.
    for mut s in conns.iter().step_by(50) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "GET /health HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).expect("answer");
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    }
    // The others are still open: nothing to read yet, no reset, no close.
    for (i, mut s) in conns.iter().enumerate().filter(|(i, _)| i % 50 != 0) {
        s.set_nonblocking(true).unwrap();
        match s.read(&mut [0; 1]) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("connection {i}: {other:?}"),
        }
    }
}

#[test]
fn a_client_stalling_in_its_body_gets_408_and_health_still_answers() {
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config_with(
        dir.path(),
        &upstream.1,
        "true",
        false,
        "body_timeout_s = 1\n",
    );
    let g = serve(dir.path(), &config);
    let mut s = TcpStream::connect(&g.1).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"messages\"",
        g.1
    )
    .unwrap();
    let t = Instant::now();
    let health = request(&g.1, "GET", "/health", "", "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let took = t.elapsed();
    assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    assert!(took < Duration::from_secs(8), "the 408 took {took:?}");
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(v["error"]["code"], 408, "{body}");
    assert!(v["error"]["message"].is_string(), "{body}");
}

/// Connections that send nothing, or half a request's head, are closed
/// after the head timeout (10 s), whatever their number; before, none
/// was, and enough of them (the file limit) locked every client out.
/// Health answers meanwhile.
#[test]
fn connections_stalling_in_their_head_are_closed() {
    let upstream = sim_serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = guard_config(dir.path(), &upstream.1, "true", false);
    let g = serve(dir.path(), &config);
    let mut stalled: Vec<TcpStream> = (0..50)
        .map(|i| {
            let mut s = TcpStream::connect(&g.1).unwrap();
            if i % 2 == 1 {
                write!(s, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n").unwrap();
            }
            s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
            s
        })
        .collect();
    let health = request(&g.1, "GET", "/health", "", "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    for (i, s) in stalled.iter_mut().enumerate() {
        let mut out = Vec::new();
        // Closed by the server: the read ends (with a 408 or nothing);
        // a read that times out (40 s) means it was held open.
        match s.read_to_end(&mut out) {
            Ok(_) => {}
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "connection {i} held open: {e}"
            ),
        }
    }
}
