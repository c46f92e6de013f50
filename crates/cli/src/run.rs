//! `probity run`: the main job.

use crate::output::{report_for, OutputArgs};
use crate::store_arg::StoreArg;
use crate::{verdict_code, Failure};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use probity_engine::compare::RunTensor;
use probity_engine::config::Config;
use probity_engine::store::RunStatus;
use probity_engine::{run_with, Control, Experiment, Progress, RunError, Sink};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct RunArgs {
    /// The configuration file.
    #[arg(default_value = "probity.toml")]
    config: PathBuf,
    /// Continue the latest unfinished run of this configuration.
    #[arg(long)]
    resume: bool,
    /// Override [experiment] outputs_per_input (M).
    #[arg(long, value_name = "M")]
    outputs: Option<usize>,
    /// Override [experiment] concurrency.
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Compare with this baseline run (an id, or a name: the latest complete
    /// run of that name other than this one); exit 1 on a significant
    /// regression of any check. Without a stored baseline of that name the
    /// comparison is skipped with a notice.
    #[arg(long, value_name = "RUN")]
    baseline: Option<String>,
    /// No progress display.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    out: OutputArgs,
}

pub async fn run(args: RunArgs) -> Result<u8, Failure> {
    let config = Config::load(&args.config).map_err(|e| Failure::usage(e.to_string()))?;
    let mut experiment = config
        .experiment()
        .map_err(|e| Failure::usage(e.to_string()))?;
    if let Some(m) = args.outputs {
        if m == 0 {
            return Err(Failure::usage("--outputs must be at least 1"));
        }
        experiment.outputs_per_input = m;
    }
    if let Some(c) = args.concurrency {
        if c == 0 {
            return Err(Failure::usage("--concurrency must be at least 1"));
        }
        experiment.concurrency = c;
    }
    let mut store = args.store.open()?;

    let (cancel_tx, cancel) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping; what is stored is kept (resume with --resume)");
            let _ = cancel_tx.send(true);
        }
    });

    let mut display = Display::new(args.quiet, &experiment);
    let outcome = run_with(
        &experiment,
        Sink::Store(&mut store),
        Control {
            resume: args.resume,
            cancel: Some(cancel),
            on_progress: Some(Box::new(|p: &Progress| display.update(p))),
        },
    )
    .await
    .map_err(|e| match e {
        RunError::Config(m) => Failure::usage(m),
        other => Failure::incomplete(other.to_string()),
    })?;
    display.finish();

    // The report from the tensor and summary the run built.
    let run_id = outcome.stored_id();
    let fail = |e: probity_engine::store::StoreError| Failure::incomplete(e.to_string());
    let record = store.run(run_id).map_err(fail)?;
    let samples = store.samples(run_id).map_err(fail)?;
    let comparison = match &args.baseline {
        Some(spec) => crate::compare::against_baseline(
            &store,
            spec,
            RunTensor {
                record: &record,
                tensor: &outcome.tensor,
            },
        )?,
        None => None,
    };
    let taken = samples.len();
    let report = report_for(&store, record, outcome.tensor, outcome.summary, &samples)?;
    let passed = report.passed();
    match &comparison {
        Some(c) => args.out.emit_with_baseline(&report, c)?,
        None => args.out.emit(&report)?,
    }
    let passed = passed && !comparison.as_ref().is_some_and(|c| c.regressed());
    if outcome.status != RunStatus::Complete {
        return Err(Failure::incomplete(format!(
            "run {run_id} stopped before every sample was taken ({taken} of {}); `probity run --resume {}` continues it",
            experiment.inputs.len() * experiment.outputs_per_input,
            args.config.display()
        )));
    }
    Ok(verdict_code(passed))
}

/// Progress on stderr: a bar on a terminal, a plain line every few seconds
/// otherwise (CI logs).
struct Display {
    bar: Option<ProgressBar>,
    names: Vec<String>,
    last_line: Instant,
    quiet: bool,
}

impl Display {
    fn new(quiet: bool, experiment: &Experiment) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} samples ({rate}, ETA {eta}) {msg}",
                )
                .map(|s| {
                    s.with_key("rate", |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", st.per_sec());
                    })
                })
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Display {
            bar,
            names: experiment
                .checks
                .validators
                .iter()
                .map(|v| v.name.clone())
                .collect(),
            last_line: Instant::now(),
            quiet,
        }
    }

    fn rates(&self, p: &Progress) -> String {
        self.names
            .iter()
            .zip(&p.passes)
            .map(|(name, &(pass, n))| {
                if n == 0 {
                    format!("{name} –")
                } else {
                    format!("{name} {:.1}%", 100.0 * pass as f64 / n as f64)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn update(&mut self, p: &Progress) {
        if let Some(bar) = &self.bar {
            bar.set_length(p.total);
            bar.set_position(p.done);
            bar.set_message(format!("{} errors · {}", p.errors, self.rates(p)));
        } else if !self.quiet
            && (self.last_line.elapsed() >= Duration::from_secs(5) || p.done == p.total)
        {
            self.last_line = Instant::now();
            eprintln!(
                "{}/{} samples, {} calls, {} cached, {} errors · {}",
                p.done,
                p.total,
                p.model_calls,
                p.cached,
                p.errors,
                self.rates(p)
            );
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
