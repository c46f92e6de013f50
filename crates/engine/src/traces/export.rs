//! Verdicts back where the team looks (`export = URL`, docs/traces.md
//! "Verdicts back into the tracing tool"): each check's verdict on a span
//! becomes one `gen_ai.evaluation.result` event of the OpenTelemetry GenAI
//! semantic conventions (an OTLP log record whose `event_name` is that,
//! whose trace and span ids are the evaluated span's — the event is
//! parented to it), sent as OTLP/HTTP protobuf to the URL's `/v1/logs`.
//!
//! Attributes, as the conventions define the event: `gen_ai.evaluation.name`
//! (the check's name), `gen_ai.evaluation.score.value` (1 pass, 0 fail),
//! `gen_ai.evaluation.score.label` (`pass`, `fail`),
//! `gen_ai.evaluation.explanation` (the check's reasons, secrets masked),
//! `gen_ai.response.id` (the span's, when it has one); a check that could
//! not judge the output has no score and `error.type` = `check_error`.
//! Cells a judge did not see (not drawn, [`super::sample`]) are not sent.
//!
//! Sending never makes the checking wait: verdicts queue (at most
//! [`QUEUE`] spans' worth; beyond, they are counted as not exported), a
//! task of its own sends batches of up to [`BATCH`] events, retrying a
//! refused batch (429, 503 and 5xx with `Retry-After`, or a connection
//! error) three times; what is still refused is counted and told on
//! stderr. [`Exporter::close`] sends what is queued.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use probity_core::Cell;
use prost::Message;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Spans' verdicts queued at most.
pub const QUEUE: usize = 10_000;
/// Events per request at most.
pub const BATCH: usize = 512;
/// How long a partial batch waits for more.
const LINGER: Duration = Duration::from_millis(200);
const TRIES: u32 = 3;
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `Retry-After` honoured.
const MAX_WAIT: Duration = Duration::from_secs(5);
/// The event's name in the GenAI conventions.
pub(crate) const EVENT: &str = "gen_ai.evaluation.result";

/// The logs endpoint of `url`: `URL/v1/logs` when the URL names no path
/// (as `OTEL_EXPORTER_OTLP_ENDPOINT`), else the URL as it is.
pub fn endpoint(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("an OTLP/HTTP endpoint is http:// or https://".into());
    }
    Ok(if parsed.path() == "/" || parsed.path().is_empty() {
        format!("{}/v1/logs", url.trim_end_matches('/'))
    } else {
        url.to_string()
    })
}

/// One check's verdict on a span.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub check: String,
    pub cell: Cell,
    /// The check's reasons, masked, joined.
    pub explanation: Option<String>,
}

/// The verdicts on one span.
#[derive(Debug, Clone)]
pub struct SpanVerdicts {
    pub trace_id: String,
    pub span_id: String,
    pub response_id: Option<String>,
    pub verdicts: Vec<Verdict>,
}

/// What was sent, and what was not.
#[derive(Debug, Default)]
pub struct ExportCounts {
    /// Events the endpoint accepted.
    pub sent: AtomicU64,
    /// Events not delivered: the queue was full, or the endpoint refused
    /// or could not be reached after every try.
    pub failed: AtomicU64,
}

/// The sender of one run's verdicts.
pub struct Exporter {
    tx: Mutex<Option<mpsc::Sender<SpanVerdicts>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub counts: Arc<ExportCounts>,
}

impl Exporter {
    /// Start sending to `url` (see [`endpoint`]); on the current tokio
    /// runtime.
    pub fn start(url: &str) -> Result<Exporter, String> {
        let url = endpoint(url)?;
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| format!("export: {e}"))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let counts = Arc::new(ExportCounts::default());
        let task = tokio::spawn(send_loop(client, url, rx, counts.clone()));
        Ok(Exporter {
            tx: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
            counts,
        })
    }

    /// Queue one span's verdicts (those a check gave: `Missing` cells are
    /// left out); never waits.
    pub fn send(&self, mut v: SpanVerdicts) {
        v.verdicts.retain(|x| x.cell != Cell::Missing);
        if v.verdicts.is_empty() {
            return;
        }
        let n = v.verdicts.len() as u64;
        let queued = self
            .tx
            .lock()
            .ok()
            .and_then(|tx| tx.as_ref().map(|tx| tx.try_send(v).is_ok()))
            .unwrap_or(false);
        if !queued {
            self.failed(
                n,
                "the export queue is full (the endpoint is slower than the spans)",
            );
        }
    }

    fn failed(&self, n: u64, why: &str) {
        note_failed(&self.counts, n, why);
    }

    /// Send what is queued, then stop.
    pub async fn close(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

fn note_failed(counts: &ExportCounts, n: u64, why: &str) {
    let before = counts.failed.fetch_add(n, Ordering::Relaxed);
    // Told on the first failure, then at each power of two.
    if before == 0 || (before + n).is_power_of_two() {
        crate::stderr::line(format_args!(
            "warning: {} evaluation event(s) not exported so far: {}",
            before + n,
            crate::provider::redact::one_line(why)
        ));
    }
}

async fn send_loop(
    client: reqwest::Client,
    url: String,
    mut rx: mpsc::Receiver<SpanVerdicts>,
    counts: Arc<ExportCounts>,
) {
    let mut batch: Vec<SpanVerdicts> = Vec::new();
    loop {
        let events: usize = batch.iter().map(|b| b.verdicts.len()).sum();
        let next = if batch.is_empty() {
            rx.recv().await
        } else if events >= BATCH {
            None
        } else {
            // The linger ran out, or the queue closed: send.
            tokio::time::timeout(LINGER, rx.recv()).await.ok().flatten()
        };
        match next {
            Some(v) => batch.push(v),
            None if batch.is_empty() => return,
            None => {
                let events = events as u64;
                let body = encode(&std::mem::take(&mut batch), now_ns()).encode_to_vec();
                match post(&client, &url, body).await {
                    Ok(()) => {
                        counts.sent.fetch_add(events, Ordering::Relaxed);
                    }
                    Err(why) => note_failed(&counts, events, &why),
                }
            }
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// POST one request, with up to [`TRIES`] tries.
async fn post(client: &reqwest::Client, url: &str, body: Vec<u8>) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..TRIES {
        let resp = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body.clone())
            .send()
            .await;
        let wait = match resp {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => {
                let status = r.status();
                last = format!("{url} answered {status}");
                let retryable = status.as_u16() == 429 || status.is_server_error();
                if !retryable {
                    return Err(last);
                }
                r.headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs)
                    .unwrap_or(Duration::from_secs(1))
                    .min(MAX_WAIT)
            }
            Err(e) => {
                last = format!("cannot reach {url}: {e}");
                Duration::from_millis(500)
            }
        };
        if attempt + 1 < TRIES {
            tokio::time::sleep(wait).await;
        }
    }
    Err(last)
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_string()))
}

