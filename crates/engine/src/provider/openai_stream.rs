//! Reading an OpenAI-compatible streamed answer: server-sent events of
//! `chat.completion.chunk` objects, assembled into the same answer a
//! non-streamed call gives (content, tool calls by index, finish reason,
//! model, usage from the `include_usage` chunk, and every other field of
//! the message, the choice and the answer — a refusal streamed in
//! `delta.refusal` pieces, an audio answer's transcript, annotations —
//! accumulated as the official SDKs accumulate deltas: strings joined,
//! objects merged, lists of indexed objects merged by `index`).
//!
//! The framing is parsed here rather than with an SSE crate: OpenAI's
//! stream uses only `data:` lines separated by blank lines, and a crate
//! (eventsource-stream) would bring a parser combinator library and
//! reqwest's stream feature for these few lines. The parser follows the
//! WHATWG event-stream rules for what it reads (lines end in CRLF, LF or
//! CR; a blank line ends an event; `data` lines are joined by LF; other
//! fields and comments are ignored) and looks at each byte once, however
//! the stream is split into reads ([`SseFrames`]).

use super::openai_chunk::Chunk;
use super::types::{message_text, AnswerMeta, Completion, ProviderError, WireAnswer};
use serde_json::{Map, Value};

/// Splits bytes into events and events into their `data`, line by line:
/// each byte is scanned once (a read resumes where the last one stopped),
/// so a long stream costs time linear in its length whatever its reads.
#[derive(Debug, Default)]
pub(crate) struct SseFrames {
    /// The start of a line not yet ended (every complete line is taken).
    partial: Vec<u8>,
    /// The `data` of the event under way: its lines, each followed by LF.
    data: String,
    /// Whether the event under way has a `data` field.
    has_data: bool,
    /// The last line ended in CR: an LF that comes next belongs to it.
    after_cr: bool,
}

impl SseFrames {
    /// Add `bytes`; returns the data of every event now complete (the
    /// `data:` lines of an event joined by newlines; comments and other
    /// fields dropped).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let (line, after) = rest.split_at(end);
            let crlf = after.starts_with(b"\r\n");
            self.after_cr = after[0] == b'\r' && after.len() == 1;
            rest = &after[if crlf { 2 } else { 1 }..];
            if self.partial.is_empty() {
                self.line(line, &mut out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut out);
            }
        }
        self.partial.extend_from_slice(rest);
        out
    }

    /// One complete line (without its end): a blank line ends the event.
    fn line(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                let mut data = std::mem::take(&mut self.data);
                data.pop(); // the last line's LF
                out.push(data);
            }
            return;
        }
        let value = match line.strip_prefix(b"data") {
            Some([]) => &[][..],
            Some([b':', value @ ..]) => value.strip_prefix(b" ").unwrap_or(value),
            // Comments (`:`), other fields (`event`, `id`, `retry`) and
            // fields that only begin with "data" are not data.
            _ => return,
        };
        self.has_data = true;
        // Most events are one line: room for it at once.
        self.data.reserve(value.len() + 1);
        match std::str::from_utf8(value) {
            Ok(text) => self.data.push_str(text),
            Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
        }
        self.data.push('\n');
    }
}

/// A streamed answer being assembled.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    content: String,
    saw_content: bool,
    /// Tool calls by their `index`.
    calls: Vec<Map<String, Value>>,
    finish_reason: Option<String>,
    model: Option<String>,
    system_fingerprint: Option<String>,
    /// The `usage` object of the `include_usage` chunk, whole.
    usage: Option<Value>,
    /// `choices[0].logprobs.content` of every chunk, in order (`None`
    /// until a chunk carries logprobs).
    logprobs: Option<Vec<Value>>,
    /// The delta's other fields, accumulated ([`accumulate`]).
    message_fields: Map<String, Value>,
    /// The choice's other fields, the last value of each.
    choice_fields: Map<String, Value>,
    /// The chunks' other top-level fields, the last value of each.
    response_fields: Map<String, Value>,
    /// The upstream's response headers a client is given.
    pub headers: Vec<(String, String)>,
    pub done: bool,
}

/// Longest list a delta may grow by index (a hostile `index` never
/// allocates more).
const MAX_INDEX: u64 = 1024;

