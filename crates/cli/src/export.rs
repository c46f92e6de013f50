//! `probity export`: a stored run's failing inputs (or all of them) as an
//! inputs file `probity run` reads — a production failure becomes a
//! regression input with one command (paper §4.2.6).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_engine::run::export::{export, Which};
use std::path::PathBuf;

#[derive(Args)]
pub struct ExportArgs {
    /// The run to export: its id, or a name (its latest run).
    run: String,
    /// Every input, not only those that failed (the default: a check failed
    /// or erred on a sample, or a guarded request published nothing).
    #[arg(long)]
    all: bool,
    /// Write the JSONL here instead of standard output.
    #[arg(long, short)]
    out: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: &ExportArgs) -> Result<u8, Failure> {
    let store = args.store.open()?;
    let id = args.store.resolve(&store, &args.run)?;
    let which = if args.all { Which::All } else { Which::Failing };
    let rows = export(&store, id, which).map_err(|e| Failure::incomplete(e.to_string()))?;
    let text: String = rows
        .iter()
        .map(|row| format!("{}\n", serde_json::Value::Object(row.clone())))
        .collect();
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| {
                Failure::incomplete(format!("cannot write {}: {e}", path.display()))
            })?;
            eprintln!(
                "wrote {} input{} of run {id} to {} (use it as [experiment] inputs)",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                path.display()
            );
        }
        None => crate::stdout::out(&text),
    }
    Ok(0)
}
