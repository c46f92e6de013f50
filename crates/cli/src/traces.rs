//! `probity traces import` (OTLP JSON files into a run) and `probity
//! collect` (an OTLP/HTTP receiver): what an application already traces,
//! checked (see `probity_engine::traces` and docs/traces.md).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::{Args, Subcommand};
use probity_engine::traces::ingest::Ingest;
use probity_engine::traces::run::{open, Mode};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

#[derive(Subcommand)]
pub enum TracesCommand {
    /// Check OTLP JSON trace files (one ExportTraceServiceRequest per line, as the file exporters write them) into a run.
    Import(ImportArgs),
}

#[derive(Args)]
pub struct ImportArgs {
    /// The checks, grouping and monitoring applied (docs/traces.md).
    #[arg(long, default_value = "traces.toml")]
    config: PathBuf,
    /// The OTLP JSON files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArg,
}

#[derive(Args)]
pub struct CollectArgs {
    /// The checks, grouping, monitoring and limits applied (docs/traces.md).
    #[arg(long, default_value = "traces.toml")]
    config: PathBuf,
    /// Address to listen on, overriding the file's `listen` (port 0 picks a
    /// free port; the address is printed).
    #[arg(long)]
    listen: Option<String>,
    /// Listen beyond the loopback interface without a token (`token_env`).
    #[arg(long)]
    insecure_no_token: bool,
    #[command(flatten)]
    store: StoreArg,
}

pub async fn import(args: ImportArgs) -> Result<u8, Failure> {
    let loaded = probity_engine::traces::config::load(&args.config).map_err(Failure::usage)?;
    // Every file decodes before anything is stored.
    let spans = probity_engine::traces::import::validate(&args.files).map_err(Failure::usage)?;
    let location = args.store.location(loaded.config.store.as_ref())?;
    let run = open(&loaded, &location, Mode::Import).map_err(Failure::incomplete)?;
    probity_engine::traces::import::import(&run, &args.files)
        .await
        .map_err(Failure::incomplete)?;
    run.ingest.close_export().await;
    run.close().map_err(Failure::incomplete)?;
    crate::stdout::out(&summary(&run.ingest, spans));
    Ok(0)
}

/// What became of the spans, for a person.
fn summary(i: &Ingest, spans: u64) -> String {
    let c = &i.counts;
    let mapped = c.mapped.load(Ordering::Relaxed);
    let mut text = format!(
        "run {}: {spans} span{} read, {mapped} mapped and checked\n",
        i.run_id,
        if spans == 1 { "" } else { "s" }
    );
    if let Ok(m) = c.unmapped.lock() {
        for ((reason, convention), n) in m.iter() {
            text.push_str(&format!("  not mapped: {n} {reason} ({convention})\n"));
        }
    }
    let s = &i.sampler;
    if s.samples() {
        let judged = s.judged.load(Ordering::Relaxed);
        let over = s.over_budget.load(Ordering::Relaxed);
        text.push_str(&format!(
            "  judged: {judged} (a random sample: judge_share), not judged: {} outside the sample, {over} over judge_budget_per_hour\n",
            s.not_sampled.load(Ordering::Relaxed)
        ));
        if over > 0 {
            text.push_str("  (over budget: the judged spans leave out the later spans of the hours the budget ran out; docs/traces.md, \"Judges on a sample\")\n");
        }
    }
    if let Some((sent, failed)) = i.exported() {
        text.push_str(&format!(
            "  evaluation events exported: {sent}{}\n",
            if failed > 0 {
                format!(", {failed} not exported (see the warnings above)")
            } else {
                String::new()
            }
        ));
    }
    let unrecorded = c.unrecorded.load(Ordering::Relaxed);
    if unrecorded > 0 {
        text.push_str(&format!(
            "  not stored: {unrecorded} (the store did not keep up)\n"
        ));
    }
    if c.unmapped_of("no_content") > 0 {
        text.push_str("  (no_content: the instrumentation did not capture message content; docs/traces.md, \"Privacy\", names each one's opt-in)\n");
    }
    text.push_str(&format!(
        "probity report {} shows the checks' rates; probity export {} --out failing.jsonl writes the failures as tests\n",
        i.run_id, i.run_id
    ));
    text
}

pub async fn collect(args: CollectArgs) -> Result<u8, Failure> {
    let loaded = probity_engine::traces::config::load(&args.config).map_err(Failure::usage)?;
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| loaded.config.listen.clone());
    let listener = crate::listen::bind(&listen).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    if !addr.ip().is_loopback() && loaded.token.is_none() {
        if !args.insecure_no_token {
            return Err(Failure::usage(format!(
                "{}: refusing to listen on {addr} without a token: anyone who can reach it could fill the store. Set token_env (exporters then send `Authorization: Bearer <token>` through OTEL_EXPORTER_OTLP_HEADERS), listen on 127.0.0.1, or pass --insecure-no-token",
                args.config.display()
            )));
        }
        probity_engine::stderr_line!(
            "warning: listening on {addr} without a token (set token_env)"
        );
    }
    let location = args.store.location(loaded.config.store.as_ref())?;
    let run = open(&loaded, &location, Mode::Live).map_err(Failure::incomplete)?;
    if run.stale_interrupted > 0 {
        probity_engine::stderr_line!(
            "marked {} earlier run(s) named {:?} left running by a stopped collector as interrupted",
            run.stale_interrupted,
            loaded.name
        );
    }
    let shutdown = crate::signals::stop_signal();
    crate::stdout::line(&format!("listening on http://{addr}/v1/traces"));
    let max_body = (loaded.config.max_body_mb * 1024.0 * 1024.0) as usize;
    let served = probity_engine::traces::receiver::serve(
        listener,
        run.ingest.clone(),
        loaded.token.clone(),
        max_body,
        loaded.config.max_pending_spans,
        shutdown,
    )
    .await;
    // Whatever the server's end, what was checked is flushed, its
    // verdicts sent, and the run closed.
    run.ingest.close_export().await;
    run.close().map_err(Failure::incomplete)?;
    served.map_err(Failure::incomplete)?;
    let spans = run.ingest.counts.spans.load(Ordering::Relaxed);
    probity_engine::stderr_line!("stopped: {}", summary(&run.ingest, spans).trim_end());
    Ok(0)
}
