//! A span as the mapping reads it, whatever it came in: OTLP JSON (the
//! file exporter's lines, an OTLP/HTTP JSON body) or OTLP protobuf
//! ([`super::proto`]). Attribute values are held as JSON: a string, a
//! number (OTLP's `intValue` and `doubleValue`), a bool, an array
//! (`arrayValue`) or an object (`kvlistValue`); `bytesValue` stays the
//! base64 text it is on the wire.
//!
//! The JSON decoding is written here rather than taken from
//! `opentelemetry-proto`'s `with-serde` feature: the exporters' JSON varies
//! in ways that decoder refuses (Python's `MessageToJson` writes enums by
//! name, `"kind": "SPAN_KIND_CLIENT"`, and 64-bit integers as strings;
//! other exporters write numbers), and a refusal here must name the field.

use serde_json::{Map, Value};

/// One span: its ids (lower-case hex), name, times, attributes, events and
/// status, with its resource's `service.name`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Map<String, Value>,
    pub events: Vec<Event>,
    /// The status message of a span whose status is ERROR (code 2).
    pub error: Option<String>,
    /// The resource's `service.name`, when it has one.
    pub service: Option<String>,
}

/// One span event: its name and attributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub name: String,
    pub attributes: Map<String, Value>,
}

impl Span {
    /// The attribute `key` as a string (a JSON string as it is; any
    /// other value in its JSON form).
    pub fn str(&self, key: &str) -> Option<String> {
        attr_str(&self.attributes, key)
    }

    /// The attribute `key` as a whole number (an `intValue`, or a string
    /// holding one).
    pub fn int(&self, key: &str) -> Option<u64> {
        match self.attributes.get(key)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// The span's duration in milliseconds, when both times are set.
    pub fn latency_ms(&self) -> Option<f64> {
        (self.start_ns > 0 && self.end_ns >= self.start_ns)
            .then(|| (self.end_ns - self.start_ns) as f64 / 1e6)
    }
}

/// The attribute `key` of `attrs` as a string (a JSON string as it is;
/// null as absent; any other value in its JSON form).
pub(crate) fn attr_str(attrs: &Map<String, Value>, key: &str) -> Option<String> {
    match attrs.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Decode one `ExportTraceServiceRequest` in OTLP JSON into its spans.
/// An error names the field (`resourceSpans[0].scopeSpans[1].spans[2].
/// traceId`) and what is wrong with it.
pub(crate) fn from_json(v: &Value) -> Result<Vec<Span>, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a JSON object, found {}", kind(v)))?;
    let mut spans = Vec::new();
    for (r, rs) in list(obj, "resourceSpans", "resource_spans", "")?
        .iter()
        .enumerate()
    {
        let at = format!("resourceSpans[{r}]");
        let rs = object(rs, &at)?;
        let service = match rs.get("resource").and_then(Value::as_object) {
            Some(res) => attributes(res, &format!("{at}.resource"))?
                .get("service.name")
                .and_then(Value::as_str)
                .map(str::to_string),
            None => None,
        };
        for (s, ss) in list(rs, "scopeSpans", "scope_spans", &at)?
            .iter()
            .enumerate()
        {
            let at = format!("{at}.scopeSpans[{s}]");
            let ss = object(ss, &at)?;
            for (k, span) in list(ss, "spans", "spans", &at)?.iter().enumerate() {
                let at = format!("{at}.spans[{k}]");
                let mut span = one_span(object(span, &at)?, &at)?;
                span.service = service.clone();
                spans.push(span);
            }
        }
    }
    Ok(spans)
}

fn one_span(o: &Map<String, Value>, at: &str) -> Result<Span, String> {
    let id = |camel: &str, snake: &str| -> Result<String, String> {
        match o.get(camel).or_else(|| o.get(snake)) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => {
                hex_id(s).ok_or_else(|| format!("{at}.{camel}: {s:?} is neither hex nor base64"))
            }
            Some(other) => Err(format!("{at}.{camel}: {} is not a hex id", kind(other))),
        }
    };
    let time = |camel: &str, snake: &str| -> Result<u64, String> {
        match o.get(camel).or_else(|| o.get(snake)) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| format!("{at}.{camel}: {n} is not a time in nanoseconds")),
            Some(Value::String(s)) => s
                .parse()
                .map_err(|_| format!("{at}.{camel}: {s:?} is not a time in nanoseconds")),
            Some(other) => Err(format!("{at}.{camel}: {} is not a time", kind(other))),
        }
    };
    let trace_id = id("traceId", "trace_id")?;
    if trace_id.is_empty() {
        return Err(format!("{at}: no traceId"));
    }
    let mut events = Vec::new();
    for (e, ev) in list(o, "events", "events", at)?.iter().enumerate() {
        let at = format!("{at}.events[{e}]");
        let ev = object(ev, &at)?;
        events.push(Event {
            name: ev
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            attributes: attributes(ev, &at)?,
        });
    }
    let error = match o.get("status").and_then(Value::as_object) {
        Some(st) if is_error(st.get("code")) => Some(
            st.get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or("the span's status is ERROR")
                .to_string(),
        ),
        _ => None,
    };
    Ok(Span {
        trace_id,
        span_id: id("spanId", "span_id")?,
        parent_span_id: id("parentSpanId", "parent_span_id")?,
        name: o
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        start_ns: time("startTimeUnixNano", "start_time_unix_nano")?,
        end_ns: time("endTimeUnixNano", "end_time_unix_nano")?,
        attributes: attributes(o, at)?,
        events,
        error,
        service: None,
    })
}

