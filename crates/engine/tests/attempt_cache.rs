//! The output cache of guarded attempts: with a retry policy every attempt
//! that produced an output is stored under the key of its request (the
//! provider, the messages with the feedback fed back, the repetition and the
//! attempt index), so an identical re-run asks the system nothing — not
//! even for later attempts, whose messages depend on earlier outputs and
//! judgements — failed attempts are asked again, and a store of the
//! previous schema opens, is upgraded and works.

use crate::common;

use common::Counting;
use probity_core::{Input, Validator};
use probity_engine::config::Config;
use probity_engine::provider::{Completion, FnProvider, Message, Provider, Role};
use probity_engine::run::stored;
use probity_engine::store::{AttemptRow, MemoryOutputs, Store, SCHEMA_VERSION};
use probity_engine::{run_with, Control, RunOutcome, Sink};
use probity_engine::{Caller, Checks, Guard, GuardOutcome, RetryPolicy};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const CHECKS: &str = r#"
[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.9

[[verifier]]
name = "judge"
message = "The judge rejected the answer"
instructions = "No contractions; say you're welcome when thanked."
minimum_success_percentage = 0.8
[verifier.system]
provider = "sim"
seed = 7
false_fail = 0.2
false_pass = 0.1
"#;

/// A guarded sim config (`attempts = 3`, feedback on) whose rates make many
/// retries, with the system's and the judge's calls counted.
struct Setup {
    config: Config,
    provider: Arc<dyn Provider>,
    system_calls: Arc<AtomicU64>,
    judge_calls: Arc<AtomicU64>,
}

fn setup(dir: &Path, system: &str) -> Setup {
    let inputs: String = (0..6)
        .map(|i| {
            if i % 2 == 0 {
                format!("[[input]]\ntext = \"Thank you for the tip number {i} on roses!\"\n")
            } else {
                format!("[[input]]\ntext = \"How do I water plant number {i}?\"\n")
            }
        })
        .collect();
    let text = format!(
        "name = \"ac\"\n[system]\nprovider = \"sim\"\nseed = 0\ncontractions = 0.4\nomit_welcome = 0.5\n{system}\n[experiment]\noutputs_per_input = 5\nconcurrency = 4\ncall_attempts = 1\n[retry]\nattempts = 3\nfeedback = true\n{CHECKS}\n{inputs}"
    );
    let path = dir.join("probity.toml");
    std::fs::write(&path, text).unwrap();
    let mut config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let judge_calls = Arc::new(AtomicU64::new(0));
    for v in &mut config.checks.verifiers {
        v.judge = Arc::new(Counting {
            inner: v.judge.clone(),
            calls: judge_calls.clone(),
        });
    }
    let system_calls = Arc::new(AtomicU64::new(0));
    let provider: Arc<dyn Provider> = Arc::new(Counting {
        inner: config.file.system.build().unwrap(),
        calls: system_calls.clone(),
    });
    Setup {
        config,
        provider,
        system_calls,
        judge_calls,
    }
}

/// Run `s` into `store`; `reuse`: serve identical requests from that run's
/// outputs (`probity run --reuse`) instead of calling.
async fn go(s: &Setup, store: &mut Store, reuse: Option<i64>) -> RunOutcome {
    let mut experiment = s.config.experiment().unwrap();
    experiment.system = s.provider.clone();
    // Failed calls are counted here, not stopped at an error budget.
    experiment.error_budget = 1.0;
    let control = Control {
        reuse,
        ..Control::default()
    };
    run_with(&experiment, Sink::Store(store), control)
        .await
        .unwrap()
}

const SAMPLES: u64 = 6 * 5;

/// What a re-run must reproduce of an attempt.
fn essence(a: &AttemptRow) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        (a.input_idx, a.repetition, a.attempt),
        (&a.output, &a.error, &a.cells, &a.reasons),
        (a.passed, a.published, &a.cache_key),
        (a.input_tokens, a.output_tokens),
    )
}

fn later(attempts: &[AttemptRow]) -> u64 {
    attempts.iter().filter(|a| a.attempt > 1).count() as u64
}

