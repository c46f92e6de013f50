//! Verifiers, the guard and retry policies end to end on the simulator,
//! whose truth is known: the sim judge reads the truth from the output and
//! errs with known probabilities.

use probity_core::{Cell, CheckKind, Input, Validator};
use probity_engine::checks::verifier::sim_truth;
use probity_engine::config::Config;
use probity_engine::provider::{Completion, FnProvider, Message, Provider, Role};
use probity_engine::run::stored;
use probity_engine::store::Store;
use probity_engine::{run, RunOutcome, Sink};
use probity_engine::{Caller, Checks, RetryPolicy};
use probity_engine::{Guard, GuardOutcome, Stop};
use std::path::Path;
use std::sync::{Arc, Mutex};

const CHECKS: &str = r#"
[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.95

[[validator]]
name = "politeness_validator"
message = "Say you're welcome"
check = '''if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }'''
minimum_success_percentage = 0.9
"#;

/// The sim's seed is pinned: the statistical checks below (a prediction
/// that held) are about one known sample, not a fresh one each run.
fn config(dir: &Path, extra: &str, n: usize, m: usize) -> Config {
    let inputs: String = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                format!("[[input]]\ntext = \"Thank you for the tip number {i} on roses!\"\n")
            } else {
                format!("[[input]]\ntext = \"How do I water plant number {i}?\"\n")
            }
        })
        .collect();
    let text = format!(
        "name = \"g\"\n[system]\nprovider = \"sim\"\nseed = 5\ncontractions = 0.2\nomit_welcome = 0.3\n[experiment]\noutputs_per_input = {m}\nconcurrency = 4\n{CHECKS}\n{extra}\n{inputs}"
    );
    let path = dir.join("probity.toml");
    std::fs::write(&path, &text).unwrap();
    Config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

async fn go(config: &Config, store: &mut Store) -> RunOutcome {
    run(&config.experiment().unwrap(), Sink::Store(store))
        .await
        .unwrap()
}

/// An error-free sim judge agrees with the validators on every output; the
/// verifier is a column of the tensor and of the summary.
#[tokio::test]
async fn exact_judge_agrees_with_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let c = config(
        dir.path(),
        "[[verifier]]\nname = \"judge\"\nmessage = \"The judge says no\"\ninstructions = \"No contractions; say you're welcome when thanked.\"\nminimum_success_percentage = 0.8\n",
        6,
        10,
    );
    let out = go(&c, &mut store).await;
    assert_eq!(out.tensor.shape(), (6, 10, 3));
    assert_eq!(out.summary.checks[2].info.kind, CheckKind::Verifier);
    for i in 0..6 {
        for j in 0..10 {
            let both = out.tensor.get(i, j, 0) == Some(Cell::Pass)
                && out.tensor.get(i, j, 1) == Some(Cell::Pass);
            let judged = out.tensor.get(i, j, 2);
            assert_eq!(judged, Some(if both { Cell::Pass } else { Cell::Fail }));
        }
    }
    // Reasons of failing verdicts are stored.
    let samples = store.samples(out.stored_id()).unwrap();
    let failing = samples.iter().find(|s| s.cells[2] == Cell::Fail).unwrap();
    assert!(failing.reasons.iter().any(|(k, _)| *k == 2));
    // One judge call per sample on top of the system's calls.
    assert_eq!(out.model_calls, 2 * 60);
}

/// A judge with known false-pass and false-fail rates: the measured rates,
/// by the truth of each output, match them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noisy_judge_errs_at_its_known_rates() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let c = config(
        dir.path(),
        "[[verifier]]\nname = \"judge\"\ninstructions = \"x\"\n[verifier.system]\nprovider = \"sim\"\nseed = 3\nfalse_pass = 0.3\nfalse_fail = 0.1\n",
        40,
        25,
    );
    let out = go(&c, &mut store).await;
    let samples = store.samples(out.stored_id()).unwrap();
    let inputs = &c.inputs;
    let (mut tp, mut t, mut fp, mut f) = (0.0, 0.0, 0.0, 0.0);
    for s in &samples {
        let truth = sim_truth(&inputs[s.input_idx].as_text(), s.output.as_deref().unwrap());
        let pass = s.cells[2] == Cell::Pass;
        if truth.is_empty() {
            t += 1.0;
            tp += pass as u8 as f64;
        } else {
            f += 1.0;
            fp += pass as u8 as f64;
        }
    }
    let (false_fail, false_pass) = (1.0 - tp / t, fp / f);
    // ~700 true passes, ~300 true failures: 4 standard errors.
    assert!(
        (false_fail - 0.1).abs() < 4.0 * (0.1f64 * 0.9 / t).sqrt(),
        "{false_fail}"
    );
    assert!(
        (false_pass - 0.3).abs() < 4.0 * (0.3f64 * 0.7 / f).sqrt(),
        "{false_pass}"
    );
}