/// Hex ids into bytes; a malformed one is left empty (the event is then
/// not parented, rather than parented to a wrong span).
fn id_bytes(hex_id: &str, len: usize) -> Vec<u8> {
    hex::decode(hex_id)
        .ok()
        .filter(|b| b.len() == len)
        .unwrap_or_default()
}

/// The events of `spans`, as one `ExportLogsServiceRequest`.
pub fn encode(spans: &[SpanVerdicts], now_ns: u64) -> ExportLogsServiceRequest {
    let mut records = Vec::new();
    for s in spans {
        for v in &s.verdicts {
            let mut attributes = vec![text("gen_ai.evaluation.name", &v.check)];
            match v.cell {
                Cell::Pass | Cell::Fail => {
                    let pass = v.cell == Cell::Pass;
                    attributes.push(kv(
                        "gen_ai.evaluation.score.value",
                        any_value::Value::DoubleValue(if pass { 1.0 } else { 0.0 }),
                    ));
                    attributes.push(text(
                        "gen_ai.evaluation.score.label",
                        if pass { "pass" } else { "fail" },
                    ));
                }
                _ => attributes.push(text("error.type", "check_error")),
            }
            if let Some(e) = &v.explanation {
                attributes.push(text("gen_ai.evaluation.explanation", e));
            }
            if let Some(id) = &s.response_id {
                attributes.push(text("gen_ai.response.id", id));
            }
            records.push(LogRecord {
                time_unix_nano: now_ns,
                observed_time_unix_nano: now_ns,
                event_name: EVENT.into(),
                trace_id: id_bytes(&s.trace_id, 16),
                span_id: id_bytes(&s.span_id, 8),
                attributes,
                ..LogRecord::default()
            });
        }
    }
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![text("service.name", "probity")],
                ..Resource::default()
            }),
            scope_logs: vec![ScopeLogs {
                scope: Some(InstrumentationScope {
                    name: "probity".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                log_records: records,
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_gets_v1_logs_when_it_names_no_path() {
        assert_eq!(
            endpoint("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/logs"
        );
        assert_eq!(
            endpoint("http://h:4318/custom/logs").unwrap(),
            "http://h:4318/custom/logs"
        );
        assert!(endpoint("ftp://h").unwrap_err().contains("http"));
        assert!(endpoint("not a url").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn each_verdict_is_an_event_parented_to_its_span() {
        let s = SpanVerdicts {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            response_id: Some("chatcmpl-1".into()),
            verdicts: vec![
                Verdict {
                    check: "short".into(),
                    cell: Cell::Fail,
                    explanation: Some("too long".into()),
                },
                Verdict {
                    check: "judge".into(),
                    cell: Cell::Error,
                    explanation: None,
                },
            ],
        };
        let req = ExportLogsServiceRequest::decode(&encode(&[s], 7).encode_to_vec()[..]).unwrap();
        let records = &req.resource_logs[0].scope_logs[0].log_records;
        assert_eq!(records.len(), 2);
        let r = &records[0];
        assert_eq!(r.event_name, EVENT);
        assert_eq!(hex::encode(&r.trace_id), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(hex::encode(&r.span_id), "b7ad6b7169203331");
        let keys: Vec<&str> = r.attributes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "gen_ai.evaluation.name",
                "gen_ai.evaluation.score.value",
                "gen_ai.evaluation.score.label",
                "gen_ai.evaluation.explanation",
                "gen_ai.response.id"
            ]
        );
        let keys: Vec<&str> = records[1]
            .attributes
            .iter()
            .map(|a| a.key.as_str())
            .collect();
        assert_eq!(
            keys,
            ["gen_ai.evaluation.name", "error.type", "gen_ai.response.id"]
        );
    }
}
