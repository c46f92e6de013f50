//! The judges' verdicts on labelled sets kept in the run store (issue 23
//! item 4, follow-up): a run asks its calibrated verifier's judge about
//! each labelled pair once; a later run (or revalidation) whose judge would
//! ask the very same question reads the verdict back instead of calling —
//! on SQLite and on a real PostgreSQL server. A changed judge, instruction,
//! structured-output mode or pair is another question, asked afresh; an
//! error is never kept; a store from before the table opens and runs; a
//! run without a store measures as before; concurrent runs on one
//! PostgreSQL store all succeed and keep each verdict once.
//!
//! The judge is the simulated one (`provider = "sim"`), whose error rates
//! are known and whose answers are a pure function of its request, so a
//! kept verdict can be compared with the judge's own answer.

use probity_core::stats::{Calibrated, LabelCounts};
use probity_engine::checks::calibration::{
    label_key, measure, measure_all_cached, recall_all, LabelAnswers,
};
use probity_engine::checks::labels::LabelledSet;
use probity_engine::checks::verifier::{parse_judgement, SimJudge, SimJudgeConfig};
use probity_engine::config::Config;
use probity_engine::provider::Provider;
use probity_engine::run::stored;
use probity_engine::store::{Existing, LabelVerdict, MemoryLabelVerdicts, Store, SCHEMA_VERSION};
use probity_engine::Caller;
use probity_engine::{run_with, Control, Experiment, RunOutcome, Sink};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Labelled pairs in the set.
const PAIRS: u64 = 200;

use crate::labels;

/// `PAIRS` labelled pairs, half passing: the label is the simulator's
/// truth. `changed`: the output text of pair 7 is edited (its truth kept).
fn labels(changed: bool) -> String {
    labels::sim_labels(PAIRS, |i, output| {
        if changed && i == 7 {
            output.push_str(" Anything else?");
        }
    })
}
/// Inputs × outputs of each run: the outputs' judgements, one per output
/// (a fresh run judges its outputs afresh).
const OUTPUTS: u64 = 10 * 4;

/// What a configuration varies: the verifier's instructions, its
/// structured-output mode, and the lines under its `[verifier.system]`.
struct Judge<'a> {
    instructions: &'a str,
    structured: &'a str,
    system: &'a str,
}

const NOISY: Judge<'static> = Judge {
    instructions: "Say you're welcome.",
    structured: "json-schema",
    system: "provider = \"sim\"\nseed = 3\nfalse_pass = 0.3\nfalse_fail = 0.1",
};

/// A sim system whose outputs omit "You're welcome" 30 % of the time, 10
/// inputs × 4 outputs, checked by one verifier calibrated on `labels`
/// (written beside the configuration as `labels.jsonl`).
fn config(dir: &Path, judge: &Judge<'_>, labels: &str) -> Config {
    std::fs::write(dir.join("labels.jsonl"), labels).unwrap();
    let inputs: String = (0..10)
        .map(|i| format!("[[input]]\ntext = \"Thank you for tip {i}!\"\n"))
        .collect();
    let text = format!(
        r#"name = "calibrated"
[system]
provider = "sim"
seed = 11
omit_welcome = 0.3
contractions = 0
[experiment]
outputs_per_input = 4
concurrency = 4
call_attempts = 1

[[verifier]]
name = "noisy"
instructions = "{}"
minimum_success_percentage = 0.6
structured = "{}"
calibration = "labels.jsonl"
[verifier.system]
{}
{inputs}"#,
        judge.instructions, judge.structured, judge.system
    );
    let path = dir.join("probity.toml");
    std::fs::write(&path, text).unwrap();
    Config::load(&path).unwrap()
}

async fn go(exp: &Experiment, store: &mut Store) -> RunOutcome {
    run_with(exp, Sink::Store(store), Control::default())
        .await
        .unwrap()
}

/// The judge's counts on the labelled set of a run's only verifier.
fn counts(outcome: &RunOutcome) -> LabelCounts {
    match &outcome.summary.checks[0].calibration {
        Some(Calibrated::Corrected(c)) => c.judge.counts,
        other => panic!("not corrected: {other:?}"),
    }
}