/// An unreadable judgement is an Error cell with the raw answer kept.
#[tokio::test]
async fn unreadable_judgement_is_an_error_cell() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let c = config(
        dir.path(),
        "[[verifier]]\nname = \"judge\"\ninstructions = \"x\"\n[verifier.system]\nprovider = \"sim\"\nmalformed = 1.0\n",
        2,
        3,
    );
    let out = go(&c, &mut store).await;
    for s in store.samples(out.stored_id()).unwrap() {
        assert_eq!(s.cells[2], Cell::Error);
        assert!(s
            .reasons
            .iter()
            .any(|(k, r)| *k == 2 && r.contains("mostly fine")));
    }
    assert_eq!(out.tensor.counts().error, 6);
}

/// A retry policy: samples hold first attempts (the single-attempt tensor),
/// every attempt is stored, a published attempt passes, and the measured
/// guarded system agrees with the plan's prediction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_policy_is_measured_against_its_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let c = config(
        dir.path(),
        "[retry]\nattempts = 3\non = \"validators\"\n",
        30,
        20,
    );
    let out = go(&c, &mut store).await;
    let attempts = store.attempts(out.stored_id()).unwrap();
    let samples = store.samples(out.stored_id()).unwrap();
    assert_eq!(samples.len(), 600);
    let firsts: Vec<_> = attempts.iter().filter(|a| a.attempt == 1).collect();
    assert_eq!(firsts.len(), 600);
    for (s, a) in samples.iter().zip(&firsts) {
        assert_eq!(s.output, a.output);
        assert_eq!(s.cells, a.cells);
    }
    for a in &attempts {
        if a.published {
            assert!(a.passed && a.cells.iter().all(|&c| c == Cell::Pass));
        }
        assert!(a.attempt <= 3);
        // A later attempt is asked with the reasons fed back.
    }
    let loaded = stored::load(&store, out.stored_id()).unwrap();
    let check = stored::retry_check(&store, &loaded.record, &loaded.tensor)
        .unwrap()
        .unwrap();
    assert_eq!(check.measured.samples, 600);
    assert_eq!(check.measured.histogram.len(), 3);
    // True single-attempt pass rate: thanked inputs 0.8·0.7, others 0.8.
    let p: f64 = 0.5 * 0.56 + 0.5 * 0.8;
    let _ = p;
    assert!(check.held, "{check:#?}");
    assert!(check.measured.success.estimate > 0.9);
}

