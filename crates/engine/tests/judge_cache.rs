//! The judge cache: a re-run makes no system call and no judge call,
//! revalidation re-judges only what changed (or nothing, with calls off),
//! failed judgements are never cached, and a store of the previous schema
//! opens and works.

use crate::common;

use common::Counting;
use probity_core::Cell;
use probity_engine::checks::NOT_JUDGED;
use probity_engine::config::Config;
use probity_engine::run::revalidate::revalidate;
use probity_engine::run::stored;
use probity_engine::store::{RunStatus, Store, SCHEMA_VERSION};
use probity_engine::{run_with, Control, RunOutcome, Sink};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const VALIDATOR: &str = r#"
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.8
"#;

/// A config at `dir/file` with a sim system, `validator` and one sim-judged
/// verifier with `instructions` and `judge` settings; its judge counts
/// calls into the returned counter.
fn config(
    dir: &Path,
    file: &str,
    validator: &str,
    instructions: &str,
    judge: &str,
) -> (Config, Arc<AtomicU64>) {
    let inputs: String = (0..4)
        .map(|i| {
            if i % 2 == 0 {
                format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n")
            } else {
                format!("[[input]]\ntext = \"How do I water plant {i}?\"\n")
            }
        })
        .collect();
    let text = format!(
        "name = \"jc\"\n[system]\nprovider = \"sim\"\ncontractions = 0.3\nomit_welcome = 0.3\n[experiment]\noutputs_per_input = 5\nconcurrency = 4\ncall_attempts = 1\n{validator}\n[[verifier]]\nname = \"judge\"\ninstructions = \"{instructions}\"\nminimum_success_percentage = 0.5\n[verifier.system]\nprovider = \"sim\"\n{judge}\n{inputs}"
    );
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    let mut c = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let calls = Arc::new(AtomicU64::new(0));
    for v in &mut c.checks.verifiers {
        v.judge = Arc::new(Counting {
            inner: v.judge.clone(),
            calls: calls.clone(),
        });
    }
    (c, calls)
}

/// Run `config` into `store`; `reuse`: serve identical requests (and their
/// judgements) from that run instead of calling (`probity run --reuse`).
async fn go(config: &Config, store: &mut Store, reuse: Option<i64>) -> RunOutcome {
    let control = Control {
        reuse,
        ..Control::default()
    };
    run_with(&config.experiment().unwrap(), Sink::Store(store), control)
        .await
        .unwrap()
}

const SAMPLES: u64 = 4 * 5;

#[tokio::test]
async fn an_identical_rerun_makes_no_model_call_and_no_judge_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let (c, judge_calls) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let first = go(&c, &mut store, None).await;
    assert_eq!(judge_calls.load(Ordering::SeqCst), SAMPLES);
    assert_eq!((first.judge_calls, first.judge_cached), (SAMPLES, 0));
    assert_eq!(first.model_calls, 2 * SAMPLES);
    assert_eq!(store.judgement_count().unwrap(), SAMPLES);
    // Judge calls per check: none for the validator, one per sample for
    // the verifier, in the outcome and in the store.
    assert_eq!(first.totals.judge_calls_by_check, vec![0, SAMPLES]);
    assert_eq!(
        store.run(first.stored_id()).unwrap().judge_calls_by_check,
        vec![0, SAMPLES]
    );

    // Without --reuse a re-run samples and judges afresh.
    let (c, judge_calls) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let fresh = go(&c, &mut store, None).await;
    assert_eq!(judge_calls.load(Ordering::SeqCst), SAMPLES);
    assert_eq!((fresh.model_calls, fresh.cached), (2 * SAMPLES, 0));
    assert_eq!((fresh.judge_calls, fresh.judge_cached), (SAMPLES, 0));
    assert_eq!(fresh.reused_from, None);

    let (c, judge_calls) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let again = go(&c, &mut store, Some(first.stored_id())).await;
    assert_eq!(again.reused_from, Some(first.stored_id()));
    assert_eq!(
        store.run(again.stored_id()).unwrap().reused_from,
        Some(first.stored_id())
    );
    assert_eq!(
        judge_calls.load(Ordering::SeqCst),
        0,
        "judge calls on re-run"
    );
    assert_eq!(again.model_calls, 0, "model calls on re-run");
    assert_eq!((again.judge_calls, again.judge_cached), (0, SAMPLES));
    assert_eq!(again.cached, SAMPLES);
    // The same verdicts and reasons.
    let (a, b) = (
        store.samples(first.stored_id()).unwrap(),
        store.samples(again.stored_id()).unwrap(),
    );
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((&x.cells, &x.reasons), (&y.cells, &y.reasons));
    }
    assert!(a.iter().any(|s| s.cells[1] == Cell::Fail));
}

#[tokio::test]
async fn failed_and_unreadable_judgements_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    for (file, judge) in [
        ("e.toml", "error_rate = 1.0"),
        ("m.toml", "malformed = 1.0"),
    ] {
        let (c, _) = config(dir.path(), file, VALIDATOR, "x", judge);
        let out = go(&c, &mut store, None).await;
        // A judge that errs on every output is a broken check: the run
        // stops once it has seen the first outputs, before all of them.
        let errors = out.tensor.counts().error;
        assert!(
            (probity_engine::FIRST_OUTPUTS..SAMPLES).contains(&errors),
            "{judge}: {errors} errors"
        );
    }
    assert_eq!(store.judgement_count().unwrap(), 0);
    // Asked again on a re-run.
    let (c, calls) = config(dir.path(), "m.toml", VALIDATOR, "x", "malformed = 1.0");
    let last = store.runs(None).unwrap()[0].id;
    let again = go(&c, &mut store, Some(last)).await;
    // Every output it judged was asked again (none from the cache), until
    // the broken judge stopped it.
    assert_eq!(again.judge_cached, 0);
    assert!(calls.load(Ordering::SeqCst) >= probity_engine::FIRST_OUTPUTS);
}

