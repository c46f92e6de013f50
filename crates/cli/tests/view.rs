//! `probity view`: the local viewer over a store with real runs (two
//! simulator runs, a worse variant, and a live `probity serve` run), read
//! over HTTP on 127.0.0.1 and in headless Chromium: pages load, filters
//! change what is shown, the token guards a viewer bound beyond loopback,
//! hostile text stays text, no console errors.

use crate::common;

use common::{probity, probity_cmd, start, text, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `probity view` child and the URL it printed; killed on drop.
struct Viewer(Child, String);

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Viewer {
    fn addr(&self) -> String {
        let rest = self.1.strip_prefix("http://").unwrap();
        let host = rest.split('/').next().unwrap();
        // A viewer bound to 0.0.0.0 is reached on 127.0.0.1.
        host.replace("0.0.0.0", "127.0.0.1")
    }
}

fn view(dir: &Path, listen: &str, envs: &[(&str, &str)]) -> Viewer {
    let mut cmd = probity_cmd();
    cmd.args(["view", "--listen", listen, "--refresh", "2"])
        .env("PROBITY_STORE", dir.join("runs.db"))
        .env_remove("PROBITY_VIEW_TOKEN")
        .envs(envs.iter().copied())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("probity view on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_string();
    Viewer(child, url)
}

/// One HTTP/1.1 request: (status, head, body).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    // Chunked bodies: keep the text, drop the chunk sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

fn get(addr: &str, path: &str) -> (u16, String) {
    let (status, _, body) = http(addr, "GET", path, &[], "");
    (status, body)
}

/// Two runs of the example (pinned seeds 1 and 2; 20 inputs × 20
/// outputs, so contraction_validator fails) and a third of a
/// variant that forgets its manners far more often, with a hostile run
/// name on the third.
fn store_with_runs(d: &Path) {
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 1);
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    assert_eq!(probity(d, &["run", "-q"]).status.code(), Some(1));
    std::fs::write(d.join("probity.toml"), cfg.replace("seed = 1", "seed = 2")).unwrap();
    assert_eq!(probity(d, &["run", "-q"]).status.code(), Some(1));
    let worse = cfg
        .replace("omit_welcome = 0.15", "omit_welcome = 0.9")
        .replace("contractions = 0.10", "contractions = 0.0")
        .replace(
            "name = \"polite-assistant\"",
            // No '/': it separates NAME/VARIANT and is refused in a name.
            "name = \"<script>alert(1)<script>\"",
        );
    std::fs::write(d.join("worse.toml"), worse).unwrap();
    let out = probity(d, &["run", "worse.toml", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

/// `<article class="output-card` elements in a page.
fn cards(h: &str) -> usize {
    h.matches("<article class=\"output-card").count()
}

fn rows(h: &str) -> usize {
    h.matches("<tr class=\"run-row\"").count()
}

#[test]
fn pages_filters_and_comparison_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_runs(d);
    let v = view(d, "127.0.0.1:0", &[]);
    assert!(!v.1.contains("token="), "no token on loopback: {}", v.1);
    let a = v.addr();

    // The runs list, and its filters.
    let (s, h) = get(&a, "/");
    assert_eq!(s, 200);
    assert_eq!(rows(&h), 3, "{h}");
    assert!(h.contains("3 of 3 runs"));
    assert!(!h.contains("<script>alert(1)"), "hostile name as markup");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;script&gt;"));
    let (_, h) = get(&a, "/?name=polite-assistant");
    assert_eq!(rows(&h), 2);
    let (_, h) = get(&a, "/?verdict=pass");
    assert_eq!(rows(&h), 0, "every run fails a check");
    let (_, h) = get(&a, "/?verdict=fail");
    assert_eq!(rows(&h), 3);
    let (_, h) = get(&a, "/?since=2999-01-01");
    assert_eq!(rows(&h), 0);
    assert!(h.contains("No run matches."));

    // A run's report, in the viewer's frame.
    let (s, h) = get(&a, "/runs/1");
    assert_eq!(s, 200);
    assert!(h.contains("Reliability report: run #1 polite-assistant"));
    assert!(h.contains("href=\"/runs/1/outputs\""));

    // All outputs (passing too: 20 inputs × 20), filtered by verdict,
    // check and input; the counts add up.
    let (_, h) = get(&a, "/runs/1/outputs");
    assert_eq!(cards(&h), 400);
    let pass = cards(&get(&a, "/runs/1/outputs?verdict=pass").1);
    let fail = cards(&get(&a, "/runs/1/outputs?verdict=fail").1);
    let error = cards(&get(&a, "/runs/1/outputs?verdict=error").1);
    assert_eq!(pass + fail + error, 400);
    assert!(pass > 0 && fail > 0, "{pass} {fail}");
    let fail0 = cards(&get(&a, "/runs/1/outputs?check=0&verdict=fail").1);
    let fail1 = cards(&get(&a, "/runs/1/outputs?check=1&verdict=fail").1);
    assert!(fail0 <= fail && fail1 <= fail && fail0 + fail1 >= fail);
    // An input by the id every page shows; the old position still works.
    let (s, h) = get(&a, "/runs/1/outputs?input=q04");
    assert_eq!(s, 200, "{h}");
    assert_eq!(cards(&h), 20);
    assert!(h.contains("20 of 400 outputs match"));
    assert!(h.contains(r#"<option value="q04" selected>"#), "{h}");
    assert_eq!(get(&a, "/runs/1/outputs?input=3").1, h);
    // Each output beside its input's text.
    assert!(
        h.contains("input text</dt><dd><pre class=\"output\">Can you explain"),
        "{h}"
    );
    let (s, _) = get(&a, "/runs/1/outputs?check=x");
    assert_eq!(s, 400);

    // Two runs side by side: the comparison, then each shared input with
    // its outputs in both runs.
    let (s, h) = get(&a, "/compare?a=2&b=3");
    assert_eq!(s, 200, "{h}");
    assert!(h.contains("Comparison with baseline"));
    assert!(h.contains("REGRESSED") || h.contains("regressed"), "{h}");
    assert_eq!(h.matches("<div class=\"pair\"").count(), 20);
    // Only the inputs whose pass counts differ: none between a run and
    // itself; between 2 and 3, every pair shown differs.
    let same = get(&a, "/compare?a=1&b=1&only=differ").1;
    assert_eq!(same.matches("<div class=\"pair\"").count(), 0);
    let differ = get(&a, "/compare?a=2&b=3&only=differ").1;
    let heads: Vec<&str> = differ
        .split("<div class=\"pair\"")
        .skip(1)
        .map(|p| p.split("</h3>").next().unwrap())
        .collect();
    assert!(!heads.is_empty());
    for h in heads {
        let counts: Vec<&str> = h.split("passed").collect();
        let a_count = counts[0].rsplit("A: ").next().unwrap();
        let b_count = counts[1].rsplit("B: ").next().unwrap();
        assert_ne!(a_count, b_count, "{h}");
    }

    // The trend of a name; a missing run is a 404 page.
    let (s, h) = get(&a, "/trend/polite-assistant");
    assert_eq!(s, 200);
    assert!(h.contains("Trend of polite-assistant over 2 runs"));
    let (s, h) = get(&a, "/runs/99");
    assert_eq!(s, 404);
    assert!(h.contains("not available"));
    // A finished run's live page does not reload.
    let (_, h) = get(&a, "/runs/1/live");
    assert!(!h.contains("http-equiv=\"refresh\""));
    // Every page forbids framing and sniffing; viewer pages allow no script.
    let (_, head, body) = http(&a, "GET", "/", &[], "");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("x-frame-options: deny"));
    assert!(head.contains("x-content-type-options: nosniff"));
    assert!(!body.contains("<script"));
    assert!(body.contains("form-action &#39;self&#39;"));
}

/// A 400 page in the viewer's frame whose message names the parameter,
/// the value as given and what is allowed (each of `says`).
fn refused(a: &str, path: &str, says: &[&str]) {
    let (s, h) = get(a, path);
    assert_eq!(s, 400, "{path}: {h}");
    assert!(h.contains("<h1>bad request</h1>"), "{path}: {h}");
    assert!(
        h.contains("nav class=\"viewer\""),
        "the viewer's frame: {h}"
    );
    for want in says {
        assert!(h.contains(want), "{path}: no {want:?} in {h}");
    }
}

#[test]
fn unknown_or_out_of_range_filter_values_are_a_400_page_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_runs(d);
    let v = view(d, "127.0.0.1:0", &[]);
    let a = v.addr();
    let q = "&quot;";
    // The outputs page: run 1 has 2 checks and 20 inputs.
    refused(
        &a,
        "/runs/1/outputs?check=99",
        &[&format!("check={q}99{q}"), "0 to 1"],
    );
    refused(
        &a,
        "/runs/1/outputs?check=-1",
        &[&format!("check={q}-1{q}"), "0 to 1"],
    );
    refused(
        &a,
        "/runs/1/outputs?input=99999",
        &[
            &format!("input={q}99999{q}"),
            "no input of run 1",
            "q01, q02, q03, …",
        ],
    );
    refused(&a, "/runs/1/outputs?input=20", &["is no input of run 1"]);
    refused(
        &a,
        "/runs/1/outputs?input=q99",
        &["input=", "is no input of run 1", "or empty for all"],
    );
    refused(
        &a,
        "/runs/1/outputs?verdict=bogus",
        &[&format!("verdict={q}bogus{q}"), "pass, fail, error"],
    );
    refused(
        &a,
        "/runs/1/outputs?chek=1",
        &[&format!("{q}chek{q}"), "check, input, verdict"],
    );
    // The runs list.
    refused(
        &a,
        "/?since=notadate",
        &[&format!("since={q}notadate{q}"), "YYYY-MM-DD"],
    );
    refused(&a, "/?since=2026-02-30", &["since=", "YYYY-MM-DD"]);
    refused(&a, "/?verdict=bogus", &["verdict=", "pass, fail, none"]);
    refused(
        &a,
        "/?name=nobody",
        &[&format!("name={q}nobody{q}"), "polite-assistant"],
    );
    // A hostile value is text in the message.
    refused(&a, "/?verdict=%3Cb%3Ex", &["&lt;b&gt;x"]);
    assert!(!get(&a, "/?verdict=%3Cb%3Ex").1.contains("<b>x"));
    // The comparison.
    refused(&a, "/compare?a=x&b=2", &[&format!("a={q}x{q}"), "run"]);
    refused(
        &a,
        "/compare?a=1&b=2&only=all",
        &[&format!("only={q}all{q}"), "differ"],
    );
    // Values in range still filter, and empty ones mean any.
    let (s, h) = get(&a, "/runs/1/outputs?check=1&input=q20&verdict=");
    assert_eq!(s, 200);
    assert!(h.contains("20 of 400 outputs match"), "{h}");
    let (s, h) = get(&a, "/?name=&since=2000-01-01&verdict=fail&token=x");
    assert_eq!(s, 200);
    assert_eq!(rows(&h), 3);
    drop(v);

    // The variants page: reference and pairs=all do not combine (as the
    // CLI's --reference and --all-pairs do not), pairs is only "all".
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_variants(d);
    let v = view(d, "127.0.0.1:0", &[]);
    let a = v.addr();
    refused(
        &a,
        "/variants/2?reference=sloppy&pairs=all",
        &[
            &format!("reference={q}sloppy{q}"),
            "pairs=all",
            "cannot be combined",
        ],
    );
    refused(
        &a,
        "/variants/2?pairs=some",
        &[&format!("pairs={q}some{q}"), "all"],
    );
    refused(
        &a,
        "/variants/2?reference=nope",
        &[&format!("reference={q}nope{q}"), "base, sloppy"],
    );
}

#[test]
fn refresh_out_of_range_is_a_usage_error() {
    for bad in ["0", "86401", "4294967295"] {
        let out = probity_cmd()
            .args(["view", "--listen", "127.0.0.1:0", "--refresh", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--refresh {bad}");
        let err = text(&out.stderr);
        assert!(
            err.contains("--refresh") && err.contains("1..=86400"),
            "{err}"
        );
        assert!(
            out.stdout.is_empty(),
            "no viewer started: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn a_viewer_beyond_loopback_needs_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_runs(d);
    let v = view(d, "0.0.0.0:0", &[]);
    let token =
        v.1.split("token=")
            .nth(1)
            .expect("a made-up token")
            .to_string();
    assert_eq!(token.len(), 32);
    let a = v.addr();
    let (s, _, body) = http(&a, "GET", "/", &[], "");
    assert_eq!(s, 401);
    assert!(!body.contains("polite-assistant"));
    assert_eq!(
        http(&a, "GET", "/?token=wrong-token-of-32-characters!!", &[], "").0,
        401
    );
    assert_eq!(http(&a, "GET", "/runs/1", &[], "").0, 401);
    // ?token= once, then the cookie it set; or a bearer header.
    let (s, head, _) = http(&a, "GET", &format!("/?token={token}"), &[], "");
    assert_eq!(s, 200);
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(head.contains("HttpOnly; SameSite=Strict"));
    assert_eq!(
        http(&a, "GET", "/runs/1", &[&format!("Cookie: {cookie}")], "").0,
        200
    );
    assert_eq!(
        http(
            &a,
            "GET",
            "/runs/1",
            &[&format!("Authorization: Bearer {token}")],
            ""
        )
        .0,
        200
    );
    drop(v);
    // A token given is used; a short one is refused.
    let v = view(
        d,
        "0.0.0.0:0",
        &[("PROBITY_VIEW_TOKEN", "a-long-enough-token-123")],
    );
    assert!(v.1.ends_with("token=a-long-enough-token-123"), "{}", v.1);
    let out = probity_cmd()
        .args(["view", "--listen", "0.0.0.0:0", "--token", "short"])
        .env("PROBITY_STORE", d.join("runs.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at least 16 characters"));
}

fn guard_config(dir: &Path, upstream: &str) -> PathBuf {
    let path = dir.join("guard.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "live"
[upstream]
provider = "openai"
base_url = "http://{upstream}/v1"
model = "probity-sim"

[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
"#
        ),
    )
    .unwrap();
    path
}

fn chat(addr: &str, i: usize) {
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"Thank you! Question {i}?"}}]}}"#
    );
    let (s, _, b) = http(addr, "POST", "/v1/chat/completions", &[], &body);
    assert!(s == 200 || s == 422, "{s} {b}");
}

/// The `n` of the live page's one check.
fn live_n(h: &str) -> u64 {
    let Some(row) = h.split("id=\"live-rates\"").nth(1) else {
        return 0;
    };
    let last = row.split("<td class=\"num\">").last().unwrap();
    last.split('<').next().unwrap().parse().unwrap()
}

#[test]
fn a_serve_runs_rates_refresh_while_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream: Server = common::sim_serve(&[]);
    let config = guard_config(d, &upstream.1);
    let guard = start(common::serve_cmd(d, &config));
    for i in 0..3 {
        chat(&guard.1, i);
    }
    let v = view(d, "127.0.0.1:0", &[]);
    let a = v.addr();
    let (_, h) = get(&a, "/");
    assert!(h.contains("href=\"/runs/1/live\""), "{h}");
    // Records are committed within 50 ms; wait for them.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut h = get(&a, "/runs/1/live").1;
    while live_n(&h) < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        h = get(&a, "/runs/1/live").1;
    }
    assert!(
        h.contains("<meta http-equiv=\"refresh\" content=\"2\">"),
        "{h}"
    );
    assert_eq!(live_n(&h), 3);
    for i in 3..7 {
        chat(&guard.1, i);
    }
    let mut h = get(&a, "/runs/1/live").1;
    while live_n(&h) < 7 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        h = get(&a, "/runs/1/live").1;
    }
    assert_eq!(live_n(&h), 7, "the page shows the requests served since");
    // Stopped, the run is complete and its page stops reloading.
    assert_eq!(guard.stop("TERM"), Some(0));
    let h = get(&a, "/runs/1/live").1;
    assert!(!h.contains("http-equiv=\"refresh\""));
    assert!(h.contains("no longer written"));
}

