//! `probity monitor NAME`: the live rates of a `probity serve`
//! configuration's traffic, read from the store as every replica writes it,
//! refreshed in the terminal (issue 20; docs/serve.md, Monitoring).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::monitor::{AlarmKind, WatchSettings};
use probity_engine::run::live::LiveFollow;
use probity_report::sanitize::terminal_line;
use std::io::IsTerminal;
use std::time::Duration;

#[derive(Args)]
pub struct MonitorArgs {
    /// The served configuration's name (its `name`, or its file's stem).
    name: String,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    every: f64,
    /// Print the rates once and exit.
    #[arg(long)]
    once: bool,
    /// The confidence of the sequences: the chance that no alarm is ever false.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Requests per epoch (the "recent" sequence).
    #[arg(long, default_value_t = 1000)]
    epoch: u64,
    /// Requests in the display window.
    #[arg(long, default_value_t = 500)]
    window: usize,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: &MonitorArgs) -> Result<u8, Failure> {
    if !(args.every.is_finite() && args.every >= 0.1 && args.every <= 86_400.0) {
        return Err(Failure::usage("--every must be 0.1 to 86,400 seconds"));
    }
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(Failure::usage(
            "--confidence must be in (0, 1), such as 0.95",
        ));
    }
    if args.epoch == 0 || args.window == 0 {
        return Err(Failure::usage("--epoch and --window must be at least 1"));
    }
    let store = args.store.open()?;
    let mut follow = LiveFollow::new(
        &args.name,
        WatchSettings {
            confidence: args.confidence,
            epoch: args.epoch,
            window: args.window,
        },
    );
    let terminal = std::io::stdout().is_terminal();
    loop {
        let alarms = follow
            .poll(&store)
            .map_err(|e| Failure::incomplete(e.to_string()))?;
        let page = render(&args.name, &follow, args.confidence);
        if terminal && !args.once {
            // Home and clear, then the page.
            crate::stdout::out(&format!("\x1b[H\x1b[2J{page}"));
        } else {
            crate::stdout::out(&format!("{page}\n"));
        }
        for (check, attempt, a) in alarms {
            eprintln!(
                "alarm: {} ({attempt} attempts) {}: {:.1}% [{:.1}, {:.1}] over {} requests",
                terminal_line(&check, 60),
                match a.kind {
                    AlarmKind::BelowMinimum => "is established below its minimum",
                    AlarmKind::DiffersFromBaseline => "differs from the baseline",
                },
                100.0 * a.rate,
                100.0 * a.interval.lower,
                100.0 * a.interval.upper,
                a.requests
            );
        }
        if args.once {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_secs_f64(args.every));
    }
}

/// The page: the runs pooled, then one line per check and attempt kind.
fn render(name: &str, follow: &LiveFollow, confidence: f64) -> String {
    let (runs, skipped) = follow.runs();
    let rows = follow.rows();
    let requests = rows.first().map_or(0, |r| r.watch.requests());
    let mut out = format!(
        "live traffic of {:?}: {} run{} being written ({}), {requests} requests; sequences at {:.0}% (valid however often this refreshes)\n",
        terminal_line(name, 60),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        runs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", "),
        100.0 * confidence
    );
    if !skipped.is_empty() {
        out.push_str(&format!(
            "left out (other checks): runs {}\n",
            skipped
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if rows.is_empty() {
        out.push_str("no run of this name is being written (start `probity serve` with this configuration and store)\n");
        return out;
    }
    out.push_str(&format!(
        "{:<28} {:<10} {:>8}  {:>22}  {:>26}  {:>20}  {}\n",
        "check", "attempt", "requests", "all traffic", "recent (epoch)", "window", "alarm"
    ));
    for r in rows {
        let (rate, all) = r.watch.all();
        let (erate, eint, en) = r.watch.epoch();
        let w = r.watch.window();
        let span = |rate: f64, lo: f64, hi: f64| {
            format!(
                "{:5.1}% [{:5.1}, {:5.1}]",
                100.0 * rate,
                100.0 * lo,
                100.0 * hi
            )
        };
        let alarm = r
            .watch
            .alarms()
            .iter()
            .map(|a| match a.kind {
                AlarmKind::BelowMinimum => {
                    format!("BELOW {:.0}%", 100.0 * r.check.minimum_success_percentage)
                }
                AlarmKind::DiffersFromBaseline => "DIFFERS FROM BASELINE".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let none = "-".to_string();
        out.push_str(&format!(
            "{:<28} {:<10} {:>8}  {:>22}  {:>26}  {:>20}  {}\n",
            terminal_line(&r.check.name, 28),
            r.attempt,
            r.watch.requests(),
            if r.watch.requests() > 0 {
                span(rate, all.lower, all.upper)
            } else {
                none.clone()
            },
            if en > 0 {
                format!("{} of {en}", span(erate, eint.lower, eint.upper))
            } else {
                none.clone()
            },
            if w.is_empty() {
                none
            } else {
                let i = w.interval(confidence);
                span(w.rate(), i.lower, i.upper)
            },
            if alarm.is_empty() { "-" } else { &alarm },
        ));
    }
    out
}