/// `c` as a run that asked every pair would count it.
fn asked(c: LabelCounts) -> LabelCounts {
    LabelCounts { reused: 0, ..c }
}

/// Measure `exp`'s calibrated verifiers through `store` with a caller of
/// their own: the counts, and the judge calls made.
async fn calibrate(exp: &Experiment, store: &mut Store) -> (LabelCounts, u64) {
    let caller: Arc<Caller> = exp.calls.caller();
    let all = measure_all_cached(&exp.checks, &caller, Some(store), LabelAnswers::Reuse).await;
    assert_eq!(all.len(), 1);
    (
        all[0].expect("the verifier is calibrated"),
        caller.judge_calls.load(Ordering::Relaxed),
    )
}

/// Two runs of one configuration into one store: the second reads every
/// verdict the first asked, and its judge is called for its outputs only.
async fn second_run_reuses_every_verdict(store: &mut Store) {
    let dir = tempfile::tempdir().unwrap();
    let exp = config(dir.path(), &NOISY, &labels(false))
        .experiment()
        .unwrap();
    let first = go(&exp, store).await;
    assert_eq!(first.totals.judge_calls, OUTPUTS + PAIRS);
    assert_eq!(counts(&first).reused, 0);
    assert_eq!(store.label_verdict_count().unwrap(), PAIRS);

    let second = go(&exp, store).await;
    assert_eq!(
        second.totals.judge_calls, OUTPUTS,
        "no call for the labelled pairs"
    );
    assert_eq!(counts(&second).reused, PAIRS);
    assert_eq!(
        asked(counts(&second)),
        counts(&first),
        "the kept verdicts count as the judge's answers did"
    );
    // The corrected rate of the second run is computed from the same
    // judge accuracy as the first's (its outputs are sampled afresh, but
    // the seeded simulator samples the same ones).
    assert_eq!(second.tensor, first.tensor);
    assert_eq!(
        second.summary.checks[0].verdict,
        first.summary.checks[0].verdict
    );
    // The stored run reports the same, provenance included.
    let back = stored::load(store, second.stored_id()).unwrap();
    assert_eq!(
        back.summary.checks[0].calibration,
        second.summary.checks[0].calibration
    );
    assert_eq!(store.label_verdict_count().unwrap(), PAIRS);
}

/// Kept verdicts that are no longer what the judge answers (every one
/// the human label, where the noisy judge errs on about a fifth, as a
/// model changed behind its name would answer differently): a run reads them;
/// a run with fresh labels (`--fresh-labels`) reads none, asks every pair
/// and replaces them with the judge's answers, which the next run reads.
async fn fresh_labels_ask_again_and_replace(store: &mut Store) {
    let dir = tempfile::tempdir().unwrap();
    let exp = config(dir.path(), &NOISY, &labels(false))
        .experiment()
        .unwrap();
    let v = &exp.checks.verifiers[0];
    let set = v.calibration.as_ref().unwrap();
    let caller: Arc<Caller> = exp.calls.caller();
    let truth = measure(v, set, &caller).await;
    let stale: Vec<LabelVerdict> = set
        .pairs
        .iter()
        .map(|p| LabelVerdict {
            cache_key: label_key(v, p),
            // The label itself: a judge right on every pair.
            pass: p.pass,
            reasons: vec!["stale".into()],
        })
        .collect();
    store.put_label_verdicts(&stale, Existing::Stays).unwrap();
    let perfect = LabelCounts {
        pass_labels: truth.pass_labels,
        judged_pass: truth.pass_labels,
        fail_labels: truth.fail_labels,
        judged_fail: truth.fail_labels,
        errors: 0,
        reused: PAIRS,
        sampling: None,
    };
    assert_ne!(asked(perfect), truth);

    let kept = go(&exp, store).await;
    assert_eq!(counts(&kept), perfect, "a plain run reads what is kept");
    assert_eq!(kept.totals.judge_calls, OUTPUTS);

    let control = Control {
        label_answers: LabelAnswers::AskAgain,
        ..Control::default()
    };
    let fresh = run_with(&exp, Sink::Store(store), control).await.unwrap();
    assert_eq!(
        fresh.totals.judge_calls,
        OUTPUTS + PAIRS,
        "every pair asked"
    );
    assert_eq!(counts(&fresh), truth, "the judge's answers, none read");
    assert_eq!(
        store.label_verdict_count().unwrap(),
        PAIRS,
        "replaced, not added"
    );

    let after = go(&exp, store).await;
    assert_eq!(after.totals.judge_calls, OUTPUTS);
    assert_eq!(counts(&after).reused, PAIRS);
    assert_eq!(asked(counts(&after)), truth, "the fresh answers were kept");
    let keys: Vec<String> = set.pairs.iter().map(|p| label_key(v, p)).collect();
    let back = store.label_verdicts(&keys).unwrap();
    assert!(back.values().all(|r| r.reasons != ["stale"]));
}

