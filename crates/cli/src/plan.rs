//! `probity plan`: the retry plan of paper §4.2 from assumed pass rates
//! (`--rates`) or from a stored run (`probity plan RUN`: global and per
//! input, §4.2.3). This computes the plan; probity-report shows it (the
//! `plan` document, as text).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::retry::{check_target, RetryPlan};
use probity_report::{render, Format, PlanReport, PlanRun};

#[derive(Args)]
pub struct PlanArgs {
    /// A stored run (id or name): plan from its measured tensor.
    #[arg(conflicts_with = "rates")]
    run: Option<String>,
    /// Per-validator pass rates p_k, comma-separated (e.g. 0.95,0.90,0.85).
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "run",
        allow_hyphen_values = true
    )]
    rates: Vec<f64>,
    /// Target probability that some attempt passes every check.
    #[arg(long, default_value_t = 0.99)]
    confidence: f64,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: &PlanArgs) -> Result<u8, Failure> {
    if let Some(run) = &args.run {
        let target = check_target(args.confidence)
            .map_err(|e| Failure::usage(format!("--confidence: {e}")))?;
        return from_run(args, run, target);
    }
    let plan =
        RetryPlan::from_rates(&args.rates).map_err(|e| Failure::usage(format!("--rates: {e}")))?;
    let target =
        check_target(args.confidence).map_err(|e| Failure::usage(format!("--confidence: {e}")))?;
    let report = PlanReport {
        plan,
        target,
        run: None,
    };
    print!("{}", render(&report, Format::Text, false));
    Ok(0)
}

/// The plan of a stored run, over the checks that decide whether an
/// attempt passes (its retry policy's, or every check), with the guarded
/// measurement when the run had a retry policy.
fn from_run(args: &PlanArgs, run: &str, target: f64) -> Result<u8, Failure> {
    use probity_core::guarded::columns_of;
    use probity_engine::stored;
    let store = args.store.open()?;
    let id = args.store.resolve(&store, run)?;
    let loaded = stored::load(&store, id).map_err(|e| Failure::usage(e.to_string()))?;
    let inputs = store
        .inputs(id)
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    let k = loaded.record.checks.len();
    let columns: Vec<usize> = loaded
        .record
        .settings
        .retry
        .as_ref()
        .map(|r| r.columns.clone())
        .unwrap_or_else(|| (0..k).collect());
    let tensor = columns_of(&loaded.tensor, &columns);
    let plan = RetryPlan::from_tensor(&tensor, &loaded.record.settings.analysis);
    let checks = columns
        .iter()
        .filter_map(|&c| loaded.record.checks.get(c).map(|c| c.name.clone()))
        .collect();
    let (n, m, _) = loaded.tensor.shape();
    // Only a plan with measured joint rates shows the guarded system.
    let guarded = match plan.empirical {
        Some(_) => stored::retry_check(&store, &loaded.record, &loaded.tensor)
            .map_err(|e| Failure::incomplete(e.to_string()))?,
        None => None,
    };
    let report = PlanReport {
        plan,
        target,
        run: Some(PlanRun {
            run: crate::run_info::run_info(&loaded.record),
            shape: (n, m),
            checks,
            input_labels: inputs.into_iter().map(|i| i.id).collect(),
            analysis: loaded.record.settings.analysis,
            guarded,
        }),
    };
    print!("{}", render(&report, Format::Text, false));
    Ok(0)
}