/// An id as lower-case hex: OTLP JSON writes hex; protobuf's own JSON
/// mapping (Python's `MessageToJson`) writes the bytes in base64.
fn hex_id(s: &str) -> Option<String> {
    use base64::Engine;
    if s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(s.to_ascii_lowercase());
    }
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .ok()
        .map(hex::encode)
}

/// Status code ERROR: `2` or `"STATUS_CODE_ERROR"`.
fn is_error(code: Option<&Value>) -> bool {
    match code {
        Some(Value::Number(n)) => n.as_u64() == Some(2),
        Some(Value::String(s)) => s == "STATUS_CODE_ERROR" || s == "2",
        _ => false,
    }
}

/// The `attributes` list of `o` (`[{key, value: AnyValue}]`) as a map.
fn attributes(o: &Map<String, Value>, at: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (i, kv) in list(o, "attributes", "attributes", at)?.iter().enumerate() {
        let at = format!("{at}.attributes[{i}]");
        let kv = object(kv, &at)?;
        let key = kv
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}: no `key`"))?;
        let value = match kv.get("value") {
            None | Some(Value::Null) => Value::Null,
            Some(v) => any_value(v, &format!("{at}.value"))?,
        };
        out.insert(key.to_string(), value);
    }
    Ok(out)
}

/// An OTLP `AnyValue` in JSON as a plain JSON value.
fn any_value(v: &Value, at: &str) -> Result<Value, String> {
    let o = object(v, at)?;
    let Some((k, inner)) = o.iter().next() else {
        return Ok(Value::Null);
    };
    Ok(match k.as_str() {
        "stringValue" | "string_value" | "bytesValue" | "bytes_value" | "boolValue"
        | "bool_value" => inner.clone(),
        "intValue" | "int_value" => match inner {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{at}.intValue: {s:?} is not an integer"))?,
            other => other.clone(),
        },
        "doubleValue" | "double_value" => match inner {
            // "NaN", "Infinity": kept as the text (JSON has no such number).
            Value::String(s) => s
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or_else(|| Value::String(s.clone()), Value::Number),
            other => other.clone(),
        },
        "arrayValue" | "array_value" => {
            let values = inner.get("values").and_then(Value::as_array);
            Value::Array(
                values
                    .map(|vs| {
                        vs.iter()
                            .enumerate()
                            .map(|(i, x)| any_value(x, &format!("{at}.arrayValue.values[{i}]")))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()?
                    .unwrap_or_default(),
            )
        }
        "kvlistValue" | "kvlist_value" => {
            let wrapped = object(inner, &format!("{at}.kvlistValue"))?;
            let mut as_attrs = Map::new();
            as_attrs.insert(
                "attributes".into(),
                wrapped.get("values").cloned().unwrap_or(Value::Null),
            );
            Value::Object(attributes(&as_attrs, &format!("{at}.kvlistValue"))?)
        }
        other => return Err(format!("{at}: unknown AnyValue kind `{other}`")),
    })
}

fn list<'a>(
    o: &'a Map<String, Value>,
    camel: &str,
    snake: &str,
    at: &str,
) -> Result<&'a [Value], String> {
    match o.get(camel).or_else(|| o.get(snake)) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(format!(
            "{}{camel}: {} is not a list",
            if at.is_empty() {
                String::new()
            } else {
                format!("{at}.")
            },
            kind(other)
        )),
    }
}

fn object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{at}: {} is not an object", kind(v)))
}

/// A JSON value's kind, for error messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