#[tokio::test]
async fn fresh_labels_ask_every_pair_again_and_replace_what_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    fresh_labels_ask_again_and_replace(&mut store).await;
}

#[tokio::test]
async fn a_second_run_reuses_every_verdict_and_asks_the_judge_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    second_run_reuses_every_verdict(&mut store).await;
}

/// Each part of the question is in the key: a change of the instructions,
/// of the judge's settings (its seed, its error rates), of the
/// structured-output mode, or of a pair's output misses and is asked; the
/// human label is not a part (relabelling asks nothing again).
#[tokio::test]
async fn a_changed_judge_instruction_or_pair_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let exp =
        |judge: &Judge<'_>, labels: &str| config(dir.path(), judge, labels).experiment().unwrap();
    let base = exp(&NOISY, &labels(false));
    let (first, calls) = calibrate(&base, &mut store).await;
    assert_eq!((calls, first.reused), (PAIRS, 0));
    let (again, calls) = calibrate(&base, &mut store).await;
    assert_eq!((calls, again.reused), (0, PAIRS));
    assert_eq!(asked(again), first);

    let changed = [
        Judge {
            instructions: "Say you're welcome, warmly.",
            ..NOISY
        },
        Judge {
            system: "provider = \"sim\"\nseed = 4\nfalse_pass = 0.3\nfalse_fail = 0.1",
            ..NOISY
        },
        Judge {
            system: "provider = \"sim\"\nseed = 3\nfalse_pass = 0.2\nfalse_fail = 0.1",
            ..NOISY
        },
        Judge {
            structured: "none",
            ..NOISY
        },
    ];
    for judge in &changed {
        let (c, calls) = calibrate(&exp(judge, &labels(false)), &mut store).await;
        assert_eq!(
            (calls, c.reused),
            (PAIRS, 0),
            "{} / {} / {}",
            judge.instructions,
            judge.structured,
            judge.system
        );
    }
    assert_eq!(store.label_verdict_count().unwrap(), 5 * PAIRS);

    // One pair's output edited: that pair alone is asked.
    let (c, calls) = calibrate(&exp(&NOISY, &labels(true)), &mut store).await;
    assert_eq!((calls, c.reused), (1, PAIRS - 1));

    // Every label flipped: the same questions, nothing asked; the kept
    // verdicts are counted against the new labels (what agreed now
    // disagrees).
    let flipped = labels(false)
        .replace("\"PASS\"", "\"TMP\"")
        .replace("\"FAIL\"", "\"PASS\"")
        .replace("\"TMP\"", "\"FAIL\"");
    let (c, calls) = calibrate(&exp(&NOISY, &flipped), &mut store).await;
    assert_eq!((calls, c.reused), (0, PAIRS));
    assert_eq!(
        (c.judged_pass, c.judged_fail),
        (
            first.fail_labels - first.judged_fail,
            first.pass_labels - first.judged_pass
        )
    );
}

