//! `probity run`: the main job.

use crate::failure::{verdict_code, Failure};
use crate::output::{report_for, OutputArgs};
use crate::run_display::{check_pace, print_causes, Display};
use crate::store_arg::StoreArg;
use clap::Args;
use probity_engine::checks::calibration::LabelAnswers;
use probity_engine::config::concurrency::Concurrency;
use probity_engine::config::set::{self, Set};
use probity_engine::config::variant;
use probity_engine::config::{Config, Overrides};
use probity_engine::run::compare::RunTensor;
use probity_engine::run::stored::StoredRun;
use probity_engine::store::{masked_url, RunStatus};
use probity_engine::{run_with, Control, ErrorClass, Progress, RunError, Sink};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// The configuration file.
    #[arg(default_value = "probity.toml")]
    config: PathBuf,
    /// Continue the latest unfinished run of this configuration (an error
    /// when there is none).
    #[arg(long, conflicts_with = "reuse")]
    resume: bool,
    /// Reuse the stored outputs of this run (an id, or a name: its latest
    /// run) for identical requests instead of calling the system; the
    /// report says how many. Without it every sample is a fresh call.
    #[arg(long, value_name = "RUN")]
    reuse: Option<String>,
    /// Override [experiment] outputs_per_input (M).
    #[arg(long, value_name = "M")]
    outputs: Option<usize>,
    /// Override [experiment] concurrency: a number, or `auto` (found
    /// while the run goes: docs/providers.md).
    #[arg(long, value_name = "N|auto", value_parser = parse_concurrency)]
    concurrency: Option<Concurrency>,
    /// Compare with this baseline run (an id, or a name: the latest complete
    /// run of that name other than this one); exit 1 on a significant
    /// regression of any check. Without a stored baseline of that name the
    /// comparison is skipped with a notice.
    #[arg(long, value_name = "RUN")]
    baseline: Option<String>,
    /// Sequential testing for this run (as `[experiment] sequential =
    /// true`): N × M is the budget; stop as soon as every check's verdict
    /// is established (docs/config.md, Sequential testing).
    #[arg(long)]
    sequential: bool,
    /// Share the run with other processes: `probity work` with the same
    /// file and store, on any machine, takes inputs from it (docs/store.md).
    #[arg(long, conflicts_with_all = ["resume", "reuse", "sequential"])]
    shared: bool,
    /// Override one field of the configuration file, as a dotted path:
    /// `--set system.model=gpt-4o --set prompt.system="Be brief."`
    /// (repeatable; VALUE is a TOML value or else a string). The run
    /// stores and hashes the configuration as overridden.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    sets: Vec<Set>,
    /// With `[[variant]]` tables: run only this variant (repeatable; the
    /// reference is then the file's reference if chosen, else the first
    /// chosen).
    #[arg(long = "variant", value_name = "NAME")]
    variants: Vec<String>,
    /// With `[[variant]]` tables: compare every pair of variants rather
    /// than each against the reference (Holm across all pairs × checks).
    #[arg(long)]
    all_pairs: bool,
    /// Ask every calibrated verifier's judge its whole labelled set again,
    /// replacing the verdicts the store keeps for the same questions (the
    /// judge may answer differently behind the same model name). Without
    /// it, kept verdicts are read, not asked.
    #[arg(long)]
    fresh_labels: bool,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
    /// `probity work`: the run to join (`Some(None)`: the latest
    /// unfinished run of the file).
    #[arg(skip)]
    join: Option<Option<String>>,
    /// `probity work --wait`: wait for a run to join (`Some(None)`: as
    /// long as it takes).
    #[arg(skip)]
    wait: Option<Option<Duration>>,
}

