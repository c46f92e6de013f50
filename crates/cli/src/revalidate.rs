//! `probity revalidate`: re-check stored outputs with changed validators.

use crate::output::{load_report, OutputArgs};
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
    if !config.verifiers.is_empty() {
        return Err(Failure::usage(format!(
            "{}: revalidate re-checks stored outputs without model calls, and [[verifier]] judges are model calls; run `probity run` instead (or remove the verifiers)",
            args.config.display()
        )));
    }
    let mut store = args.store.open()?;
    let id = args.store.resolve(&store, &args.run)?;
    let new_id =
        stored::revalidate(&mut store, id, &config).map_err(|e| Failure::usage(e.to_string()))?;
    eprintln!("revalidated run {id} as run {new_id} (no model calls)");
    let report = load_report(&store, new_id)?;
    let passed = report.passed();
    args.out.emit(&report)?;
    Ok(verdict_code(passed))
}
