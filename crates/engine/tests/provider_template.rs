//! Prompt templates: rendering, strict undefined, syntax errors, feedback;
//! inputs that carry their own conversation.

use crate::common;

use probity_core::Input;
use probity_engine::provider::template::{PromptTemplate, TemplateError};
use probity_engine::provider::Role;
use serde_json::json;

fn row() -> Input {
    let mut i = Input::text("row-7", "Thank you! What is Rust?");
    i.fields.insert("lang".into(), json!("French"));
    i.fields.insert("n".into(), json!(3));
    i
}

#[test]
fn renders_system_and_user_with_fields() {
    let t = PromptTemplate::new(
        Some("Answer in {{ input.lang }}. Never use contractions."),
        "{{ input.text }} ({{ input.n + 1 }} points, id {{ input.id }}, {{ input.fields.lang }})",
    )
    .unwrap();
    let m = t.render(&row()).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].role, Role::System);
    assert_eq!(m[0].content, "Answer in French. Never use contractions.");
    assert_eq!(m[1].role, Role::User);
    assert_eq!(
        m[1].content,
        "Thank you! What is Rust? (4 points, id row-7, French)"
    );
}

#[test]
fn fields_are_in_scope_by_name_and_input_always_means_the_row() {
    // promptfoo's `{{question}}`: a field by name, as `input.question` too.
    let t = PromptTemplate::new(
        Some("{{ lang }}/{{ input.lang }}"),
        "{{ n * 2 }} {{ input }}",
    )
    .unwrap();
    let m = t.render(&row()).unwrap();
    assert_eq!(m[0].content, "French/French");
    assert_eq!(m[1].content, "6 Thank you! What is Rust?");
    // A field named `input` does not hide the row.
    let mut i = row();
    i.fields.insert("input".into(), json!("shadow"));
    let t = PromptTemplate::new(None, "{{ input.id }}: {{ input.input }}").unwrap();
    assert_eq!(t.render(&i).unwrap()[0].content, "row-7: shadow");
}

#[test]
fn no_system_template_gives_one_message_and_text_falls_back_to_all_fields() {
    let t = PromptTemplate::new(None, "Q: {{ input.text }}").unwrap();
    let mut i = Input {
        id: "x".into(),
        ..Input::default()
    };
    i.fields.insert("question".into(), json!("Why?"));
    let m = t.render(&i).unwrap();
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].content, "Q: Why?");
}

