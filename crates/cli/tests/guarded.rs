//! A run with a `[retry]` policy: the guarded system beside its prediction
//! in every report of the stored run, not only in `probity run`'s text.

use crate::common;

use common::{probity, text};
use serde_json::Value;
use std::path::Path;

/// 6 inputs × 5 guarded requests, at most 3 attempts each, on the simulator.
fn config(dir: &Path) {
    let mut s = String::from(
        r#"name = "guarded-demo"
[system]
provider = "sim"
contractions = 0.3
omit_welcome = 0.4
[experiment]
outputs_per_input = 5
[retry]
attempts = 3
on = "validators"
[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''
[[validator]]
name = "politeness_validator"
message = "Say you're welcome when thanked"
check = '''if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }'''
"#,
    );
    for i in 1..=6 {
        let t = if i % 2 == 1 {
            format!("Thank you for tip {i} on roses!")
        } else {
            format!("How do I water plant {i}?")
        };
        s.push_str(&format!("[[input]]\ntext = \"{t}\"\n"));
    }
    std::fs::write(dir.join("probity.toml"), s).unwrap();
}

#[test]
fn report_of_a_guarded_run_shows_the_guarded_system_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let out = probity(dir.path(), &["run", "--quiet"]);
    let t = text(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{t}",
        text(&out.stderr)
    );
    assert!(
        t.contains(
            "Guarded system (§4.2): at most 3 attempts per request (2 retries), 30 requests"
        ),
        "{t}"
    );

    // `probity report` of the stored run: JSON.
    let out = probity(dir.path(), &["report", "guarded-demo", "--format", "json"]);
    let j: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let g = &j["guarded"];
    assert!(g["held"].is_boolean(), "{g}");
    assert_eq!(g["attempts"], 3);
    assert_eq!(g["measured"]["requests"], 30);
    let hist: u64 = g["measured"]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        hist + g["measured"]["nothing_published"].as_u64().unwrap(),
        30
    );
    assert_eq!(g["predictions"][1]["model"], "joint");

    // Text (no longer only `probity run`'s).
    let out = probity(dir.path(), &["report", "guarded-demo"]);
    assert!(text(&out.stdout).contains("Guarded system (§4.2)"));

    // HTML.
    let out = probity(
        dir.path(),
        &["report", "guarded-demo", "--format", "html", "-o", "r.html"],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let h = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(h.contains("<section id=\"guarded\">"));
    assert!(h.contains("<h2>Guarded system (§4.2)</h2>"));
    assert!(h.contains("<a href=\"#guarded\">"));
    assert!(h.contains("id=\"guard-verdict\""));

    // JUnit: the guard prediction test case.
    let out = probity(dir.path(), &["report", "guarded-demo", "--format", "junit"]);
    assert!(text(&out.stdout).contains("name=\"guard prediction\""));

    // `probity plan RUN` still shows it.
    let out = probity(dir.path(), &["plan", "guarded-demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("Retry plan (paper §4.2) from run"), "{t}");
    assert!(t.contains("Guarded system (§4.2)"), "{t}");
}

#[test]
fn a_run_without_a_retry_policy_has_guarded_null() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path());
    let cfg = std::fs::read_to_string(dir.path().join("probity.toml")).unwrap();
    let cfg = cfg.replace("[retry]\nattempts = 3\non = \"validators\"\n", "");
    std::fs::write(dir.path().join("probity.toml"), cfg).unwrap();
    let out = probity(dir.path(), &["run", "--quiet", "--format", "json"]);
    let j: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    assert!(j["guarded"].is_null());
    assert!(
        !text(&probity(dir.path(), &["report", "guarded-demo"]).stdout).contains("Guarded system")
    );
}