/// `validators` guarding a system that answers `answer {attempt}`, with
/// `attempts` attempts, asked `question` once: the outcome, and the last
/// message of every request the system saw (the feedback, on a retry).
async fn guarded(
    validators: Vec<Validator>,
    attempts: u32,
    question: &str,
) -> (GuardOutcome, Vec<String>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let provider: Arc<dyn Provider> = Arc::new(FnProvider::new(move |req| {
        log.lock()
            .unwrap()
            .push(req.messages.last().unwrap().content.clone());
        Ok(Completion {
            text: format!("answer {}", req.attempt),
            ..Default::default()
        })
    }));
    let checks = Checks {
        validators,
        verifiers: vec![],
        ..Checks::default()
    };
    let guard = Guard::new(
        provider,
        Arc::new(checks),
        RetryPolicy {
            attempts,
            ..RetryPolicy::default()
        },
        Arc::new(Caller::default()),
    )
    .unwrap();
    let msgs = [Message::text(Role::User, question)];
    let out = guard.run(&msgs, &Input::text("1", question), 0).await;
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

/// The guard as a library: feedback carries the failing checks' messages,
/// and when nothing passes the outcome holds every attempt's reasons.
#[tokio::test]
async fn guard_feeds_reasons_back_and_reports_nothing_passed() {
    let never = Validator::new("never")
        .message("Mention the moon")
        .check(|o: &str| o.contains("moon"));
    let (out, seen) = guarded(vec![never], 3, "Tell me about space").await;
    let GuardOutcome::NothingPassed { attempts, stop } = out else {
        panic!("nothing should pass")
    };
    assert_eq!(stop, Stop::Exhausted);
    assert_eq!(attempts.len(), 3);
    assert!(attempts
        .iter()
        .all(|a| a.feedback == vec!["Mention the moon".to_string()]));
    assert_eq!(seen[0], "Tell me about space");
    assert!(seen[1].contains("answer 0") && seen[1].contains("Mention the moon"));
    assert!(seen[2].contains("answer 1") && !seen[2].contains("answer 0"));
}

/// A check that cannot judge an output (its error) is not a reason the
/// model is told: the retry prompt carries the failing check's message and
/// nothing of the error, whose text is the guard's own.
#[tokio::test]
async fn a_checks_error_is_never_fed_back_to_the_model() {
    let broken = Validator::new("broken")
        .message("Be broken")
        .check_verdict(|_, _| probity_core::Verdict::Error {
            reason: "Too many operations: 1000000".into(),
        });
    let never = Validator::new("never")
        .message("Mention the moon")
        .check(|o: &str| o.contains("moon"));
    let (out, seen) = guarded(vec![broken, never], 2, "Tell me about space").await;
    let GuardOutcome::NothingPassed { attempts, .. } = out else {
        panic!("nothing should pass")
    };
    assert_eq!(attempts[0].cells, vec![Cell::Error, Cell::Fail]);
    assert_eq!(attempts[0].feedback, vec!["Mention the moon".to_string()]);
    assert!(seen[1].contains("Mention the moon"), "{}", seen[1]);
    assert!(
        !seen[1].contains("Too many operations") && !seen[1].contains("Be broken"),
        "{}",
        seen[1]
    );
}

/// An output no check failed but one could not judge is not retried:
/// another output would not mend the check (a judge that is down, a broken
/// expression), and each retry would cost a call for nothing.
#[tokio::test]
async fn an_output_a_check_cannot_judge_is_not_retried() {
    let ok = Validator::new("ok").check(|_: &str| true);
    let broken = Validator::new("broken").check_verdict(|_, _| probity_core::Verdict::Error {
        reason: "judge down".into(),
    });
    let (out, seen) = guarded(vec![ok, broken], 5, "Hi").await;
    let GuardOutcome::NothingPassed { attempts, stop } = out else {
        panic!("nothing should pass")
    };
    assert_eq!((attempts.len(), stop), (1, Stop::Unjudged));
    assert_eq!(seen.len(), 1);
}

/// A guard on the simulator (`latency_ms` per call) whose only check never
/// passes, asked "Hi" once under `policy`.
async fn never_passing(latency_ms: u64, policy: RetryPolicy) -> GuardOutcome {
    let provider: Arc<dyn Provider> = Arc::new(
        probity_engine::sim::SimModel::new(probity_engine::sim::SimConfig {
            latency_ms,
            ..Default::default()
        })
        .unwrap(),
    );
    let checks = Checks {
        validators: vec![Validator::new("never").check(|_: &str| false)],
        verifiers: vec![],
        ..Checks::default()
    };
    let guard = Guard::new(
        provider,
        Arc::new(checks),
        policy,
        Arc::new(Caller::default()),
    )
    .unwrap();
    let msgs = [Message::text(Role::User, "Hi")];
    guard.run(&msgs, &Input::text("1", "Hi"), 0).await
}

/// The overall deadline stops a guard that would go on.
#[tokio::test]
async fn guard_deadline_stops_attempts() {
    let policy = RetryPolicy {
        attempts: 50,
        deadline_s: Some(0.15),
        ..RetryPolicy::default()
    };
    let GuardOutcome::NothingPassed { attempts, stop } = never_passing(40, policy).await else {
        panic!()
    };
    assert_eq!(stop, Stop::Deadline);
    assert!(attempts.len() < 10, "{}", attempts.len());
}

/// However short the deadline, the first attempt is made: an outcome always
/// has at least one attempt (a deadline shorter than the model's latency
/// times that attempt out).
#[tokio::test]
async fn a_deadline_shorter_than_one_call_still_makes_the_first_attempt() {
    let policy = RetryPolicy {
        attempts: 5,
        deadline_s: Some(1e-9),
        ..RetryPolicy::default()
    };
    let GuardOutcome::NothingPassed { attempts, stop } = never_passing(20, policy).await else {
        panic!("nothing can pass")
    };
    assert_eq!(stop, Stop::Deadline);
    assert_eq!(attempts.len(), 1);
    assert!(attempts[0].output.is_none(), "the attempt timed out");
}
