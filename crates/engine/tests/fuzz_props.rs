//! Property tests over everything a user or a client hands probity: the
//! configuration loader, the dataset readers, expressions (compile and
//! evaluate), templates and the serve request parser. Whatever the input,
//! none panics and each case ends within [`CASE_LIMIT`].
//!
//! Cases per property: `PROPTEST_CASES` (64 by default, for CI);
//! `bench/fuzz.sh` runs many more.

use probity_core::validator::Expression;
use probity_core::Input;
use probity_engine::config::inputs::{parse_csv, parse_jsonl};
use probity_engine::config::Config;
use probity_engine::provider::openai_wire::ChatRequest;
use probity_engine::provider::template::PromptTemplate;
use proptest::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// Longest a case may take (the expression time limit is 1 s).
const CASE_LIMIT: Duration = Duration::from_secs(5);

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    assert!(t.elapsed() < CASE_LIMIT, "a case took {:?}", t.elapsed());
    out
}

/// A number as TOML may spell it, hostile ones favoured.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        Just("1e308".to_string()),
        Just("-0.0".to_string()),
        Just("inf".to_string()),
        Just("nan".to_string()),
        Just("9223372036854775807".to_string()),
        Just("4294967295".to_string()),
        (0u32..100).prop_map(|n| n.to_string()),
    ]
}

const FIELDS: &[&str] = &[
    "outputs_per_input",
    "concurrency",
    "timeout_s",
    "deadline_s",
    "call_attempts",
    "requests_per_minute",
    "tokens_per_minute",
    "confidence",
    "retry_target",
    "error_budget",
    "pass_k",
];

fn expression_source() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("output".to_string()),
        Just("input_text".to_string()),
        Just("[]".to_string()),
        Just("#{}".to_string()),
        Just("\"a\"".to_string()),
        (0i64..100_000).prop_map(|n| n.to_string()),
        Just("json(output)".to_string()),
        Just("sleep(1)".to_string()),
    ];
    let ops = prop::collection::vec(
        prop_oneof![
            Just("let a = [a];"),
            Just("a += a;"),
            Just("a = a + a;"),
            Just("for i in 0..100000 { a = [a]; }"),
            Just("loop { a += 1; }"),
            Just("fn f(x) { f(x) } f(1);"),
            Just("a = a * 2;"),
            Just("a.push(a);"),
        ],
        0..4,
    );
    (atom, ops, "[ -~]{0,20}")
        .prop_map(|(a, ops, noise)| format!("let a = {a}; {} {noise} true", ops.join(" ")))
}

fn template_source() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{{ input.text }}"),
        Just("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"),
        Just("{{ \"a\" * 100000000 }}"),
        Just("{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}"),
        Just("{{ missing }}"),
        Just("{% if %}"),
        Just("{{ input.text * 1000 }}"),
        Just("text"),
    ];
    (prop::collection::vec(piece, 0..4), "[ -~]{0,20}")
        .prop_map(|(p, noise)| format!("{}{noise}", p.concat()))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn config_loader_never_panics(
        picks in prop::collection::vec((0..FIELDS.len(), number()), 0..5),
        extra in "[ -~\n]{0,40}",
    ) {
        let mut experiment = String::new();
        for (f, v) in &picks {
            experiment.push_str(&format!("{} = {v}\n", FIELDS[*f]));
        }
        let text = format!(
            "[system]\nprovider = \"sim\"\n[experiment]\n{experiment}\n[[validator]]\nname = \"v\"\ncheck = 'true'\n[[input]]\ntext = \"a\"\n{extra}"
        );
        timed(|| {
            if let Ok(c) = Config::from_str(&text, Path::new("fuzz.toml")) {
                let _ = c.experiment();
            }
        });
    }

    #[test]
    fn dataset_readers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400),
                                   text in "[\"a-c,\n\r{}:\\[\\] \u{feff}]{0,200}") {
        timed(|| {
            let _ = parse_csv(bytes.as_slice(), Path::new("f.csv"));
            let _ = parse_csv(text.as_bytes(), Path::new("f.csv"));
            let _ = parse_jsonl(&text, Path::new("f.jsonl"));
            let _ = parse_jsonl(&String::from_utf8_lossy(&bytes), Path::new("f.jsonl"));
        });
    }

    #[test]
    fn expressions_never_panic_or_hang(src in expression_source(), output in "[ -~]{0,40}") {
        let input = Input::text("0", "t");
        probity_engine::checks::install_expression_clock();
        timed(|| {
            if let Ok(e) = Expression::compile(&src) {
                let _ = e.evaluate(&input, &output);
            }
        });
    }

    #[test]
    fn templates_never_panic_or_hang(src in template_source()) {
        let input = Input::text("0", "some text");
        timed(|| {
            if let Ok(t) = PromptTemplate::new(None, &src) {
                let _ = t.render(&input);
            }
        });
    }

    #[test]
    fn serve_request_parser_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        stream in prop_oneof![Just("true"), Just("\"true\""), Just("1"), Just("null"), Just("[]")],
        n in prop_oneof![Just("1"), Just("0"), Just("-1"), Just("5"), Just("1.5"), Just("\"2\""), Just("1e40"), Just("null")],
    ) {
        timed(|| {
            let _ = ChatRequest::parse(&bytes);
            let body = format!(
                "{{\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}],\"stream\":{stream},\"n\":{n}}}"
            );
            if let Ok(r) = ChatRequest::parse(body.as_bytes()) {
                prop_assert!(r.n.is_none_or(|n| n >= 1));
            }
            Ok(())
        })?;
    }
}
