//! `probity plan`: the retry plan of paper §4.2 from assumed pass rates
//! (`--rates`) or from a stored run (`probity plan RUN`: global and per
//! input, §4.2.3); with minimums (`--thresholds`, or a run's with
//! `--sequential`) also the sample size: the fixed N × M for a target
//! power and the expected cost of a sequential run (the core simulates
//! it). This computes the plan; probity-report shows it (the `plan`
//! document, as text).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::retry::{check_target, RetryPlan};
use probity_report::{
    render, Format, JudgedSizing, PlanReport, PlanRun, SampleSizeCheck, SampleSizePlan,
};

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
    /// Target probability that some attempt passes every check (the
    /// retry target of §4.2).
    #[arg(long, default_value_t = 0.99)]
    target: f64,
    /// The retry target's old name, refused with a message naming
    /// `--target`: everywhere else `--confidence` is an interval's.
    #[arg(long = "confidence", hide = true, allow_hyphen_values = true)]
    old_confidence: Option<String>,
    /// Minimum success rates, one per rate (e.g. 0.95,0.9): also plan the
    /// sample size — the fixed N × M for --power and the cost of a
    /// sequential run.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    thresholds: Vec<f64>,
    /// With a stored run: plan the sample size from its rates, minimums,
    /// M and intra-class correlation.
    #[arg(long)]
    sequential: bool,
    /// Target power of the fixed-size run (sample size).
    #[arg(long, default_value_t = 0.8)]
    power: f64,
    /// Confidence of the test (sample size; a run's own by default).
    #[arg(long)]
    test_confidence: Option<f64>,
    /// Outputs per input M (sample size; a run's own by default, else 10).
    #[arg(long)]
    outputs: Option<u64>,
    /// Intra-class correlation of outputs of one input (sample size; a
    /// run's largest estimated by default, else 0.1).
    #[arg(long)]
    icc: Option<f64>,
    /// The sequential run's budget in inputs (default: the smallest of
    /// 1, 1.25, 1.5, 2, 2.5, 3, 4 or 6 × the fixed-size run's N at which
    /// it settles every verdict with the target power).
    #[arg(long)]
    inputs: Option<u64>,
    /// Simulated runs: of the fixed-size run at each size tried (its N
    /// for the target power), and of the sequential run.
    #[arg(long, default_value_t = 500)]
    sims: u64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// With a stored run: attempts per class of inputs, the classes being
    /// the values of this input field (paper §4.2.5), from each class's own
    /// measured joint rate.
    #[arg(long, value_name = "FIELD", requires = "run")]
    by: Option<String>,
    /// With --by: write the classes' attempts here as TOML (what
    /// `probity serve` reads as `classes`).
    #[arg(long, value_name = "FILE", requires = "by")]
    out: Option<std::path::PathBuf>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: &PlanArgs) -> Result<u8, Failure> {
    if let Some(old) = &args.old_confidence {
        return Err(Failure::usage(format!(
            "--confidence {old}: the retry target of `probity plan` is now --target (e.g. --target 0.99); --confidence means an interval's confidence everywhere else (the sample size's is --test-confidence)"
        )));
    }
    if let Some(run) = &args.run {
        let target =
            check_target(args.target).map_err(|e| Failure::usage(format!("--target: {e}")))?;
        return from_run(args, run, target);
    }
    let plan =
        RetryPlan::from_rates(&args.rates).map_err(|e| Failure::usage(format!("--rates: {e}")))?;
    let target = check_target(args.target).map_err(|e| Failure::usage(format!("--target: {e}")))?;
    let sample_size = if args.thresholds.is_empty() {
        None
    } else {
        if args.thresholds.len() != args.rates.len() {
            return Err(Failure::usage(format!(
                "--thresholds: {} minimums for {} rates; give one per rate",
                args.thresholds.len(),
                args.rates.len()
            )));
        }
        let checks: Vec<SampleSizeCheck> = args
            .rates
            .iter()
            .zip(&args.thresholds)
            .enumerate()
            .map(|(k, (&rate, &threshold))| SampleSizeCheck {
                name: format!("check {}", k + 1),
                rate,
                threshold,
                fixed_inputs: None,
                judged: None,
            })
            .collect();
        Some(sample_size(
            args,
            checks,
            args.outputs.unwrap_or(10),
            args.icc.unwrap_or(0.1),
            args.test_confidence.unwrap_or(0.95),
        )?)
    };
    let report = PlanReport {
        plan,
        target,
        run: None,
        sample_size,
    };
    crate::stdout::out(&render(&report, Format::Text, false));
    Ok(0)
}

