//! `probity report --trend NAME`: each check's success rate over the
//! complete runs of one name, oldest first.

use crate::failure::Failure;
use crate::output::OutputArgs;
use probity_engine::run::stored;
use probity_engine::store::{RunRecord, RunStatus, Store};
use probity_report::{render, Format, RunInfo, TrendMark, TrendReport, TrendRun};

/// Most runs a trend shows (the latest ones).
pub const MAX_RUNS: usize = 200;

/// The trend of the complete runs named `name` (the latest
/// [`MAX_RUNS`]), oldest first; with `check`, of that check only.
pub fn trend_report(
    store: &Store,
    name: &str,
    check: Option<&str>,
) -> Result<TrendReport, Failure> {
    let mut records: Vec<_> = store
        .runs(Some(name))
        .map_err(|e| Failure::incomplete(e.to_string()))?
        .into_iter()
        .filter(|r| r.name == name && r.status == RunStatus::Complete)
        .take(MAX_RUNS)
        .collect();
    if records.is_empty() {
        return Err(Failure::usage(format!(
            "no complete run named {:?} in {}",
            probity_report::sanitize::terminal_line(name, 80),
            store.location()
        )));
    }
    records.reverse();
    let mut t = TrendReport {
        name: name.to_string(),
        ..TrendReport::default()
    };
    let mut loaded = Vec::new();
    for r in records {
        let run = stored::load(store, r.id).map_err(|e| Failure::incomplete(e.to_string()))?;
        for c in &run.summary.checks {
            if check.is_none_or(|want| want == c.info.name) && !t.checks.contains(&c.info.name) {
                t.checks.push(c.info.name.clone());
            }
        }
        loaded.push(run);
    }
    if let Some(want) = check {
        if t.checks.is_empty() {
            return Err(Failure::usage(format!(
                "no check named {:?} in the runs named {:?}",
                probity_report::sanitize::terminal_line(want, 80),
                probity_report::sanitize::terminal_line(name, 80)
            )));
        }
    }
    let latest = loaded.last().map(|r| r.record.clone());
    for run in loaded {
        let marks = latest
            .as_ref()
            .map_or_else(Vec::new, |l| marks(&run.record, l));
        let rates = t
            .checks
            .iter()
            .map(|name| {
                run.summary
                    .checks
                    .iter()
                    .find(|c| &c.info.name == name)
                    .map(|c| (c.rate, c.info.minimum_success_percentage))
            })
            .collect();
        t.runs.push(TrendRun {
            run: RunInfo {
                complete: true,
                ..crate::run_info::run_info(&run.record)
            },
            rates,
            marks,
        });
    }
    Ok(t)
}

/// What sets run `r` apart from a plain run of the latest configuration
/// (`latest`): outputs reused or revalidated from another run, and settings
/// other than the latest run's — the same file text with another hash is
/// the file overridden (`--set`, or its inputs changed); another text,
/// another configuration.
fn marks(r: &RunRecord, latest: &RunRecord) -> Vec<TrendMark> {
    let mut marks = Vec::new();
    if let Some(from) = r.reused_from {
        marks.push(TrendMark::Reused(from));
    }
    if let Some(from) = r.outputs_from {
        marks.push(TrendMark::Revalidated(from));
    }
    if r.config_hash != latest.config_hash {
        marks.push(if r.config == latest.config {
            TrendMark::Overridden
        } else {
            TrendMark::OtherConfig
        });
    }
    marks
}

pub fn trend(
    store: &Store,
    name: &str,
    check: Option<&str>,
    out: &OutputArgs,
) -> Result<u8, Failure> {
    let t = trend_report(store, name, check)?;
    // On stdout a trend is a page, JSON, or else the text table (as
    // `--format markdown` and `--format junit` have always printed it);
    // --markdown gets the Markdown section; a trend checks nothing, so
    // --junit is not written.
    let shown = match out.format {
        Format::Html | Format::Json => out.format,
        Format::Text | Format::Junit | Format::Markdown => Format::Text,
    };
    let text = render(&t, shown, false);
    match &out.output {
        Some(path) => crate::output::write(path, &text)?,
        None => crate::stdout::out(&text),
    }
    if let Some(path) = &out.markdown {
        crate::output::append(path, &render(&t, Format::Markdown, false))?;
    }
    Ok(0)
}
