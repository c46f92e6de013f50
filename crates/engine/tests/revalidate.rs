//! Revalidation stores verdicts, not outputs: a revalidated run's rows
//! refer to the outputs of the run that sampled them; everything that reads
//! samples sees them as if they were its own. A finished run's snapshot
//! (tensor and causes) is what its report reads.

use crate::common;

use probity_core::{Cell, Input, Validator};
use probity_engine::provider::Provider;
use probity_engine::run::revalidate::revalidate;
use probity_engine::run::stored;
use probity_engine::sim::server::{spawn_test_server, FaultConfig};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::store::Store;
use probity_engine::{run, run_with, Control, Experiment, Sink};
use std::sync::Arc;

/// `n` questions, M = `m`, asked of `system`, with the paper's contraction
/// validator (§2.1) allowing at most `max` apostrophes.
fn experiment(system: Arc<dyn Provider>, n: usize, m: usize, max: usize) -> Experiment {
    Experiment::new("t", system)
        .inputs((0..n).map(|i| Input::text(format!("q{i}"), format!("Question {i} about soil?"))))
        .validator(
            Validator::new("contraction_validator")
                .minimum_success_percentage(0.9)
                .check(move |o: &str| o.matches('\'').count() <= max),
        )
        .outputs_per_input(m)
        .concurrency(4)
}

fn count(path: &std::path::Path, table: &str, run: i64) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(
            &format!("SELECT COUNT(*) FROM {table} WHERE run_id = ?1"),
            [run],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revalidated_run_stores_verdicts_over_the_original_outputs() {
    // Failed calls too: they stay Error cells, their cause read through.
    let model = SimModel::new(SimConfig {
        contractions: 0.4,
        ..SimConfig::default()
    })
    .unwrap();
    let faults = FaultConfig {
        seed: 3,
        server_error: 0.15,
        ..FaultConfig::default()
    };
    let (_, server) = spawn_test_server(model, faults).await.unwrap();
    let system = common::system(&format!(
        "provider = \"openai\"\nmodel = \"sim\"\nbase_url = \"{}\"\nseed = 4",
        server.base_url()
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let mut store = Store::open(&path).unwrap();
    let mut strict = experiment(system.clone(), 12, 10, 3);
    strict.calls.call_attempts = 1;
    strict.error_budget = 1.0;
    let first = run(&strict, Sink::Store(&mut store)).await.unwrap();
    let first_id = first.stored_id();
    assert!(first.errors > 0, "the test wants failed calls");
    let original = store.samples(first_id).unwrap();
    assert_eq!(original.len(), 120);

    // Looser: at most 6 apostrophes.
    let loose = experiment(system.clone(), 12, 10, 6);
    let done = revalidate(&mut store, first_id, &loose.recheck(), false)
        .await
        .unwrap();
    let second = done.run_id;
    assert_eq!(done.samples, 120);
    assert_eq!(store.run(second).unwrap().outputs_from, Some(first_id));
    // Verdicts only: no output copied.
    assert_eq!(count(&path, "samples", second), 0);
    assert_eq!(count(&path, "rechecks", second), 120);
    let rechecked = store.samples(second).unwrap();
    assert_eq!(rechecked.len(), 120);
    for (a, b) in original.iter().zip(&rechecked) {
        assert_eq!(
            (a.input_idx, a.repetition, &a.cache_key, &a.output, &a.error),
            (b.input_idx, b.repetition, &b.cache_key, &b.output, &b.error)
        );
        let expected = match &a.output {
            Some(o) if o.matches('\'').count() <= 6 => Cell::Pass,
            Some(_) => Cell::Fail,
            None => Cell::Error,
        };
        assert_eq!(b.cells, [expected]);
    }
    assert_eq!(store.sample_count(second).unwrap(), 120);
    assert_eq!(
        store.samples_at(second, &[(5, 7)]).unwrap(),
        [rechecked[57].clone()]
    );

    // Its snapshot is what its samples say.
    let loaded = stored::load(&store, second).unwrap();
    let mut causes = probity_core::causes::Causes::new(1);
    let mut tensor = probity_core::ReliabilityTensor::new(12, 10, 1).unwrap();
    for s in &rechecked {
        s.note_causes(&mut causes);
        tensor
            .set(s.input_idx, s.repetition, 0, s.cells[0])
            .unwrap();
    }
    assert_eq!(loaded.causes, Some(causes.clone().sorted()));
    assert_eq!(loaded.tensor, tensor);
    assert_eq!(store.causes(second, 1).unwrap().sorted(), causes.sorted());

    // A revalidation of the revalidation still refers to the sampled run.
    let third = revalidate(&mut store, second, &strict.recheck(), false)
        .await
        .unwrap()
        .run_id;
    assert_eq!(store.run(third).unwrap().outputs_from, Some(first_id));
    assert_eq!(store.run(third).unwrap().parent_run, Some(second));
    assert_eq!(
        store.samples(third).unwrap(),
        original,
        "the strict checks again give the first run's rows"
    );

    // Outputs reused from a revalidated run are the sampled run's.
    let reused = run_with(
        &strict,
        Sink::Store(&mut store),
        Control {
            reuse: Some(second),
            ..Control::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(reused.cached, 120 - first.errors);
    let again = store.samples(reused.stored_id()).unwrap();
    for (a, b) in original.iter().zip(&again) {
        if a.error.is_none() {
            assert_eq!(a.output, b.output);
        }
    }
}

/// A finished run's snapshot holds its tensor and causes; taking the run to
/// write it again drops the snapshot, and the run is then rebuilt from its
/// samples to the same tensor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_is_the_runs_cells_and_goes_when_the_run_is_written_again() {
    let system = common::system("provider = \"sim\"\ncontractions = 0.3");
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.db")).unwrap();
    let out = run(&experiment(system, 8, 6, 3), Sink::Store(&mut store))
        .await
        .unwrap();
    let id = out.stored_id();
    let shape = (8, 6, 1);
    let (tensor, causes) = store.snapshot(id, shape).unwrap().expect("a snapshot");
    assert_eq!(tensor, out.tensor);
    assert_eq!(causes, out.causes);
    // A shape the snapshot does not fit reads as none.
    assert!(store.snapshot(id, (8, 7, 1)).unwrap().is_none());
    store.take_lease(id).unwrap();
    assert!(store.snapshot(id, shape).unwrap().is_none());
    let rebuilt = stored::load(&store, id).unwrap();
    assert_eq!(rebuilt.causes, None);
    assert_eq!(rebuilt.tensor, out.tensor);
}