/// The plan of a stored run, over the checks that decide whether an
/// attempt passes (its retry policy's, or every check), with the guarded
/// measurement when the run had a retry policy.
fn from_run(args: &PlanArgs, run: &str, target: f64) -> Result<u8, Failure> {
    use probity_core::guarded::columns_of;
    use probity_engine::run::stored;
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
    let plan = RetryPlan::from_tensor(&tensor, &loaded.record.settings.analysis)
        .map_err(|e| Failure::usage(format!("run {run}: {e}")))?;
    if let Some(field) = &args.by {
        return by_class(args, field, id, &plan, &inputs, &loaded.record, target);
    }
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
    let sample_size = if args.sequential || !args.thresholds.is_empty() {
        let s = &loaded.summary;
        if !args.thresholds.is_empty() && args.thresholds.len() != s.checks.len() {
            return Err(Failure::usage(format!(
                "--thresholds: {} minimums for the run's {} checks; give one per check",
                args.thresholds.len(),
                s.checks.len()
            )));
        }
        let checks: Vec<SampleSizeCheck> = s
            .checks
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let threshold = args
                    .thresholds
                    .get(k)
                    .copied()
                    .unwrap_or(c.info.minimum_success_percentage);
                let (rate, judged) = judged_rate(c);
                SampleSizeCheck {
                    name: c.info.name.clone(),
                    rate,
                    threshold,
                    fixed_inputs: None,
                    judged,
                }
            })
            .collect();
        // ρ = (deff − 1)/(M − 1), the largest over the checks.
        let icc = s
            .checks
            .iter()
            .filter(|_| m > 1)
            .map(|c| ((c.rate.design_effect - 1.0) / (m as f64 - 1.0)).clamp(0.0, 1.0))
            .filter(|r| r.is_finite())
            .fold(0.0, f64::max);
        Some(sample_size(
            args,
            checks,
            args.outputs.unwrap_or(m as u64),
            args.icc.unwrap_or(icc),
            args.test_confidence
                .unwrap_or(loaded.record.settings.analysis.confidence),
        )?)
    } else {
        None
    };
    let report = PlanReport {
        plan,
        target,
        sample_size,
        run: Some(PlanRun {
            run: crate::run_info::run_info(&loaded.record),
            shape: (n, m),
            checks,
            input_labels: inputs.into_iter().map(|i| i.id).collect(),
            analysis: loaded.record.settings.analysis,
            guarded,
        }),
    };
    crate::stdout::out(&render(&report, Format::Text, false));
    Ok(0)
}

/// The most samples (inputs × outputs) a plan's simulation runs.
const MAX_SIMULATED_SAMPLES: u64 = 10_000_000;

/// A stored check's rate for a plan: a calibrated verifier's corrected
/// rate θ̂ (the judge's own pass rate carries its errors), with how it was
/// taken; else the measured rate.
fn judged_rate(c: &probity_core::CheckSummary) -> (f64, Option<JudgedSizing>) {
    use probity_core::stats::Calibrated;
    match &c.calibration {
        None => (c.rate.estimate, None),
        Some(Calibrated::Corrected(r)) => (
            r.estimate,
            Some(JudgedSizing::Corrected {
                raw: r.raw,
                labels_only: r.labels_only,
            }),
        ),
        Some(Calibrated::Unusable { problem, .. }) => (
            c.rate.estimate,
            Some(JudgedSizing::Uncorrected {
                why: problem.to_string(),
            }),
        ),
    }
}

/// The sample size's own arguments in range: `--icc` in [0, 1), `--power`
/// in (0, 1), M = `--outputs` in 1 ..= [`MAX_SIMULATED_SAMPLES`], `--sims`
/// in 1 ..= 100,000.
fn check_size_args(args: &PlanArgs, m: u64, icc: f64) -> Result<(), Failure> {
    if !(0.0..1.0).contains(&icc) {
        return Err(Failure::usage(format!(
            "--icc: {icc} must be at least 0 and below 1"
        )));
    }
    if !(args.power > 0.0 && args.power < 1.0) {
        return Err(Failure::usage(format!(
            "--power: {} must be strictly between 0 and 1",
            args.power
        )));
    }
    if m == 0 {
        return Err(Failure::usage("--outputs must be at least 1"));
    }
    if m > MAX_SIMULATED_SAMPLES {
        return Err(Failure::usage(format!(
            "--outputs: {m} outputs per input is more than the {MAX_SIMULATED_SAMPLES} samples a plan simulates"
        )));
    }
    if args.sims == 0 || args.sims > 100_000 {
        return Err(Failure::usage("--sims must be between 1 and 100000"));
    }
    Ok(())
}

