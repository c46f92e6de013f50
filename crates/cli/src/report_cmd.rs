//! `probity report` and `probity runs`: stored runs read back.

use crate::failure::{verdict_code, Failure};
use crate::output::{load_report, OutputArgs};
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::stats::Decision;
use probity_engine::run::stored;
use probity_engine::store::RunRecord;
use probity_engine::system::label::system_label;

#[derive(Args)]
pub struct ReportArgs {
    /// The run: its id, or a name (its latest run).
    #[arg(required_unless_present = "trend")]
    run: Option<String>,
    /// Instead of one run: each check's success rate over every complete
    /// run of this name, oldest first (a table; a chart with --format html).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["run", "heatmap"])]
    trend: Option<String>,
    /// With --trend: only this check.
    #[arg(long, value_name = "CHECK", requires = "trend")]
    only: Option<String>,
    /// Exit with the run's verdict (0 pass, 1 fail, 3 incomplete) instead
    /// of 0 once the report is rendered.
    #[arg(long)]
    check: bool,
    /// Print a terminal heatmap of the tensor (input × check) instead.
    #[arg(long)]
    heatmap: bool,
    /// Instead of the run alone: the variants run it is a variant of
    /// (`[[variant]]` tables), side by side (a matrix, costs, paired
    /// differences).
    #[arg(long, conflicts_with_all = ["trend", "heatmap"])]
    variants: bool,
    /// With --variants: compare every pair of variants rather than each
    /// against the reference.
    #[arg(long, requires = "variants")]
    all_pairs: bool,
    /// With --variants: compare each variant with this one instead of the
    /// reference the run was made with.
    #[arg(
        long,
        value_name = "VARIANT",
        requires = "variants",
        conflicts_with = "all_pairs"
    )]
    reference: Option<String>,
    /// With --variants: judge each difference at level α on its own,
    /// without the Holm adjustment across pairs × checks.
    #[arg(long, requires = "variants")]
    no_correction: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

/// Print a stored run's report: exit 0 once rendered, or with `--check`
/// the run's verdict: 1 when a check fails, 2 when a check is broken (as
/// `probity run` exits: fix the check), 3 when the run is incomplete or no
/// output was judged.
pub fn report(args: &ReportArgs) -> Result<u8, Failure> {
    let store = args.store.open()?;
    if let Some(name) = &args.trend {
        return crate::trend::trend(&store, name, args.only.as_deref(), &args.out);
    }
    let run = args.run.as_deref().unwrap_or_default();
    let id = args.store.resolve(&store, run)?;
    if args.variants {
        let against = match &args.reference {
            Some(name) => crate::variants::Against::Variant(name),
            None if args.all_pairs => crate::variants::Against::EveryPair,
            None => crate::variants::Against::Stored,
        };
        let report = crate::variants::stored_report(&store, id, against, args.no_correction)?;
        args.out.emit(&report)?;
        if !args.check {
            return Ok(0);
        }
        if !report.complete() {
            return Ok(3);
        }
        return Ok(verdict_code(report.passed()));
    }
    let report = load_report(&store, id)?;
    if args.heatmap {
        crate::stdout::out(&probity_report::heatmap(&report, args.out.color()));
    } else {
        args.out.emit(&report)?;
    }
    if !args.check {
        return Ok(0);
    }
    if !report.broken().is_empty() {
        return Ok(2);
    }
    if !report.run.complete || report.nothing_judged() {
        return Ok(3);
    }
    Ok(verdict_code(report.passed()))
}

#[derive(Args)]
pub struct RunsArgs {
    /// Only runs whose name contains this.
    #[arg(long)]
    name: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArg,
}

/// List stored runs, newest first.
pub fn runs(args: &RunsArgs) -> Result<u8, Failure> {
    let store = args.store.open()?;
    // Runs whose process was killed outright read as interrupted, not
    // running for ever. Best effort: a store that cannot be written (read
    // only) is still listed, as stored.
    let _ = store.interrupt_all_abandoned();
    let runs = store
        .runs(args.name.as_deref())
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    if args.json {
        for r in &runs {
            // The stored record plus the compact model label of the table.
            let mut v = serde_json::to_value(r).unwrap_or_default();
            if let Some(obj) = v.as_object_mut() {
                obj.insert("model".into(), system_label(&r.system).into());
            }
            crate::stdout::line(&v.to_string());
        }
        return Ok(0);
    }
    // Names whole (a cut name reads like another run's): the column is
    // as wide as the longest.
    let names: Vec<String> = runs.iter().map(|r| clean(&r.name)).collect();
    let wn = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    crate::stdout::line(&format!(
        "{:>5}  {:<wn$}  {:<20}  {:<10}  {:<12}  {:<24}  {:>12}  {:<8}  verdicts",
        "run", "name", "created", "status", "config", "model", "N×M×K", "calls"
    ));
    for (r, name) in runs.iter().zip(&names) {
        let verdicts = tally(&store, r);
        crate::stdout::line(&format!(
            "{:>5}  {:<wn$}  {:<20}  {:<10}  {:<12}  {:<24}  {:>12}  {:<8}  {}",
            r.id,
            name,
            clean(&r.created_at),
            format!("{:?}", r.status).to_lowercase(),
            clean(r.config_hash.get(..12).unwrap_or(&r.config_hash)),
            truncate(&clean(&system_label(&r.system)), 24),
            format!("{}×{}×{}", r.inputs, r.outputs_per_input, r.checks.len()),
            r.model_calls,
            verdicts
        ));
    }
    Ok(0)
}

/// How many of run `r`'s checks pass (`no verdict` when every one is
/// open), from the decisions stored when it finished; a run without them (being written, from `probity serve`, or
/// stored before they were) is rebuilt from its samples.
fn tally(store: &probity_engine::store::Store, r: &RunRecord) -> String {
    // A run whose every check is open (nothing judged, no traffic yet)
    // has no verdict: "0/2 pass" would read as two failures.
    let count = |decisions: &mut dyn Iterator<Item = Decision>, of: usize| {
        let decisions: Vec<Decision> = decisions.collect();
        if of > 0 && decisions.iter().all(|d| *d == Decision::Inconclusive) {
            return "no verdict".to_string();
        }
        let passed = decisions.iter().filter(|d| **d == Decision::Pass).count();
        format!("{passed}/{of} pass")
    };
    if let Some(v) = &r.verdicts {
        return count(&mut v.iter().copied(), v.len());
    }
    stored::load(store, r.id)
        .map(|s| {
            let of = s.summary.checks.len();
            count(&mut s.summary.checks.iter().map(|c| c.verdict.decision), of)
        })
        .unwrap_or_else(|e| format!("unreadable: {e}"))
}

/// Untrusted text (names come from configuration files) made safe for a
/// terminal line.
fn clean(s: &str) -> String {
    probity_report::sanitize::terminal_line(s, 0)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}
