//! The paper's two validators (§2.1) as Rust closures, run in memory on the
//! built-in simulator: no configuration file, no store, no API key.
//!
//! ```sh
//! cargo run -p probity-engine --example in_process
//! ```
//!
//! The simulator's true rates are known (it overuses contractions in 10%
//! of its answers and forgets "You're welcome" in 15% of its answers to
//! thanks), so the expected outcome is known too: the contraction check
//! fails its 95% minimum, the politeness check meets its 90% minimum. The
//! example exits 0 when that is what the run finds, 1 otherwise.

use probity_core::stats::Decision;
use probity_core::{Input, Validator};
use probity_engine::sim::{SimConfig, SimModel};
use probity_engine::{run, Experiment, Sink};
use std::process::ExitCode;
use std::sync::Arc;

#[tokio::main]
async fn main() -> ExitCode {
    let system = Arc::new(
        SimModel::new(SimConfig {
            contractions: 0.10,
            omit_welcome: 0.15,
            ..SimConfig::default()
        })
        .expect("the simulator's settings are valid"),
    );
    let inputs = (0..20).map(|i| {
        let text = if i % 2 == 0 {
            format!("Thank you for the advice on tomatoes, part {i}!")
        } else {
            format!("How deep should I plant bulbs, question {i}?")
        };
        Input::text(format!("q{i:02}"), text)
    });
    let experiment = Experiment::new("in-process", system)
        .inputs(inputs)
        // lambda o: o.count("'") <= 3
        .validator(
            Validator::new("contraction_validator")
                .message("Output contains too many contractions")
                .minimum_success_percentage(0.95)
                .check(|o: &str| o.matches('\'').count() <= 3),
        )
        // lambda i, o: "You're welcome" in o if "Thank you" in i else True
        .validator(
            Validator::new("politeness_validator")
                .message("System seems to have forgotten its manners")
                .minimum_success_percentage(0.90)
                .check_with_input(|i: &Input, o: &str| {
                    !i.as_text().contains("Thank you") || o.contains("You're welcome")
                }),
        )
        .outputs_per_input(20);

    let outcome = match run(&experiment, Sink::Memory).await {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for c in &outcome.summary.checks {
        println!(
            "{:<22} {:>6.1}%  [{:.1}, {:.1}]  ≥ {}%  {:?}",
            c.info.name,
            100.0 * c.rate.estimate,
            100.0 * c.rate.interval.lower,
            100.0 * c.rate.interval.upper,
            100.0 * c.info.minimum_success_percentage,
            c.verdict.decision
        );
    }
    for line in outcome.failure_lines() {
        println!("{line}");
    }
    let decisions: Vec<Decision> = outcome
        .summary
        .checks
        .iter()
        .map(|c| c.verdict.decision)
        .collect();
    if decisions == [Decision::Fail, Decision::Pass] {
        println!("as expected: the contraction check fails, the politeness check passes");
        ExitCode::SUCCESS
    } else {
        eprintln!("unexpected verdicts: {decisions:?}");
        ExitCode::FAILURE
    }
}
