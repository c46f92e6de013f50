//! The facts of a stored run in every report format, end to end: `probity
//! init`, `probity run`, then `probity report 1 --format …`: calls, tokens
//! and reuse; each rate's inputs and scope; each check's consistency; each
//! failing output beside its input; errors with their causes and a broken
//! check; a comparison's correction; the formats listed by `--help`.

use crate::common;

use common::{probity, text};
use serde_json::Value;
use std::path::Path;

fn report(dir: &Path, run: &str, format: &str) -> String {
    let out = probity(dir, &["report", run, "--format", format]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_clean_run_reports_its_calls_inputs_scope_and_consistency_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    let out = probity(d, &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    let j: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert_eq!(j["schema"], "probity.report.v1");
    let calls = j["run"]["model_calls"].as_u64().unwrap();
    assert!(calls >= 400, "{}", j["run"]);
    assert_eq!(j["run"]["judge_calls"], 0);
    assert_eq!(j["run"]["cached"], 0);
    assert!(j["run"]["reused_from"].is_null());
    assert!(j["run"]["tokens"].is_u64());
    for c in j["checks"].as_array().unwrap() {
        assert_eq!(c["rate"]["inputs"], 20, "{c}");
        assert_eq!(c["rate"]["scope"], "population", "{c}");
        assert_eq!(c["broken"], false);
        assert_eq!(c["errors"]["total"], 0);
    }
    assert_eq!(j["errors"]["system"]["total"], 0);
    assert_eq!(j["errors"]["outputs"], 400);
    // The consistency of a check, per input.
    let cons = &j["checks"][0]["consistency"];
    let k = cons["k"]
        .as_u64()
        .expect("consistency of contraction_validator");
    assert!(k >= 1, "{cons}");
    assert_eq!(cons["per_input"].as_array().unwrap().len(), 20);
    assert_eq!(cons["per_input"][0]["label"], "q01");
    assert!(cons["mean_pass_all_k"]["estimate"].is_f64());
    // Failing outputs beside their inputs.
    let f = &j["failures"][0];
    let id = f["input_label"].as_str().unwrap().to_string();
    let field = f["input_fields"]["text"].as_str().unwrap().to_string();
    assert!(!field.is_empty());
    assert!(j["examples"][0]["input_fields"]["text"].as_str().is_some());

    let afresh = format!("{calls} calls (0 to judges)");
    let t = report(d, "1", "text");
    assert!(t.contains(&afresh), "{t}");
    assert!(t.contains("; every sample called afresh"), "{t}");
    assert!(t.contains("over 20 inputs"), "{t}");
    assert!(t.contains(&format!("pass^{k} ")), "{t}");

    let md = report(d, "1", "markdown");
    assert!(
        md.contains(&afresh) && md.contains("every sample called afresh"),
        "{md}"
    );
    assert!(
        md.contains("| check | inputs | interval is about | pass^k | pass@k |"),
        "{md}"
    );
    assert!(
        md.contains("| 20 | the system (inputs drawn from a population) |"),
        "{md}"
    );
    assert!(md.contains("Its input "), "{md}");
    assert!(md.contains("```json\n{\n  \"id\": "), "{md}");

    let h = report(d, "1", "html");
    assert!(h.contains(&afresh) && h.contains("every sample called afresh"));
    assert!(h.contains("<section id=\"consistency\">"));
    assert!(h.contains("over 20 inputs"));
    assert!(
        h.contains(&format!("<details class=\"input\"><summary>input {id} (")),
        "no input beside the failing output"
    );
    let x = report(d, "1", "junit");
    assert!(
        x.contains("<property name=\"probity.run.judge_calls\" value=\"0\"/>"),
        "{x}"
    );
    assert!(x.contains("every sample called afresh"), "{x}");
    assert!(x.contains("over 20 inputs"), "{x}");
    assert!(x.contains("its input "), "{x}");

    // Reused outputs say where from.
    let out = probity(d, &["run", "--quiet", "--reuse", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    for f in ["text", "markdown", "html", "junit"] {
        let s = report(d, "2", f);
        assert!(s.contains("400 outputs reused from run #1"), "{f}: {s}");
    }
    let j: Value = serde_json::from_str(&report(d, "2", "json")).unwrap();
    assert_eq!(j["run"]["reused_from"], 1);
    assert_eq!(j["run"]["cached"], 400);
}

#[test]
fn call_errors_and_a_broken_check_are_reported_with_their_causes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    let cfg = std::fs::read_to_string(d.join("probity.toml")).unwrap();
    let cfg = cfg
        .replace("seed = 42\n", "seed = 42\nerror_rate = 0.2\n")
        .replace("[experiment]\n", "[experiment]\nerror_budget = 1.0\ncall_attempts = 1\n")
        + "\n[[validator]]\nname = \"length_check\"\nmessage = \"Empty output\"\ncheck = '''lenght(output) > 0'''\nminimum_success_percentage = 0.9\n";
    std::fs::write(d.join("probity.toml"), cfg).unwrap();
    let out = probity(d, &["run", "--quiet"]);
    let stdout = text(&out.stdout);
    // A broken check: exit 2, after the report, which says BROKEN.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}\n{stdout}",
        text(&out.stderr)
    );
    // Stopped as soon as the check had erred on the first outputs, naming
    // it and its cause; the stored run's reports say BROKEN (below).
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("broken") && stderr.contains("`length_check`") && stderr.contains("lenght"),
        "{stderr}"
    );

    let j: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    let broken = &j["checks"][2];
    assert_eq!(broken["name"], "length_check");
    assert_eq!(broken["broken"], true);
    let message = broken["errors"]["causes"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("lenght"), "{message}");
    assert_eq!(broken["errors"]["total"], j["errors"]["outputs"]);
    assert_eq!(j["summary"]["broken"], 1);
    assert_eq!(j["passed"], false);
    let sys = &j["errors"]["system"];
    let failed = sys["total"].as_u64().unwrap();
    assert!(failed > 0, "the simulator's errors: {sys}");
    let cause = &sys["causes"][0];
    let cause_message = cause["message"].as_str().unwrap().to_string();
    assert!(cause["count"].as_u64().unwrap() > 0);
    let first = format!(
        "(first: input {} · output #{})",
        cause["input_label"].as_str().unwrap(),
        cause["repetition"]
    );
    assert!(j["counts"]["error"].as_u64().unwrap() > failed);

    let head = format!(
        "{failed} {} to the system failed after their retries (not measured)",
        if failed == 1 { "call" } else { "calls" }
    );
    let short = &message[..message.len().min(40)];
    let t = report(d, "1", "text");
    assert!(t.contains(&head) && t.contains(&first), "{t}");
    assert!(t.contains("BROKEN: could not judge any of its"), "{t}");
    assert!(t.contains(short), "{t}");
    let md = report(d, "1", "markdown");
    assert!(md.contains(&head) && md.contains("⛔ BROKEN"), "{md}");
    let h = report(d, "1", "html");
    assert!(
        h.contains("<section id=\"errors\">") && h.contains(&head),
        "html"
    );
    assert!(h.contains("<span class=\"badge fail\">BROKEN</span>"));
    assert!(h.contains(&probity_report::sanitize::html_escape(&cause_message)));
    let x = report(d, "1", "junit");
    assert!(x.contains("type=\"broken\""), "{x}");
    assert!(x.contains(&head), "{x}");
    assert!(
        x.contains("<property name=\"probity.broken\" value=\"length_check\"/>"),
        "{x}"
    );
}

#[test]
fn compare_without_correction_and_formats_in_help() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(probity(d, &["init"]).status.code(), Some(0));
    common::pin_seed(d, 42);
    for _ in 0..2 {
        assert_eq!(probity(d, &["run", "--quiet"]).status.code(), Some(1));
    }
    let out = probity(d, &["compare", "1", "2", "--format", "json"]);
    let j: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(j["options"]["multiple"], "holm");
    assert!(
        j["checks"][0]["p_adjusted"].as_f64().unwrap()
            >= j["checks"][0]["p_value"].as_f64().unwrap()
    );
    let out = probity(
        d,
        &["compare", "1", "2", "--format", "json", "--no-correction"],
    );
    let j: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(j["options"]["multiple"], "none");
    assert_eq!(j["checks"][0]["p_adjusted"], j["checks"][0]["p_value"]);
    let t = text(&probity(d, &["compare", "1", "2", "--no-correction"]).stdout);
    assert!(
        t.contains("control of the false-regression rate across K checks is off"),
        "{t}"
    );
    let t = text(&probity(d, &["compare", "1", "2"]).stdout);
    assert!(t.contains("Holm-adjusted"), "{t}");
    // probity run --baseline is corrected (Holm) by default.
    let out = probity(
        d,
        &["run", "--quiet", "--baseline", "1", "--format", "json"],
    );
    let j: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(j["comparison"]["options"]["multiple"], "holm");

    let help = text(&probity(d, &["compare", "--help"]).stdout);
    assert!(help.contains("--no-correction"), "{help}");
    assert!(
        help.contains("control of the false-regression rate across K checks is off"),
        "{help}"
    );
    for cmd in ["run", "report", "compare", "revalidate"] {
        let help = text(&probity(d, &[cmd, "--help"]).stdout);
        assert!(
            help.contains("[possible values: text, json, junit, markdown, html]"),
            "{cmd} --help:\n{help}"
        );
    }
    // The aliases are still accepted, in any case.
    for alias in ["md", "GFM", "xml", "htm", "txt", "JSON"] {
        let out = probity(d, &["report", "1", "--format", alias]);
        assert_eq!(out.status.code(), Some(0), "{alias}: {}", text(&out.stderr));
    }
    let out = probity(d, &["report", "1", "--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
}
