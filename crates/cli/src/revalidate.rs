//! `probity revalidate`: re-check stored outputs with changed checks. No
//! call to the system under test; verifiers' judgements come from the judge
//! cache when the same judge and instructions judged the same (input,
//! output) before, and from the judge otherwise (or not at all with
//! `--no-calls`).

use crate::failure::{verdict_code, Failure};
use crate::output::{load_report, OutputArgs};
use crate::store_arg::StoreArg;
use clap::Args;
use probity_engine::config::variant;
use probity_engine::run::revalidate::revalidate;
use std::path::PathBuf;

#[derive(Args)]
pub struct RevalidateArgs {
    /// The run whose outputs to re-check: its id, or a name (its latest run).
    run: String,
    /// The configuration whose validators and settings to apply.
    #[arg(long, default_value = "probity.toml")]
    config: PathBuf,
    /// Make no judge call either: verifier judgements not in the judge
    /// cache become Error cells ("not judged: --no-calls").
    #[arg(long)]
    no_calls: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

pub fn run(args: &RevalidateArgs) -> Result<u8, Failure> {
    let mut store = args.store.open()?;
    let id = args.store.resolve(&store, &args.run)?;
    // The variant whose outputs these are: a revalidated run's are its
    // source's (`outputs_from`), and so is its variant.
    let read = |id: i64| {
        store
            .run(id)
            .map_err(|e| Failure::usage(format!("run {id}: {e}")))
    };
    let mut record = read(id)?;
    if let Some(source) = record.outputs_from {
        record = read(source)?;
    }
    let variant = record.variant.as_ref().map(|v| v.name.as_str());
    crate::protected::protect("the configuration", &args.config);
    args.out.check_targets()?;
    let config = variant::load_for(&args.config, variant).map_err(|e| match variant {
        Some(_) => Failure::usage(format!("run {id} ({}): {e}", record.name)),
        None => Failure::usage(e.to_string()),
    })?;
    // Another configuration's checks may be applied on purpose (a looser
    // rule, a new check); another system's or name's file is more likely
    // the wrong file, and its run would be filed under that name.
    let base = |n: &str| n.split('/').next().unwrap_or(n).to_string();
    if base(&config.name) != base(&record.name) {
        probity_engine::stderr_line!(
            "warning: {} is named {:?}, run {id} {:?}: the re-check is stored as a run of {:?}, and compares with its runs",
            args.config.display(),
            config.name,
            record.name,
            config.name
        );
    }
    // An agent's run: its stored transcripts and final states judged by
    // the agent checks again (its tools and environment built for the
    // gold state); no episode is run.
    let mut recheck = config.recheck();
    let done = crate::failure::runtime()?.block_on(async {
        recheck
            .build_agent()
            .await
            .map_err(|e| Failure::usage(format!("{}: the agent: {e}", args.config.display())))?;
        revalidate(&mut store, id, &recheck, !args.no_calls)
            .await
            .map_err(|e| Failure::usage(e.to_string()))
    })?;
    if config.checks.verifiers.is_empty() {
        probity_engine::stderr_line!(
            "revalidated run {id} as run {} (no model calls)",
            done.run_id
        );
    } else {
        probity_engine::stderr_line!(
            "revalidated run {id} as run {} (no calls to the system; judges: {} call{}, {} judgement{} from the cache{})",
            done.run_id,
            done.judge_calls,
            if done.judge_calls == 1 { "" } else { "s" },
            done.judge_cached,
            if done.judge_cached == 1 { "" } else { "s" },
            if done.not_judged > 0 {
                format!(", {} not judged (--no-calls)", done.not_judged)
            } else {
                String::new()
            }
        );
    }
    for name in &done.uncalibrated {
        probity_engine::stderr_line!(
            "warning: verifier {name:?} has a labelled set, but with --no-calls its judge cannot be asked and the store does not keep its verdict on every labelled pair: its verdict is the judge's own rate, not corrected for the judge's errors"
        );
    }
    let report = load_report(&store, done.run_id)?;
    let passed = report.passed();
    args.out.emit(&report)?;
    Ok(verdict_code(passed))
}