/// A kept verdict is the judge's own answer to the pair's request: the
/// simulated judge, asked directly, says the same for every pair; counted
/// from the store alone the set measures as asking the judge does; and the
/// judge's known error rates are within the measured intervals.
#[tokio::test]
async fn a_kept_verdict_is_what_the_judge_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let exp = config(dir.path(), &NOISY, &labels(false))
        .experiment()
        .unwrap();
    let (kept, _) = calibrate(&exp, &mut store).await;
    let v = &exp.checks.verifiers[0];
    let set: &LabelledSet = v.calibration.as_deref().unwrap();
    let judge = SimJudge::new(SimJudgeConfig {
        seed: 3,
        false_pass: 0.3,
        false_fail: 0.1,
        ..SimJudgeConfig::default()
    })
    .unwrap();
    assert_eq!(judge.fingerprint(), v.judge.fingerprint());
    let keys: Vec<String> = set.pairs.iter().map(|p| label_key(v, p)).collect();
    let stored = store.label_verdicts(&keys).unwrap();
    assert_eq!(stored.len() as u64, PAIRS);
    let mut flipped = 0;
    for (pair, key) in set.pairs.iter().zip(&keys) {
        let request = v.request(&v.instructions, &pair.input, &pair.output, u32::MAX, 1);
        let answer = judge.complete(&request).await.unwrap();
        let (pass, reasons) = parse_judgement(&answer.text).unwrap();
        assert_eq!(
            stored[key],
            LabelVerdict {
                cache_key: key.clone(),
                pass,
                reasons
            },
            "line {}",
            pair.line
        );
        flipped += u64::from(pass != pair.pass);
    }
    assert_eq!(
        flipped,
        (kept.pass_labels - kept.judged_pass) + (kept.fail_labels - kept.judged_fail)
    );
    // From the store alone, and from the judge alone: the same counts.
    let recalled = recall_all(&exp.checks, &mut store);
    assert_eq!(
        recalled,
        vec![Some(LabelCounts {
            reused: PAIRS,
            ..kept
        })]
    );
    let caller = exp.calls.caller();
    assert_eq!(measure(v, set, &caller).await, asked(kept));
    // Se = 1 − false_fail = 0.9, Sp = 1 − false_pass = 0.7.
    let a = probity_core::stats::JudgeAccuracy::measure(kept, 0.99).unwrap();
    assert!(a.sensitivity.interval.contains(0.9), "{a:?}");
    assert!(a.specificity.interval.contains(0.7), "{a:?}");
}

/// A judge call that fails and an answer that cannot be read are not
/// kept: the next measurement asks exactly those pairs again, and reads
/// the rest.
#[tokio::test]
async fn errors_are_not_kept_and_are_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let judge = Judge {
        system: "provider = \"sim\"\nseed = 3\nfalse_pass = 0.3\nfalse_fail = 0.1\nerror_rate = 0.1\nmalformed = 0.1",
        ..NOISY
    };
    let exp = config(dir.path(), &judge, &labels(false))
        .experiment()
        .unwrap();
    let (first, calls) = calibrate(&exp, &mut store).await;
    assert_eq!(calls, PAIRS);
    // 1 − 0.9 · 0.9 = 19 % of 200 on average; seeded, so a fixed count.
    assert!((20..=60).contains(&first.errors), "errors {}", first.errors);
    assert_eq!(store.label_verdict_count().unwrap(), PAIRS - first.errors);
    let (second, calls) = calibrate(&exp, &mut store).await;
    assert_eq!(calls, first.errors, "only the pairs that erred are asked");
    assert_eq!(second.reused, PAIRS - first.errors);
    // The simulated judge errs on the same requests again.
    assert_eq!(asked(second), first);
}

/// A run kept in memory has no store to keep verdicts in: every run asks
/// every pair, as before the cache.
#[tokio::test]
async fn a_run_without_a_store_asks_every_pair_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let exp = config(dir.path(), &NOISY, &labels(false))
        .experiment()
        .unwrap();
    for _ in 0..2 {
        let outcome = run_with(&exp, Sink::Memory, Control::default())
            .await
            .unwrap();
        assert_eq!(outcome.totals.judge_calls, OUTPUTS + PAIRS);
        assert_eq!(counts(&outcome).reused, 0);
    }
    // The in-memory cache a library may pass: the second measurement asks
    // nothing.
    let mut memory = MemoryLabelVerdicts::default();
    let caller = exp.calls.caller();
    let once =
        measure_all_cached(&exp.checks, &caller, Some(&mut memory), LabelAnswers::Reuse).await;
    let twice =
        measure_all_cached(&exp.checks, &caller, Some(&mut memory), LabelAnswers::Reuse).await;
    assert_eq!(caller.judge_calls.load(Ordering::Relaxed), PAIRS);
    assert_eq!(twice[0].unwrap().reused, PAIRS);
    assert_eq!(asked(twice[0].unwrap()), once[0].unwrap());
}

