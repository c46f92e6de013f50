//! Throughput of the simulator server (ignored by default; run with
//! `cargo test --release -p probity-engine --test sim_throughput -- --ignored --nocapture`).

use probity_engine::provider::{OpenAiConfig, OpenAiProvider, Provider, Request};
use probity_engine::sim::server::{spawn_test_server, FaultConfig};
use probity_engine::sim::{SimConfig, SimModel};
use std::sync::Arc;
use std::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn server_throughput() {
    let model = SimModel::new(SimConfig::default()).unwrap();
    let (_, server) = spawn_test_server(model, FaultConfig::default())
        .await
        .unwrap();
    let mut c = OpenAiConfig::new("probity-sim");
    c.base_url = server.base_url();
    c.seed = Some(1);
    let p = Arc::new(OpenAiProvider::new(c).unwrap());
    let n_tasks = 64;
    let per_task = 500;
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for t in 0..n_tasks {
        let p = p.clone();
        handles.push(tokio::spawn(async move {
            for r in 0..per_task {
                let req = Request {
                    messages: vec![probity_engine::provider::Message::text(
                        probity_engine::provider::Role::User,
                        format!("Thank you! Question {t}"),
                    )],
                    repetition: r,
                    attempt: 0,
                    input: probity_core::Input::text(format!("{t}"), "q"),
                };
                p.complete(&req).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let n = n_tasks * per_task;
    let secs = t0.elapsed().as_secs_f64();
    println!("{n} requests in {secs:.2}s: {:.0} req/s", n as f64 / secs);
    assert_eq!(server.stats().requests, n as u64);
}
