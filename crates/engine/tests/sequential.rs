//! Sequential runs end to end on the simulator (`[experiment] sequential`):
//! an early stop with an established verdict, what the store keeps of it,
//! `--resume` replaying the same sequence, and the guarded system.

use crate::common;
use probity_core::sequential::{SequenceState, StopReason};
use probity_core::stats::Decision;

use common::{contraction_experiment, system};
use probity_core::Validator;
use probity_engine::run::stored;
use probity_engine::store::{RunStatus, Store};
use probity_engine::{run_with, Control, Experiment, RetryPolicy, RunError, Sink};

/// The paper's contraction validator (§2.1, minimum 0.95) over `n`
/// questions, M outputs each, asked of a simulator whose replies fail it
/// with probability `contractions`.
fn experiment(contractions: f64, m: usize, n: usize) -> Experiment {
    let sim = system(&format!(
        "provider = \"sim\"\nseed = 3\ncontractions = {contractions}"
    ));
    contraction_experiment("seq", sim, m, n).concurrency(4)
}

fn control<'a>(resume: bool) -> Control<'a> {
    Control {
        resume,
        ..Control::default()
    }
}

/// Half the replies fail a check whose minimum is 95 %: a sequential run
/// establishes the failure long before its budget of 200 × 10, stores why
/// it stopped, and `probity report` (a stored run read back) shows the
/// confidence sequence's verdict and interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_failure_stops_early_and_the_store_keeps_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let exp = experiment(0.5, 10, 200).sequential_seed(11);
    let out = run_with(&exp, Sink::Store(&mut store), control(false))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Complete);
    let seq = out
        .summary
        .sequential
        .clone()
        .expect("a sequential outcome");
    assert_eq!(seq.stop, Some(StopReason::Settled));
    assert_eq!(seq.seed, 11);
    assert_eq!(seq.budget_samples, 2000);
    assert!(seq.samples < 400, "{} samples", seq.samples);
    assert_eq!(seq.samples, out.model_calls);
    assert_eq!(seq.samples, seq.inputs * 10);
    let c = &seq.checks[0];
    assert_eq!(c.state, SequenceState::Fail);
    assert!(c.upper < 0.95 && c.lower <= 0.5 && 0.5 <= c.upper, "{c:?}");
    let verdict = out.summary.checks[0].verdict;
    assert_eq!(verdict.decision, Decision::Fail);
    assert!(verdict.established);
    assert_eq!(out.summary.checks[0].rate.interval.upper, c.upper);

    // Stored with the run, and read back.
    let id = out.stored_id();
    let record = store.run(id).unwrap();
    assert_eq!(record.sequential.as_ref(), Some(&seq));
    assert_eq!(record.settings.sequential.map(|s| s.seed), Some(11));
    assert_eq!(store.samples(id).unwrap().len() as u64, seq.samples);
    let loaded = stored::load(&store, id).unwrap();
    assert_eq!(loaded.summary, out.summary);
}

/// A sequential run interrupted mid-way and resumed continues the same
/// sequence: the same stop after the same inputs, with the same intervals,
/// as the run left alone; nothing stored is asked for again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_replays_the_stored_order_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    // A check near its minimum takes many rounds.
    let exp = experiment(0.02, 5, 400).sequential_seed(5);
    let alone = run_with(&exp, Sink::Memory, Control::default())
        .await
        .unwrap();
    let alone_seq = alone.summary.sequential.clone().unwrap();
    assert!(alone_seq.rounds > 3, "{alone_seq:?}");

    let (tx, cancel) = tokio::sync::watch::channel(false);
    let mut fired = false;
    let first = run_with(
        &exp,
        Sink::Store(&mut store),
        Control {
            cancel: Some(cancel),
            on_progress: Some(Box::new(|p| {
                if p.done >= 120 && !fired {
                    fired = true;
                    let _ = tx.send(true);
                }
            })),
            ..Control::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(first.status, RunStatus::Interrupted);
    let stored_before = store.samples(first.stored_id()).unwrap().len() as u64;
    assert!(stored_before >= 120 && stored_before < alone_seq.samples);

    let resumed = run_with(&exp, Sink::Store(&mut store), control(true))
        .await
        .unwrap();
    assert_eq!(resumed.run_id, first.run_id);
    assert_eq!(resumed.status, RunStatus::Complete);
    assert_eq!(resumed.resumed, stored_before);
    let seq = resumed.summary.sequential.clone().unwrap();
    assert_eq!(seq.stop, alone_seq.stop);
    assert_eq!(seq.inputs, alone_seq.inputs);
    assert_eq!(seq.checks, alone_seq.checks);
    assert_eq!(resumed.model_calls, seq.samples - stored_before);
    assert_eq!(resumed.tensor, alone.tensor);
}

/// A run started without `sequential` is not resumed as a sequential one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_in_the_other_mode_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let (tx, cancel) = tokio::sync::watch::channel(false);
    let _ = tx.send(true);
    let exp = experiment(0.5, 4, 20);
    let out = run_with(
        &exp,
        Sink::Store(&mut store),
        Control {
            cancel: Some(cancel),
            ..Control::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(out.status, RunStatus::Interrupted);
    // The identity of a code-built experiment includes the mode: a
    // sequential one is another experiment, with nothing to resume.
    let err = run_with(&exp.sequential(), Sink::Store(&mut store), control(true))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::NothingToResume), "{err}");
}

