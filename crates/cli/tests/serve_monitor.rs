//! `probity serve`'s live monitoring as an operator meets it: traffic from
//! a system below a check's minimum raises one alarm — a warning in the
//! log, the `probity_alarm` gauge, a JSON event at the webhook — and a
//! check comfortably above its minimum raises none.

use crate::common;

use common::{probity_cmd, start, text};
use serde_json::{json, Value};
use std::io::Read;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// A webhook receiver on 127.0.0.1: every POST body, answered 200.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + length {
                            let body = &buf[end + 4..end + 4 + length];
                            if let Ok(v) = serde_json::from_slice(body) {
                                let _ = tx.send(v);
                            }
                            let _ = sock
                                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                                .await;
                            return;
                        }
                    }
                }
            });
        }
    });
    (format!("http://{addr}/hook"), rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_below_its_minimum_alarms_once_by_log_metric_and_webhook() {
    let (hook, mut events) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        format!(
            r#"name = "watched"
[upstream]
provider = "sim"
seed = 5
contractions = 0.5
[retry]
attempts = 2
[monitor]
epoch = 40
webhook = "{hook}"
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.95
[[validator]]
name = "not_empty"
kind = "length"
min = 1
minimum_success_percentage = 0.5
"#
        ),
    )
    .unwrap();
    let mut cmd = probity_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--store")
        .arg(dir.path().join("runs.db"))
        .stderr(std::process::Stdio::piped());
    let mut server = start(cmd);
    let base = format!("http://{}", server.1);
    let client = reqwest::Client::new();
    for i in 0..120 {
        let r = client
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": format!("question {i}")}]}))
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success() || r.status() == 422,
            "{}",
            r.status()
        );
    }
    let event = tokio::time::timeout(std::time::Duration::from_secs(30), events.recv())
        .await
        .expect("no webhook event within 30 s")
        .unwrap();
    assert_eq!(event["event"], "probity.alarm");
    assert_eq!(event["check"], "contraction_validator");
    assert_eq!(event["kind"], "below_minimum");
    assert!(
        event["interval"]["upper"].as_f64().unwrap() < 0.95,
        "{event}"
    );
    let metrics = common::metrics(&server.1).await;
    let alarm_lines: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("probity_alarm{"))
        .collect();
    assert!(
        alarm_lines
            .iter()
            .any(|l| l.contains("check=\"contraction_validator\"")
                && l.contains("kind=\"below_minimum\"")
                && l.ends_with(" 1")),
        "{metrics}"
    );
    assert!(
        !alarm_lines.iter().any(|l| l.contains("not_empty")),
        "a check above its minimum alarmed: {alarm_lines:?}"
    );
    assert!(
        metrics.contains("probity_check_pass_rate_window{"),
        "{metrics}"
    );
    // Each alarm once: no second event for the same check, kind and attempt.
    let mut seen = vec![(
        event["check"].clone(),
        event["attempt"].clone(),
        event["kind"].clone(),
    )];
    let mut raised = vec![event.clone()];
    while let Ok(Some(e)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), events.recv()).await
    {
        let key = (e["check"].clone(), e["attempt"].clone(), e["kind"].clone());
        assert!(!seen.contains(&key), "alarm raised twice: {e}");
        seen.push(key);
        raised.push(e);
    }
    // The server's alarm of each attempt kind, as the webhook got it.
    let server_alarm = |attempt: &str| {
        raised
            .iter()
            .find(|e| e["check"] == "contraction_validator" && e["attempt"] == attempt)
            .cloned()
            .unwrap_or_else(|| panic!("no {attempt} alarm: {raised:?}"))
    };
    let mut stderr = server.0.stderr.take().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status();
    let _ = server.0.wait();
    let mut log = Vec::new();
    stderr.read_to_end(&mut log).unwrap();
    let log = text(&log);
    assert_eq!(
        log.matches(
            "alarm: check contraction_validator (first attempts) is detected below its minimum"
        )
        .count(),
        1,
        "{log}"
    );

    // The run's report shows the same watches, replayed from the store:
    // the verdict is the first attempts' all-traffic sequence's, and the
    // alarm is there in every format.
    let store = dir.path().join("runs.db");
    let report = |format: &str| {
        let out = probity_cmd()
            .args(["report", "watched", "--format", format, "--store"])
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let live = &json["live"];
    assert_eq!(live["requests"], 120, "{live}");
    assert_eq!(
        (live["epoch"].as_u64(), live["window"].as_u64()),
        (Some(40), Some(500))
    );
    let watched = &live["checks"][0];
    assert_eq!(watched["name"], "contraction_validator");
    let first = &watched["first"];
    assert_eq!(first["requests"], 120);
    assert_eq!(first["alarms"][0]["kind"], "below_minimum", "{first}");
    // The same alarms the server raised, at the same requests.
    for (kind, watch) in [("first", first), ("published", &watched["published"])] {
        let alarm = server_alarm(kind);
        assert_eq!(watch["alarms"][0]["at"], alarm["at"], "{watch} vs {alarm}");
    }
    let check = &json["checks"][0];
    assert_eq!(check["verdict"]["decision"], "fail", "{check}");
    assert_eq!(check["verdict"]["established"], true);
    assert_eq!(check["rate"]["lower"], first["all"]["lower"]);
    assert_eq!(check["rate"]["upper"], first["all"]["upper"]);
    // Published after retries: at least the first attempts' rate.
    assert!(watched["published"]["rate"].as_f64() >= first["rate"].as_f64());
    assert!(
        json["checks"][1]["verdict"]["decision"] == "pass",
        "{}",
        json["checks"][1]
    );
    let text_report = report("text");
    assert!(
        text_report.contains("Live rates: live traffic: 120 requests"),
        "{text_report}"
    );
    assert!(text_report.contains("BELOW 95%"), "{text_report}");
    let md = report("markdown");
    assert!(
        md.contains("### Live rates") && md.contains("❌ BELOW 95%"),
        "{md}"
    );
    let html = report("html");
    assert!(html.contains("id=\"live\"") && html.contains("class=\"alarmed\""));
}