/// `probity work`: one more worker for a shared run.
#[derive(Args)]
pub struct WorkArgs {
    /// The configuration file the run was made with.
    #[arg(default_value = "probity.toml")]
    config: PathBuf,
    /// The run to work on (an id, or a name: its latest run); by default
    /// the latest unfinished run of the file.
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
    /// Override [experiment] concurrency (this worker's calls at once; a
    /// number, or `auto`).
    #[arg(long, value_name = "N|auto", value_parser = parse_concurrency)]
    concurrency: Option<Concurrency>,
    /// The same --outputs the run was made with, if any.
    #[arg(long, value_name = "M")]
    outputs: Option<usize>,
    /// The same `--set` overrides the run was made with (a worker must
    /// ask what the run asks).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    sets: Vec<Set>,
    /// Wait for a shared run of this configuration to appear (machines
    /// started together need no order): as long as it takes, or at most
    /// DURATION (`90s`, `10m`, `2h`; a bare number is seconds). A run of
    /// it completed while waiting ends the worker with 0.
    #[arg(long, value_name = "DURATION", num_args = 0..=1, require_equals = true, value_parser = parse_wait)]
    wait: Option<Option<Duration>>,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

/// `--wait=DURATION`: `N`, `Ns`, `Nm` or `Nh` (a whole number).
fn parse_wait(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (n, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c.to_ascii_lowercase()),
        _ => (s, 's'),
    };
    let per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        _ => 0,
    };
    match n.parse::<u64>() {
        Ok(n) if per > 0 => Ok(Duration::from_secs(n.saturating_mul(per))),
        _ => Err(format!(
            "{s:?} is not a duration: expected a whole number of seconds, or one followed by s, m or h (90s, 10m, 2h)"
        )),
    }
}

/// Work on a shared run (`probity run --shared`) from this process: claim
/// its inputs a batch at a time, sample and check them, store them; the
/// worker that stores the last sample reports the run's verdict.
pub async fn work(args: WorkArgs) -> Result<u8, Failure> {
    run(RunArgs {
        config: args.config,
        resume: false,
        reuse: None,
        outputs: args.outputs,
        concurrency: args.concurrency,
        baseline: None,
        sequential: false,
        sets: args.sets,
        variants: Vec::new(),
        all_pairs: false,
        // A worker joins a run whose judges were measured when it began.
        fresh_labels: false,
        shared: true,
        quiet: args.quiet,
        store: args.store,
        out: args.out,
        join: Some(args.run),
        wait: args.wait,
    })
    .await
}

/// The report of the run `outcome` just stored as `record`: from the
/// tensor and summary the run built, the rest read from the store.
fn outcome_report(
    store: &probity_engine::store::Store,
    record: probity_engine::store::RunRecord,
    outcome: probity_engine::RunOutcome,
) -> Result<probity_report::RunReport, Failure> {
    report_for(
        store,
        StoredRun {
            record,
            tensor: outcome.tensor,
            summary: outcome.summary,
            causes: Some(outcome.causes),
            live: None,
        },
    )
}

/// A configuration error with `--set`s given: the text read was the file
/// as the sets rewrote it, so a line and its snippet would point at text
/// the user never wrote. When the file alone has an error, that one (with
/// the file's own lines) is the message; when it has none, the sets are
/// named instead, with the error's own words.
fn blame_sets(error: &str, path: &Path, sets: &[Set], overrides: &Overrides) -> String {
    if sets.is_empty() {
        return error.to_string();
    }
    let Ok(alone) = text_of(path, &[]) else {
        return error.to_string();
    };
    if let Err(e) = Config::from_str_with(&alone, path, overrides) {
        return e.to_string();
    }
    let named: Vec<String> = sets
        .iter()
        // A value may be a URL with a password (`store.url`).
        .map(|s| {
            format!(
                "--set {}={}",
                s.path.join("."),
                masked_url(&s.value.to_string())
            )
        })
        .collect();
    // The message without the rewritten text's position and snippet.
    let why: Vec<&str> = error
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with('|')
                || t.split_once(" |")
                    .is_some_and(|(n, _)| n.trim().parse::<u64>().is_ok())
                || t.contains("TOML parse error at line"))
        })
        .collect();
    format!("{}: {}", named.join(", "), why.join(" ").trim())
}