#[tokio::test]
async fn an_identical_guarded_rerun_calls_nothing_and_measures_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let s = setup(dir.path(), "");
    let first = go(&s, &mut store, None).await;
    let a = store.attempts(first.stored_id()).unwrap();
    let retried = later(&a);
    // Many retries, some with the judge's reasons fed back.
    assert!(retried >= 15, "only {retried} later attempts");
    let system = s.system_calls.load(Ordering::SeqCst);
    assert_eq!(system, a.len() as u64, "one system call per attempt");
    assert_eq!(
        first.model_calls,
        system + s.judge_calls.load(Ordering::SeqCst)
    );
    assert_eq!((first.cached, first.attempts_cached), (0, 0));
    // Every attempt with an output is keyed; the keys are distinct.
    assert!(a
        .iter()
        .all(|r| r.output.is_some() && r.cache_key.is_some()));
    let mut keys: Vec<_> = a.iter().map(|r| r.cache_key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), a.len());
    // A first attempt's key is its sample's.
    let samples = store.samples(first.stored_id()).unwrap();
    for (smp, f) in samples.iter().zip(a.iter().filter(|r| r.attempt == 1)) {
        assert_eq!(Some(&smp.cache_key), f.cache_key.as_ref());
    }

    let again_setup = setup(dir.path(), "");
    let again = go(&again_setup, &mut store, Some(first.stored_id())).await;
    assert_eq!(
        again_setup.system_calls.load(Ordering::SeqCst),
        0,
        "system calls on re-run"
    );
    assert_eq!(
        again_setup.judge_calls.load(Ordering::SeqCst),
        0,
        "judge calls on re-run"
    );
    assert_eq!(again.model_calls, 0);
    assert_eq!(again.judge_calls, 0);
    assert_eq!(again.cached, SAMPLES);
    assert_eq!(again.attempts_cached, retried);
    eprintln!(
        "first run: {} attempts ({} later), {system} system calls, {} model calls; identical re-run: {} model calls, {} samples and {} attempts cached",
        a.len(),
        retried,
        first.model_calls,
        again.model_calls,
        again.cached,
        again.attempts_cached
    );
    assert_eq!(again.judge_cached, a.len() as u64);

    // The same attempts, outputs, cells, reasons, published outputs.
    let b = store.attempts(again.stored_id()).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(essence(x), essence(y));
        assert_eq!(y.call_attempts, 0, "served from the store");
    }
    // The same guarded measurement (only the calls differ: none were made).
    let check = |id| {
        let loaded = stored::load(&store, id).unwrap();
        stored::retry_check(&store, &loaded.record, &loaded.tensor)
            .unwrap()
            .unwrap()
    };
    let (x, y) = (check(first.stored_id()), check(again.stored_id()));
    assert_eq!(x.measured.histogram, y.measured.histogram);
    assert_eq!(x.measured.nothing_published, y.measured.nothing_published);
    assert_eq!(x.measured.success, y.measured.success);
    assert_eq!(x.measured.attempts, y.measured.attempts);
    assert_eq!(x.measured.tokens, y.measured.tokens);
    assert_eq!(x.held, y.held);
    assert_eq!(y.measured.calls, 0);
    assert!(x.measured.histogram.iter().skip(1).any(|&h| h > 0));
}

/// Failed attempts are not cached: a re-run asks exactly those again.
#[tokio::test]
async fn failed_attempts_are_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let s = setup(dir.path(), "error_rate = 0.3");
    let first = go(&s, &mut store, None).await;
    let a = store.attempts(first.stored_id()).unwrap();
    let failed = a.iter().filter(|r| r.error.is_some()).count() as u64;
    assert!(failed > 0 && later(&a) > 0);
    for r in &a {
        assert_eq!(r.cache_key.is_some(), r.output.is_some(), "{r:?}");
    }
    let again_setup = setup(dir.path(), "error_rate = 0.3");
    let again = go(&again_setup, &mut store, Some(first.stored_id())).await;
    // The simulator fails the same requests again: only they are asked.
    assert_eq!(again_setup.system_calls.load(Ordering::SeqCst), failed);
    assert_eq!(again_setup.judge_calls.load(Ordering::SeqCst), 0);
    assert_eq!(again.model_calls, failed);
    let b = store.attempts(again.stored_id()).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(essence(x), essence(y));
    }
}

