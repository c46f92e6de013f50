//! A span to an input and output by the first convention that claims it:
//! OpenInference (its `openinference.span.kind` is unambiguous), then
//! OpenLLMetry (which also writes `gen_ai.system`), then the GenAI
//! conventions. Mapping is pure: no I/O, no clock.

use super::mapped::{Mapped, Unmapped};
use super::span::Span;
use super::{genai, openinference, openllmetry};

/// Map `span`; `operations`, when not empty, are the operations kept (a
/// span of another is [`Unmapped::Filtered`]).
pub fn map(span: &Span, operations: &[String]) -> Result<Mapped, Unmapped> {
    let mapped = if openinference::applies(span) {
        openinference::map(span)
    } else if openllmetry::applies(span) {
        openllmetry::map(span)
    } else if genai::applies(span) {
        genai::map(span)
    } else {
        Err(Unmapped::NotLlm)
    }?;
    if !operations.is_empty() && !operations.contains(&mapped.operation) {
        return Err(Unmapped::Filtered);
    }
    Ok(mapped)
}

#[cfg(test)]
mod tests {
    use super::map;
    use crate::traces::mapped::{Convention, Mapped, Unmapped};
    use crate::traces::span::{from_json, Span};
    use probity_core::conversation::{Message, Role, ToolCall};
    use serde_json::json;

    fn spans(text: &str) -> Vec<Span> {
        text.lines()
            .flat_map(|l| from_json(&serde_json::from_str(l).unwrap()).unwrap())
            .collect()
    }

    fn mapped(text: &str) -> Vec<Result<Mapped, Unmapped>> {
        spans(text).iter().map(|s| map(s, &[])).collect()
    }

