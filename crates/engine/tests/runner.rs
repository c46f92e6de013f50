//! The runner end to end: known truth on the simulator, faults over HTTP,
//! the cache, and cancellation.

use crate::common;

use common::{contraction_experiment, system};
use probity_core::Validator;
use probity_engine::provider::Provider;
use probity_engine::sim::server::{spawn_test_server, FaultConfig, TestServer};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::store::{RunStatus, Store};
use probity_engine::{run, run_with, Control, Experiment, RunOutcome, Sink};
use std::sync::Arc;
use std::time::Duration;

/// The paper's contraction validator (§2.1) over `n` gardening questions,
/// M outputs each, asked of `system`.
fn experiment(system: Arc<dyn Provider>, m: usize, n: usize) -> Experiment {
    contraction_experiment("t", system, m, n)
}

/// The simulator served over HTTP (`latency_ms` per request), and the
/// `openai` provider that calls it with `seed`.
async fn sim_over_http(latency_ms: u64, seed: u64) -> (TestServer, Arc<dyn Provider>) {
    let model = SimModel::new(SimConfig {
        latency_ms,
        ..SimConfig::default()
    })
    .unwrap();
    let (_, server) = spawn_test_server(model, FaultConfig::default())
        .await
        .unwrap();
    let provider = system(&format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"{}\"\nseed = {seed}",
        server.base_url()
    ));
    (server, provider)
}

async fn go(experiment: &Experiment, store: &mut Store, resume: bool) -> RunOutcome {
    run_with(
        experiment,
        Sink::Store(store),
        Control {
            resume,
            ..Control::default()
        },
    )
    .await
    .unwrap()
}

/// With input heterogeneity (intra-input correlation ρ = 0.3, so a design
/// effect of about 1 + 9·0.3 = 3.7 at M = 10), the reported clustered 95%
/// interval covers the simulator's true pass rate (0.9) at about the nominal
/// rate over independent replicate runs; the naive binomial interval on the
/// same counts does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_intervals_cover_the_simulators_truth() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let replicates = 300;
    let (mut covered, mut naive_covered) = (0, 0);
    for seed in 0..replicates {
        let sim = SimModel::new(SimConfig {
            seed: Some(seed),
            contractions: 0.1,
            input_spread: 0.3,
            ..SimConfig::default()
        })
        .unwrap();
        let exp = experiment(Arc::new(sim), 10, 30).concurrency(8);
        let out = go(&exp, &mut store, false).await;
        let rate = out.summary.checks[0].rate;
        assert_eq!(rate.n, 300);
        covered += rate.interval.contains(0.9) as u32;
        let naive = probity_core::stats::proportion_interval(
            rate.counts.pass as f64,
            rate.n as f64,
            0.95,
            probity_core::IntervalMethod::Wilson,
        );
        naive_covered += naive.contains(0.9) as u32;
    }
    let coverage = covered as f64 / replicates as f64;
    let naive = naive_covered as f64 / replicates as f64;
    println!("clustered coverage {coverage:.3}, naive coverage {naive:.3} over {replicates} runs");
    // 300 replicates: the standard error of a 95% coverage is 1.3 points.
    // At 10 inputs the default allows for a minority of inputs the sample
    // may have missed (issue 35, STATISTICS.md "What each interval
    // assumes"), so it is conservative here: up to 99%.
    assert!(
        (0.91..=0.99).contains(&coverage),
        "clustered coverage {coverage}"
    );
    assert!(
        naive < 0.85,
        "naive coverage {naive} should fall well short"
    );
}