/// Merge `delta` into `acc` as the official OpenAI SDKs accumulate a
/// stream (`openai.lib.streaming._deltas.accumulate_delta`): a new key is
/// taken as is; `index` and `type` are replaced; strings are joined;
/// objects merged; lists of objects merged entry by entry on their
/// `index`, other lists extended. Anything else takes the delta's value.
pub fn accumulate(acc: &mut Map<String, Value>, delta: &Map<String, Value>) {
    for (key, d) in delta {
        let Some(a) = acc.get_mut(key).filter(|a| !a.is_null()) else {
            acc.insert(key.clone(), d.clone());
            continue;
        };
        if key == "index" || key == "type" {
            *a = d.clone();
            continue;
        }
        match (a, d) {
            (Value::String(a), Value::String(d)) => a.push_str(d),
            (Value::Object(a), Value::Object(d)) => accumulate(a, d),
            (Value::Array(a), Value::Array(d)) => {
                for entry in d {
                    match entry
                        .get("index")
                        .and_then(Value::as_u64)
                        .filter(|&i| i <= MAX_INDEX)
                    {
                        Some(i) => {
                            let i = i as usize;
                            match (a.get_mut(i), entry) {
                                (Some(Value::Object(slot)), Value::Object(e)) => {
                                    accumulate(slot, e)
                                }
                                (Some(slot), _) => *slot = entry.clone(),
                                (None, _) => a.push(entry.clone()),
                            }
                        }
                        None => a.push(entry.clone()),
                    }
                }
            }
            (a, d) => *a = d.clone(),
        }
    }
}