#[tokio::test]
async fn revalidate_rejudges_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let (c, _) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let first = go(&c, &mut store, None).await;

    // Changed validators, same verifier: every judgement from the cache.
    let loose = VALIDATOR.replace("<= 3", "<= 100");
    let (c, calls) = config(dir.path(), "loose.toml", &loose, "be polite", "");
    let done = revalidate(&mut store, first.stored_id(), &c.recheck(), true)
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        (done.judge_calls, done.judge_cached, done.not_judged),
        (0, SAMPLES, 0)
    );
    let old = store.samples(first.stored_id()).unwrap();
    let new = store.samples(done.run_id).unwrap();
    assert_eq!(new.len(), SAMPLES as usize);
    for (x, y) in old.iter().zip(&new) {
        assert_eq!(y.cells[0], Cell::Pass, "loosened validator");
        assert_eq!(x.cells[1], y.cells[1], "the judge column is kept");
        assert_eq!(x.output, y.output);
    }
    assert_eq!(store.run(done.run_id).unwrap().model_calls, 0);
    assert_eq!(
        store.run(done.run_id).unwrap().parent_run,
        Some(first.stored_id())
    );

    // Changed instructions, calls off: nothing judged, Error cells.
    let (c, calls) = config(dir.path(), "new.toml", VALIDATOR, "be terse", "");
    let off = revalidate(&mut store, first.stored_id(), &c.recheck(), false)
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        (off.judge_calls, off.judge_cached, off.not_judged),
        (0, 0, SAMPLES)
    );
    for s in store.samples(off.run_id).unwrap() {
        assert_eq!(s.cells[1], Cell::Error);
        assert!(s.reasons.contains(&(1, NOT_JUDGED.to_string())));
    }
    let loaded = stored::load(&store, off.run_id).unwrap();
    assert_eq!(loaded.tensor.counts().error, SAMPLES);

    // Changed instructions, calls on: one judge call per output; then cached.
    let on = revalidate(&mut store, first.stored_id(), &c.recheck(), true)
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), SAMPLES);
    assert_eq!((on.judge_calls, on.judge_cached), (SAMPLES, 0));
    assert_eq!(store.run(on.run_id).unwrap().model_calls, SAMPLES);
    let again = revalidate(&mut store, first.stored_id(), &c.recheck(), false)
        .await
        .unwrap();
    assert_eq!((again.judge_cached, again.not_judged), (SAMPLES, 0));
    assert_eq!(calls.load(Ordering::SeqCst), SAMPLES);
}

/// A store written at schema 2 (no `judgements` table) opens, is upgraded
/// in place, keeps its runs, and caches judgements from then on.
#[tokio::test]
async fn a_previous_schema_store_opens_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let (c, _) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let first = {
        let mut store = Store::open(&path).unwrap();
        go(&c, &mut store, None).await
    };
    {
        // Back to what schema 2 wrote.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE judgements; PRAGMA user_version = 2;")
            .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.judgement_count().unwrap(), 0);
    assert_eq!(
        store.samples(first.stored_id()).unwrap().len(),
        SAMPLES as usize
    );
    assert_eq!(
        store.run(first.stored_id()).unwrap().status,
        RunStatus::Complete
    );

    // Outputs come from the store; judges are asked once, then cached.
    let (c, calls) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let out = go(&c, &mut store, Some(first.stored_id())).await;
    assert_eq!(out.cached, SAMPLES);
    assert_eq!(calls.load(Ordering::SeqCst), SAMPLES);
    assert_eq!(store.judgement_count().unwrap(), SAMPLES);
    let (c, calls) = config(dir.path(), "a.toml", VALIDATOR, "be polite", "");
    let out = go(&c, &mut store, Some(first.stored_id())).await;
    assert_eq!((calls.load(Ordering::SeqCst), out.model_calls), (0, 0));
}

#[test]
fn stale_running_runs_of_a_name_are_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let new = |store: &mut Store, name: &str| store.create_run(&common::bare_run(name)).unwrap();
    let (a, b, other, current) = (
        new(&mut store, "live"),
        new(&mut store, "live"),
        new(&mut store, "other"),
        new(&mut store, "live"),
    );
    store
        .finish_run(b, RunStatus::Complete, Default::default(), 0, 0.0, None)
        .unwrap();
    // `a` was left by a writer that is gone (no lease); `live_peer` is
    // another replica's, its lease alive: left running.
    let live_peer = new(&mut store, "live");
    store.release_lease(a).unwrap();
    assert_eq!(store.interrupt_abandoned("live", Some(current)).unwrap(), 1);
    let status = |id| store.run(id).unwrap().status;
    assert_eq!(status(a), RunStatus::Interrupted);
    assert_eq!(status(live_peer), RunStatus::Running);
    assert_eq!(status(b), RunStatus::Complete);
    assert_eq!(status(other), RunStatus::Running);
    assert_eq!(status(current), RunStatus::Running);
}