/// Why no fixed size reaches the power: the first check without one.
fn no_fixed_size(planned: &[SampleSizeCheck]) -> String {
    planned
        .iter()
        .find(|c| c.fixed_inputs.is_none())
        .map(|c| match &c.judged {
            Some(j) if j.labels_hold(c.threshold) => format!(
                "{}: the judge's labels alone leave its minimum possible (label more outputs)",
                c.name
            ),
            _ => format!("{}: its rate equals its minimum", c.name),
        })
        .unwrap_or_default()
}

/// The sample-size plan of `checks` (name, rate, minimum, how a judged
/// one was taken; their `fixed_inputs` filled here): each check's
/// fixed-size inputs for `--power`, and the cost of a sequential run with
/// a budget of `--inputs` (or the fixed N) inputs, simulated.
fn sample_size(
    args: &PlanArgs,
    checks: Vec<SampleSizeCheck>,
    m: u64,
    icc: f64,
    confidence: f64,
) -> Result<SampleSizePlan, Failure> {
    use probity_core::simulate::plan::{
        budget_for_power, fixed_inputs_for_power, sequential_cost, BUDGET_MULTIPLES,
    };
    use probity_core::simulate::SimDesign;
    let usage = |what: &str, e: &dyn std::fmt::Display| Failure::usage(format!("{what}: {e}"));
    check_size_args(args, m, icc)?;
    let mut planned = checks;
    for c in &mut planned {
        // The fixed run's size by simulation under the interval and
        // verdict the run uses (issue 35 item 3), with the plan's runs and
        // seed; none when a judge's labels alone leave the minimum
        // possible (only more labels settle it).
        if c.judged
            .as_ref()
            .is_some_and(|j| j.labels_hold(c.threshold))
        {
            continue;
        }
        c.fixed_inputs = fixed_inputs_for_power(
            c.rate,
            c.threshold,
            m,
            icc,
            confidence,
            args.power,
            args.sims,
            args.seed,
        )
        .map_err(|e| usage(&c.name, &e))?;
    }
    let fixed_inputs: Option<u64> = planned
        .iter()
        .map(|c| c.fixed_inputs)
        .collect::<Option<Vec<u64>>>()
        .map(|v| v.into_iter().max().unwrap_or(0));
    let rates: Vec<f64> = planned.iter().map(|c| c.rate).collect();
    let thresholds: Vec<f64> = planned.iter().map(|c| c.threshold).collect();
    // The budget's samples, said without overflowing: a product past u64
    // is said to be so, never a saturated figure.
    let samples = |n: u64, times: u64| match n.checked_mul(times).and_then(|x| x.checked_mul(m)) {
        Some(p) => format!("{p} samples"),
        None => "more samples than a 64-bit count holds".to_string(),
    };
    let too_many = |n: u64, given: bool| {
        let (what, fix) = if given {
            (
                format!("--inputs: the budget {n} × {m} outputs = {}", samples(n, 1)),
                "give fewer --inputs or --outputs",
            )
        } else {
            (
                format!(
                    "the sequential budget (up to 6 × the fixed-size run's {} inputs, × {m} outputs) = {}",
                    // The core's N saturates there: that many or more.
                    if n == u64::MAX { "2^64 or more".to_string() } else { n.to_string() },
                    samples(n, 6)
                ),
                "give a budget with --inputs, fewer --outputs, or rates further from their minimums",
            )
        };
        Failure::usage(format!(
            "{what}: more than the {MAX_SIMULATED_SAMPLES} a plan simulates; {fix}"
        ))
    };
    let design = |inputs: u64| SimDesign {
        inputs,
        m,
        icc,
        confidence,
        concurrency: 16,
        futility: true,
    };
    let sim_err = |e: probity_core::stats::StatsError| usage("sample size", &e);
    let (budget_inputs, cost, budget_found) = match (args.inputs, fixed_inputs) {
        (Some(0), _) => return Err(Failure::usage("--inputs must be at least 1")),
        (Some(n), _) => {
            if n.saturating_mul(m) > MAX_SIMULATED_SAMPLES {
                return Err(too_many(n, true));
            }
            let cost = sequential_cost(&rates, &thresholds, &design(n), args.sims, args.seed)
                .map_err(sim_err)?;
            (n, cost, None)
        }
        (None, Some(n)) => {
            if n.saturating_mul(m).saturating_mul(6) > MAX_SIMULATED_SAMPLES {
                return Err(too_many(n, false));
            }
            match budget_for_power(
                &rates,
                &thresholds,
                &design(n),
                n,
                args.power,
                args.sims,
                args.seed,
            )
            .map_err(sim_err)?
            {
                Some((budget, cost)) => (budget, cost, Some(true)),
                None => {
                    let last =
                        (n as f64 * BUDGET_MULTIPLES[BUDGET_MULTIPLES.len() - 1]).ceil() as u64;
                    let cost =
                        sequential_cost(&rates, &thresholds, &design(last), args.sims, args.seed)
                            .map_err(sim_err)?;
                    (last, cost, Some(false))
                }
            }
        }
        (None, None) => {
            return Err(Failure::usage(format!(
                "--inputs: {}, so no fixed size reaches the power; give the sequential run's budget with --inputs",
                no_fixed_size(&planned)
            )));
        }
    };
    Ok(SampleSizePlan {
        checks: planned,
        outputs_per_input: m,
        confidence,
        power: args.power,
        icc,
        fixed_inputs,
        budget_inputs,
        budget_found,
        cost,
        seed: args.seed,
    })
}

