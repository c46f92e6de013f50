//! The floor of `probity serve`'s own HTTP stack, for benches
//! (`bench/guard.sh`, issue 36 item 8): the guard's server
//! ([`probity_engine::http_server::serve`], hyper over tokio) and the same
//! client set-up as its providers (reqwest, kept-alive, `TCP_NODELAY`),
//! forwarding each `POST /v1/chat/completions` body to an upstream and its
//! answer back — parsing, checking, recording and monitoring nothing. What
//! it costs a request is what no guard built on this stack avoids.
//!
//! ```text
//! cargo run --release -p probity-engine --example forward -- \
//!     --listen 127.0.0.1:0 --upstream http://127.0.0.1:PORT/v1
//! ```
//!
//! Prints `listening on http://ADDR/v1`, as `probity serve` does. An
//! upstream that cannot be reached is a 502 naming the cause. Exit status
//! 2 on a usage error.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage: forward --upstream URL [--listen ADDR]";

struct Upstream {
    client: reqwest::Client,
    url: reqwest::Url,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<(String, reqwest::Url), String> {
    let (mut listen, mut upstream) = ("127.0.0.1:0".to_string(), None);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => listen = value,
            "--upstream" => {
                let base = value.trim_end_matches('/');
                let url = reqwest::Url::parse(&format!("{base}/chat/completions"))
                    .map_err(|e| format!("--upstream {value:?} is not a URL: {e}"))?;
                upstream = Some(url);
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok((listen, upstream.ok_or("--upstream is required")?))
}

/// The body forwarded as is; the upstream's status, content type and body
/// returned as they came.
async fn forward(State(up): State<Arc<Upstream>>, body: Bytes) -> Response {
    let sent = up
        .client
        .post(up.url.clone())
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let answer = match sent {
        Ok(a) => a,
        Err(e) => return (StatusCode::BAD_GATEWAY, format!("upstream: {e}")).into_response(),
    };
    let status = answer.status();
    let kind = answer.headers().get(header::CONTENT_TYPE).cloned();
    match answer.bytes().await {
        Ok(bytes) => {
            let mut resp = (status, bytes).into_response();
            if let Some(kind) = kind {
                resp.headers_mut().insert(header::CONTENT_TYPE, kind);
            }
            resp
        }
        Err(e) => (StatusCode::BAD_GATEWAY, format!("upstream: {e}")).into_response(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let (listen, url) = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "forward: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The settings of the providers' client (`provider::util::client`,
    // crate-private there), so the floor is the guard's own.
    let client = match reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "forward: cannot build the client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "forward: cannot listen on {listen}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().map_or(listen, |a| a.to_string());
    let _ = writeln!(std::io::stdout(), "listening on http://{addr}/v1");
    let _ = std::io::stdout().flush();
    let router = Router::new()
        .route("/v1/chat/completions", post(forward))
        .with_state(Arc::new(Upstream { client, url }));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match probity_engine::http_server::serve(listener, router, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "forward: {e}");
            ExitCode::FAILURE
        }
    }
}