/// 20% of requests fail at the simulator's HTTP endpoint. Without retries
/// the run still completes and the failures are Error cells, counted apart;
/// with retries the retryable ones (429, 500) are absorbed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_become_error_cells_and_retries_absorb_transient_ones() {
    let model = SimModel::new(SimConfig::default()).unwrap();
    let faults = FaultConfig {
        seed: 3,
        rate_limit: 0.08,
        retry_after_secs: 0,
        retry_after_ms: Some(5),
        server_error: 0.08,
        malformed: 0.04,
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(model, faults).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let system = format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"{}\"\nseed = 1",
        server.base_url()
    );

    let mut exp = experiment(self::system(&system), 25, 40).concurrency(16);
    exp.calls.call_attempts = 1;
    // Every failed call is counted here, not stopped at a budget.
    exp.error_budget = 1.0;
    let out = go(&exp, &mut store, false).await;
    assert_eq!(out.status, RunStatus::Complete);
    let total = 1000;
    let share = out.errors as f64 / total as f64;
    assert!((0.15..=0.25).contains(&share), "error share {share}");
    let counts = out.summary.checks[0].rate.counts;
    assert_eq!(counts.error, out.errors);
    assert_eq!(counts.pass + counts.fail + counts.error, total);
    assert_eq!(server.stats().requests, out.model_calls);
    assert_eq!(out.model_calls, total);

    // With retries, only malformed answers (final, not retryable) remain.
    // (A new seed, so the requests differ and are not served from the store.)
    let mut exp = experiment(
        self::system(&system.replace("seed = 1", "seed = 1000")),
        25,
        40,
    )
    .concurrency(16);
    exp.calls.call_attempts = 5;
    exp.error_budget = 1.0;
    let before = server.stats().requests;
    let out = go(&exp, &mut store, false).await;
    let share = out.errors as f64 / total as f64;
    assert!(share <= 0.08, "error share after retries {share}");
    assert!(out.model_calls > total, "retries were made");
    assert_eq!(server.stats().requests - before, out.model_calls);
}

/// A second run of the same experiment samples afresh: every sample is a
/// call. Asked to reuse the first run, it makes no call and says so; with
/// more repetitions only the new ones are called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_run_samples_afresh_unless_told_to_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let exp = experiment(system("provider = \"sim\""), 5, 10);
    let first = go(&exp, &mut store, false).await;
    assert_eq!((first.model_calls, first.cached), (50, 0));
    let fresh = go(&exp, &mut store, false).await;
    assert_eq!((fresh.model_calls, fresh.cached), (50, 0));
    assert_eq!(fresh.reused_from, None);
    let reuse = |from: i64| Control {
        reuse: Some(from),
        ..Control::default()
    };
    let second = run_with(&exp, Sink::Store(&mut store), reuse(first.stored_id()))
        .await
        .unwrap();
    assert_eq!((second.model_calls, second.cached), (0, 50));
    assert_eq!(second.reused_from, Some(first.stored_id()));
    let record = store.run(second.stored_id()).unwrap();
    assert_eq!(
        (record.cached, record.reused_from),
        (50, Some(first.stored_id()))
    );
    assert_ne!(first.run_id, second.run_id);
    assert_eq!(first.tensor, second.tensor);
    // More repetitions: only the new ones are called.
    let more = experiment(system("provider = \"sim\""), 8, 10);
    let third = run_with(&more, Sink::Store(&mut store), reuse(first.stored_id()))
        .await
        .unwrap();
    assert_eq!((third.model_calls, third.cached), (30, 50));
}