// ---------------------------------------------------------------- browser

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// Headless chromium on `url`: (the DOM after load, its log on stderr,
/// console messages included).
fn browse(browser: &Path, url: &str) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let id = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let watchdog = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(90) {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").arg(id.to_string()).status();
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = watchdog.join();
    assert!(out.status.success(), "chromium: {}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// Console errors, CSP violations and failed loads in chromium's log.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            (l.contains("CONSOLE") && (l.contains("Error") || l.contains("error")))
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
        })
        .collect()
}

/// The address a GET form of `dom` (by id) submits to with `field` set to
/// `value`: what a click on its button loads. The value must be one of
/// the field's options.
fn submit(dom: &str, form_id: &str, field: &str, value: &str) -> String {
    let form = dom
        .split(&format!("id=\"{form_id}\""))
        .nth(1)
        .and_then(|f| f.split("</form>").next())
        .unwrap_or_else(|| panic!("no form {form_id}"));
    let select = form
        .split(&format!("name=\"{field}\""))
        .nth(1)
        .and_then(|s| s.split("</select>").next())
        .unwrap_or_else(|| panic!("no field {field}"));
    assert!(
        select.contains(&format!("value=\"{value}\"")),
        "{value} is not an option of {field}"
    );
    let mut pairs = Vec::new();
    for part in form.split("name=\"").skip(1) {
        let name = part.split('"').next().unwrap();
        if name == field {
            pairs.push(format!("{name}={value}"));
        } else if part.contains("<option") {
            let chosen = part
                .split("<option")
                .find(|o| o.contains("selected"))
                .and_then(|o| o.split("value=\"").nth(1))
                .map_or("", |v| v.split('"').next().unwrap());
            pairs.push(format!("{name}={chosen}"));
        } else {
            let v = part
                .split('>')
                .next()
                .and_then(|tag| tag.split("value=\"").nth(1))
                .map_or("", |v| v.split('"').next().unwrap());
            pairs.push(format!("{name}={v}"));
        }
    }
    format!("?{}", pairs.join("&"))
}