/// A store written at schema 3 (an `attempts` table without `cache_key`)
/// opens, is upgraded in place, keeps its runs, and caches attempts from
/// then on.
#[tokio::test]
async fn a_previous_schema_store_opens_migrates_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let s = setup(dir.path(), "");
    let first = {
        let mut store = Store::open(&path).unwrap();
        go(&s, &mut store, None).await
    };
    {
        // Back to what schema 3 wrote: the attempts table made by hand
        // without the column, its rows kept.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE attempts_v3 (
                run_id INTEGER NOT NULL REFERENCES runs(id),
                input_idx INTEGER NOT NULL,
                repetition INTEGER NOT NULL,
                attempt INTEGER NOT NULL,
                output TEXT,
                error TEXT,
                latency_ms REAL,
                input_tokens INTEGER,
                output_tokens INTEGER,
                call_attempts INTEGER NOT NULL DEFAULT 1,
                judge_calls INTEGER NOT NULL DEFAULT 0,
                cells BLOB NOT NULL,
                reasons TEXT,
                passed INTEGER NOT NULL,
                published INTEGER NOT NULL,
                PRIMARY KEY (run_id, input_idx, repetition, attempt)
            ) WITHOUT ROWID;
            INSERT INTO attempts_v3 SELECT run_id, input_idx, repetition, attempt, output, error,
                latency_ms, input_tokens, output_tokens, call_attempts, judge_calls, cells, reasons,
                passed, published FROM attempts;
            DROP TABLE attempts;
            ALTER TABLE attempts_v3 RENAME TO attempts;
            PRAGMA user_version = 3;",
        )
        .unwrap();
        let columns: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('attempts') WHERE name = 'cache_key'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(columns, 0);
    }
    let mut store = Store::open(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let indexed: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'attempts_by_cache_key'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1);
    }
    // Opening again (already migrated) is a no-op.
    drop(Store::open(&path).unwrap());
    let old = store.attempts(first.stored_id()).unwrap();
    assert!(old.iter().all(|r| r.cache_key.is_none()));
    let loaded = stored::load(&store, first.stored_id()).unwrap();
    assert!(stored::retry_check(&store, &loaded.record, &loaded.tensor)
        .unwrap()
        .is_some());

    // First attempts come from `samples`; later ones, stored without keys,
    // are asked once more, then cached.
    let s = setup(dir.path(), "");
    let second = go(&s, &mut store, Some(first.stored_id())).await;
    assert_eq!(second.cached, SAMPLES);
    assert_eq!(s.system_calls.load(Ordering::SeqCst), later(&old));
    let s = setup(dir.path(), "");
    let out = go(&s, &mut store, Some(second.stored_id())).await;
    assert_eq!(s.system_calls.load(Ordering::SeqCst), 0);
    assert_eq!(s.judge_calls.load(Ordering::SeqCst), 0);
    assert_eq!((out.model_calls, out.attempts_cached), (0, later(&old)));
}

/// The library guard: with no output cache every attempt is a call; with
/// one, an identical request (feedback included) is answered from it.
#[tokio::test]
async fn library_guard_with_and_without_an_output_cache() {
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let provider: Arc<dyn Provider> = Arc::new(FnProvider::new(move |req| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(Completion {
            text: format!("answer {} to {}", req.attempt, req.messages.len()),
            ..Default::default()
        })
    }));
    let checks = Arc::new(Checks {
        validators: vec![Validator::new("never")
            .message("Mention the moon")
            .check(|o: &str| o.contains("moon"))],
        verifiers: vec![],
        ..Checks::default()
    });
    let policy = RetryPolicy {
        attempts: 3,
        ..RetryPolicy::default()
    };
    let msgs = [Message::text(Role::User, "Tell me about space")];
    let input = Input::text("1", "Tell me about space");

    let plain = Guard::new(
        provider.clone(),
        checks.clone(),
        policy.clone(),
        Arc::new(Caller::default()),
    )
    .unwrap();
    for _ in 0..2 {
        let out = plain.run(&msgs, &input, 0).await;
        assert!(out.attempts().iter().all(|a| a.cache_key.is_none()));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 6);

    let cached = Guard::new(provider, checks, policy, Arc::new(Caller::default()))
        .unwrap()
        .with_outputs(Arc::new(MemoryOutputs::default()));
    let a = cached.run(&msgs, &input, 0).await;
    assert_eq!(calls.load(Ordering::SeqCst), 9);
    let b = cached.run(&msgs, &input, 0).await;
    assert_eq!(calls.load(Ordering::SeqCst), 9, "the second run is cached");
    assert_eq!(cached.caller().outputs_cached.load(Ordering::SeqCst), 3);
    assert!(matches!(b, GuardOutcome::NothingPassed { .. }));
    let strip = |o: &GuardOutcome| {
        o.attempts()
            .iter()
            .map(|a| {
                (
                    a.output.clone(),
                    a.cells.clone(),
                    a.feedback.clone(),
                    a.cache_key.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
    // Another repetition is another request.
    cached.run(&msgs, &input, 1).await;
    assert_eq!(calls.load(Ordering::SeqCst), 12);
}