/// `probity monitor NAME --once` pools every replica's traffic from the
/// store: two servers, one store, one table of rates over both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_pools_the_replicas_traffic_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("guard.toml");
    std::fs::write(
        &config,
        "name = \"pooled\"\n[upstream]\nprovider = \"sim\"\nseed = 9\ncontractions = 0.5\n[retry]\nattempts = 3\n[[validator]]\nname = \"contraction_validator\"\ncheck = '''count(output, \"'\") <= 3'''\nminimum_success_percentage = 0.95\n",
    )
    .unwrap();
    let store = dir.path().join("runs.db");
    let replica = || {
        let mut cmd = probity_cmd();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--store")
            .arg(&store);
        start(cmd)
    };
    let (a, b) = (replica(), replica());
    let client = reqwest::Client::new();
    for i in 0..40 {
        let addr = if i % 2 == 0 { &a.1 } else { &b.1 };
        let r = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .json(
                &json!({"model": "m", "messages": [{"role": "user", "content": format!("q {i}")}]}),
            )
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success() || r.status() == 422);
    }
    // The writers commit every 50 ms.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let out = probity_cmd()
        .args(["monitor", "pooled", "--once", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let page = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(page.contains("2 runs being written"), "{page}");
    assert!(page.contains("40 requests"), "{page}");
    let first = page
        .lines()
        .find(|l| l.trim_start().starts_with("contraction_validator") && l.contains(" first "))
        .unwrap_or_else(|| panic!("{page}"));
    assert!(first.contains("40"), "{first}");
    // Published after up to 3 attempts: a higher rate than the first attempt's.
    let published = page
        .lines()
        .find(|l| l.trim_start().starts_with("contraction_validator") && l.contains(" published "))
        .unwrap_or_else(|| panic!("{page}"));
    let rate = |l: &str| -> f64 {
        l.split_whitespace()
            .find(|w| w.ends_with('%'))
            .and_then(|w| w.trim_end_matches('%').parse().ok())
            .unwrap()
    };
    assert!(rate(published) > rate(first), "{page}");
    // Both replicas stopped: nothing is being written, and `--since` pools
    // the finished runs, the same 40 requests at the same rates.
    assert_eq!(a.stop("TERM"), Some(0));
    assert_eq!(b.stop("TERM"), Some(0));
    let monitor = |extra: &[&str]| {
        let out = probity_cmd()
            .args(["monitor", "pooled", "--once", "--store"])
            .arg(&store)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let idle = monitor(&[]);
    assert!(
        idle.contains("0 runs being written") && idle.contains("--since"),
        "{idle}"
    );
    let day = monitor(&["--since", "24h"]);
    assert!(day.contains("2 runs (1, 2), 0 being written"), "{day}");
    let line = |page: &str, kind: &str| -> String {
        page.lines()
            .find(|l| l.trim_start().starts_with("contraction_validator") && l.contains(kind))
            .unwrap_or_else(|| panic!("{page}"))
            .to_string()
    };
    assert_eq!(line(&day, " first "), first);
    assert_eq!(line(&day, " published "), published);
    // The same page as JSON, for a dashboard or a script.
    let v: Value = serde_json::from_str(monitor(&["--since", "24h", "--json"]).trim()).unwrap();
    assert_eq!(v["schema"], "probity.monitor.v1");
    assert_eq!(v["name"], "pooled");
    assert_eq!(v["runs"], json!([1, 2]));
    assert_eq!(v["running"], json!([]));
    assert_eq!(v["live"]["requests"], 40);
    let check = &v["live"]["checks"][0];
    assert_eq!(check["name"], "contraction_validator");
    assert_eq!(check["first"]["requests"], 40);
    assert!(
        check["published"]["rate"].as_f64().unwrap() > check["first"]["rate"].as_f64().unwrap(),
        "{check}"
    );
    // Runs before the time are left out; a bad time names the forms.
    let later = monitor(&["--since", "2999-01-01"]);
    assert!(
        later.contains("no run of this name was served since then"),
        "{later}"
    );
    let out = probity_cmd()
        .args([
            "monitor",
            "pooled",
            "--once",
            "--since",
            "yesterday",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--since \"yesterday\": expected a UTC date or time"));
    // A name the store never held is a typo, not an idle guard: the error
    // alone, no page (nor a JSON page) before it.
    for json in [false, true] {
        let mut cmd = probity_cmd();
        cmd.args(["monitor", "poolde", "--once", "--store"])
            .arg(&store);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("holds no run named \"poolde\""),
            "{}",
            text(&out.stderr)
        );
        assert!(
            out.stdout.is_empty(),
            "--json {json}: {}",
            text(&out.stdout)
        );
    }
}

/// A guard file named `name` on the simulator whose one check is
/// `count(output, "'") <= {most}`, with `extra` at its top.
fn guard_file(
    dir: &std::path::Path,
    file: &str,
    name: &str,
    most: u32,
    extra: &str,
) -> std::path::PathBuf {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\n{extra}\n[upstream]\nprovider = \"sim\"\nseed = 5\ncontractions = 0.3\n[[validator]]\nname = \"contraction_validator\"\ncheck = '''count(output, \"'\") <= {most}'''\nminimum_success_percentage = 0.95\n"
        ),
    )
    .unwrap();
    path
}

