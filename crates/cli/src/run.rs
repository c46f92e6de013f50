//! `probity run`: the main job.

use crate::output::{load_report, OutputArgs};
use crate::store_arg::StoreArg;
use crate::{verdict_code, Failure};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use probity_engine::config::Config;
use probity_engine::runner::{self, Progress, RunError, RunSettings};
use probity_engine::store::RunStatus;
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
    let mut config = Config::load(&args.config).map_err(|e| Failure::usage(e.to_string()))?;
    if let Some(m) = args.outputs {
        if m == 0 {
            return Err(Failure::usage("--outputs must be at least 1"));
        }
        config.file.experiment.outputs_per_input = m;
    }
    if let Some(c) = args.concurrency {
        if c == 0 {
            return Err(Failure::usage("--concurrency must be at least 1"));
        }
        config.file.experiment.concurrency = c;
    }
    let provider = config
        .file
        .system
        .build()
        .map_err(|e| Failure::usage(format!("{}: [system] {e}", args.config.display())))?;
    let mut store = args.store.open()?;

    let (cancel_tx, cancel) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping; what is stored is kept (resume with --resume)");
            let _ = cancel_tx.send(true);
        }
    });

    let mut display = Display::new(args.quiet, &config);
    let outcome = runner::run(
        &config,
        provider,
        &mut store,
        RunSettings {
            resume: args.resume,
            cancel,
        },
        |p| display.update(p),
    )
    .await
    .map_err(|e| match e {
        RunError::Config(m) => Failure::usage(m),
        other => Failure::incomplete(other.to_string()),
    })?;
    display.finish();

    let mut report = load_report(&store, outcome.run_id)?;
    let passed = report.passed();
    report.baseline = match &args.baseline {
        Some(spec) => crate::compare::against_baseline(&store, spec, outcome.run_id)?,
        None => None,
    };
    args.out.emit(&report)?;
    let passed = passed && !report.baseline.as_ref().is_some_and(|c| c.regressed());
    if outcome.status != RunStatus::Complete {
        return Err(Failure::incomplete(format!(
            "run {} stopped before every sample was taken ({} of {}); `probity run --resume {}` continues it",
            outcome.run_id,
            samples_taken(&outcome.tensor),
            outcome.tensor.inputs() * outcome.tensor.repetitions(),
            args.config.display()
        )));
    }
    Ok(verdict_code(passed))
}

/// Outputs with at least one cell filled: the samples a run has taken.
fn samples_taken(t: &probity_core::ReliabilityTensor) -> usize {
    let mut cells = Vec::new();
    (0..t.inputs())
        .flat_map(|i| (0..t.repetitions()).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            t.output_cells(i, j, &mut cells);
            cells.iter().any(|&c| c != probity_core::Cell::Missing)
        })
        .count()
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
    fn new(quiet: bool, config: &Config) -> Self {
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
            names: config.validators.iter().map(|v| v.name.clone()).collect(),
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