/// A store from before the table (schema 11: this very store with the
/// table dropped and its version set back) opens, is brought to the
/// current schema, keeps its runs as they were, and runs again (asking
/// every pair once more, then keeping it).
#[tokio::test]
async fn an_old_store_without_the_table_opens_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let exp = config(dir.path(), &NOISY, &labels(false))
        .experiment()
        .unwrap();
    let (old_id, old_report) = {
        let mut store = Store::open(&path).unwrap();
        let outcome = go(&exp, &mut store).await;
        let id = outcome.stored_id();
        (id, stored::load(&store, id).unwrap().summary)
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE calibration_verdicts; PRAGMA user_version = 11;")
            .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.label_verdict_count().unwrap(), 0);
    assert_eq!(stored::load(&store, old_id).unwrap().summary, old_report);
    assert_eq!(store.runs(None).unwrap().len(), 1);
    let again = go(&exp, &mut store).await;
    assert_eq!(again.totals.judge_calls, OUTPUTS + PAIRS);
    assert_eq!(store.label_verdict_count().unwrap(), PAIRS);
    assert_eq!(go(&exp, &mut store).await.totals.judge_calls, OUTPUTS);
}

/// `probity revalidate` reads the kept verdicts as a run does (with its
/// outputs' judgements from the judge cache, it calls no judge at all),
/// and with calls off it is calibrated from the store when the store keeps
/// every verdict of the question — and not when the instructions changed.
#[tokio::test]
async fn revalidation_reuses_kept_verdicts_even_without_calls() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let cfg = config(dir.path(), &NOISY, &labels(false));
    let run = go(&cfg.experiment().unwrap(), &mut store).await;
    let id = run.stored_id();
    let revalidate = probity_engine::run::revalidate::revalidate;
    let again = revalidate(&mut store, id, &cfg.recheck(), true)
        .await
        .unwrap();
    assert_eq!(again.judge_calls, 0);
    assert!(again.uncalibrated.is_empty());
    let re = stored::load(&store, again.run_id).unwrap();
    let Some(Calibrated::Corrected(c)) = &re.summary.checks[0].calibration else {
        panic!("not corrected");
    };
    assert_eq!(c.judge.counts.reused, PAIRS);
    assert_eq!(asked(c.judge.counts), counts(&run));
    assert_eq!(re.summary.checks[0].verdict, run.summary.checks[0].verdict);

    let off = revalidate(&mut store, id, &cfg.recheck(), false)
        .await
        .unwrap();
    assert!(off.uncalibrated.is_empty());
    assert_eq!(off.judge_calls, 0);
    let re = stored::load(&store, off.run_id).unwrap();
    assert_eq!(
        re.summary.checks[0].calibration,
        stored::load(&store, again.run_id).unwrap().summary.checks[0].calibration
    );

    let reworded = config(
        dir.path(),
        &Judge {
            instructions: "Say you're welcome, warmly.",
            ..NOISY
        },
        &labels(false),
    );
    let off = revalidate(&mut store, id, &reworded.recheck(), false)
        .await
        .unwrap();
    assert_eq!(off.uncalibrated, vec!["noisy".to_string()]);
    let re = stored::load(&store, off.run_id).unwrap();
    assert!(re.summary.checks[0].calibration.is_none());
}

