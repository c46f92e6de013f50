//! `probity monitor NAME`: the live rates of a `probity serve`
//! configuration's traffic, read from the store as every replica writes it,
//! refreshed in the terminal (issue 20; docs/serve.md, Monitoring).

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::monitor::{watchable, CONFIDENCE_RANGE};
use probity_engine::run::live::{LiveFollow, Redefined, WatchChoice};
use probity_report::json::live::{WireLive, WireMonitor, MONITOR_SCHEMA};
use probity_report::sanitize::terminal_line;
use probity_report::text::live::{alarm_line, block};
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
    /// The confidence of the sequences: the chance that no alarm is ever
    /// false; in (0, 1), at most 0.999999999999. Default: the server's
    /// (`confidence` in the file it served, as stored with its run).
    #[arg(long)]
    confidence: Option<f64>,
    /// Requests per epoch (the "recent" sequence). Default: the server's
    /// `[monitor] epoch`.
    #[arg(long)]
    epoch: Option<u64>,
    /// Requests in the display window, 1 to 1,000,000. Default: the
    /// server's `[monitor] window`.
    #[arg(long)]
    window: Option<usize>,
    /// Pool every run of NAME created at or after this time, finished or
    /// not, besides those being written: a UTC date or time
    /// (`2026-11-20`, `2026-11-20T14:00:00Z`) or a span back from now
    /// (`24h`, `7d`). With `--once`, a pooled report of every replica's
    /// traffic since then.
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Print each page as one line of JSON (schema `probity.monitor.v1`,
    /// crates/report/SCHEMA.md) instead of the table; alarms still go to
    /// standard error.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: &MonitorArgs) -> Result<u8, Failure> {
    if !(args.every.is_finite() && args.every >= 0.1 && args.every <= 86_400.0) {
        return Err(Failure::usage("--every must be 0.1 to 86,400 seconds"));
    }
    if let Some(c) = args.confidence.filter(|c| !watchable(*c)) {
        return Err(Failure::usage(format!(
            "--confidence {}: must be {CONFIDENCE_RANGE}",
            probity_core::number::written(c)
        )));
    }
    if args.epoch == Some(0) {
        return Err(Failure::usage("--epoch 0: must be at least 1 request"));
    }
    if let Some(w) = args.window.filter(|w| !(1..=1_000_000).contains(w)) {
        return Err(Failure::usage(format!(
            "--window {w}: must be 1 to 1,000,000 requests"
        )));
    }
    let since = args.since.as_deref().map(crate::since::stamp).transpose()?;
    let store = args.store.open()?;
    // A name the store never held is likely a typo: said before any page.
    if args.once && !known(&store, &args.name) {
        return Err(Failure::usage(format!(
            "{} holds no run named {:?} (`probity runs` lists them)",
            store.location(),
            terminal_line(&args.name, 60)
        )));
    }
    let mut follow = LiveFollow::new(
        &args.name,
        WatchChoice {
            confidence: args.confidence,
            epoch: args.epoch,
            window: args.window,
        },
    );
    if let Some(stamp) = &since {
        follow = follow.since(stamp);
    }
    let terminal = std::io::stdout().is_terminal();
    let mut warned = 0;
    loop {
        let alarms = follow
            .poll(&store)
            .map_err(|e| Failure::incomplete(e.to_string()))?;
        for r in &follow.redefined()[warned..] {
            probity_engine::stderr_line!("warning: {}", redefined_line(r));
        }
        warned = follow.redefined().len();
        if args.json {
            crate::stdout::out(&format!(
                "{}\n",
                json_page(&args.name, since.as_deref(), &follow)
            ));
        } else {
            let page = render(
                &args.name,
                since.as_deref(),
                &follow,
                terminal && !args.once,
            );
            show(&page, terminal && !args.once);
        }
        for a in alarms {
            probity_engine::stderr_line!("alarm: {}", alarm_line(&a.check, a.kind, &a.alarm));
        }
        if args.once {
            // Idle or not, the page said what there is.
            return Ok(0);
        }
        std::thread::sleep(Duration::from_secs_f64(args.every));
    }
}

/// Why run `r.run` is left out: its checks defined otherwise.
fn redefined_line(r: &Redefined) -> String {
    let checks: Vec<String> = r.checks.iter().map(|c| terminal_line(c, 60)).collect();
    format!(
        "run {} left out: {} {} defined otherwise than in run {} (whose definitions are pooled); its rates would not be the same rates",
        r.run,
        if checks.len() == 1 { "check" } else { "checks" },
        checks.join(", "),
        r.first
    )
}

/// Whether the store has ever held a run named `name` (a name it has not
/// is likely a typo: `--once` says so and exits 2). A store that cannot
/// say is taken to know it.
fn known(store: &probity_engine::store::Store, name: &str) -> bool {
    store
        .runs(Some(name))
        .map(|runs| runs.iter().any(|r| r.name == name))
        .unwrap_or(true)
}

/// Print `page`: over the last one (home and clear) when `refresh`.
fn show(page: &str, refresh: bool) {
    if refresh {
        crate::stdout::out(&format!("\x1b[H\x1b[2J{page}"));
    } else {
        crate::stdout::out(&format!("{page}\n"));
    }
}

/// The page as one line of JSON (`probity.monitor.v1`).
fn json_page(name: &str, since: Option<&str>, follow: &LiveFollow) -> String {
    let (runs, skipped) = follow.runs();
    let page = WireMonitor {
        schema: MONITOR_SCHEMA,
        name,
        since,
        runs: &runs,
        running: follow.running(),
        left_out: skipped,
        live: follow.snapshot().as_ref().map(WireLive::new),
    };
    serde_json::to_string(&page).expect("the wire structs serialise: string keys, finite numbers")
}

/// The page: the runs pooled, then one line per check and attempt kind.
fn render(name: &str, since: Option<&str>, follow: &LiveFollow, color: bool) -> String {
    let (runs, skipped) = follow.runs();
    let live = follow.snapshot();
    let ids = |ids: &[i64]| {
        ids.iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut out = match since {
        None => format!(
            "live traffic of {:?}: {} run{} being written ({})\n",
            terminal_line(name, 60),
            runs.len(),
            plural(runs.len()),
            ids(&runs),
        ),
        Some(t) => format!(
            "traffic of {:?} since {t}: {} run{} ({}), {} being written\n",
            terminal_line(name, 60),
            runs.len(),
            plural(runs.len()),
            ids(&runs),
            follow.running().len(),
        ),
    };
    let redefined: Vec<i64> = follow.redefined().iter().map(|r| r.run).collect();
    let other: Vec<i64> = skipped
        .iter()
        .copied()
        .filter(|r| !redefined.contains(r))
        .collect();
    if !other.is_empty() {
        out.push_str(&format!("left out (other checks): runs {}\n", ids(&other)));
    }
    for r in follow.redefined() {
        out.push_str(&format!("{}\n", redefined_line(r)));
    }
    match live {
        Some(l) => out.push_str(&block(&l, color)),
        None if since.is_some() => out.push_str("no run of this name was served since then, and none is being written (`probity runs` lists the store's runs)\n"),
        None => out.push_str("no run of this name is being written (start `probity serve` with this configuration and store, or pool finished runs with --since)\n"),
    }
    out
}
