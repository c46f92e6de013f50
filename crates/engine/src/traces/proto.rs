//! OTLP protobuf (`application/x-protobuf`) decoded into [`Span`]s with
//! `opentelemetry-proto`'s generated messages (prost only: no gRPC stack).

use super::span::{Event, Span};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use serde_json::{Map, Value};

/// Status code ERROR in OTLP.
const STATUS_ERROR: i32 = 2;

/// Decode one `ExportTraceServiceRequest`.
pub(crate) fn from_protobuf(bytes: &[u8]) -> Result<Vec<Span>, String> {
    let req = ExportTraceServiceRequest::decode(bytes)
        .map_err(|e| format!("not an OTLP ExportTraceServiceRequest in protobuf: {e}"))?;
    let mut spans = Vec::new();
    for rs in req.resource_spans {
        let service = rs
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| match &v.value {
                Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                _ => None,
            });
        for ss in rs.scope_spans {
            for s in ss.spans {
                let error = s
                    .status
                    .as_ref()
                    .filter(|st| st.code == STATUS_ERROR)
                    .map(|st| {
                        if st.message.is_empty() {
                            "the span's status is ERROR".to_string()
                        } else {
                            st.message.clone()
                        }
                    });
                spans.push(Span {
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent_span_id: hex::encode(&s.parent_span_id),
                    name: s.name,
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    attributes: attributes(&s.attributes),
                    events: s
                        .events
                        .into_iter()
                        .map(|e| Event {
                            attributes: attributes(&e.attributes),
                            name: e.name,
                        })
                        .collect(),
                    error,
                    service: service.clone(),
                });
            }
        }
    }
    Ok(spans)
}

fn attributes(kvs: &[KeyValue]) -> Map<String, Value> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, value)))
        .collect()
}

fn value(v: &AnyValue) -> Value {
    use any_value::Value as V;
    match &v.value {
        None => Value::Null,
        Some(V::StringValue(s)) => Value::String(s.clone()),
        Some(V::BoolValue(b)) => Value::Bool(*b),
        Some(V::IntValue(i)) => Value::from(*i),
        Some(V::DoubleValue(d)) => serde_json::Number::from_f64(*d)
            .map_or_else(|| Value::String(d.to_string()), Value::Number),
        Some(V::BytesValue(b)) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Some(V::ArrayValue(a)) => Value::Array(a.values.iter().map(value).collect()),
        Some(V::KvlistValue(kv)) => Value::Object(attributes(&kv.values)),
        #[allow(unreachable_patterns)]
        Some(_) => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Status};

    fn kv(k: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    #[test]
    fn a_protobuf_export_decodes_as_its_json_twin() {
        use any_value::Value as V;
        let s = opentelemetry_proto::tonic::trace::v1::Span {
            trace_id: vec![0x0a; 16],
            span_id: vec![0xb7; 8],
            name: "chat m".into(),
            start_time_unix_nano: 1_000_000,
            end_time_unix_nano: 3_500_000,
            attributes: vec![
                kv("gen_ai.operation.name", V::StringValue("chat".into())),
                kv("gen_ai.usage.input_tokens", V::IntValue(12)),
                kv("x.ratio", V::DoubleValue(0.5)),
                kv("x.on", V::BoolValue(true)),
            ],
            events: vec![span::Event {
                name: "gen_ai.user.message".into(),
                attributes: vec![kv("content", V::StringValue("hi".into()))],
                ..Default::default()
            }],
            status: Some(Status {
                message: "boom".into(),
                code: STATUS_ERROR,
            }),
            ..Default::default()
        };
        let req = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", V::StringValue("shop".into()))],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![s],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let got = from_protobuf(&req.encode_to_vec()).unwrap();
        let twin = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
            "scopeSpans": [{"spans": [{
                "traceId": "0a".repeat(16), "spanId": "b7".repeat(8), "name": "chat m",
                "startTimeUnixNano": "1000000", "endTimeUnixNano": 3500000,
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                    {"key": "x.ratio", "value": {"doubleValue": 0.5}},
                    {"key": "x.on", "value": {"boolValue": true}}],
                "events": [{"name": "gen_ai.user.message",
                    "attributes": [{"key": "content", "value": {"stringValue": "hi"}}]}],
                "status": {"code": 2, "message": "boom"}}]}]}]});
        let want = crate::traces::span::from_json(&twin).unwrap();
        assert_eq!(got, want);
        assert_eq!(got[0].latency_ms(), Some(2.5));
        assert_eq!(got[0].service.as_deref(), Some("shop"));
        assert_eq!(got[0].error.as_deref(), Some("boom"));
        assert!(from_protobuf(b"\xff\xff not protobuf").is_err());
    }
}
