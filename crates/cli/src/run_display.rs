//! What `probity run` shows and checks around a run, for a run of one
//! configuration and each run of a variants run alike: the pace the rate
//! limits allow, the causes of errors, and the progress display.

use crate::failure::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use probity_engine::provider::limits::{ABSURD_RUN_S, LONG_RUN_S};
use probity_engine::{Experiment, Progress};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// The rate limits against the run, before any call: the least time the
/// `samples` still to take can last under them is printed when it is long
/// ([`LONG_RUN_S`]); a run it puts past `deadline_s`, or past ten years
/// ([`ABSURD_RUN_S`]: a mistyped limit), is refused naming the keys. A
/// sequential run may stop early, so its budget is only printed.
pub(crate) fn check_pace(
    config: &Path,
    experiment: &Experiment,
    samples: u64,
) -> Result<(), Failure> {
    let pace = experiment.pace(samples);
    let Some(slow) = pace.slowest() else {
        return Ok(());
    };
    let what = pace.describe(slow);
    let file = config.display();
    if experiment.sequential.is_some() {
        if slow.seconds > LONG_RUN_S {
            probity_engine::stderr_line!(
                "rate limits: the whole sequential budget, {what} (the run may stop earlier)"
            );
        }
        return Ok(());
    }
    if slow.seconds > ABSURD_RUN_S {
        return Err(Failure::usage(format!(
            "{file}: [experiment] {} = {} would make the run last more than 10 years ({what}): a mistake in the configuration",
            slow.key,
            probity_core::number::written(slow.per_minute)
        )));
    }
    if let Some(deadline) = experiment
        .deadline
        .filter(|d| slow.seconds > d.as_secs_f64())
    {
        return Err(Failure::usage(format!(
            "{file}: [experiment] deadline_s = {} cannot be met at the configured rate: {what}; raise {} or deadline_s, or take fewer samples (--outputs)",
            deadline.as_secs_f64(),
            slow.key
        )));
    }
    if slow.seconds > LONG_RUN_S {
        probity_engine::stderr_line!("rate limits: {what}");
    }
    Ok(())
}

/// The most common causes of errors (not measured), on stderr.
pub(crate) fn print_causes(outcome: &probity_engine::RunOutcome) {
    use probity_report::sanitize::terminal_line;
    const SHOWN: usize = 3;
    let c = &outcome.causes;
    let print = |heading: String, group: &probity_core::causes::CauseGroup| {
        probity_engine::stderr_line!("{heading}");
        for cause in group.causes.iter().take(SHOWN) {
            let input = outcome
                .input_ids
                .get(cause.first.0)
                .cloned()
                .unwrap_or_else(|| format!("#{}", cause.first.0));
            probity_engine::stderr_line!(
                "  {:>5} × {} (first: input {} · output #{})",
                cause.count,
                terminal_line(&cause.message, 200),
                terminal_line(&input, 40),
                cause.first.1
            );
        }
    };
    if c.system.total > 0 {
        print(
            format!("errors: {}:", probity_report::system_head(&c.system)),
            &c.system,
        );
    }
    for (k, group) in c.checks.iter().enumerate().filter(|(_, g)| g.total > 0) {
        let name = outcome
            .summary
            .checks
            .get(k)
            .map_or_else(|| format!("#{k}"), |c| c.info.name.clone());
        let heading = format!(
            "errors: {} {}:",
            terminal_line(&name, 60),
            probity_report::check_head(group)
        );
        print(heading, group);
    }
}

/// Progress on stderr: a bar on a terminal (as wide as the terminal, the
/// rate and ETA from this session's samples only, so a resumed run does not
/// count stored samples as speed), a plain line every few seconds
/// otherwise (CI logs).
pub(crate) struct Display {
    bar: Option<ProgressBar>,
    names: Vec<String>,
    last_line: Instant,
    quiet: bool,
    /// Samples already decided when this session started (resumed).
    start: Option<u64>,
}

impl Display {
    pub(crate) fn new(quiet: bool, experiment: &Experiment) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} {bar:20} {prefix} ({rate}, ETA {eta}) {wide_msg}",
                )
                .map(|s| {
                    s.with_key(
                        "rate",
                        |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{:.0}/s", st.per_sec());
                        },
                    )
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
                .infos()
                .into_iter()
                .map(|c| c.name)
                .collect(),
            last_line: Instant::now(),
            quiet,
            start: None,
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

    pub(crate) fn update(&mut self, p: &Progress) {
        let start = *self.start.get_or_insert(p.done);
        if let Some(bar) = &self.bar {
            // The bar counts this session's samples: its rate and ETA are
            // this session's.
            bar.set_length(p.total - start);
            bar.set_position(p.done - start);
            bar.set_prefix(format!("{}/{} samples", p.done, p.total));
            bar.set_message(format!("{} errors · {}", p.errors, self.rates(p)));
        } else if !self.quiet
            && (self.last_line.elapsed() >= Duration::from_secs(5) || p.done == p.total)
        {
            self.last_line = Instant::now();
            probity_engine::stderr_line!(
                "{}/{} samples, {} calls, {} reused, {} errors · {}",
                p.done,
                p.total,
                p.model_calls,
                p.cached,
                p.errors,
                self.rates(p)
            );
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
