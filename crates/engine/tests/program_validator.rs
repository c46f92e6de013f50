//! `kind = "program"` validators: a long-running process speaking JSON
//! lines. The fixture is a small python3 program whose answer depends on
//! the output it is sent: pass, fail, an error verdict, a crash, a line
//! that is not JSON, silence (a timeout).

use probity_core::{Input, Validator, Verdict};
use probity_engine::checks::program::ProgramSpec;
use probity_engine::config::Config;
use probity_engine::{run, Sink};
use std::path::Path;

const FIXTURE: &str = r#"
import json, os, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    out = msg["output"]
    if out == "crash":
        sys.stderr.write("fixture: giving up\n")
        sys.exit(3)
    if out == "garbage":
        print("this is not json", flush=True)
        continue
    if out == "slow":
        time.sleep(30)
    if out == "undecided":
        print(json.dumps({"verdict": "error", "reason": "cannot tell"}), flush=True)
        continue
    if out == "whoami":
        print(json.dumps({"verdict": "error", "reason": "%s %s" % (msg["input_id"], msg["input"]["text"])}), flush=True)
        continue
    ok = "You're welcome" in out or out == "yes"
    if ok:
        print(json.dumps({"verdict": "pass"}), flush=True)
    else:
        print(json.dumps({"verdict": "fail", "reason": "no welcome in %r" % out}), flush=True)
"#;

fn fixture(dir: &Path) -> ProgramSpec {
    std::fs::write(dir.join("check.py"), FIXTURE).unwrap();
    let mut spec = ProgramSpec::new("prog", ["python3", "check.py"]);
    spec.resolve_paths(dir);
    spec
}

fn judge(v: &Validator, output: &str) -> Verdict {
    v.evaluate(&Input::text("q1", "Thank you!"), output)
}

fn error_of(v: Verdict) -> String {
    match v {
        Verdict::Error { reason } => reason,
        other => panic!("expected an error verdict, got {other:?}"),
    }
}

#[test]
fn passes_fails_and_reports_its_own_errors() {
    let dir = tempfile::tempdir().unwrap();
    let v = fixture(dir.path()).compile().unwrap();
    assert_eq!(judge(&v, "yes"), Verdict::Pass);
    assert_eq!(judge(&v, "no"), Verdict::Fail);
    let e = error_of(judge(&v, "undecided"));
    assert_eq!(e, "program `python3 check.py`: error: cannot tell");
    let e = error_of(judge(&v, "whoami"));
    assert!(e.ends_with("q1 Thank you!"), "{e}");
    // The same process goes on answering.
    assert_eq!(judge(&v, "yes"), Verdict::Pass);
}

/// A fail's reason is kept beside its cell, as a verifier's is; a pass
/// has none.
#[test]
fn a_fails_reason_is_kept_with_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    let v = fixture(dir.path()).compile().unwrap();
    let input = Input::text("q1", "Thank you!");
    let prepared = probity_core::validator::PreparedInput::new(&input);
    assert_eq!(
        v.explain_prepared(&prepared, "no"),
        (Verdict::Fail, Some("no welcome in 'no'".to_string()))
    );
    let checks = probity_engine::Checks {
        validators: vec![v],
        verifiers: Vec::new(),
        ..Default::default()
    };
    let (cells, reasons) = checks.validate(&prepared, "nope");
    assert_eq!(cells, [probity_core::Cell::Fail]);
    assert_eq!(reasons, [(0, "no welcome in 'nope'".to_string())]);
    let (cells, reasons) = checks.validate(&prepared, "yes");
    assert_eq!(cells, [probity_core::Cell::Pass]);
    assert!(reasons.is_empty());
}

#[test]
fn a_crash_is_an_error_naming_the_program_and_the_next_output_gets_a_fresh_process() {
    let dir = tempfile::tempdir().unwrap();
    let v = fixture(dir.path()).compile().unwrap();
    let e = error_of(judge(&v, "crash"));
    assert!(e.starts_with("program `python3 check.py`: exited"), "{e}");
    assert!(e.contains("fixture: giving up"), "{e}");
    assert_eq!(judge(&v, "yes"), Verdict::Pass);
}

#[test]
fn a_line_that_is_not_a_verdict_is_an_error_quoting_it() {
    let dir = tempfile::tempdir().unwrap();
    let v = fixture(dir.path()).compile().unwrap();
    let e = error_of(judge(&v, "garbage"));
    assert!(e.contains("not a verdict"), "{e}");
    assert!(e.contains("this is not json"), "{e}");
    assert_eq!(judge(&v, "no"), Verdict::Fail);
}

#[test]
fn silence_past_the_timeout_is_an_error_and_the_process_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fixture(dir.path());
    // Long enough for a fresh python3 to start and answer on a loaded
    // two-core machine; far below the fixture's 30 s of silence.
    spec.timeout_s = 5.0;
    let v = spec.compile().unwrap();
    let e = error_of(judge(&v, "slow"));
    assert!(e.contains("no answer within 5.000s"), "{e}");
    assert_eq!(judge(&v, "yes"), Verdict::Pass);
}

