//! `probity serve` driven over HTTP with a real client, against `probity
//! sim serve` as the upstream (faults included): the guard publishes only
//! passing outputs, refuses streaming and bad tokens, exposes health and
//! metrics, and records every attempt in the run store.

use crate::common;

use common::{probity_cmd as probity, start, Server};
use serde_json::{json, Value};
use std::path::Path;

fn guard_config(dir: &Path, upstream: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join("guard.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "live"
token_env = "PROBITY_TEST_TOKEN"
call_attempts = 4
{extra}
[upstream]
provider = "openai"
base_url = "http://{upstream}/v1"
model = "probity-sim"
api_key_env = "PROBITY_TEST_UPSTREAM_KEY"

[retry]
attempts = 4

[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''

[[validator]]
name = "politeness_validator"
message = "Say you're welcome when thanked"
check = '''if input.text.contains("Thank you") {{ output.contains("You're welcome") }} else {{ true }}'''
"#
        ),
    )
    .unwrap();
    path
}

fn serve(dir: &Path, config: &Path) -> Server {
    let mut cmd = common::serve_cmd(dir, config);
    cmd.env("PROBITY_TEST_TOKEN", "s3cret-token")
        .env("PROBITY_TEST_UPSTREAM_KEY", "upstream-key");
    start(cmd)
}