fn parse_set(arg: &str) -> Result<Set, String> {
    Set::parse(arg)
}

/// The configuration file's text at `path` with the `--set` fields
/// replaced.
fn text_of(path: &Path, sets: &[Set]) -> Result<String, Failure> {
    crate::protected::protect("the configuration", path);
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))?;
    let text = text.trim_start_matches('\u{feff}');
    if sets.is_empty() {
        return Ok(text.to_string());
    }
    set::apply(text, sets).map_err(Failure::usage)
}

/// `--outputs` and `--concurrency` as the settings they replace, checked
/// and named as the flags, not as the file's fields.
fn overrides(args: &RunArgs) -> Result<Overrides, Failure> {
    use probity_engine::bounds::{within, MAX_CONCURRENCY, MAX_OUTPUTS_PER_INPUT};
    let fixed = match args.concurrency {
        Some(Concurrency::Fixed(n)) => Some(n),
        _ => None,
    };
    for (flag, value, most) in [
        ("--outputs", args.outputs, MAX_OUTPUTS_PER_INPUT),
        ("--concurrency", fixed, MAX_CONCURRENCY),
    ] {
        if let Some(v) = value {
            within(flag, v, most).map_err(Failure::usage)?;
        }
    }
    // The flags replace the file's settings before any check of its size.
    Ok(Overrides {
        outputs_per_input: args.outputs,
        concurrency: args.concurrency,
    })
}

/// `--concurrency`: `auto`, or a count (its bounds are checked with
/// the other flags', naming the flag).
fn parse_concurrency(s: &str) -> Result<Concurrency, String> {
    match s.trim() {
        "auto" => Ok(Concurrency::Auto),
        n => n
            .parse::<usize>()
            .map(Concurrency::Fixed)
            .map_err(|_| format!("a number of calls at once, or `auto`, not `{s}`")),
    }
}

/// The configuration of a run of one system (no `[[variant]]` tables),
/// `text` being the file with its `--set`s applied; the file and its
/// inputs are protected from the run's outputs.
fn load(args: &RunArgs, text: &str, overrides: &Overrides) -> Result<Config, Failure> {
    let config = Config::from_str_with(text, &args.config, overrides).map_err(|e| {
        Failure::usage(blame_sets(
            &e.to_string(),
            &args.config,
            &args.sets,
            overrides,
        ))
    })?;
    if config.name.contains('/') {
        return Err(Failure::usage(format!(
            "{}: {}",
            args.config.display(),
            variant::slash_in_name(&config.name)
        )));
    }
    if let Some(inputs) = &config.file.experiment.inputs {
        let base = args.config.parent().unwrap_or(Path::new("."));
        crate::protected::protect("the inputs file", &base.join(inputs));
    }
    Ok(config)
}

