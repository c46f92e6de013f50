//! The runner end to end: known truth on the simulator, faults over HTTP,
//! the cache, and cancellation.

use probity_engine::config::Config;
use probity_engine::provider::Provider;
use probity_engine::runner::{run, RunOutcome, RunSettings};
use probity_engine::sim::server::{spawn_test_server, FaultConfig};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::store::{RunStatus, Store};
use std::path::Path;
use std::sync::Arc;

const CONTRACTIONS: &str = r#"
[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.95
"#;

fn config(dir: &Path, system: &str, experiment: &str, n: usize) -> Config {
    let inputs: String = (0..n)
        .map(|i| format!("[[input]]\ntext = \"Question number {i} about gardening?\"\n"))
        .collect();
    let text = format!(
        "name = \"t\"\n[system]\n{system}\n[experiment]\n{experiment}\n{CONTRACTIONS}\n{inputs}"
    );
    let path = dir.join("probity.toml");
    std::fs::write(&path, &text).unwrap();
    Config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

async fn go(
    config: &Config,
    provider: Arc<dyn Provider>,
    store: &mut Store,
    resume: bool,
) -> RunOutcome {
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    run(
        config,
        provider,
        store,
        RunSettings { resume, cancel },
        |_| {},
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
        let system =
            format!("provider = \"sim\"\nseed = {seed}\ncontractions = 0.1\ninput_spread = 0.3");
        let cfg = config(
            dir.path(),
            &system,
            "outputs_per_input = 10\nconcurrency = 8",
            30,
        );
        let provider = cfg.file.system.build().unwrap();
        let out = go(&cfg, provider, &mut store, false).await;
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
    assert!(
        (0.91..=0.985).contains(&coverage),
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

    let cfg = config(
        dir.path(),
        &system,
        "outputs_per_input = 25\nconcurrency = 16\ncall_attempts = 1",
        40,
    );
    let out = go(&cfg, cfg.file.system.build().unwrap(), &mut store, false).await;
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
    let cfg = config(
        dir.path(),
        &system.replace("seed = 1", "seed = 1000"),
        "outputs_per_input = 25\nconcurrency = 16\ncall_attempts = 5",
        40,
    );
    let before = server.stats().requests;
    let out = go(&cfg, cfg.file.system.build().unwrap(), &mut store, false).await;
    let share = out.errors as f64 / total as f64;
    assert!(share <= 0.08, "error share after retries {share}");
    assert!(out.model_calls > total, "retries were made");
    assert_eq!(server.stats().requests - before, out.model_calls);
}

/// A second run of the same configuration is served from the store; a
/// resumed run that is already complete makes no call either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_requests_are_served_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let cfg = config(
        dir.path(),
        "provider = \"sim\"",
        "outputs_per_input = 5",
        10,
    );
    let first = go(&cfg, cfg.file.system.build().unwrap(), &mut store, false).await;
    assert_eq!((first.model_calls, first.cached), (50, 0));
    let second = go(&cfg, cfg.file.system.build().unwrap(), &mut store, false).await;
    assert_eq!((second.model_calls, second.cached), (0, 50));
    assert_ne!(first.run_id, second.run_id);
    assert_eq!(first.tensor, second.tensor);
    // More repetitions: only the new ones are called.
    let more = config(
        dir.path(),
        "provider = \"sim\"",
        "outputs_per_input = 8",
        10,
    );
    let third = go(&more, more.file.system.build().unwrap(), &mut store, false).await;
    assert_eq!((third.model_calls, third.cached), (30, 50));
}

/// Cancelling stops the run, keeps what was stored, marks it interrupted;
/// resuming finishes it without asking again for what is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_then_resume_loses_nothing_and_repeats_nothing() {
    let model = SimModel::new(SimConfig {
        latency_ms: 20,
        ..SimConfig::default()
    })
    .unwrap();
    let (_, server) = spawn_test_server(model, FaultConfig::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let system = format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"{}\"\nseed = 7",
        server.base_url()
    );
    let cfg = config(
        dir.path(),
        &system,
        "outputs_per_input = 10\nconcurrency = 4",
        20,
    );

    let (tx, cancel) = tokio::sync::watch::channel(false);
    let mut fired = false;
    let out = run(
        &cfg,
        cfg.file.system.build().unwrap(),
        &mut store,
        RunSettings {
            resume: false,
            cancel,
        },
        |p| {
            if p.done >= 60 && !fired {
                fired = true;
                let _ = tx.send(true);
            }
        },
    )
    .await
    .unwrap();
    assert_eq!(out.status, RunStatus::Interrupted);
    let stored = store.samples(out.run_id).unwrap().len() as u64;
    assert!((60..200).contains(&stored), "stored {stored}");
    let requests_before = server.stats().requests;

    let resumed = go(&cfg, cfg.file.system.build().unwrap(), &mut store, true).await;
    assert_eq!(resumed.run_id, out.run_id);
    assert_eq!(resumed.status, RunStatus::Complete);
    assert_eq!(resumed.resumed, stored);
    assert_eq!(resumed.model_calls, 200 - stored);
    assert_eq!(server.stats().requests - requests_before, 200 - stored);
    assert_eq!(store.samples(out.run_id).unwrap().len(), 200);
}

/// The whole-run deadline stops the run, keeps what was stored and marks it
/// interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_ends_a_slow_run_with_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let cfg = config(
        dir.path(),
        "provider = \"sim\"\nlatency_ms = 50",
        "outputs_per_input = 10\nconcurrency = 2\ndeadline_s = 0.4",
        10,
    );
    let started = std::time::Instant::now();
    let out = go(&cfg, cfg.file.system.build().unwrap(), &mut store, false).await;
    assert_eq!(out.status, RunStatus::Interrupted);
    let stored = store.samples(out.run_id).unwrap().len();
    // 2 at a time, 50 ms each: about 16 in 0.4 s, far from all 100.
    assert!((4..60).contains(&stored), "stored {stored}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(out.summary.counts.missing, (100 - stored) as u64);
}
