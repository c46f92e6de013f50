//! `probity`: reliability testing for LLM-based systems.
//!
//! Exit codes: 0 every verdict passes, 1 a verdict fails, 2 bad usage or
//! configuration, 3 the run could not complete.

// A line for a person goes through `stderr_line!` (a closed standard
// error cannot turn it into a panic); stdout through `stdout`.
#![deny(clippy::print_stderr, clippy::print_stdout)]

/// mimalloc rather than the system's allocator: the guard (`probity
/// serve`) allocates for every request on many threads at once, where
/// glibc's malloc took 28% of its CPU (docs/serve.md, "What it costs").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod compare;
mod export;
mod failure;
mod init;
mod listen;
mod monitor;
mod output;
mod plan;
mod protected;
mod report_cmd;
mod revalidate;
mod run;
mod run_display;
mod run_info;
mod serve;
mod signals;
mod sim;
mod since;
mod stdout;
mod store_arg;
mod traces;
mod trend;
mod variants;
mod view;

use clap::{Parser, Subcommand};
use failure::runtime;
use std::process::ExitCode;

/// Reliability testing for LLM-based systems, with error bars.
#[derive(Parser)]
#[command(
    name = "probity",
    version,
    about = "Reliability testing for LLM-based systems, with error bars",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a working, commented example configuration and dataset (--provider sim, the default, runs with no key).
    Init(init::InitArgs),
    /// Run a reliability test: sample the system N×M times and check every output.
    Run(run::RunArgs),
    /// Work on a shared run (`probity run --shared`) from this process, on this machine or another with the same store.
    Work(run::WorkArgs),
    /// Show a stored run's report.
    Report(report_cmd::ReportArgs),
    /// Re-check a stored run's outputs with changed validators (no calls to the system; judges only for uncached judgements).
    Revalidate(revalidate::RevalidateArgs),
    /// List stored runs.
    Runs(report_cmd::RunsArgs),
    /// Compare two runs: per check, the change from baseline (A) to candidate (B) with an interval; exit 1 on a significant regression.
    Compare(compare::CompareArgs),
    /// Write a run's failing inputs (or --all) as an inputs file `probity run` reads (paper §4.2.6).
    Export(export::ExportArgs),
    /// Live rates of a served configuration's traffic, from the store (every replica pooled), refreshed in the terminal.
    Monitor(monitor::MonitorArgs),
    /// Plan retries: attempts needed for an output to pass every check (paper §4.2).
    Plan(plan::PlanArgs),
    /// Guard live traffic: an OpenAI-compatible endpoint that retries until an output passes (paper §4).
    Serve(serve::ServeArgs),
    /// A local web viewer over the run store: runs, reports, all outputs, comparisons side by side, trends, live runs.
    View(view::ViewArgs),
    /// The built-in simulated model.
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// Production traces (OpenTelemetry): check what an application already traces (docs/traces.md).
    #[command(subcommand)]
    Traces(traces::TracesCommand),
    /// Receive OpenTelemetry traces (OTLP/HTTP, /v1/traces) and check every LLM span live, as a run (docs/traces.md).
    Collect(traces::CollectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Init(args) => init::run(&args),
        Command::Run(args) => runtime().and_then(|rt| rt.block_on(run::run(args))),
        Command::Work(args) => runtime().and_then(|rt| rt.block_on(run::work(args))),
        Command::Report(args) => report_cmd::report(&args),
        Command::Revalidate(args) => revalidate::run(&args),
        Command::Runs(args) => report_cmd::runs(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Monitor(args) => monitor::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(args))),
        Command::View(args) => runtime().and_then(|rt| rt.block_on(view::run(args))),
        Command::Sim(cmd) => runtime().and_then(|rt| rt.block_on(sim::run(cmd))),
        Command::Traces(traces::TracesCommand::Import(args)) => {
            runtime().and_then(|rt| rt.block_on(traces::import(args)))
        }
        Command::Collect(args) => runtime().and_then(|rt| rt.block_on(traces::collect(args))),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            probity_engine::stderr_line!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