    /// The three requests every fixture traced (fixtures/README.md).
    fn expected_conversations() -> Vec<Vec<Message>> {
        vec![
            vec![
                Message::text(Role::System, "be brief"),
                Message::text(Role::User, "What is 2+2?"),
            ],
            vec![Message::text(Role::User, "weather?")],
            vec![
                Message::text(Role::User, "weather in Oslo?"),
                Message {
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "get_weather".into(),
                        arguments: json!({"city": "Oslo"}),
                    }],
                    ..Message::text(Role::Assistant, "")
                },
                Message::tool_result("call_1", "12 C, rain"),
            ],
        ]
    }

    fn check_fixture(text: &str, convention: Convention) {
        let got = mapped(text);
        assert_eq!(got.len(), 3);
        let got: Vec<Mapped> = got.into_iter().map(Result::unwrap).collect();
        for (m, want) in got.iter().zip(expected_conversations()) {
            assert_eq!(m.convention, convention);
            assert_eq!(m.operation, "chat");
            assert_eq!(m.model.as_deref(), Some("sim"));
            assert_eq!(m.messages, want);
            assert!(m.input_tokens.is_some() && m.output_tokens.is_some());
        }
        // The simulator's answers: text, then a tool call, then text.
        assert!(got[0].output.content.as_deref().unwrap().contains("2 2"));
        assert!(got[0].output.tool_calls.is_empty());
        assert_eq!(got[1].output.content, None);
        assert_eq!(got[1].output.tool_calls.len(), 1);
        let call = &got[1].output.tool_calls[0];
        assert_eq!(call.name, "get_weather");
        assert_eq!(call.arguments, json!({"city": "weather?"}));
        assert!(call.id.starts_with("call_sim"));
        assert!(got[2].output.content.as_deref().unwrap().contains("12 C"));
    }

    #[test]
    fn genai_v1_37_spans_of_the_official_instrumentation_map_whole() {
        check_fixture(include_str!("fixtures/v2_content.jsonl"), Convention::GenAi);
    }

    #[test]
    fn openinference_spans_map_whole() {
        check_fixture(
            include_str!("fixtures/oi_protojson.jsonl"),
            Convention::OpenInference,
        );
    }

    #[test]
    fn openllmetry_indexed_spans_map_whole() {
        check_fixture(
            include_str!("fixtures/llmetry_old.jsonl"),
            Convention::OpenLlmetry,
        );
    }

    #[test]
    fn spans_without_captured_content_are_counted_as_such() {
        for (text, c) in [
            (
                include_str!("fixtures/v2_nocontent.jsonl"),
                Convention::GenAi,
            ),
            (
                include_str!("fixtures/llmetry_nocontent.jsonl"),
                Convention::OpenLlmetry,
            ),
        ] {
            let got = mapped(text);
            assert_eq!(got.len(), 3);
            for g in got {
                assert_eq!(g, Err(Unmapped::NoContent(c)));
            }
        }
    }

    fn span(attrs: serde_json::Value, events: serde_json::Value) -> Span {
        let to_kv = |v: &serde_json::Value| -> Vec<serde_json::Value> {
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    let value = match v {
                        serde_json::Value::String(s) => json!({"stringValue": s}),
                        serde_json::Value::Number(n) => json!({"intValue": n.to_string()}),
                        other => json!({"stringValue": other.to_string()}),
                    };
                    json!({"key": k, "value": value})
                })
                .collect()
        };
        let events: Vec<serde_json::Value> = events
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!({"name": e["name"], "attributes": to_kv(&e["attributes"])}))
            .collect();
        let req = json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "chat m", "attributes": to_kv(&attrs), "events": events}]}]}]});
        from_json(&req).unwrap().remove(0)
    }

    #[test]
    fn genai_v1_26_prompt_and_completion_events_map() {
        let s = span(
            json!({"gen_ai.system": "openai", "gen_ai.request.model": "m"}),
            json!([
                {"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt":
                    "[{\"role\": \"user\", \"content\": \"hi\"}]"}},
                {"name": "gen_ai.content.completion", "attributes": {"gen_ai.completion":
                    "[{\"role\": \"assistant\", \"content\": \"hello\"}]"}}
            ]),
        );
        let m = map(&s, &[]).unwrap();
        assert_eq!(m.messages, vec![Message::text(Role::User, "hi")]);
        assert_eq!(m.output.content.as_deref(), Some("hello"));
        assert_eq!(m.operation, "chat");
    }

    #[test]
    fn genai_v1_28_message_events_map_with_tool_calls() {
        let s = span(
            json!({"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}),
            json!([
                {"name": "gen_ai.system.message", "attributes": {"content": "be kind"}},
                {"name": "gen_ai.user.message", "attributes": {"content": "refund?"}},
                {"name": "gen_ai.assistant.message", "attributes": {"tool_calls":
                    "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"arguments\":\"{\\\"order\\\":7}\"}}]"}},
                {"name": "gen_ai.tool.message", "attributes": {"id": "c1", "content": "shipped"}},
                {"name": "gen_ai.choice", "attributes": {"index": 0, "finish_reason": "stop",
                    "message": "{\"content\": \"It shipped.\"}"}}
            ]),
        );
        let m = map(&s, &[]).unwrap();
        assert_eq!(m.messages.len(), 4);
        assert_eq!(m.messages[2].tool_calls[0].name, "lookup");
        assert_eq!(m.messages[2].tool_calls[0].arguments, json!({"order": 7}));
        assert_eq!(m.messages[3], Message::tool_result("c1", "shipped"));
        assert_eq!(m.output.content.as_deref(), Some("It shipped."));
    }

    #[test]
    fn execute_tool_spans_map_to_the_call_and_its_result() {
        let s = span(
            json!({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                   "gen_ai.tool.call.id": "c9", "gen_ai.tool.call.arguments": "{\"order\": 7}",
                   "gen_ai.tool.call.result": "shipped"}),
            json!([]),
        );
        let m = map(&s, &[]).unwrap();
        assert_eq!(m.operation, "execute_tool");
        assert_eq!(m.messages[0].tool_calls[0].arguments, json!({"order": 7}));
        assert_eq!(m.output.content.as_deref(), Some("shipped"));
        // Filtered out when only chat spans are checked.
        assert_eq!(map(&s, &["chat".into()]), Err(Unmapped::Filtered));
    }

    #[test]
    fn shapes_not_understood_are_named_and_other_spans_are_not_llm() {
        let s = span(
            json!({"gen_ai.operation.name": "chat",
                   "gen_ai.input.messages": "[{\"role\":\"user\",\"parts\":[{\"type\":\"blob\",\"modality\":\"image\"}]}]",
                   "gen_ai.output.messages": "[]"}),
            json!([]),
        );
        match map(&s, &[]) {
            Err(Unmapped::UnknownShape(Convention::GenAi, d)) => {
                assert!(
                    d.contains("gen_ai.input.messages[0]") && d.contains("blob"),
                    "{d}"
                )
            }
            other => panic!("{other:?}"),
        }
        let s = span(
            json!({"gen_ai.operation.name": "chat", "gen_ai.input.messages": "not json"}),
            json!([]),
        );
        assert!(matches!(map(&s, &[]), Err(Unmapped::UnknownShape(..))));
        let http = span(json!({"http.request.method": "POST"}), json!([]));
        assert_eq!(map(&http, &[]), Err(Unmapped::NotLlm));
    }

    #[test]
    fn a_failed_call_maps_with_its_error_and_no_output() {
        let mut s = span(
            json!({"gen_ai.operation.name": "chat",
                   "gen_ai.input.messages": "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"hi\"}]}]"}),
            json!([]),
        );
        s.error = Some("429 Too Many Requests".into());
        let m = map(&s, &[]).unwrap();
        assert!(m.output.is_empty());
        assert_eq!(m.error.as_deref(), Some("429 Too Many Requests"));
    }
}