pub async fn run(args: RunArgs) -> Result<u8, Failure> {
    let overrides = overrides(&args)?;
    let text = text_of(&args.config, &args.sets)?;
    if let Some(variants) =
        variant::parse(&text, &args.config).map_err(|e| Failure::usage(e.to_string()))?
    {
        if args.shared || args.join.is_some() {
            return Err(Failure::usage(format!(
                "{}: a file with [[variant]] tables cannot be run shared (`--shared`, `probity work`); run one variant's file instead",
                args.config.display()
            )));
        }
        if args.reuse.is_some() || args.baseline.is_some() {
            return Err(Failure::usage(
                "--reuse and --baseline do not apply to a variants run: its variants are compared with each other",
            ));
        }
        return crate::variants::run(
            crate::variants::VariantsArgs {
                config: &args.config,
                names: &args.variants,
                all_pairs: args.all_pairs,
                resume: args.resume,
                sequential: args.sequential,
                label_answers: LabelAnswers::fresh(args.fresh_labels),
                quiet: args.quiet,
                store: &args.store,
                out: &args.out,
            },
            variants,
            &overrides,
        )
        .await;
    }
    if !args.variants.is_empty() || args.all_pairs {
        return Err(Failure::usage(format!(
            "--variant and --all-pairs need [[variant]] tables, and {} has none",
            args.config.display()
        )));
    }
    let config = load(&args, &text, &overrides)?;
    // The configuration's hash and store are all that is needed of it
    // after this.
    let hash = config.hash.clone();
    let store_table = config.file.store.clone();
    let mut experiment = config
        .into_experiment()
        .map_err(|e| Failure::usage(e.to_string()))?;
    if args.sequential && experiment.sequential.is_none() {
        experiment = experiment.sequential();
    }
    let total = (experiment.inputs.len() * experiment.outputs_per_input) as u64;
    let mut store = args.store.open_for(store_table.as_ref())?;
    // Before any call: a report aimed at the store, the file or its inputs
    // is refused now, not after the run was paid for.
    args.out.check_targets()?;
    let reuse = match &args.reuse {
        Some(spec) => Some(args.store.resolve(&store, spec)?),
        None => None,
    };
    // A baseline given by id must exist before the run is paid for (a
    // name may have no run yet: the first run of a branch).
    if let Some(spec) = args
        .baseline
        .as_deref()
        .filter(|s| s.parse::<i64>().is_ok())
    {
        args.store.resolve(&store, spec).map_err(|f| Failure {
            message: format!("--baseline {spec}: {}", f.message),
            ..f
        })?;
    }
    let Some((join, left)) = samples_left(&args, &store, &hash, &experiment.name, total)? else {
        // `work --wait`: the run waited for was completed by others.
        return Ok(0);
    };
    check_pace(&args.config, &experiment, left)?;

    let cancel = crate::signals::cancel_on_stop();

    let mut display = Display::new(args.quiet, &experiment);
    let outcome = run_with(
        &experiment,
        Sink::Store(&mut store),
        Control {
            resume: args.resume,
            cancel: Some(cancel),
            on_progress: Some(Box::new(|p: &Progress| display.update(p))),
            reuse,
            shared: args.shared,
            join,
            label_answers: LabelAnswers::fresh(args.fresh_labels),
            // Before the outputs: a judge whose labels cannot make a pass
            // reachable is said at once, not after the run is paid for.
            on_labels: Some(Box::new(|needs| {
                for (check, n) in needs {
                    if let Some(line) = probity_report::labels_before_run(check, n) {
                        probity_engine::stderr_line!("warning: {line}");
                    }
                }
            })),
        },
    )
    .await
    .map_err(|e| match (e.class(), e) {
        // The store failed mid-run: the reports are made from it.
        (ErrorClass::Store, RunError::Store(e)) => {
            Failure::incomplete(store_lost(&e, &args.out.files()))
        }
        // Fix the command or wait (another process holds the run), or a
        // run that could not complete.
        (class, e) => Failure {
            code: class.exit_code(),
            message: e.to_string(),
        },
    })?;
    display.finish();
    // The report reads the run back from the store: the inputs in memory
    // (hundreds of megabytes for a million) are not needed beside it.
    drop(display);
    drop(experiment);
    conclude(&args, &store, outcome, total)
}

/// The message of a run stopped by its store: the cause, what became of
/// the reports asked for (`files`), and how to go on.
fn store_lost(e: &probity_engine::store::StoreError, files: &[&Path]) -> String {
    let mut message = format!("{e}\nthe run stopped: its samples could not be stored");
    if !files.is_empty() {
        let named: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        message.push_str(&format!(
            "; no report was written ({}): reports are made from the store",
            named.join(", ")
        ));
    }
    message.push_str(
        ". What was committed before is kept: `probity run --resume` continues once the store is back",
    );
    message
}

