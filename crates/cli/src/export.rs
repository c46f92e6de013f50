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
    /// Every run of RUN's name created at or after this time
    /// (`2026-11-20`, or `2026-11-20T14:00:00Z`, UTC, or a span back from
    /// now: `24h`, `7d`), not only the one: the failures of every replica
    /// and day since then.
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
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
    let fail = |e: probity_engine::store::StoreError| Failure::incomplete(e.to_string());
    let ids = match &args.since {
        None => vec![id],
        Some(since) => {
            let since = crate::since::stamp(since)?;
            let name = store.run(id).map_err(fail)?.name;
            let mut ids: Vec<i64> = store
                .runs(Some(&name))
                .map_err(fail)?
                .into_iter()
                .filter(|r| r.name == name && r.created_at.as_str() >= since.as_str())
                .map(|r| r.id)
                .collect();
            ids.sort_unstable();
            ids
        }
    };
    let mut rows = Vec::new();
    for id in &ids {
        rows.extend(export(&store, *id, which).map_err(fail)?);
    }
    // A trace run's failures: one row per distinct input, with its count
    // and trace ids (probity_engine::traces::failures).
    if probity_engine::traces::failures::are_traces(&rows) {
        rows = probity_engine::traces::failures::dedup(rows);
    }
    let id = ids
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let text: String = rows
        .iter()
        .map(|row| format!("{}\n", serde_json::Value::Object(row.clone())))
        .collect();
    match &args.out {
        Some(path) => {
            crate::protected::check(path)?;
            std::fs::write(path, &text).map_err(|e| {
                Failure::incomplete(format!("cannot write {}: {e}", path.display()))
            })?;
            probity_engine::stderr_line!(
                "wrote {} input{} of {} {id} to {} (use it as [experiment] inputs)",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                if ids.len() == 1 { "run" } else { "runs" },
                path.display()
            );
        }
        None => crate::stdout::out(&text),
    }
    Ok(0)
}
