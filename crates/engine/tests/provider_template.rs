//! Prompt templates: rendering, strict undefined, syntax errors, feedback.

use probity_core::Input;
use probity_engine::provider::Role;
use probity_engine::template::{PromptTemplate, TemplateError};
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