/// Different questions have different keys: an OpenAI judge's model or
/// temperature is part of its fingerprint (no call is made here).
#[test]
fn an_openai_judges_model_and_settings_are_in_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = |system: &str| {
        let cfg = config(dir.path(), &Judge { system, ..NOISY }, &labels(false));
        let exp = cfg.experiment().unwrap();
        let v = &exp.checks.verifiers[0];
        label_key(v, &v.calibration.as_ref().unwrap().pairs[0])
    };
    // A local server: no API key needed to build the judge.
    let openai =
        |rest: &str| format!("provider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n{rest}");
    let base = key(&openai("model = \"gpt-4o\""));
    assert_eq!(base, key(&openai("model = \"gpt-4o\"")));
    assert_ne!(base, key(&openai("model = \"gpt-4o-mini\"")));
    assert_ne!(base, key(&openai("model = \"gpt-4o\"\ntemperature = 0.7")));
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use probity_engine::store::postgres::testing::TestDatabase;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_run_on_postgres_reuses_every_verdict() {
        let Some(db) = TestDatabase::create() else {
            return;
        };
        let mut store = Store::connect(&db.location()).unwrap();
        second_run_reuses_every_verdict(&mut store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fresh_labels_on_postgres_replace_what_is_kept() {
        let Some(db) = TestDatabase::create() else {
            return;
        };
        let mut store = Store::connect(&db.location()).unwrap();
        fresh_labels_ask_again_and_replace(&mut store).await;
    }

    /// A database at schema 11 (the table dropped, migration 12 unrecorded)
    /// is migrated when opened, keeps its runs, and runs again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_old_postgres_store_without_the_table_opens_and_runs() {
        let Some(db) = TestDatabase::create() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let exp = config(dir.path(), &NOISY, &labels(false))
            .experiment()
            .unwrap();
        let (old_id, old_report) = {
            let mut store = Store::connect(&db.location()).unwrap();
            let id = go(&exp, &mut store).await.stored_id();
            (id, stored::load(&store, id).unwrap().summary)
        };
        db.query(
            "DROP TABLE calibration_verdicts; DELETE FROM schema_migrations WHERE version >= 12",
        );
        assert_eq!(
            db.query("SELECT MAX(version)::text FROM schema_migrations"),
            ["11"]
        );
        let mut store = Store::connect(&db.location()).unwrap();
        assert_eq!(
            db.query("SELECT MAX(version)::text FROM schema_migrations"),
            [SCHEMA_VERSION.to_string()]
        );
        assert_eq!(stored::load(&store, old_id).unwrap().summary, old_report);
        assert_eq!(
            go(&exp, &mut store).await.totals.judge_calls,
            OUTPUTS + PAIRS
        );
        assert_eq!(go(&exp, &mut store).await.totals.judge_calls, OUTPUTS);
    }

    /// Four runs of one configuration at once, each its own process's
    /// connection: every one asks every pair (none is kept yet when they
    /// start), all keep the same verdicts at once, none fails, and each
    /// verdict is kept once. Overlapping batches written in opposite
    /// orders neither fail nor deadlock.
    #[test]
    fn concurrent_runs_on_postgres_keep_each_verdict_once() {
        let Some(db) = TestDatabase::create() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), &NOISY, &labels(false));
        let runs: Vec<_> = (0..4)
            .map(|_| {
                let (location, exp) = (db.location(), cfg.experiment().unwrap());
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let mut store = Store::connect(&location).unwrap();
                    rt.block_on(run_with(&exp, Sink::Store(&mut store), Control::default()))
                        .map(|o| (o.totals.judge_calls, counts(&o)))
                })
            })
            .collect();
        let mut measured = Vec::new();
        for r in runs {
            let (calls, c) = r.join().unwrap().unwrap();
            assert!((OUTPUTS..=OUTPUTS + PAIRS).contains(&calls), "{calls}");
            measured.push(asked(c));
        }
        assert!(measured.windows(2).all(|w| w[0] == w[1]), "{measured:?}");
        let store = Store::connect(&db.location()).unwrap();
        assert_eq!(store.label_verdict_count().unwrap(), PAIRS);

        let row = |i: usize| LabelVerdict {
            cache_key: format!("{i:064x}"),
            pass: i < 150,
            reasons: vec![format!("reason {i}")],
        };
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let location = db.location();
                std::thread::spawn(move || {
                    let store = Store::connect(&location).unwrap();
                    for round in 0..10 {
                        let mut rows: Vec<LabelVerdict> = (0..300).map(row).collect();
                        if (w + round) % 2 == 1 {
                            rows.reverse();
                        }
                        store.put_label_verdicts(&rows, Existing::Stays)?;
                    }
                    Ok::<_, probity_engine::store::StoreError>(())
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap().unwrap();
        }
        assert_eq!(store.label_verdict_count().unwrap(), PAIRS + 300);
        let keys: Vec<String> = (0..300).map(|i| row(i).cache_key).collect();
        let back = store.label_verdicts(&keys).unwrap();
        assert_eq!(back.len(), 300);
        assert_eq!(back[&keys[7]], row(7));
    }
}