#[test]
fn a_program_that_cannot_start_is_an_error_not_a_panic() {
    let v = ProgramSpec::new("prog", ["/nonexistent/checker"])
        .compile()
        .unwrap();
    let e = error_of(judge(&v, "yes"));
    assert!(
        e.contains("program `/nonexistent/checker`: cannot start"),
        "{e}"
    );
}

#[test]
fn negate_swaps_pass_and_fail_but_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fixture(dir.path());
    spec.negate = true;
    let v = spec.compile().unwrap();
    assert_eq!(judge(&v, "yes"), Verdict::Fail);
    assert_eq!(judge(&v, "no"), Verdict::Pass);
    assert!(matches!(judge(&v, "undecided"), Verdict::Error { .. }));
}

#[test]
fn many_threads_share_a_small_pool_and_each_gets_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fixture(dir.path());
    spec.processes = 3;
    let v = spec.compile().unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let v = &v;
            s.spawn(move || {
                for n in 0..20 {
                    let (out, want) = if (t + n) % 2 == 0 {
                        ("yes", Verdict::Pass)
                    } else {
                        ("no", Verdict::Fail)
                    };
                    assert_eq!(judge(v, out), want);
                }
            });
        }
    });
}

#[test]
fn bad_settings_are_configuration_errors_naming_the_field() {
    let mut spec = ProgramSpec::new("prog", Vec::<String>::new());
    let e = spec.compile().unwrap_err().to_string();
    assert!(e.contains("validator `prog`: field `command`"), "{e}");
    spec.command = vec!["true".into()];
    spec.processes = 0;
    let e = spec.compile().unwrap_err().to_string();
    assert!(e.contains("field `processes`"), "{e}");
    spec.processes = 1;
    spec.timeout_s = -1.0;
    let e = spec.compile().unwrap_err().to_string();
    assert!(e.contains("field `timeout_s`"), "{e}");
}

fn config(dir: &Path, validator: &str) -> Result<Config, String> {
    std::fs::write(dir.join("check.py"), FIXTURE).unwrap();
    let text = format!(
        r#"
name = "program-test"
[system]
provider = "sim"
[experiment]
outputs_per_input = 5
[[input]]
text = "Thank you for the tomatoes!"
[[input]]
text = "How deep are bulbs planted?"
{validator}
"#
    );
    Config::from_str(&text, &dir.join("probity.toml")).map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toml_program_validator_runs_next_to_an_expression_with_paths_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(
        dir.path(),
        r#"
[[validator]]
name = "welcome_program"
kind = "program"
command = ["python3", "./check.py"]
processes = 2

[[validator]]
name = "welcome_expression"
check = '''output.contains("You're welcome") || output == "yes"'''
"#,
    )
    .unwrap();
    let outcome = run(&c.experiment().unwrap(), Sink::Memory).await.unwrap();
    assert_eq!(outcome.samples.len(), 10);
    for s in &outcome.samples {
        assert_eq!(s.cells[0], s.cells[1], "{:?}", s.output);
    }
}

#[test]
fn unknown_keys_of_a_program_table_are_errors_listing_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let e = config(
        dir.path(),
        "[[validator]]\nname = \"p\"\nkind = \"program\"\ncommand = [\"x\"]\nvalue = \"y\"\n",
    )
    .err()
    .unwrap();
    assert!(e.contains("unknown field `value`"), "{e}");
    assert!(e.contains("`processes`"), "{e}");
    let e = config(
        dir.path(),
        "[[validator]]\nname = \"p\"\nkind = \"program\"\n",
    )
    .err()
    .unwrap();
    assert!(e.contains("missing field `command`"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revalidating_with_a_program_gives_the_programs_verdicts() {
    use probity_engine::run::revalidate::revalidate;
    use probity_engine::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let first = config(
        dir.path(),
        "[[validator]]\nname = \"welcome\"\ncheck = '''output.contains(\"You're welcome\")'''\n",
    )
    .unwrap();
    let run1 = run(&first.experiment().unwrap(), Sink::Store(&mut store))
        .await
        .unwrap();
    let second = config(
        dir.path(),
        "[[validator]]\nname = \"welcome\"\nkind = \"program\"\ncommand = [\"python3\", \"check.py\"]\nprocesses = 3\n",
    )
    .unwrap();
    let done = revalidate(&mut store, run1.stored_id(), &second.recheck(), false)
        .await
        .unwrap();
    let old = store.samples(run1.stored_id()).unwrap();
    let new = store.samples(done.run_id).unwrap();
    assert_eq!(new.len(), 10);
    for (a, b) in old.iter().zip(&new) {
        assert_eq!(a.cells, b.cells, "{:?}", a.output);
    }
}
