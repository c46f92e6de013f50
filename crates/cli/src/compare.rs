//! `probity compare RUN_A RUN_B`: did the candidate (B) regress against
//! the baseline (A)? Exit 1 on a significant regression of any check.

use crate::failure::Failure;
use crate::output::OutputArgs;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::compare::CompareOptions;
use probity_core::stats::MultipleTesting;
use probity_engine::run::compare::{compare_stored, RunComparison};
use probity_report::ComparisonReport;

#[derive(Args)]
pub struct CompareArgs {
    /// The baseline run (A): its id, or a name (its latest run).
    baseline: String,
    /// The candidate run (B): its id, or a name (its latest run).
    candidate: String,
    /// Confidence of the intervals (default: the candidate's setting).
    #[arg(long, value_name = "C")]
    confidence: Option<f64>,
    /// Power of the smallest detectable change.
    #[arg(long, default_value_t = 0.8)]
    power: f64,
    /// Judge each check at level α on its own, without the Holm
    /// adjustment of the p-values across the checks compared: control of
    /// the false-regression rate across K checks is off (with K checks,
    /// some check is flagged by chance with probability up to
    /// 1 − (1 − α)^K).
    #[arg(long)]
    no_correction: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

/// Build the report of a comparison.
pub fn comparison_report(c: RunComparison) -> ComparisonReport {
    ComparisonReport {
        baseline: crate::run_info::run_info(&c.baseline),
        candidate: crate::run_info::run_info(&c.candidate),
        comparison: c.comparison,
        changed_inputs: c.changed_inputs,
    }
}

pub fn run(args: &CompareArgs) -> Result<u8, Failure> {
    if let Some(c) = args.confidence {
        if !(c > 0.0 && c < 1.0) {
            return Err(Failure::usage(
                "--confidence must lie strictly between 0 and 1",
            ));
        }
    }
    if !(args.power > 0.5 && args.power < 1.0) {
        return Err(Failure::usage(
            "--power must lie strictly between 0.5 and 1",
        ));
    }
    let store = args.store.open()?;
    let a = args.store.resolve(&store, &args.baseline)?;
    let b = args.store.resolve(&store, &args.candidate)?;
    let candidate = store.run(b).map_err(|e| Failure::usage(e.to_string()))?;
    store.run(a).map_err(|e| Failure::usage(e.to_string()))?;
    let mut opts = CompareOptions::from_analysis(&candidate.settings.analysis);
    if let Some(c) = args.confidence {
        opts.confidence = c;
    }
    opts.power = args.power;
    if args.no_correction {
        opts.multiple = MultipleTesting::None;
    }
    let cmp =
        compare_stored(&store, a, b, Some(opts)).map_err(|e| Failure::usage(e.to_string()))?;
    let report = comparison_report(cmp);
    args.out.emit(&report)?;
    if report.without_data() {
        // Printed, and exited on: "no change" was never measured.
        return Ok(3);
    }
    Ok(u8::from(report.regressed()))
}

/// The comparison of run `current` with the baseline `spec` names, for
/// `probity run --baseline`; `None` (with a notice on stderr) when a name
/// has no earlier complete run.
pub fn against_baseline(
    store: &probity_engine::store::Store,
    spec: &str,
    current: probity_engine::run::compare::RunTensor<'_>,
) -> Result<Option<ComparisonReport>, Failure> {
    let baseline = probity_engine::run::compare::resolve_baseline(store, spec, current.record.id)
        .map_err(|e| Failure::usage(format!("--baseline {spec}: {e}")))?;
    let Some(a) = baseline else {
        probity_engine::stderr_line!(
            "notice: no earlier complete run named {:?}: nothing to compare with (this run can be the baseline of the next)",
            probity_report::sanitize::terminal_line(spec, 80)
        );
        return Ok(None);
    };
    let a = probity_engine::run::stored::load(store, a)
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    let baseline = probity_engine::run::compare::RunTensor {
        record: &a.record,
        tensor: &a.tensor,
    };
    let cmp = probity_engine::run::compare::compare_loaded(store, baseline, current, None)
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    Ok(Some(comparison_report(cmp)))
}
