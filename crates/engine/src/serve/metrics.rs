//! The guard's read-only endpoints: `GET /health`, `GET /metrics`
//! (Prometheus text, counts only — never a request, an output, a reason or
//! a header) and `GET /v1/models` (the upstream's model).

use super::state::ServeState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

pub async fn health(State(st): State<Arc<ServeState>>) -> Response {
    let stalled = st.metrics.store_stalled.get() > 0;
    Json(json!({
        "status": if stalled { "degraded" } else { "ok" },
        "store": if stalled { "stalled" } else { "ok" },
        "unrecorded": st.metrics.unrecorded.get(),
    }))
    .into_response()
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

/// `GET /v1/models/{id}`: the model, as `GET /v1/models` lists it, or
/// OpenAI's 404 for another id.
pub async fn model(
    State(st): State<Arc<ServeState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    if !super::chat::authorized(&st.token, &headers) {
        return super::chat::error_response(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or wrong bearer token",
        );
    }
    if id != st.model {
        return super::chat::error_response(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            &format!(
                "The model `{id}` does not exist: this guard serves `{}`",
                st.model
            ),
        );
    }
    Json(json!({"id": st.model, "object": "model", "created": 0, "owned_by": "probity"}))
        .into_response()
}

/// Any other path: a 404 in OpenAI's error shape, which SDKs read.
pub(crate) async fn not_found(uri: axum::http::Uri) -> Response {
    super::chat::error_response(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        &format!(
            "no route {}: this guard serves POST /v1/chat/completions, POST /v1/responses, GET /v1/models, /health and /metrics",
            uri.path()
        ),
    )
}

/// `POST /v1/embeddings`: refused, saying why (docs/serve.md): an
/// embedding has no output for the guard's checks to judge, and passing it
/// through would put the guard's upstream key behind an unguarded route.
pub async fn embeddings() -> Response {
    super::chat::error_response(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "probity serve does not proxy embeddings: it guards POST /v1/chat/completions and POST /v1/responses, and an embedding has no output for its checks to judge; call your embeddings provider directly",
    )
}

/// A known path asked with another method (`GET /v1/chat/completions`): a
/// 405 in OpenAI's error shape.
pub(crate) async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    super::chat::error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        &format!("{method} {} is not served: use POST for chat completions, GET for models, health and metrics", uri.path()),
    )
}

/// `GET /metrics`: the registry in the OpenMetrics text format, which
/// Prometheus scrapes as is.
pub async fn metrics(State(st): State<Arc<ServeState>>) -> Response {
    st.metrics.update_rates(&st.live);
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &st.metrics.registry) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the metrics: {e}"),
        )
            .into_response();
    }
    let mut resp = (StatusCode::OK, text).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    resp
}
