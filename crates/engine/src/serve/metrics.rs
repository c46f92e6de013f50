//! The guard's read-only endpoints: `GET /health`, `GET /metrics`
//! (Prometheus text, counts only — never a request, an output, a reason or
//! a header) and `GET /v1/models` (the upstream's model).

use super::state::ServeState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub async fn health() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// `GET /v1/models`: the one model the guard answers with (behind the
/// token when one is configured, as the chat endpoint).
pub async fn models(State(st): State<Arc<ServeState>>, headers: HeaderMap) -> Response {
    if !super::chat::authorized(&st.token, &headers) {
        return super::chat::error_response(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or wrong bearer token",
        );
    }
    Json(json!({
        "object": "list",
        "data": [{"id": st.model, "object": "model", "created": 0, "owned_by": "probity"}],
    }))
    .into_response()
}

pub async fn metrics(State(st): State<Arc<ServeState>>) -> Response {
    let m = &st.metrics;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (requests, published) = (get(&m.requests), get(&m.published));
    let done = published + get(&m.nothing_passed);
    let pass_rate = if done == 0 {
        0.0
    } else {
        published as f64 / done as f64
    };
    let counters = [
        ("requests", "Chat completion requests guarded.", requests),
        ("published", "Requests answered with an output that passed.", published),
        ("nothing_passed", "Requests where no attempt passed.", get(&m.nothing_passed)),
        ("rejected", "Requests answered with an error because nothing passed.", get(&m.rejected)),
        ("attempts", "Attempts (upstream generations) made.", get(&m.attempts)),
        ("attempt_errors", "Attempts whose upstream call failed.", get(&m.attempt_errors)),
        ("unauthorized", "Requests refused for a missing or wrong token.", get(&m.unauthorized)),
        ("cancelled", "Requests whose client went away before the answer (upstream calls cancelled, not recorded).", get(&m.cancelled)),
        ("streamed", "Requests answered as server-sent events.", get(&m.streamed)),
    ];
    let mut text = String::new();
    for (name, help, value) in counters {
        text.push_str(&format!(
            "# HELP probity_{name}_total {help}\n# TYPE probity_{name}_total counter\nprobity_{name}_total {value}\n"
        ));
    }
    text.push_str(&format!(
        "# HELP probity_pass_rate Share of finished requests that published an output.\n# TYPE probity_pass_rate gauge\nprobity_pass_rate {pass_rate}\n\
# HELP probity_request_latency_seconds Time spent guarding requests.\n# TYPE probity_request_latency_seconds summary\nprobity_request_latency_seconds_sum {}\nprobity_request_latency_seconds_count {done}\n",
        get(&m.latency_us) as f64 / 1e6,
    ));
    let mut resp = (StatusCode::OK, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    resp
}