/// Cancelling stops the run, keeps what was stored, marks it interrupted;
/// resuming finishes it without asking again for what is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_then_resume_loses_nothing_and_repeats_nothing() {
    let (server, upstream) = sim_over_http(20, 7).await;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let exp = experiment(upstream, 10, 20).concurrency(4);

    let (tx, cancel) = tokio::sync::watch::channel(false);
    let mut fired = false;
    let out = run_with(
        &exp,
        Sink::Store(&mut store),
        Control {
            resume: false,
            cancel: Some(cancel),
            on_progress: Some(Box::new(|p| {
                if p.done >= 60 && !fired {
                    fired = true;
                    let _ = tx.send(true);
                }
            })),
            reuse: None,
            ..Control::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(out.status, RunStatus::Interrupted);
    let stored = store.samples(out.stored_id()).unwrap().len() as u64;
    assert!((60..200).contains(&stored), "stored {stored}");
    let requests_before = server.stats().requests;

    let resumed = go(&exp, &mut store, true).await;
    assert_eq!(resumed.run_id, out.run_id);
    assert_eq!(resumed.status, RunStatus::Complete);
    assert_eq!(resumed.resumed, stored);
    assert_eq!(resumed.model_calls, 200 - stored);
    assert_eq!(server.stats().requests - requests_before, 200 - stored);
    assert_eq!(store.samples(out.stored_id()).unwrap().len(), 200);
}

/// The whole-run deadline stops the run, keeps what was stored and marks it
/// interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_ends_a_slow_run_with_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let mut exp = experiment(system("provider = \"sim\"\nlatency_ms = 50"), 10, 10).concurrency(2);
    exp.deadline = Some(Duration::from_secs_f64(0.4));
    let started = std::time::Instant::now();
    let out = go(&exp, &mut store, false).await;
    assert_eq!(out.status, RunStatus::Interrupted);
    let stored = store.samples(out.stored_id()).unwrap().len();
    // 2 at a time, 50 ms each: about 16 in 0.4 s, far from all 100.
    assert!((4..60).contains(&stored), "stored {stored}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(out.summary.counts.missing, (100 - stored) as u64);
}

/// An experiment built in code runs in memory: no store, every sample is
/// a call (a second identical run asks again), the outcome carries every
/// sample in order, and the seeded simulator gives the same tensor twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_runs_in_memory_and_reuses_nothing() {
    let exp = experiment(system("provider = \"sim\"\nseed = 5"), 4, 6);
    let first = run(&exp, Sink::Memory).await.unwrap();
    assert_eq!(first.run_id, None);
    assert_eq!(first.status, RunStatus::Complete);
    assert_eq!((first.model_calls, first.cached), (24, 0));
    let order: Vec<(usize, usize)> = first
        .samples
        .iter()
        .map(|s| (s.input_idx, s.repetition))
        .collect();
    let expected: Vec<(usize, usize)> = (0..6).flat_map(|i| (0..4).map(move |j| (i, j))).collect();
    assert_eq!(order, expected);
    let second = run(&exp, Sink::Memory).await.unwrap();
    assert_eq!(second.model_calls, 24);
    assert_eq!(first.tensor, second.tensor);
}

/// `assert_passed` panics with the failing check's line as the text report
/// prints it, its message and a failing output; a passing run does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assert_passed_explains_a_failure() {
    let failing = experiment(
        system("provider = \"sim\"\nseed = 2\ncontractions = 0.5"),
        10,
        10,
    );
    let out = run(&failing, Sink::Memory).await.unwrap();
    assert!(!out.passed());
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| out.assert_passed()))
        .expect_err("a failing run panics");
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("reliability test `t` failed (10 inputs × 10 outputs × 1 checks)"),
        "{message}"
    );
    assert!(message.contains("FAIL contraction_validator"), "{message}");
    assert!(message.contains("≥ 95%  established"), "{message}");
    assert!(message.contains("e.g. input "), "{message}");

    let passing = experiment(
        system("provider = \"sim\"\nseed = 2\ncontractions = 0"),
        10,
        10,
    );
    run(&passing, Sink::Memory).await.unwrap().assert_passed();
}

