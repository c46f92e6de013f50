//! `probity sim serve`: the built-in simulated model as an OpenAI-compatible
//! HTTP endpoint, with fault injection, for tests and benchmarks.

use crate::failure::Failure;
use clap::{Args, Subcommand};
use probity_engine::sim::server::{serve, FaultConfig};
use probity_engine::sim::{SimConfig, SimModel};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum SimCommand {
    /// Serve the simulator at /v1/chat/completions (plus /health and /stats).
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8089")]
    listen: String,
    /// A TOML file with [model] (the simulator's true rates) and [faults] tables.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Seed of the simulated model (default 0: a request's `seed` then
    /// reproduces its answer across servers).
    #[arg(long)]
    seed: Option<u64>,
    /// Mean latency per request, in milliseconds.
    #[arg(long)]
    latency_ms: Option<u64>,
    /// Milliseconds the model takes per generated token: a streamed answer
    /// sends each piece as it is generated, a whole answer once all are.
    #[arg(long)]
    token_ms: Option<u64>,
    /// Requests answered at once; the rest wait their turn (a llama.cpp
    /// server with N slots; 1: one request at a time).
    #[arg(long)]
    slots: Option<u32>,
    /// Probability of answering 429 with Retry-After.
    #[arg(long)]
    rate_limit: Option<f64>,
    /// Probability of answering 500.
    #[arg(long)]
    server_error: Option<f64>,
    /// Probability of hanging (see --timeout-ms) before answering.
    #[arg(long)]
    timeout: Option<f64>,
    /// How long a hanging request hangs, in milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Probability of answering 200 with malformed JSON.
    #[arg(long)]
    malformed: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    #[serde(default)]
    model: SimConfig,
    #[serde(default)]
    faults: FaultConfig,
}

pub async fn run(cmd: SimCommand) -> Result<u8, Failure> {
    let SimCommand::Serve(args) = cmd;
    let mut file = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
            toml::from_str::<ServeFile>(&text).map_err(|e| {
                let why = probity_engine::toml_error::describe(&e, &text);
                Failure::usage(format!("{}: {why}", path.display()))
            })?
        }
        None => ServeFile::default(),
    };
    let (m, f) = (&mut file.model, &mut file.faults);
    // Served, the simulator stays reproducible by a request's `seed`:
    // pinned at 0 unless given (in-process runs sample afresh instead).
    m.seed = args.seed.or(m.seed).or(Some(0));
    m.latency_ms = args.latency_ms.unwrap_or(m.latency_ms);
    m.token_ms = args.token_ms.unwrap_or(m.token_ms);
    f.rate_limit = args.rate_limit.unwrap_or(f.rate_limit);
    f.server_error = args.server_error.unwrap_or(f.server_error);
    f.timeout = args.timeout.unwrap_or(f.timeout);
    f.timeout_ms = args.timeout_ms.unwrap_or(f.timeout_ms);
    f.malformed = args.malformed.unwrap_or(f.malformed);
    f.slots = args.slots.or(f.slots);
    let model = SimModel::new(file.model).map_err(|e| Failure::usage(format!("simulator: {e}")))?;
    file.faults
        .validate()
        .map_err(|e| Failure::usage(format!("faults: {e}")))?;
    let listener = crate::listen::bind(&args.listen).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    let shutdown = crate::signals::stop_signal();
    // On stdout, alone on its line, so scripts can read the port.
    crate::stdout::line(&format!("listening on http://{addr}/v1"));
    serve(listener, model, file.faults, shutdown)
        .await
        .map_err(|e| Failure::incomplete(format!("simulator server: {e}")))?;
    Ok(0)
}