/// `probity plan RUN --by FIELD`: each class's joint rate, interval and
/// attempts, printed and, with `--out`, written as the TOML `probity
/// serve` reads (`classes = "FILE"`).
fn by_class(
    args: &PlanArgs,
    field: &str,
    id: i64,
    plan: &RetryPlan,
    inputs: &[probity_core::Input],
    record: &probity_engine::store::RunRecord,
    target: f64,
) -> Result<u8, Failure> {
    use probity_report::sanitize::terminal_line;
    let Some(joint) = &plan.empirical else {
        return Err(Failure::usage(format!(
            "run {id}: no output was judged by every deciding check, so no class has a rate"
        )));
    };
    let mut missing = 0;
    let classes: Vec<String> = inputs
        .iter()
        .map(|i| match i.fields.get(field) {
            Some(serde_json::Value::String(s)) => s,
            Some(serde_json::Value::Null) | None => {
                missing += 1;
                String::new()
            }
            Some(other) => other.to_string(),
        })
        .collect();
    if missing == inputs.len() {
        let mut known: Vec<String> = inputs.iter().flat_map(|i| i.fields.keys()).collect();
        known.sort_unstable();
        known.dedup();
        return Err(Failure::usage(format!(
            "--by {field}: no input of run {id} has that field (its inputs' fields: {})",
            known.join(", ")
        )));
    }
    let by = probity_core::retry_class::plan_by_class(
        joint,
        &classes,
        target,
        &record.settings.analysis,
    );
    let show = |m: Option<u32>| m.map_or("unreachable".to_string(), |m| m.to_string());
    let mut text = format!(
        "attempts per class of `{}` for {:.1}% of requests to publish (run {id}, §4.2.5)\n",
        terminal_line(field, 40),
        100.0 * target
    );
    text.push_str(&format!(
        "  {:<24} {:>6}  {:>22}  {:>8}  {:>16}\n",
        "class", "inputs", "joint pass rate", "attempts", "at lower bound"
    ));
    for c in &by {
        let name = if c.class.is_empty() {
            "(no value)"
        } else {
            &c.class
        };
        text.push_str(&format!(
            "  {:<24} {:>6}  {:>5.1}% [{:>5.1}, {:>5.1}]  {:>8}  {:>16}\n",
            terminal_line(name, 24),
            c.inputs,
            100.0 * c.rate.estimate,
            100.0 * c.rate.interval.lower,
            100.0 * c.rate.interval.upper,
            show(c.attempts),
            show(c.attempts_at_lower)
        ));
    }
    crate::stdout::out(&text);
    if let Some(path) = &args.out {
        let mut attempts = toml::Table::new();
        for c in by.iter().filter(|c| !c.class.is_empty()) {
            if let Some(m) = c.attempts_at_lower.or(c.attempts) {
                attempts.insert(c.class.clone(), toml::Value::Integer(i64::from(m)));
            }
        }
        let mut file = toml::Table::new();
        file.insert("field".into(), toml::Value::String(field.to_string()));
        file.insert("attempts".into(), toml::Value::Table(attempts));
        let body = toml::to_string(&file).map_err(|e| Failure::incomplete(e.to_string()))?;
        let text = format!(
            "# Attempts per class of `{field}` from run {id} (`probity plan {id} --by {field}`):\n# each class's m at its joint rate's lower bound, for {:.1}% to publish.\n{body}",
            100.0 * target
        );
        crate::output::write(path, &text)?;
        probity_engine::stderr_line!(
            "wrote {} (use it as `classes` in a probity serve file)",
            path.display()
        );
    }
    Ok(0)
}