/// With a retry policy the guarded system is measured round by round; the
/// run still stops early, every attempt recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guarded_system_is_tested_sequentially() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let policy: RetryPolicy = toml::from_str("attempts = 3").unwrap();
    let exp = experiment(0.5, 10, 200).retry(policy).sequential_seed(2);
    let out = run_with(&exp, Sink::Store(&mut store), control(false))
        .await
        .unwrap();
    let seq = out.summary.sequential.clone().unwrap();
    assert_eq!(seq.stop, Some(StopReason::Settled));
    assert!(seq.samples < 2000);
    // First attempts are the samples; retries make more calls.
    assert!(out.model_calls > seq.samples);
    let attempts = store.attempts(out.stored_id()).unwrap();
    assert!(attempts.len() as u64 > seq.samples);
}

/// `--reuse` with a sequential run: the stored outputs of an identical
/// request are served round by round, no call made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_run_reuses_stored_outputs_round_by_round() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let fixed = experiment(0.5, 10, 60);
    let first = run_with(&fixed, Sink::Store(&mut store), control(false))
        .await
        .unwrap();
    let seq_exp = experiment(0.5, 10, 60).sequential_seed(4);
    let out = run_with(
        &seq_exp,
        Sink::Store(&mut store),
        Control {
            reuse: Some(first.stored_id()),
            ..Control::default()
        },
    )
    .await
    .unwrap();
    let seq = out.summary.sequential.clone().unwrap();
    assert_eq!(seq.stop, Some(StopReason::Settled));
    assert!(seq.samples < 600);
    assert_eq!((out.model_calls, out.cached), (0, seq.samples));
    assert_eq!(
        store.samples(out.stored_id()).unwrap().len() as u64,
        seq.samples
    );
}

/// Re-checking a sequential run's outputs with another check keeps it a
/// sequential run: its sequences are replayed with the new check over the
/// inputs it sampled, in its order (a fixed-size interval would not be
/// valid on optionally stopped data).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revalidated_sequential_run_is_read_with_its_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let out = run_with(
        &experiment(0.5, 10, 200).sequential_seed(9),
        Sink::Store(&mut store),
        control(false),
    )
    .await
    .unwrap();
    let seq = out.summary.sequential.clone().unwrap();
    // A lenient check: every output passes it.
    let lenient = Experiment::new("seq", system("provider = \"sim\""))
        .validator(
            Validator::new("contraction_validator")
                .minimum_success_percentage(0.95)
                .check(|_: &str| true),
        )
        .sequential();
    let re = probity_engine::run::revalidate::revalidate(
        &mut store,
        out.stored_id(),
        &lenient.recheck(),
        false,
    )
    .await
    .unwrap();
    let loaded = stored::load(&store, re.run_id).unwrap();
    let replayed = loaded.summary.sequential.expect("replayed");
    assert_eq!(replayed.seed, 9);
    assert_eq!(replayed.inputs, seq.inputs);
    assert_eq!(replayed.checks[0].estimate, 1.0);
    // Few inputs cannot establish 95% even when every output passes.
    assert!(replayed.checks[0].lower < 0.95);
    assert!(!loaded.summary.checks[0].verdict.established);
    assert_eq!(store.run(re.run_id).unwrap().sequential, Some(replayed));
}
