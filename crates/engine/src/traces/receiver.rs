//! `probity collect`'s OTLP/HTTP endpoint: `POST /v1/traces` takes an
//! `ExportTraceServiceRequest` as protobuf (`application/x-protobuf`,
//! feature `otlp-proto`) or JSON (`application/json`), gzip-compressed or
//! not, as the standard exporters send it, and answers OTLP's empty
//! success (an empty `ExportTraceServiceResponse`).
//!
//! Memory is bounded: a request body by `max_body_mb` (413 above), and the
//! spans received but not yet checked by `max_pending_spans`. An export
//! that would go beyond is answered 429 with `Retry-After` — the OTLP
//! exporters retry it after that long — and one that arrives while the
//! store is stalled is answered 503 with `Retry-After`, so spans wait in
//! the application's exporter, not here. Checking runs on a task of its
//! own, one export after another (those waiting together), each export's
//! spans in parallel.
//!
//! `GET /health`, `GET /metrics` ([`super::metrics`]) need no token.

use super::ingest::Ingest;
use super::metrics::{render, Receiving};
use super::span::{from_json, Span};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// How long an exporter is told to wait when the pending spans are at
/// their bound, and when the store is stalled.
const RETRY_THROTTLED_S: u64 = 1;
const RETRY_STALLED_S: u64 = 5;

/// Spans of waiting exports checked together at most.
const BATCH_SPANS: usize = 2048;

/// How long a body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

struct Collector {
    ingest: Arc<Ingest>,
    receiving: Arc<Receiving>,
    token: Option<String>,
    max_body: usize,
    max_pending: u64,
    queue: tokio::sync::mpsc::UnboundedSender<Vec<Span>>,
}

/// Receive on `listener` until `shutdown` completes; then every span
/// received is checked before this returns (the run is the caller's to
/// close).
pub async fn serve(
    listener: tokio::net::TcpListener,
    ingest: Arc<Ingest>,
    token: Option<String>,
    max_body: usize,
    max_pending: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Span>>();
    let receiving = Arc::new(Receiving::default());
    let state = Arc::new(Collector {
        ingest: ingest.clone(),
        receiving: receiving.clone(),
        token,
        max_body,
        max_pending: max_pending as u64,
        queue: tx,
    });
    // The worker holds no sender: the queue closes when the server's
    // state is dropped, and the worker ends once it is drained.
    let worker = tokio::spawn(async move {
        while let Some(mut spans) = rx.recv().await {
            // The exports already waiting, checked with this one (up to
            // BATCH_SPANS): every core busy on one batch.
            while spans.len() < BATCH_SPANS {
                match rx.try_recv() {
                    Ok(more) => spans.extend(more),
                    Err(_) => break,
                }
            }
            ingest.spans(&spans).await;
            receiving
                .pending
                .fetch_sub(spans.len() as u64, Ordering::Relaxed);
        }
    });
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/health", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .with_state(state.clone());
    let served = crate::http_server::serve(listener, app, shutdown).await;
    // The router and its connections are gone; with this last sender the
    // queue closes.
    drop(state);
    let _ = worker.await;
    served.map_err(|e| format!("server: {e}"))
}

async fn metrics(State(st): State<Arc<Collector>>) -> Response {
    let mut resp = render(&st.ingest, &st.receiving).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    resp
}

fn plain(status: StatusCode, message: impl Into<String>) -> Response {
    (status, message.into()).into_response()
}

fn retry_after(status: StatusCode, seconds: u64, message: &str) -> Response {
    let mut resp = plain(status, message);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    resp
}

/// Whether the request presents the expected bearer token (constant time).
fn authorized(expected: &Option<String>, headers: &HeaderMap) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim_start())
        .unwrap_or("");
    expected.as_bytes().ct_eq(presented.as_bytes()).into()
}

