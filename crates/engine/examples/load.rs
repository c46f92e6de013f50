//! A load generator for benches: POSTs one chat-completions body many times
//! from a number of concurrent keep-alive clients and reports throughput,
//! latency percentiles and errors.
//!
//! ```text
//! cargo run --release -p probity-engine --example load -- \
//!     --url http://127.0.0.1:8089/v1/chat/completions \
//!     --concurrency 64 --requests 20000 [--stream] [--body FILE] \
//!     [--header 'authorization: Bearer x'] [--warmup 100]
//! ```
//!
//! Prints one line of JSON (`rps`, `latency_ms` p50/p90/p99 over the
//! successful requests, `ttfb_ms` with `--stream`: the time to the first
//! body bytes, `errors` by HTTP status or `transport`), then a line for
//! people. `--stream` sets `"stream": true` in the body and reads the
//! server-sent events to the end. Warm-up requests are sent first and not
//! counted. Exit status 2 on a usage error.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: load --url URL [--concurrency N] [--requests N] [--stream] \
[--body FILE] [--header 'name: value']... [--warmup N]";

#[derive(Debug)]
struct Args {
    url: String,
    concurrency: u64,
    requests: u64,
    warmup: u64,
    stream: bool,
    body: Value,
    headers: Vec<(String, String)>,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        url: String::new(),
        concurrency: 1,
        requests: 1000,
        warmup: 0,
        stream: false,
        body: json!({"model": "sim", "messages":
            [{"role": "user", "content": "Thank you! How do I water roses?"}]}),
        headers: Vec::new(),
    };
    while let Some(flag) = it.next() {
        if flag == "--stream" {
            args.stream = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} must be a whole number, not {v:?}"))
        };
        match flag.as_str() {
            "--url" => args.url = value,
            "--concurrency" => args.concurrency = number(&value)?.max(1),
            "--requests" => args.requests = number(&value)?,
            "--warmup" => args.warmup = number(&value)?,
            "--body" => {
                let text = std::fs::read_to_string(&value)
                    .map_err(|e| format!("cannot read --body {value}: {e}"))?;
                args.body = serde_json::from_str(&text)
                    .map_err(|e| format!("--body {value} is not JSON: {e}"))?;
            }
            "--header" => {
                let (name, v) = value
                    .split_once(':')
                    .ok_or_else(|| format!("--header must be 'name: value', not {value:?}"))?;
                args.headers.push((name.trim().into(), v.trim().into()));
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if args.url.is_empty() {
        return Err("--url is required".into());
    }
    if args.stream {
        args.body["stream"] = json!(true);
    }
    Ok(args)
}

/// One request's outcome: its status (None: a transport error), its
/// latency to the end of the body, and the time to the first body bytes.
struct Sample {
    status: Option<u16>,
    latency: Duration,
    ttfb: Duration,
}

async fn one(client: &reqwest::Client, args: &Args, body: &[u8]) -> Sample {
    let start = Instant::now();
    let mut req = client
        .post(&args.url)
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (name, value) in &args.headers {
        req = req.header(name, value);
    }
    let mut ttfb = None;
    let status = match req.send().await {
        Ok(mut resp) => loop {
            match resp.chunk().await {
                Ok(Some(_)) => {
                    ttfb.get_or_insert_with(|| start.elapsed());
                }
                Ok(None) => break Some(resp.status().as_u16()),
                Err(_) => break None,
            }
        },
        Err(_) => None,
    };
    let latency = start.elapsed();
    Sample {
        status,
        latency,
        ttfb: ttfb.unwrap_or(latency),
    }
}

/// Sends requests until `next` reaches `total`, each worker on its own
/// keep-alive connection.
async fn run(client: reqwest::Client, args: Arc<Args>, total: u64) -> Vec<Sample> {
    let body = Arc::new(serde_json::to_vec(&args.body).unwrap_or_default());
    let next = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (client, args, body, next) =
                (client.clone(), args.clone(), body.clone(), next.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    samples.push(one(&client, &args, &body).await);
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::with_capacity(total as usize);
    for w in workers {
        all.extend(w.await.unwrap_or_default());
    }
    all
}

/// The q-quantile (nearest rank) of sorted milliseconds; 0 when empty.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn millis(samples: &[&Sample], f: impl Fn(&Sample) -> Duration) -> Vec<f64> {
    let mut v: Vec<f64> = samples
        .iter()
        .map(|s| f(s).as_secs_f64() * 1000.0)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn report(args: &Args, samples: &[Sample], elapsed: Duration) -> Value {
    let (ok, failed): (Vec<&Sample>, Vec<&Sample>) = samples
        .iter()
        .partition(|s| s.status.is_some_and(|c| (200..300).contains(&c)));
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for s in failed {
        let key = s.status.map_or("transport".to_string(), |c| c.to_string());
        *errors.entry(key).or_insert(0) += 1;
    }
    let lat = millis(&ok, |s| s.latency);
    let pct = |v: &[f64]| {
        json!({"p50": round3(quantile(v, 0.5)), "p90": round3(quantile(v, 0.9)),
            "p99": round3(quantile(v, 0.99))})
    };
    let mut out = json!({
        "url": args.url,
        "concurrency": args.concurrency,
        "requests": samples.len(),
        "ok": ok.len(),
        "errors": errors,
        "elapsed_s": round3(elapsed.as_secs_f64()),
        "rps": round3(samples.len() as f64 / elapsed.as_secs_f64().max(1e-9)),
        "latency_ms": pct(&lat),
    });
    out["latency_ms"]["mean"] = json!(round3(lat.iter().sum::<f64>() / lat.len().max(1) as f64));
    if args.stream {
        out["ttfb_ms"] = pct(&millis(&ok, |s| s.ttfb));
    }
    out
}

fn human(r: &Value) -> String {
    let l = &r["latency_ms"];
    let mut line = format!(
        "{} requests at concurrency {}: {} req/s, latency p50 {} ms, p90 {} ms, p99 {} ms",
        r["requests"], r["concurrency"], r["rps"], l["p50"], l["p90"], l["p99"]
    );
    if let Some(t) = r.get("ttfb_ms") {
        line += &format!(", first byte p50 {} ms, p99 {} ms", t["p50"], t["p99"]);
    }
    let errors = r["errors"].as_object().map_or(0, |e| e.len());
    if errors == 0 {
        line += ", no errors";
    } else {
        line += &format!(", errors {}", r["errors"]);
    }
    line
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("load: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let client = match reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency as usize)
        .tcp_nodelay(true)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("load: cannot build the HTTP client: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.warmup > 0 {
        run(client.clone(), args.clone(), args.warmup).await;
    }
    let start = Instant::now();
    let samples = run(client, args.clone(), args.requests).await;
    let r = report(&args, &samples, start.elapsed());
    // A reader that stops early (`| head -1`) is not an error.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{r}").and_then(|_| writeln!(out, "{}", human(&r)));
    ExitCode::SUCCESS
}
