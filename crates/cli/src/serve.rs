//! `probity serve`: the guard at runtime, as an OpenAI-compatible endpoint
//! (see `probity_engine::serve` for the configuration file).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ServeArgs {
    /// The guard configuration (upstream, checks, retry policy).
    #[arg(long, default_value = "guard.toml")]
    config: PathBuf,
    /// Address to listen on, overriding the file's `listen` (port 0 picks a
    /// free port; the address is printed).
    #[arg(long)]
    listen: Option<String>,
    /// Listen beyond the loopback interface without a token (`token_env`):
    /// anyone who can reach the address can spend the upstream quota.
    /// Without this flag, such a server refuses to start.
    #[arg(long)]
    insecure_no_token: bool,
    /// Ask every calibrated verifier's judge its whole labelled set again
    /// before listening, replacing the verdicts the store keeps for the
    /// same questions (the judge may answer differently behind the same
    /// model name). Without it, kept verdicts are read, not asked.
    #[arg(long)]
    fresh_labels: bool,
    #[command(flatten)]
    store: StoreArg,
}

pub async fn run(args: ServeArgs) -> Result<u8, Failure> {
    // Everything is checked, and the run created, before anything listens.
    let loaded = probity_engine::serve::load(&args.config).map_err(Failure::usage)?;
    let no_token = loaded.token.is_none();
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| loaded.config.listen.clone());
    let listener = crate::listen::bind(&listen).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    if !addr.ip().is_loopback() && no_token {
        if !args.insecure_no_token {
            return Err(Failure::usage(format!(
                "{}: refusing to listen on {addr} without a token: anyone who can reach it could spend your upstream quota. Set token_env (clients then send `Authorization: Bearer <token>`), listen on 127.0.0.1, or pass --insecure-no-token",
                args.config.display()
            )));
        }
        probity_engine::stderr_line!("warning: listening on {addr} without a token (set token_env): anyone who can reach it can spend your upstream quota");
    }
    let name = loaded.name.clone();
    let location = args.store.location(loaded.config.store.as_ref())?;
    // A calibrated verifier's judge answers its labelled set here, before
    // anything listens.
    let server = probity_engine::serve::open(
        loaded,
        &location,
        probity_engine::checks::calibration::LabelAnswers::fresh(args.fresh_labels),
    )
    .await
    .map_err(Failure::incomplete)?;
    for w in server.warnings() {
        probity_engine::stderr_line!("warning: {w}");
    }
    // Ctrl-C or SIGTERM: stop taking requests, finish those in flight,
    // flush the store and mark the run complete. Handled from before the
    // address is printed: a signal right after it is not fatal.
    let shutdown = crate::signals::stop_signal();
    // On stdout, alone on its line, so scripts can read the port.
    crate::stdout::line(&format!("listening on http://{addr}/v1"));
    let served = server
        .run(listener, shutdown)
        .await
        .map_err(Failure::incomplete)?;
    if served.stale_interrupted > 0 {
        probity_engine::stderr_line!(
            "marked {} earlier run(s) named {:?} left running by a stopped server as interrupted",
            served.stale_interrupted,
            name
        );
    }
    let unrecorded = if served.unrecorded > 0 {
        format!(
            "; {} answered but not recorded: the store did not keep up",
            served.unrecorded
        )
    } else {
        String::new()
    };
    let cost = probity_report::cost_phrase(&served.cost)
        .map(|c| format!("; {c}"))
        .unwrap_or_default();
    probity_engine::stderr_line!(
        "stopped: {} request{} taken, {} recorded as run {} (complete; probity report {} / probity plan {}){unrecorded}{cost}",
        served.requests,
        if served.requests == 1 { "" } else { "s" },
        served.recorded,
        served.run_id,
        served.run_id,
        served.run_id
    );
    Ok(0)
}