async fn traces(State(st): State<Arc<Collector>>, headers: HeaderMap, body: Body) -> Response {
    if !authorized(&st.token, &headers) {
        return plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    let r = &st.receiving;
    if st.ingest.writer.health().stalled() {
        r.unavailable.fetch_add(1, Ordering::Relaxed);
        return retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            RETRY_STALLED_S,
            "the run store is not keeping up; retry later",
        );
    }
    let spans = match decode(&st, &headers, body).await {
        Ok(s) => s,
        Err(resp) => {
            r.malformed.fetch_add(1, Ordering::Relaxed);
            return resp;
        }
    };
    let n = spans.len() as u64;
    // Reserve room for the export's spans, or refuse it whole: the
    // exporter retries the whole export, so none is counted twice.
    let reserved = r
        .pending
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
            (p + n <= st.max_pending || p == 0).then_some(p + n)
        })
        .is_ok();
    if !reserved {
        r.throttled.fetch_add(1, Ordering::Relaxed);
        return retry_after(
            StatusCode::TOO_MANY_REQUESTS,
            RETRY_THROTTLED_S,
            "too many spans waiting to be checked (max_pending_spans); retry later",
        );
    }
    if st.queue.send(spans).is_err() {
        r.pending.fetch_sub(n, Ordering::Relaxed);
        return retry_after(
            StatusCode::SERVICE_UNAVAILABLE,
            RETRY_STALLED_S,
            "shutting down",
        );
    }
    success(is_json(&headers))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// OTLP's success: an empty `ExportTraceServiceResponse`, in the
/// request's encoding.
fn success(json: bool) -> Response {
    let (body, kind) = if json {
        (Bytes::from_static(b"{}"), "application/json")
    } else {
        (Bytes::new(), "application/x-protobuf")
    };
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    resp
}

/// The request's spans: the body read within [`BODY_TIMEOUT`] and
/// `max_body`, un-gzipped when it says so, decoded by its content type.
// The error is the HTTP answer itself, handed back whole by the handler.
#[allow(clippy::result_large_err)]
async fn decode(st: &Collector, headers: &HeaderMap, body: Body) -> Result<Vec<Span>, Response> {
    let too_large = || {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the export is larger than {} bytes (max_body_mb)",
                st.max_body
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > st.max_body as u64) {
        return Err(too_large());
    }
    let bytes =
        match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, st.max_body)).await {
            Err(_) => {
                return Err(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the export did not arrive in time",
                ))
            }
            Ok(Err(e)) if e.to_string().contains("length limit") => return Err(too_large()),
            Ok(Err(e)) => {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the export: {e}"),
                ))
            }
            Ok(Ok(b)) => b,
        };
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let bytes = match encoding.as_str() {
        "identity" | "" => std::borrow::Cow::Borrowed(&bytes[..]),
        "gzip" => {
            let mut out = Vec::new();
            // The inflated size is bounded too: a small bomb is refused.
            let read = flate2::read::GzDecoder::new(&bytes[..])
                .take(st.max_body as u64 + 1)
                .read_to_end(&mut out);
            match read {
                Ok(n) if n > st.max_body => return Err(too_large()),
                Ok(_) => std::borrow::Cow::Owned(out),
                Err(e) => {
                    return Err(plain(
                        StatusCode::BAD_REQUEST,
                        format!("the export is not valid gzip: {e}"),
                    ))
                }
            }
        }
        other => {
            return Err(plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Content-Encoding {other:?} is not taken (gzip or none)"),
            ))
        }
    };
    if is_json(headers) {
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            plain(
                StatusCode::BAD_REQUEST,
                format!("the export is not JSON: {e}"),
            )
        })?;
        return from_json(&v).map_err(|e| plain(StatusCode::BAD_REQUEST, e));
    }
    protobuf(headers, &bytes)
}

#[cfg(feature = "otlp-proto")]
// The error is the HTTP answer itself, handed back whole by the handler.
#[allow(clippy::result_large_err)]
fn protobuf(_: &HeaderMap, bytes: &[u8]) -> Result<Vec<Span>, Response> {
    super::proto::from_protobuf(bytes).map_err(|e| plain(StatusCode::BAD_REQUEST, e))
}

#[cfg(not(feature = "otlp-proto"))]
// The error is the HTTP answer itself, handed back whole by the handler.
#[allow(clippy::result_large_err)]
fn protobuf(headers: &HeaderMap, _: &[u8]) -> Result<Vec<Span>, Response> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none");
    Err(plain(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("Content-Type {kind:?}: this build takes OTLP JSON only (application/json); build with the otlp-proto feature for protobuf"),
    ))
}