fn body(text: &str) -> Value {
    json!({"model": "whatever", "messages": [{"role": "user", "content": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_publishes_passing_outputs_through_faults_and_records_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = probity();
    sim.args([
        "sim",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--server-error",
        "0.05",
        "--rate-limit",
        "0.05",
    ]);
    let sim_file = dir.path().join("sim.toml");
    std::fs::write(
        &sim_file,
        "[model]\ncontractions = 0.3\nomit_welcome = 0.4\n[faults]\nretry_after_secs = 0\n",
    )
    .unwrap();
    sim.arg("--config").arg(&sim_file);
    let upstream = start(sim);
    let config = guard_config(dir.path(), &upstream.1, "");
    let guard = serve(dir.path(), &config);
    let base = format!("http://{}", guard.1);
    let client = reqwest::Client::new();

    // Health needs no token; completions do.
    let r = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&body("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth("wrong")
        .json(&body("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // Streaming: the checked output as chunks, then [DONE].
    let mut b = body("How do I prune roses?");
    b["stream"] = json!(true);
    // Forwarded: the simulator answers this seed with a passing output.
    b["seed"] = json!(2);
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth("s3cret-token")
        .json(&b)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    let events = r.text().await.unwrap();
    assert_eq!(status, 200, "{events}");
    assert_eq!(headers["content-type"], "text/event-stream");
    assert!(events.ends_with("data: [DONE]\n\n"), "{events}");
    let text: String = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect();
    assert!(
        !text.is_empty() && text.matches('\'').count() <= 3,
        "{events}"
    );

    let n = 30;
    let mut published = 0;
    let mut rate_limited = 0;
    let mut no_first = 0u64;
    for i in 0..n {
        let text = if i % 2 == 0 {
            format!("Thank you for the advice on roses {i}!")
        } else {
            format!("How do I prune hedge {i}?")
        };
        let r = client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth("s3cret-token")
            .json(&body(&text))
            .send()
            .await
            .unwrap();
        let attempts: u32 = r.headers()["x-probity-attempts"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=4).contains(&attempts));
        let outcome = r.headers()["x-probity-outcome"]
            .to_str()
            .unwrap()
            .to_string();
        let status = r.status();
        let retry_after = r.headers().get("retry-after").cloned();
        let v: Value = r.json().await.unwrap();
        if status == 429 {
            // The upstream's rate limit, passed on for the client to back
            // off from (docs/serve.md, "When the upstream fails").
            assert_eq!(outcome, "upstream-error");
            assert!(retry_after.is_some(), "{v}");
            assert_eq!(v["error"]["code"], "rate_limit_exceeded");
            rate_limited += 1;
            // Limited on the first attempt: no first-attempt verdicts.
            no_first += u64::from(v["error"]["attempts"].as_array().unwrap().len() == 1);
        } else if status == 200 {
            assert_eq!(outcome, "published");
            let out = v["choices"][0]["message"]["content"].as_str().unwrap();
            assert!(out.matches('\'').count() <= 3, "{out}");
            if i % 2 == 0 {
                assert!(out.contains("You're welcome"), "{out}");
            }
            published += 1;
        } else {
            assert_eq!(status, 422, "{v}");
            assert_eq!(outcome, "nothing-passed");
            assert_eq!(v["error"]["attempts"].as_array().unwrap().len(), 4);
        }
    }
    // P(pass) per attempt is 0.7 or 0.42: within 4 attempts nearly all pass.
    assert!(published + rate_limited >= n - 4, "{published}");
    assert!(
        published >= n / 2,
        "{published} published, {rate_limited} rate limited"
    );

    let metrics = common::metrics(&guard.1).await;
    assert!(
        // The n requests and the streamed one.
        metrics.contains(&format!("probity_requests_total {}", n + 1)),
        "{metrics}"
    );
    assert!(metrics.contains("probity_pass_rate"));
    // Per check: every request's first attempt has one cell, every
    // published answer passed (the streamed request is one of each).
    let sum = |prefix: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    for check in ["contraction_validator", "politeness_validator"] {
        let cells = format!("probity_check_cells_total{{check=\"{check}\"");
        assert_eq!(
            sum(&format!("{cells},attempt=\"first\"")),
            n as u64 + 1 - no_first,
            "{metrics}"
        );
        assert_eq!(
            sum(&format!("{cells},attempt=\"published\",cell=\"pass\"")),
            published as u64 + 1,
            "{metrics}"
        );
    }
    assert_eq!(sum("probity_request_duration_seconds_count"), n as u64 + 1);
    // The cost of reliability: retries used tokens too (P(pass) < 1).
    assert!(
        sum("probity_tokens_total{attempt=\"first\"}") > 0,
        "{metrics}"
    );
    assert!(
        sum("probity_tokens_total{attempt=\"retry\"}") > 0,
        "{metrics}"
    );
    // Each check's live rate: the first attempts' share of passes, inside
    // its confidence sequence.
    let gauge = |name: &str, check: &str| -> f64 {
        let prefix = format!("{name}{{check=\"{check}\",attempt=\"first\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix}in {metrics}"))
    };
    for check in ["contraction_validator", "politeness_validator"] {
        let cells = format!("probity_check_cells_total{{check=\"{check}\",attempt=\"first\"");
        let (pass, fail) = (
            sum(&format!("{cells},cell=\"pass\"")) as f64,
            sum(&format!("{cells},cell=\"fail\"")) as f64,
        );
        let rate = gauge("probity_check_pass_rate", check);
        assert!(
            (rate - pass / (pass + fail)).abs() < 1e-9,
            "{check}: {rate}"
        );
        let (lo, hi) = (
            gauge("probity_check_pass_rate_lower", check),
            gauge("probity_check_pass_rate_upper", check),
        );
        assert!(
            0.0 <= lo && lo <= rate && rate <= hi && hi <= 1.0,
            "{check}: {lo} {rate} {hi}"
        );
        assert!(hi - lo < 1.0, "{check}: an interval that learned nothing");
    }
    // A graceful stop flushes every answered request.
    assert_eq!(guard.stop("TERM"), Some(0));

    // Live traffic is a run: one input per request, every attempt kept.
    let store = probity_engine::store::Store::open(&dir.path().join("runs.db")).unwrap();
    let run = store.latest_named("live").unwrap().unwrap();
    let samples = store.samples(run).unwrap();
    assert_eq!(samples.len(), n + 1);
    let attempts = store.attempts(run).unwrap();
    assert!(attempts.len() >= n);
    assert_eq!(
        attempts.iter().filter(|a| a.published).count(),
        published + 1
    );
    // No secret reaches the store.
    let raw = std::fs::read(dir.path().join("runs.db")).unwrap();
    let has = |needle: &str| raw.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(!has("s3cret-token") && !has("upstream-key"));

    // `probity plan RUN` and `probity report RUN` read it.
    let out = probity()
        .args(["plan", &run.to_string(), "--store"])
        .arg(dir.path().join("runs.db"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Guarded system"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_passed_policy_last_returns_the_last_output_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = probity();
    sim.args(["sim", "serve", "--listen", "127.0.0.1:0"]);
    let upstream = start(sim);
    let config = guard_config(dir.path(), &upstream.1, "on_nothing_passed = \"last\"");
    // A check nothing passes.
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[[validator]]\nname = \"never\"\nmessage = \"Mention the moon\"\ncheck = 'output.contains(\"moon\")'\n");
    std::fs::write(&config, text).unwrap();
    let guard = serve(dir.path(), &config);
    let r = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", guard.1))
        .bearer_auth("s3cret-token")
        .json(&body("Tell me about gardening"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-probity-outcome"], "nothing-passed");
    assert_eq!(r.headers()["x-probity-attempts"], "4");
}

/// A check that cannot judge any output (an expression over its operation
/// limit) is the guard's fault, not the model's: the client gets a 500
/// `guard_check_error` naming it, with outcome `check-error` (never
/// `nothing-passed`), the operator a warning on standard error at once;
/// with `on_nothing_passed = "last"` the output goes out flagged
/// `check-error`. A dead upstream is outcome `upstream-error`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_check_is_a_guard_error_not_a_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = common::sim_serve(&[]);
    let broken =
        "[[validator]]\nname = \"broken\"\nmessage = \"Never read\"\ncheck = '''loop { }'''\n";
    let config = guard_config(dir.path(), &upstream.1, "");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replace("attempts = 4", "attempts = 2");
    std::fs::write(&config, format!("{text}\n{broken}")).unwrap();
    let mut cmd = common::serve_cmd(dir.path(), &config);
    cmd.env("PROBITY_TEST_TOKEN", "s3cret-token")
        .env("PROBITY_TEST_UPSTREAM_KEY", "upstream-key")
        .stderr(std::process::Stdio::piped());
    let guard = start(cmd);
    let client = reqwest::Client::new();
    let ask = |text: &'static str| {
        client
            .post(format!("http://{}/v1/chat/completions", guard.1))
            .bearer_auth("s3cret-token")
            .json(&body(text))
            .send()
    };
    // "Hello" passes the two working checks: only the broken one is left.
    let r = ask("Hello").await.unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(r.headers()["x-probity-outcome"], "check-error");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "guard_check_error", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("broken (") && message.contains("not a verdict on the output"),
        "{message}"
    );
    // Not retried: the first attempt told it all.
    assert_eq!(
        v["error"]["attempts"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    for _ in 0..3 {
        let _ = ask("Hello").await.unwrap();
    }
    let log = guard.stop_with_log();
    // 4 attempts erred: told at the 1st, 2nd and 4th.
    let told: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("check broken could not judge an output"))
        .collect();
    assert_eq!(told.len(), 3, "{log}");
    assert!(told[2].contains("(4 so far"), "{log}");

    // Publishing the last output anyway: flagged check-error.
    std::fs::write(
        &config,
        format!(
            "on_nothing_passed = \"last\"\n{}",
            std::fs::read_to_string(&config).unwrap()
        ),
    )
    .unwrap();
    let hello = |guard: &Server| {
        client
            .post(format!("http://{}/v1/chat/completions", guard.1))
            .bearer_auth("s3cret-token")
            .json(&body("Hello"))
            .send()
    };
    let guard = serve(dir.path(), &config);
    let r = hello(&guard).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-probity-outcome"], "check-error");
    drop(guard);

    // No upstream at all: upstream-error.
    drop(upstream);
    let dead = guard_config(dir.path(), "127.0.0.1:1", "");
    let guard = serve(dir.path(), &dead);
    let r = hello(&guard).await.unwrap();
    assert_eq!(r.status(), 502);
    assert_eq!(r.headers()["x-probity-outcome"], "upstream-error");
    // Counted as what it was: an upstream failure, not a check's error nor
    // a rejection by the checks.
    let metrics = common::metrics(&guard.1).await;
    let count = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    assert_eq!(
        count("probity_upstream_failed_total ").as_deref(),
        Some("1"),
        "{metrics}"
    );
    assert_eq!(
        count("probity_nothing_passed_total ").as_deref(),
        Some("0"),
        "{metrics}"
    );
    assert!(!metrics.contains("cell=\"error\""), "{metrics}");
}

/// The store failing under live traffic (its samples table dropped by
/// another hand): the guard keeps answering every request, never waiting
/// for the store; the writer holds the records and tries again (a store
/// that comes back gets them), saying why in the log; on shutdown the run
/// is named unrecorded, exit 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_fails_under_traffic_never_stops_the_answers() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = common::sim_serve(&[]);
    let config = guard_config(dir.path(), &upstream.1, "");
    let mut cmd = common::serve_cmd(dir.path(), &config);
    cmd.env("PROBITY_TEST_TOKEN", "s3cret-token")
        .env("PROBITY_TEST_UPSTREAM_KEY", "upstream-key")
        .stderr(std::process::Stdio::piped());
    let mut guard = start(cmd);
    let base = format!("http://{}", guard.1);
    let client = reqwest::Client::new();
    let ask = |i: usize| {
        client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth("s3cret-token")
            .json(&body(&format!("How deep are bulbs planted, {i}?")))
            .send()
    };
    for i in 0..5 {
        assert_eq!(ask(i).await.unwrap().status(), 200);
    }
    rusqlite::Connection::open(dir.path().join("runs.db"))
        .unwrap()
        .execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE samples;")
        .unwrap();
    for i in 5..25 {
        let r = ask(i).await.unwrap();
        assert_eq!(r.status(), 200, "request {i}");
    }
    // Health answers while the writer tries again.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &guard.0.id().to_string()])
        .status();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut guard.0.stderr.take().unwrap(), &mut err).unwrap();
    let status = guard.0.wait().unwrap();
    assert!(
        err.contains("no such table: samples") && err.contains("tried again every second"),
        "{err}"
    );
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains("25 requests answered, not all of them stored"),
        "{err}"
    );
    drop(upstream);
}