impl Assembly {
    /// Take one event's data: a chunk ([`Chunk`]), `[DONE]`, or an
    /// `error` that is not null (an error mid-stream, as OpenAI sends it).
    pub fn take(&mut self, data: &str) -> Result<(), ProviderError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = Chunk::parse(data).map_err(|e| {
            ProviderError::BadResponse(format!(
                "a streamed chunk is not JSON ({e}): {}",
                super::util::body_excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.error {
            return Err(ProviderError::Server {
                status: 500,
                body: format!("error in the stream: {error}"),
            });
        }
        if let Some(m) = chunk.model {
            self.model.get_or_insert_with(|| m.into_owned());
        }
        if let Some(f) = chunk.system_fingerprint {
            self.system_fingerprint = Some(f.into_owned());
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        self.response_fields.extend(chunk.others);
        let Some(choice) = chunk.choice else {
            return Ok(());
        };
        if let Some(f) = choice.finish_reason {
            self.finish_reason = Some(f.into_owned());
        }
        if let Some(items) = choice.logprobs {
            self.logprobs.get_or_insert_with(Vec::new).extend(items);
        }
        self.choice_fields.extend(choice.others);
        let Some(delta) = choice.delta else {
            return Ok(());
        };
        if !delta.others.is_empty() {
            accumulate(&mut self.message_fields, &delta.others);
        }
        if let Some(text) = delta.content {
            self.content.push_str(&text);
            self.saw_content = true;
        }
        for call in &delta.tool_calls {
            self.take_call(call);
        }
        Ok(())
    }

    /// A tool call delta: id, type and name arrive once, the arguments in
    /// fragments, all keyed by `index`.
    fn take_call(&mut self, call: &Value) {
        let i = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        if i > 1024 {
            return;
        }
        while self.calls.len() <= i {
            self.calls.push(Map::new());
        }
        let slot = &mut self.calls[i];
        for key in ["id", "type"] {
            if let Some(v) = call.get(key).filter(|v| v.is_string()) {
                slot.insert(key.into(), v.clone());
            }
        }
        let function = slot
            .entry("function")
            .or_insert_with(|| Value::Object(Map::new()));
        if let (Some(f), Value::Object(slot_f)) = (call.get("function"), function) {
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                slot_f.insert("name".into(), Value::String(name.into()));
            }
            if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                let so_far = slot_f
                    .entry("arguments")
                    .or_insert_with(|| Value::String(String::new()));
                if let Value::String(s) = so_far {
                    s.push_str(args);
                }
            }
        }
    }

    /// The text received so far, as the checks would see it
    /// ([`message_text`]: the content, else a refusal or a transcript).
    pub fn text(&self) -> &str {
        message_text(Some(&self.content), &self.message_fields).unwrap_or("")
    }

    /// The answer assembled; `cut` when abandoned on a settled prefix.
    pub fn finish(self, cut: bool) -> Result<WireAnswer, ProviderError> {
        let tool_calls = (!self.calls.is_empty())
            .then(|| Value::Array(self.calls.into_iter().map(Value::Object).collect()));
        let text = message_text(
            Some(self.content.as_str()).filter(|_| self.saw_content),
            &self.message_fields,
        )
        .map(str::to_string);
        if text.is_none() && tool_calls.is_none() && !cut {
            return Err(super::types::nothing_to_check(&self.message_fields));
        }
        // Null beside tool calls, a refusal or an audio answer (a stream
        // opens with `"content": ""` before them), else as streamed.
        let other_answer =
            tool_calls.is_some() || text.as_deref().is_some_and(|t| t != self.content);
        let content = ((self.saw_content && !self.content.is_empty()) || !other_answer)
            .then_some(self.content);
        let tokens = |key: &str| {
            self.usage
                .as_ref()
                .and_then(|u| u.get(key))
                .and_then(Value::as_u64)
        };
        let (input_tokens, output_tokens) = (tokens("prompt_tokens"), tokens("completion_tokens"));
        Ok(WireAnswer {
            completion: Completion {
                text: AnswerMeta::checked_text(text.as_deref(), tool_calls.as_ref()),
                input_tokens,
                output_tokens,
            },
            meta: Some(AnswerMeta {
                content,
                tool_calls,
                finish_reason: self.finish_reason,
                model: self.model,
                // As a whole answer carries them: every token's, one list.
                logprobs: self
                    .logprobs
                    .map(|content| serde_json::json!({"content": content, "refusal": null})),
                system_fingerprint: self.system_fingerprint,
                message_fields: self.message_fields,
                choice_fields: self.choice_fields,
                response_fields: self.response_fields,
                usage: self.usage,
                headers: self.headers,
                response: None,
            }),
            cut,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `stream`, read in pieces of the sizes `sizes` gives
    /// in turn.
    fn events_in_pieces(stream: &[u8], mut sizes: impl FnMut() -> usize) -> Vec<String> {
        let mut frames = SseFrames::default();
        let mut events = Vec::new();
        let mut rest = stream;
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(sizes().clamp(1, rest.len()));
            events.extend(frames.push(piece));
            rest = tail;
        }
        events
    }

    /// The framing by the event-stream rules, whatever the reads: line
    /// ends LF, CRLF and CR (a CRLF split between two reads is one end),
    /// comments and other fields dropped, `data` lines joined by LF, an
    /// event without data dispatching nothing, bytes that are not UTF-8
    /// replaced (U+FFFD); and a long stream read one
    /// byte at a time, or in uneven pieces, gives the events it gives
    /// read whole.
    #[test]
    fn a_stream_split_into_many_small_reads_yields_the_same_events() {
        let mixed = b"data: a\n\n: comment\r\n\r\nevent: x\nid: 1\ndata:b\r\ndata: c\r\n\r\ndata\r\rdatum: no\n\ndata: \xc3\xa9t\xc3\xa9\n\nretry: 5\n\ndata: a\xffb\n\n";
        let expected = ["a", "b\nc", "", "\u{e9}t\u{e9}", "a\u{fffd}b"];
        assert_eq!(events_in_pieces(mixed, || usize::MAX), expected);
        for size in 1..=mixed.len() {
            assert_eq!(
                events_in_pieces(mixed, || size),
                expected,
                "pieces of {size}"
            );
        }
        // 2,000 chunks (one with a 64 KB tool-call argument), with every
        // line end, read whole, a byte at a time and in uneven pieces.
        let mut long = Vec::new();
        let mut want = Vec::new();
        for i in 0..2000 {
            let data = if i == 1000 {
                format!("{{\"arguments\":\"{}\"}}", "x".repeat(65536))
            } else {
                format!("{{\"content\":\"token {i}\"}}")
            };
            let end: &[u8] = [&b"\n"[..], b"\r\n", b"\r"][i % 3];
            long.extend_from_slice(b"data: ");
            long.extend_from_slice(data.as_bytes());
            long.extend_from_slice(end);
            long.extend_from_slice(end);
            want.push(data);
        }
        assert_eq!(events_in_pieces(&long, || usize::MAX), want);
        assert_eq!(events_in_pieces(&long, || 1), want);
        let mut seed = 7u64;
        let uneven = events_in_pieces(&long, || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % 300
        });
        assert_eq!(uneven, want);
    }

    #[test]
    fn events_split_across_reads_assemble_into_the_answer() {
        let stream = concat!(
            "data: {\"model\":\"m-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            ": a comment\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n",
        );
        let mut frames = SseFrames::default();
        let mut a = Assembly::default();
        for piece in stream.as_bytes().chunks(7) {
            for data in frames.push(piece) {
                a.take(&data).unwrap();
            }
        }
        assert!(a.done);
        let w = a.finish(false).unwrap();
        let meta = w.meta.unwrap();
        assert_eq!(meta.content.as_deref(), Some("Hello"));
        assert_eq!(meta.model.as_deref(), Some("m-1"));
        assert_eq!(meta.finish_reason.as_deref(), Some("tool_calls"));
        let calls = meta.tool_calls.unwrap();
        assert_eq!(calls[0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(calls[0]["id"], "c1");
        assert_eq!(w.completion.output_tokens, Some(2));
        assert!(w.completion.text.starts_with("Hello\n[{"));
    }

    /// Logprobs arrive per chunk; the answer carries them all, in order,
    /// as a whole (unstreamed) answer does. Without any, none.
    #[test]
    fn logprobs_of_every_chunk_are_assembled_in_order() {
        let mut a = Assembly::default();
        for (text, logprob) in [("Hel", -0.1), ("lo", -0.2)] {
            a.take(&format!(
                "{{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":{{\"content\":[{{\"token\":\"{text}\",\"logprob\":{logprob},\"bytes\":null,\"top_logprobs\":[]}}],\"refusal\":null}}}}]}}"
            ))
            .unwrap();
        }
        let meta = a.finish(false).unwrap().meta.unwrap();
        let logprobs = meta.logprobs.unwrap();
        let tokens: Vec<&str> = logprobs["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["token"].as_str().unwrap())
            .collect();
        assert_eq!(tokens, ["Hel", "lo"]);
        assert_eq!(logprobs["content"][1]["logprob"], -0.2);
        let mut plain = Assembly::default();
        plain
            .take("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"logprobs\":null}]}")
            .unwrap();
        assert!(plain
            .finish(false)
            .unwrap()
            .meta
            .unwrap()
            .logprobs
            .is_none());
    }

    /// A refusal streamed in pieces, an audio answer's fields and a list
    /// of indexed objects accumulate as the SDKs accumulate them; the
    /// refusal is the checked text, and content is null beside it.
    #[test]
    fn a_streamed_refusal_and_other_fields_accumulate() {
        let mut a = Assembly::default();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"service_tier":"default"}"#,
            r#"{"choices":[{"index":0,"delta":{"refusal":"I can"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"refusal":"not."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"annotations":[{"index":0,"type":"url_citation","title":"a"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"annotations":[{"index":0,"title":"b"},{"index":1,"type":"x"}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":7}]}"#,
        ] {
            a.take(data).unwrap();
        }
        let w = a.finish(false).unwrap();
        assert_eq!(w.completion.text, "I cannot.");
        let m = w.meta.unwrap();
        assert_eq!(m.content, None);
        assert_eq!(m.message_fields["refusal"], "I cannot.");
        assert_eq!(
            m.message_fields["annotations"],
            serde_json::json!([{"index":0,"type":"url_citation","title":"ab"},{"index":1,"type":"x"}])
        );
        assert_eq!(m.choice_fields["stop_reason"], 7);
        assert_eq!(m.response_fields["service_tier"], "default");
    }

    #[test]
    fn an_error_event_and_an_empty_stream_are_errors() {
        let mut a = Assembly::default();
        assert!(a.take("{\"error\":{\"message\":\"overloaded\"}}").is_err());
        assert!(Assembly::default().finish(false).is_err());
    }

    /// The chunk's reading before [`Chunk`]: every field looked up in a
    /// [`Value`] of the whole chunk. Kept as the reference the fast
    /// reading must equal.
    fn take_as_value(a: &mut Assembly, data: &str) -> Result<(), ProviderError> {
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| ProviderError::BadResponse(e.to_string()))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(ProviderError::Server {
                status: 500,
                body: format!("error in the stream: {error}"),
            });
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            a.model.get_or_insert_with(|| m.to_string());
        }
        if let Some(f) = chunk.get("system_fingerprint").and_then(Value::as_str) {
            a.system_fingerprint = Some(f.to_string());
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            a.usage = Some(u.clone());
        }
        let read_here = [
            "id",
            "object",
            "created",
            "model",
            "choices",
            "usage",
            "system_fingerprint",
        ];
        for (k, v) in chunk.as_object().into_iter().flatten() {
            if !read_here.contains(&k.as_str()) {
                a.response_fields.insert(k.clone(), v.clone());
            }
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.as_array()?.first()) else {
            return Ok(());
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            a.finish_reason = Some(f.to_string());
        }
        if let Some(items) = choice
            .pointer("/logprobs/content")
            .and_then(Value::as_array)
        {
            a.logprobs
                .get_or_insert_with(Vec::new)
                .extend(items.iter().cloned());
        }
        for (k, v) in choice.as_object().into_iter().flatten() {
            if !["index", "delta", "finish_reason", "logprobs"].contains(&k.as_str()) {
                a.choice_fields.insert(k.clone(), v.clone());
            }
        }
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(fields) = delta.as_object() {
            let others: Map<String, Value> = fields
                .iter()
                .filter(|(k, v)| {
                    !["role", "content", "tool_calls"].contains(&k.as_str()) && !v.is_null()
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            accumulate(&mut a.message_fields, &others);
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            a.content.push_str(text);
            a.saw_content = true;
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            a.take_call(call);
        }
        Ok(())
    }

    use proptest::prelude::*;

    /// A JSON value a field may hold: mostly of the expected kind, else
    /// any kind (a mistyped field must read as absent, as in a `Value`).
    fn odd() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            "[a-c\"\\\\é]{0,3}".prop_map(Value::from),
            Just(serde_json::json!([1, {"index": 0}])),
            Just(serde_json::json!({"content": [{"token": "t"}], "x": 1})),
        ]
    }

    fn text() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => "[a-z \"\\\\\n'é]{0,6}".prop_map(Value::from),
            1 => odd(),
        ]
    }

    /// A chunk's fields, each present or not, with repeats and strangers.
    fn chunk() -> impl Strategy<Value = String> {
        let delta = proptest::collection::vec(
            (
                prop_oneof![
                    Just("content"),
                    Just("role"),
                    Just("refusal"),
                    Just("tool_calls"),
                    Just("audio"),
                ],
                prop_oneof![
                    3 => text(),
                    1 => Just(serde_json::json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}])),
                    1 => Just(serde_json::json!({"transcript": "hi", "id": "a"})),
                ],
            ),
            0..4,
        );
        let choice = (
            delta,
            proptest::collection::vec(
                (
                    prop_oneof![
                        Just("finish_reason"),
                        Just("logprobs"),
                        Just("index"),
                        Just("stop_reason"),
                    ],
                    odd(),
                ),
                0..3,
            ),
            any::<bool>(),
        );
        (
            proptest::collection::vec(
                (
                    prop_oneof![
                        Just("model"),
                        Just("system_fingerprint"),
                        Just("usage"),
                        Just("id"),
                        Just("service_tier"),
                        Just("error"),
                        Just("object"),
                    ],
                    prop_oneof![3 => text(), 1 => Just(serde_json::json!({"completion_tokens": 2}))],
                ),
                0..4,
            ),
            proptest::option::of(choice),
            0usize..4,
        )
            .prop_map(|(top, choice, shape)| {
                // Written by hand so keys can repeat (a `Map` keeps one).
                let entry = |(k, v): &(&str, Value)| format!("{}:{v}", Value::from(*k));
                let mut fields: Vec<String> = top.iter().map(entry).collect();
                if let Some((delta, others, delta_is_object)) = choice {
                    let delta: Vec<String> = delta.iter().map(entry).collect();
                    let mut c: Vec<String> = others.iter().map(entry).collect();
                    c.push(if delta_is_object {
                        format!("\"delta\":{{{}}}", delta.join(","))
                    } else {
                        "\"delta\":\"x\"".into()
                    });
                    let choice = format!("{{{}}}", c.join(","));
                    fields.push(match shape {
                        0 => format!("\"choices\":[{choice}]"),
                        1 => format!("\"choices\":[{choice},{{\"delta\":{{\"content\":\"no\"}}}}]"),
                        2 => format!("\"choices\":[7,{choice}]"),
                        _ => format!("\"choices\":{choice}"),
                    });
                }
                format!("{{{}}}", fields.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// A stream of chunks reads into the same answer (or the same
        /// error) chunk by chunk as looking each field up in a `Value`.
        #[test]
        fn a_chunk_reads_as_its_value_reads(chunks in proptest::collection::vec(chunk(), 1..5)) {
            let (mut fast, mut slow) = (Assembly::default(), Assembly::default());
            for data in &chunks {
                let (f, s) = (fast.take(data), take_as_value(&mut slow, data));
                prop_assert_eq!(f.is_err(), s.is_err(), "{}", data);
                if let (Err(f), Err(s)) = (f, s) {
                    prop_assert_eq!(f, s);
                    return Ok(());
                }
            }
            prop_assert_eq!(fast.finish(false), slow.finish(false), "{:?}", chunks);
        }
    }

    /// JSON that is not an object is a chunk of nothing; data that is not
    /// JSON is an error naming it.
    #[test]
    fn data_that_is_not_an_object_is_empty_and_not_json_an_error() {
        let mut a = Assembly::default();
        for data in ["[1,2]", "\"text\"", "3", "null", "{\"choices\":{\"0\":{}}}"] {
            a.take(data).unwrap();
        }
        assert!(a.finish(false).is_err(), "nothing to check");
        let err = Assembly::default().take("{\"choices\": [").unwrap_err();
        assert!(err.to_string().contains("not JSON"), "{err}");
    }
}