/// Serve `config` into `store` for `requests` requests, then stop it.
async fn serve_traffic(config: &std::path::Path, store: &std::path::Path, requests: usize) {
    let mut cmd = probity_cmd();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .arg("--store")
        .arg(store);
    let server = start(cmd);
    let client = reqwest::Client::new();
    for i in 0..requests {
        let r = client
            .post(format!("http://{}/v1/chat/completions", server.1))
            .json(
                &json!({"model": "m", "messages": [{"role": "user", "content": format!("q {i}")}]}),
            )
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success() || r.status() == 422);
    }
    assert_eq!(server.stop("TERM"), Some(0));
}

fn monitor_out(store: &std::path::Path, args: &[&str]) -> std::process::Output {
    probity_cmd()
        .arg("monitor")
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap()
}

/// Without flags, `probity monitor` watches with the server's settings
/// (its `confidence` and `[monitor]` epoch and window, stored with its
/// run), so it shows what `probity report` of the run shows; a flag given
/// still wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_uses_the_served_runs_settings_and_agrees_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    // The largest confidence a watch takes, and a small epoch and window.
    let config = guard_file(
        dir.path(),
        "guard.toml",
        "settled",
        3,
        "confidence = 0.999999999999\n[monitor]\nepoch = 50\nwindow = 20",
    );
    serve_traffic(&config, &store, 120).await;
    let out = probity_cmd()
        .args(["report", "1", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = monitor_out(&store, &["settled", "--once", "--since", "24h", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let monitor: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (r, m) = (&report["live"], &monitor["live"]);
    assert_eq!(
        (r["epoch"].as_u64(), r["window"].as_u64()),
        (Some(50), Some(20)),
        "{r}"
    );
    assert_eq!(r["confidence"], 0.999999999999);
    for key in ["requests", "confidence", "epoch", "window"] {
        assert_eq!(m[key], r[key], "{key}: monitor {m} vs report {r}");
    }
    // 120 requests in epochs of 50 (a detected change starts one too):
    // the same epoch, of at most 50 requests, in both.
    for kind in ["first", "published"] {
        let (rk, mk) = (&r["checks"][0][kind], &m["checks"][0][kind]);
        assert!(rk["recent"]["epoch"].as_u64() >= Some(3), "{rk}");
        assert!(rk["recent"]["requests"].as_u64() <= Some(50), "{rk}");
        for part in ["all", "recent", "window", "alarms"] {
            assert_eq!(
                mk[part], rk[part],
                "{kind} {part}: monitor {mk} vs report {rk}"
            );
        }
    }
    // The text pages say the same epoch.
    let out = monitor_out(&store, &["settled", "--once", "--since", "24h"]);
    let page = text(&out.stdout);
    let first = &r["checks"][0]["first"]["recent"];
    assert!(
        page.contains(&format!(
            "of {} (epoch {})",
            first["requests"], first["epoch"]
        )) && page.contains("epoch of 50 requests"),
        "{page}"
    );
    // Flags given win over the stored settings.
    let out = monitor_out(
        &store,
        &[
            "settled",
            "--once",
            "--since",
            "24h",
            "--json",
            "--epoch",
            "1000",
            "--window",
            "500",
            "--confidence",
            "0.9",
        ],
    );
    let given: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &given["live"];
    assert_eq!(
        (g["epoch"].as_u64(), g["window"].as_u64()),
        (Some(1000), Some(500)),
        "{g}"
    );
    assert_eq!(g["confidence"], 0.9);
    // The flag's epoch of 1000 holds more than the stored 50 requests (a
    // change the watch detects starts a new epoch, so not always all 120).
    let recent = g["checks"][0]["first"]["recent"]["requests"].as_u64();
    assert!(recent > Some(50) && recent <= Some(120), "{g}");
}

/// A confidence too close to 1 for the watches (α = 1 − confidence below
/// 1e-12; at 0.9999999999999999 a share's complement rounds to 1) is a
/// usage error naming the flag or the key as written, not a damaged run
/// or a server that fails to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confidence_the_watches_cannot_take_is_refused_by_flag_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let config = guard_file(dir.path(), "guard.toml", "near", 3, "");
    serve_traffic(&config, &store, 3).await;
    for bad in [
        "0.9999999999999999",
        "0.9999999999991",
        "1",
        "0",
        "-0.5",
        "NaN",
    ] {
        let flag = format!("--confidence={bad}");
        let out = monitor_out(&store, &["near", "--once", "--since", "24h", &flag]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "--confidence {bad}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("--confidence {}", bad.parse::<f64>().unwrap()))
                && err.contains("at most 0.999999999999"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    }
    // `probity serve` on a guard file its check refuses: what it said.
    let refused = |file: &str, extra: &str| {
        let config = guard_file(dir.path(), file, "near", 3, extra);
        probity_cmd()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap()
    };
    let out = refused("bad.toml", "confidence = 0.9999999999999999");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.toml")
            && err.contains("confidence = 0.9999999999999999: must be")
            && err.contains("at most 0.999999999999"),
        "{err}"
    );
    assert!(!err.contains("confidence 1 "), "{err}");
    // A rate limit no live request could wait for is refused alike.
    for rate in ["1e-300", "0.5"] {
        let out = refused("slow.toml", &format!("requests_per_minute = {rate}"));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rate}: {err}");
        assert!(
            err.contains(&format!("requests_per_minute = {rate}: must be at least 1")),
            "{err}"
        );
    }
}

/// `--since` pools runs of one name only while their checks are defined
/// alike: a run whose check of the same name counts otherwise is left out,
/// with a warning naming the check and both runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_leaves_out_runs_whose_check_is_defined_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let strict = guard_file(dir.path(), "strict.toml", "redefined", 3, "");
    let loose = guard_file(dir.path(), "loose.toml", "redefined", 5, "");
    // Only the message differs: the same check, pooled.
    let worded = guard_file(dir.path(), "worded.toml", "redefined", 5, "");
    std::fs::write(
        &worded,
        std::fs::read_to_string(&worded).unwrap().replace(
            "minimum_success_percentage",
            "message = \"too casual\"\nminimum_success_percentage",
        ),
    )
    .unwrap();
    serve_traffic(&strict, &store, 10).await;
    serve_traffic(&loose, &store, 20).await;
    serve_traffic(&worded, &store, 30).await;
    let out = monitor_out(&store, &["redefined", "--once", "--since", "24h", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"], json!([2, 3]), "{v}");
    assert_eq!(v["left_out"], json!([1]), "{v}");
    assert_eq!(v["live"]["requests"], 50);
    let err = text(&out.stderr);
    assert_eq!(
        err.matches(
            "warning: run 1 left out: check contraction_validator defined otherwise than in run 3"
        )
        .count(),
        1,
        "{err}"
    );
    let out = monitor_out(&store, &["redefined", "--once", "--since", "24h"]);
    let page = text(&out.stdout);
    assert!(
        page.contains(
            "run 1 left out: check contraction_validator defined otherwise than in run 3"
        ),
        "{page}"
    );
    assert!(!page.contains("left out (other checks)"), "{page}");
}
