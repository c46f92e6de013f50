//! `probity revalidate`: re-check stored outputs with changed validators.

use crate::output::{report_for, OutputArgs};
use crate::store_arg::StoreArg;
use crate::{verdict_code, Failure};
use clap::Args;
use probity_engine::config::Config;
use probity_engine::stored;
use std::path::PathBuf;

#[derive(Args)]
pub struct RevalidateArgs {
    /// The run whose outputs to re-check: its id, or a name (its latest run).
    run: String,
    /// The configuration whose validators and settings to apply.
    #[arg(long, default_value = "probity.toml")]
    config: PathBuf,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

pub fn run(args: &RevalidateArgs) -> Result<u8, Failure> {
    let config = Config::load(&args.config).map_err(|e| Failure::usage(e.to_string()))?;
    let mut store = args.store.open()?;
    let id = args.store.resolve(&store, &args.run)?;
    let new_id =
        stored::revalidate(&mut store, id, &config).map_err(|e| Failure::usage(e.to_string()))?;
    eprintln!("revalidated run {id} as run {new_id} (no model calls)");
    let run = stored::load(&store, new_id).map_err(|e| Failure::incomplete(e.to_string()))?;
    let passed = run.summary.passed();
    let report = report_for(&store, &run.record, run.summary, run.settings.retry_target)?;
    args.out.emit(&report)?;
    Ok(verdict_code(passed))
}