/// A server that dies mid-run: the calls after it fail, the error budget
/// is spent, and the run stops with no verdict, keeping what it stored
/// (resumable), the cause named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_run_stops_it_without_a_verdict() {
    let (server, upstream) = sim_over_http(5, 3).await;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let mut exp = experiment(upstream, 20, 20).concurrency(4);
    exp.calls.call_attempts = 1;
    let kill = async move {
        while server.stats().requests < 60 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        server.shutdown().await.unwrap();
    };
    let (out, ()) = tokio::join!(go(&exp, &mut store, false), kill);
    assert_eq!(out.status, RunStatus::Interrupted);
    let halt = out.halt.clone().expect("the run halted");
    assert!(
        matches!(&halt, probity_engine::Halt::ErrorBudget { share, .. } if *share == 0.05),
        "{halt:?}"
    );
    assert!(halt.to_string().contains("error budget"), "{halt}");
    assert!(out.causes.system.total > 20, "{:?}", out.causes.system);
    assert!(
        out.causes.system.causes[0]
            .message
            .contains("transport error"),
        "{:?}",
        out.causes.system.causes
    );
    let stored = store.samples(out.stored_id()).unwrap().len();
    assert!((60..400).contains(&stored), "stored {stored}");
    assert!(!out.passed());
}

/// A finished run stores each check's decision beside its header: the
/// summary's, the same a rebuild from the samples gives. Taking the run to
/// write it again clears them, and a store of the previous schema gains
/// the column, its runs with none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_stores_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let mut store = Store::open(&path).unwrap();
    let exp = experiment(
        system("provider = \"sim\"\nseed = 2\ncontractions = 0.5"),
        5,
        10,
    )
    .validator(
        Validator::new("anything")
            .minimum_success_percentage(0.5)
            .check(|_: &str| true),
    );
    let out = go(&exp, &mut store, false).await;
    let id = out.stored_id();
    let decisions: Vec<_> = out
        .summary
        .checks
        .iter()
        .map(|c| c.verdict.decision)
        .collect();
    use probity_core::stats::Decision;
    assert_eq!(decisions, [Decision::Fail, Decision::Pass]);
    assert_eq!(store.run(id).unwrap().verdicts, Some(decisions.clone()));
    let rebuilt: Vec<_> = probity_engine::run::stored::load(&store, id)
        .unwrap()
        .summary
        .checks
        .iter()
        .map(|c| c.verdict.decision)
        .collect();
    assert_eq!(rebuilt, decisions);

    store.take_lease(id).unwrap();
    assert_eq!(store.run(id).unwrap().verdicts, None);
    store.release_lease(id).unwrap();

    let second = go(&exp, &mut store, false).await;
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("ALTER TABLE runs DROP COLUMN verdicts; PRAGMA user_version = 6;")
        .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.run(second.stored_id()).unwrap().verdicts, None);
}

/// The reads a report makes without loading every sample: the cells in
/// sample order, the causes counted row by row, and only the samples asked
/// for — each the same as from every sample read at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_reads_only_what_it_shows() {
    let model = SimModel::new(SimConfig::default()).unwrap();
    let faults = FaultConfig {
        seed: 5,
        server_error: 0.2,
        malformed: 0.1,
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(model, faults).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let system = format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"{}\"\nseed = 1",
        server.base_url()
    );
    let mut exp = experiment(self::system(&system), 10, 10).concurrency(4);
    exp.calls.call_attempts = 1;
    exp.error_budget = 1.0;
    let out = go(&exp, &mut store, false).await;
    let id = out.stored_id();
    assert!(out.errors > 0);
    let all = store.samples(id).unwrap();
    assert_eq!(all.len(), 100);
    assert_eq!(store.sample_count(id).unwrap(), 100);

    let mut cells = Vec::new();
    store
        .each_sample_cells(id, |i, j, c| cells.push((i, j, c.to_vec())))
        .unwrap();
    let expected: Vec<_> = all
        .iter()
        .map(|s| (s.input_idx, s.repetition, s.cells.clone()))
        .collect();
    assert_eq!(cells, expected);

    let mut causes = probity_core::causes::Causes::new(1);
    for s in &all {
        s.note_causes(&mut causes);
    }
    assert_eq!(store.causes(id, 1).unwrap().sorted(), causes.sorted());

    let picked = store
        .samples_at(id, &[(3, 4), (0, 0), (3, 4), (99, 0)])
        .unwrap();
    assert_eq!(picked, [all[34].clone(), all[0].clone()]);
}