/// For `probity work` (`join`) and `--resume`: the run to continue and the
/// samples of `total` still to take; a usage error when there is none;
/// `None` when `work --wait` saw the run it waited for completed by others.
/// `hash` is the configuration's as overridden, `name` the experiment's.
fn samples_left(
    args: &RunArgs,
    store: &probity_engine::store::Store,
    hash: &str,
    name: &str,
    total: u64,
) -> Result<Option<(Option<i64>, u64)>, Failure> {
    let mut left = total;
    let join = match &args.join {
        None => None,
        Some(Some(spec)) => Some(args.store.resolve(store, spec)?),
        Some(None) => match run_to_join(args, store, hash, name)? {
            Some(id) => Some(id),
            None => return Ok(None),
        },
    };
    if let Some(id) = join {
        let stored = store
            .sample_count(id)
            .map_err(|e| Failure::incomplete(e.to_string()))?;
        probity_engine::stderr_line!("working on run {id}: {stored} of {total} samples stored");
        left = total.saturating_sub(stored as u64);
    }
    if args.resume {
        match store
            .resumable_run(hash)
            .map_err(|e| Failure::incomplete(e.to_string()))?
        {
            Some(id) => {
                let stored = store
                    .sample_count(id)
                    .map_err(|e| Failure::incomplete(e.to_string()))?;
                probity_engine::stderr_line!(
                    "resuming run {id}: {stored} of {total} samples stored"
                );
                left = total.saturating_sub(stored as u64);
            }
            None => {
                // The configuration as overridden is what is hashed: an
                // unfinished run of this name with another hash was made
                // with other settings (a changed file, other --set flags).
                let other = store
                    .latest_named(name)
                    .ok()
                    .flatten()
                    .and_then(|id| store.run(id).ok())
                    .filter(|r| r.status != RunStatus::Complete);
                let what = match other {
                    Some(r) => format!(
                        "holds no unfinished run of {} as configured now; run {} of {:?} is unfinished but was started with another configuration (config {}): resume it with the file and --set flags it was started with, or run without --resume to start a new one",
                        args.config.display(),
                        r.id,
                        name,
                        r.config_hash.chars().take(12).collect::<String>()
                    ),
                    None => format!(
                        "holds no unfinished run of {} (run without --resume to start one)",
                        args.config.display()
                    ),
                };
                return Err(Failure::usage(format!(
                    "nothing to resume: {} {what}",
                    store.location()
                )));
            }
        }
    }

    Ok(Some((join, left)))
}

/// How often `probity work --wait` looks for the run it waits for: a
/// worker started with its run's creator joins within this of the run's
/// first claims (it used to look every second, and a fleet of workers on a
/// short run lost most of a second each; bench/store.sh part 3). One small
/// read per look.
const WAIT_POLL: Duration = Duration::from_millis(250);

/// `probity work` without `--run`: the latest unfinished run of the
/// configuration (`hash`); with `--wait`, looked for every [`WAIT_POLL`] until
/// one appears (`None`: a run of it made meanwhile is already complete) or
/// the wait is over.
fn run_to_join(
    args: &RunArgs,
    store: &probity_engine::store::Store,
    hash: &str,
    name: &str,
) -> Result<Option<i64>, Failure> {
    let failed = |e: probity_engine::store::StoreError| Failure::incomplete(e.to_string());
    // The newest run of this configuration, and whether it is complete.
    let newest = || -> Result<Option<(i64, bool)>, Failure> {
        Ok(store
            .runs(Some(name))
            .map_err(failed)?
            .into_iter()
            .filter(|r| r.config_hash == hash)
            .max_by_key(|r| r.id)
            .map(|r| (r.id, r.status == RunStatus::Complete)))
    };
    let before = newest()?;
    let started = std::time::Instant::now();
    let mut announced = false;
    loop {
        if let Some(id) = store.resumable_run(hash).map_err(failed)? {
            // Waiting, a run is joined once its inputs are claimable (its
            // creator makes the claims with its first).
            if args.wait.is_none() || store.open_inputs(id).map_err(failed)?.0 > 0 {
                return Ok(Some(id));
            }
        }
        let nothing = || {
            format!(
                "nothing to work on: {} holds no unfinished run of {} (start one with `probity run --shared`)",
                store.location(),
                args.config.display()
            )
        };
        let Some(limit) = args.wait else {
            return Err(Failure::usage(nothing()));
        };
        let before_id = before.map(|(id, _)| id);
        if let Some((done, true)) = newest()?.filter(|&(id, _)| Some(id) != before_id) {
            probity_engine::stderr_line!(
                "run {done} of {} is complete: nothing left to work on",
                args.config.display()
            );
            return Ok(None);
        }
        if limit.is_some_and(|l| started.elapsed() >= l) {
            return Err(Failure::usage(format!(
                "{} after waiting {}s",
                nothing(),
                started.elapsed().as_secs()
            )));
        }
        if !announced && !args.quiet {
            probity_engine::stderr_line!(
                "waiting for a shared run of {} in {}",
                args.config.display(),
                store.location()
            );
        }
        announced = true;
        std::thread::sleep(WAIT_POLL);
    }
}