#[test]
fn the_viewer_works_in_chromium() {
    let Some(browser) = chromium() else {
        common::notice(
            "NOTICE: chromium is not on PATH; skipping the browser test of probity view",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_runs(d);
    let v = view(d, "127.0.0.1:0", &[]);
    let base = format!("http://{}", v.addr());

    // The runs list: loads, no console error, every run.
    let (dom, log) = browse(&browser, &format!("{base}/"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert_eq!(rows(&dom), 3, "{dom}");
    assert!(
        !dom.contains("<script"),
        "hostile run name became an element"
    );
    // Choosing a name in the filter and submitting shows only its runs.
    let query = submit(&dom, "run-filters", "name", "polite-assistant");
    let (dom, log) = browse(&browser, &format!("{base}/{query}"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert_eq!(rows(&dom), 2);
    assert!(dom.contains("2 of 3 runs"));

    // A run's report: its own script ran under its policy.
    let (dom, log) = browse(&browser, &format!("{base}/runs/1"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert!(
        dom.contains("data-ready=\"1\""),
        "the report's script did not run"
    );

    // All outputs, then the failing ones of check 1.
    let (dom, _) = browse(&browser, &format!("{base}/runs/1/outputs"));
    let all = cards(&dom);
    assert_eq!(all, 400);
    let query = submit(&dom, "output-filters", "verdict", "fail");
    let (dom, log) = browse(&browser, &format!("{base}/runs/1/outputs{query}"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    let failing = cards(&dom);
    assert!(failing > 0 && failing < all, "{failing} of {all}");
    assert_eq!(
        dom.matches("data-verdict=\"fail\"").count(),
        failing,
        "only failing outputs"
    );

    // Two runs side by side, and a trend.
    let (dom, log) = browse(&browser, &format!("{base}/compare?a=1&b=2"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert_eq!(dom.matches("class=\"pair\"").count(), 20);
    let (dom, log) = browse(&browser, &format!("{base}/trend/polite-assistant"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert!(dom.contains("Trend of polite-assistant"));
}

// ---------------------------------------------------------------- variants

/// A variants run of the example (seed pinned): the reference, a variant
/// far more given to contractions, and one with a hostile name.
fn store_with_variants(d: &Path) {
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 5);
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    let tables = "\n[[variant]]\nname = \"base\"\n\n[[variant]]\nname = \"sloppy\"\nsystem.contractions = 0.5\n\n[[variant]]\nname = \"<img src=x onerror=alert(1)>\"\nsystem.seed = 6\n";
    std::fs::write(d.join("probity.toml"), format!("{cfg}{tables}")).unwrap();
    let out = probity(d, &["run", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn the_variants_page_shows_the_matrix_over_http_and_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_with_variants(d);
    let v = view(d, "127.0.0.1:0", &[]);
    let a = v.addr();

    // The runs list links each variant's run to the variants page.
    let (_, h) = get(&a, "/");
    assert_eq!(rows(&h), 3);
    assert_eq!(h.matches("class=\"variants-link\"").count(), 3);
    assert!(h.contains("href=\"/variants/2\""));

    // The page of any run of the group: the matrix (3 variants × 2
    // checks), the differences against the reference, the outputs side
    // by side, hostile text as text.
    let (s, h) = get(&a, "/variants/2");
    assert_eq!(s, 200, "{h}");
    assert!(h.contains("Variants of polite-assistant"));
    assert_eq!(h.matches("<tr class=\"matrix-row\"").count(), 2);
    assert_eq!(h.matches("<th data-variant=").count(), 3);
    assert_eq!(h.matches("<tr class=\"diff-row\"").count(), 4);
    assert!(
        h.contains("base better than sloppy on contraction_validator"),
        "{h}"
    );
    assert!(h.contains("href=\"/runs/3\""), "runs linked in the viewer");
    assert_eq!(h.matches("class=\"variant-input\"").count(), 20);
    assert!(!h.contains("<img src=x"), "hostile name as markup");
    assert!(h.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!h.contains("<script"));
    // Another reference, or every pair, chosen in the address; an unknown
    // reference is a page saying which variants there are.
    let (s, h2) = get(&a, "/variants/2?reference=sloppy");
    assert_eq!(s, 200, "{h2}");
    assert_eq!(h2.matches("<tr class=\"diff-row\"").count(), 4);
    assert_ne!(h2, h, "the differences are against sloppy");
    let (s, h6) = get(&a, "/variants/2?pairs=all");
    assert_eq!(s, 200, "{h6}");
    assert_eq!(h6.matches("<tr class=\"diff-row\"").count(), 6);
    let (s, h400) = get(&a, "/variants/2?reference=nope");
    assert_eq!(s, 400);
    assert!(
        h400.contains("has no variant of that name (its variants: base, sloppy"),
        "{h400}"
    );
    assert!(
        !h400.contains("<img src=x"),
        "hostile name as markup: {h400}"
    );
    // A run that is no variant, or no run: a 404 page.
    let (s, _) = get(&a, "/variants/99");
    assert_eq!(s, 404);

    let Some(browser) = chromium() else {
        common::notice(
            "NOTICE: chromium is not on PATH; skipping the browser part of the variants page test",
        );
        return;
    };
    let (dom, log) = browse(&browser, &format!("http://{a}/variants/1"));
    assert!(
        console_errors(&log).is_empty(),
        "{:?}",
        console_errors(&log)
    );
    assert_eq!(dom.matches("class=\"matrix-row\"").count(), 2, "{dom}");
    assert_eq!(dom.matches("class=\"variant-side\"").count(), 60);
    assert!(
        !dom.contains("<img src=\"x\""),
        "hostile name became an element"
    );
    // From the runs list, the link a click follows.
    let (dom, _) = browse(&browser, &format!("http://{a}/"));
    let href = dom
        .split("class=\"variants-link\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .map(|s| s.split('"').next().unwrap().to_string())
        .unwrap();
    assert!(href.starts_with("/variants/"), "{href}");
    let (dom, log) = browse(&browser, &format!("http://{a}{href}"));
    assert!(console_errors(&log).is_empty());
    assert!(dom.contains("id=\"variant-matrix\""));
}