#[test]
fn missing_field_is_an_error_naming_field_and_input() {
    let t = PromptTemplate::new(None, "Hello\n{{ input.question }}").unwrap();
    let err = t.render(&row()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("question"), "{msg}");
    assert!(msg.contains("row-7"), "{msg}");
    match err {
        TemplateError::Render { template, line, .. } => {
            assert_eq!(template, "prompt");
            assert_eq!(line, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Also a top-level unknown variable.
    let t = PromptTemplate::new(Some("{{ persona }}"), "x").unwrap();
    let msg = t.render(&row()).unwrap_err().to_string();
    assert!(
        msg.contains("persona") && msg.contains("system_prompt"),
        "{msg}"
    );
}

#[test]
fn syntax_error_names_template_and_line() {
    let err = PromptTemplate::new(Some("fine"), "line one\nline two {{ input.text ").unwrap_err();
    match &err {
        TemplateError::Syntax { template, line, .. } => {
            assert_eq!(template, "prompt");
            assert_eq!(*line, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    let err = PromptTemplate::new(Some("{% if %}"), "ok").unwrap_err();
    assert!(err.to_string().contains("system_prompt"), "{err}");
}

#[test]
fn feedback_appends_reasons_to_the_user_message() {
    let t = PromptTemplate::new(Some("sys"), "{{ input.text }}").unwrap();
    let reasons = vec![
        "Output contains too many contractions".to_string(),
        "Too long".into(),
    ];
    let m = t
        .render_feedback(&row(), "I can't, won't", &reasons)
        .unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].content, "sys");
    let u = &m[1].content;
    assert!(u.starts_with("Thank you! What is Rust?"), "{u}");
    assert!(u.contains("I can't, won't"), "{u}");
    assert!(
        u.contains("- Output contains too many contractions\n- Too long"),
        "{u}"
    );

    let t = t
        .with_feedback(
            " [retry: {{ reasons | join('; ') }} after {{ previous_output | length }} chars]",
        )
        .unwrap();
    let m = t.render_feedback(&row(), "abc", &reasons).unwrap();
    assert_eq!(
        m[1].content,
        "Thank you! What is Rust? [retry: Output contains too many contractions; Too long after 3 chars]"
    );
}

#[test]
fn the_input_written_whole_renders_as_its_text() {
    let t = PromptTemplate::new(Some("About: {{ input }}"), "Q: {{ input }}").unwrap();
    let m = t.render(&Input::text("a", "What is Rust?")).unwrap();
    assert_eq!(m[0].content, "About: What is Rust?");
    assert_eq!(m[1].content, "Q: What is Rust?");
    // A row without `text`: its fields joined, as `input.text` gives.
    let mut i = Input {
        id: "x".into(),
        ..Input::default()
    };
    i.fields.insert("question".into(), json!("Why?"));
    i.fields.insert("n".into(), json!(2));
    let whole = t.render(&i).unwrap()[1].content.clone();
    let text = PromptTemplate::new(None, "Q: {{ input.text }}")
        .unwrap()
        .render(&i)
        .unwrap()[0]
        .content
        .clone();
    assert_eq!(whole, text);
    // Still a map: its fields and its keys.
    let t = PromptTemplate::new(
        None,
        "{{ input.lang }} {{ input['n'] }} {{ input | length > 3 }} {{ 'lang' in input }} {% for k in input | sort %}{{ k }},{% endfor %}",
    )
    .unwrap();
    assert_eq!(
        t.render(&row()).unwrap()[0].content,
        "French 3 True True fields,id,lang,n,text,"
    );
    // And in the feedback template.
    let t = t.with_feedback(" (for {{ input }})").unwrap();
    let m = t.render_feedback(&row(), "x", &[]).unwrap();
    assert!(
        m[0].content.ends_with(" (for Thank you! What is Rust?)"),
        "{}",
        m[0].content
    );
}

/// An input's own conversation is sent whole and in order: every role,
/// the tool call with its arguments as JSON, the tool's result tied to
/// its call — not its last user turn.
#[test]
fn a_conversation_is_rendered_whole_and_in_order() {
    let input = common::conversation_input("trip", common::trip_conversation());
    let m = PromptTemplate::new(None, "{{ input.text }}")
        .unwrap()
        .render(&input)
        .unwrap();
    assert_eq!(
        probity_core::conversation::to_openai(&m),
        common::trip_conversation()
    );
    assert_eq!(m.len(), 4);
    assert_eq!(m[1].tool_calls[0].name, "book_seat");
    assert_eq!(
        m[1].tool_calls[0].arguments,
        json!({"seat": "4A", "train": "9:15"})
    );
    assert_eq!(m[2].role, Role::Tool);
    assert_eq!(m[2].tool_call_id.as_deref(), Some("call_1"));
}

/// `[prompt] system` is added only when the conversation has no system or
/// developer message of its own, unless `conversation_system` says
/// otherwise; `conversation_user = "template"` renders the last user turn.
#[test]
fn the_prompt_adds_to_a_conversation_only_as_configured() {
    use probity_engine::provider::template::{
        ConversationPrompt, ConversationSystem, ConversationUser,
    };
    let plain = common::conversation_input("a", common::trip_conversation());
    let mut own = common::trip_conversation();
    own.as_array_mut().unwrap().insert(
        0,
        json!({"role": "developer", "content": "Answer in one line."}),
    );
    let own = common::conversation_input("b", own);
    let with = |system, user| {
        PromptTemplate::new(Some("You book trains."), "[{{ input.text }}]")
            .unwrap()
            .with_conversation(ConversationPrompt { system, user })
    };
    let roles = |m: &[probity_engine::provider::Message]| {
        m.iter()
            .map(|m| m.role.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let t = with(ConversationSystem::IfNone, ConversationUser::AsSent);
    let m = t.render(&plain).unwrap();
    assert_eq!(roles(&m), "system,user,assistant,tool,user");
    assert_eq!(m[0].content, "You book trains.");
    assert_eq!(m[4].content, "And in French?");
    let m = t.render(&own).unwrap();
    assert_eq!(roles(&m), "developer,user,assistant,tool,user");
    let m = with(ConversationSystem::First, ConversationUser::AsSent)
        .render(&own)
        .unwrap();
    assert_eq!(roles(&m), "system,developer,user,assistant,tool,user");
    let m = with(ConversationSystem::Never, ConversationUser::AsSent)
        .render(&plain)
        .unwrap();
    assert_eq!(roles(&m), "user,assistant,tool,user");
    let m = with(ConversationSystem::Never, ConversationUser::Template)
        .render(&plain)
        .unwrap();
    assert_eq!(roles(&m), "user,assistant,tool,user");
    assert_eq!(m[3].content, "[And in French?]");
    assert_eq!(m[0].content, "Book me seat 4A on the 9:15 to Lyon.");
    // The template renders the last turn only when it is the user's.
    let mut ends_with_tool = common::trip_conversation();
    ends_with_tool.as_array_mut().unwrap().pop();
    let e = with(ConversationSystem::Never, ConversationUser::Template)
        .render(&common::conversation_input("c", ends_with_tool))
        .unwrap_err();
    assert_eq!(
        e,
        TemplateError::Conversation {
            input_id: "c".into(),
            index: 2,
            problem: "conversation_user = \"template\" renders the last message, which must be the user's (it is the tool's)".into()
        }
    );
}

/// A message that cannot be sent on is an error naming the input, the
/// message and the field; feedback after a conversation ending with a
/// tool's result is one more user turn, the result untouched.
#[test]
fn conversations_that_cannot_be_read_are_named_and_feedback_adds_a_turn() {
    let t = PromptTemplate::new(None, "{{ input.text }}").unwrap();
    let mut bad = common::trip_conversation();
    bad[2] = json!({"role": "tool", "content": "no id"});
    let e = t
        .render(&common::conversation_input("trip-3", bad))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "input \"trip-3\": `messages`: message 2: a tool message has no `tool_call_id`"
    );
    let mut image = common::trip_conversation();
    image[3] =
        json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]});
    let e = t
        .render(&common::conversation_input("trip-4", image))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("message 3: content[0] is a `image_url` part"),
        "{e}"
    );
    let e = t
        .render(&common::conversation_input("empty", json!([])))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`messages` is empty"), "{e}");

    let mut ends_with_tool = common::trip_conversation();
    ends_with_tool.as_array_mut().unwrap().pop();
    let input = common::conversation_input("t", ends_with_tool);
    let m = t
        .render_feedback(&input, "Booked.", &["Answer in French".into()])
        .unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m[2].content, "{\"booked\":true,\"car\":7}");
    assert_eq!(m[3].role, Role::User);
    assert!(
        m[3].content
            .starts_with("Your previous answer was:\nBooked."),
        "{}",
        m[3].content
    );
}

/// The cache key of a request covers the whole conversation: two
/// conversations that differ only in a tool call's argument, or in the
/// call a result answers, are different requests.
#[test]
fn cache_keys_cover_the_whole_conversation() {
    use probity_engine::checks::cache_key::sample_key;
    let t = PromptTemplate::new(None, "{{ input.text }}").unwrap();
    let key = |conversation: serde_json::Value| {
        let m = t
            .render(&common::conversation_input("k", conversation))
            .unwrap();
        sample_key("fp", &m, 0)
    };
    let base = key(common::trip_conversation());
    let mut seat = common::trip_conversation();
    seat[1]["tool_calls"][0]["function"]["arguments"] =
        json!("{\"seat\":\"4B\",\"train\":\"9:15\"}");
    let mut id = common::trip_conversation();
    id[2]["tool_call_id"] = json!("call_2");
    assert_ne!(base, key(seat));
    assert_ne!(base, key(id));
    assert_eq!(base, key(common::trip_conversation()));
    // A text-only request keys as it always has: role and content only.
    let plain = t.render(&Input::text("p", "hi")).unwrap();
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        r#"[{"role":"user","content":"hi"}]"#
    );
}