/// The run's report and exit once it ended: a stopped run's error (with the
/// documents CI asked for), else the report with its comparison, and the
/// verdict's code, or the error of a broken check or an incomplete run.
fn conclude(
    args: &RunArgs,
    store: &probity_engine::store::Store,
    outcome: probity_engine::RunOutcome,
    total: u64,
) -> Result<u8, Failure> {
    let run_id = outcome.stored_id();
    if let Some(halt) = outcome.halt.clone() {
        print_causes(&outcome);
        // CI still gets its JUnit, JSON or Markdown: the stopped run's
        // report, which gives no verdict (nothing judged, or a broken
        // check) and says the run is incomplete. A terminal gets only the
        // error: no per-check line to be read as a verdict.
        if args.out.wants_document() {
            let record = store
                .run(run_id)
                .map_err(|e| Failure::incomplete(e.to_string()))?;
            args.out.emit(&outcome_report(store, record, outcome)?)?;
        }
        if halt.is_configuration() {
            // A broken check: fixing it changes the configuration, so the
            // fixed run is a new one.
            return Err(Failure::usage(format!(
                "run {run_id} stopped with no verdict: {halt}\nfix the check, then `probity run {}` again",
                args.config.display()
            )));
        }
        return Err(Failure::incomplete(format!(
            "run {run_id} stopped with no verdict: {halt}\n`probity run --resume {}` continues it once the cause is fixed",
            args.config.display()
        )));
    }

    // The report from the tensor and summary the run built.
    let fail = |e: probity_engine::store::StoreError| Failure::incomplete(e.to_string());
    let record = store.run(run_id).map_err(fail)?;
    let comparison = match &args.baseline {
        Some(spec) => crate::compare::against_baseline(
            store,
            spec,
            RunTensor {
                record: &record,
                tensor: &outcome.tensor,
            },
        )?,
        None => None,
    };
    let taken = store.sample_count(run_id).map_err(fail)?;
    let broken = outcome.broken();
    print_causes(&outcome);
    let status = outcome.status;
    let mut report = outcome_report(store, record, outcome)?;
    let passed = report.passed();
    report.baseline = comparison;
    args.out.emit(&report)?;
    let passed = passed && !report.baseline.as_ref().is_some_and(|c| c.regressed());
    if !broken.is_empty() {
        let lines: Vec<String> = broken
            .iter()
            .map(|(name, message)| format!("  {name}: {message}"))
            .collect();
        return Err(Failure::usage(format!(
            "{} could not judge any output, so {} no verdict about the system (fix the check, then `probity revalidate {run_id} --config {}`):\n{}",
            if broken.len() == 1 { "a check" } else { "checks" },
            if broken.len() == 1 { "it is broken and gives" } else { "they are broken and give" },
            args.config.display(),
            lines.join("\n")
        )));
    }
    if status != RunStatus::Complete {
        return Err(Failure::incomplete(format!(
            "run {run_id} stopped before every sample was taken ({taken} of {total}); `probity run --resume {}` continues it",
            args.config.display()
        )));
    }
    Ok(verdict_code(passed))
}
