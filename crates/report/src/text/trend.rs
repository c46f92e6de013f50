//! A trend in the terminal (`probity report --trend NAME`): one row per
//! run (id, created, system), one column per check (success rate and
//! interval), and a last column of marks (reused, revalidated, `--set`,
//! other config: [`crate::document::trend::TrendMark`]) when a run has
//! any. Names go through [`terminal_line`].

use crate::document::trend::TrendReport;
use crate::numbers::{interval, pct, plural, threshold_pct};
use crate::sanitize::terminal_line;
use probity_core::RateEstimate;

/// What the marks column says, under a trend that has one.
const MARKS_KEY: &str = "\nmarks: reused #N: outputs reused from run N · revalidated #N: run N's outputs judged again · --set: the latest run's file with other settings · other config: another file than the latest run's\n";

fn cell(r: &Option<(RateEstimate, f64)>) -> String {
    match r {
        Some((rate, _)) if rate.n > 0 => format!(
            "{} {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper)
        ),
        Some(_) => "no data".into(),
        None => "–".into(),
    }
}

/// The trend as a text table: one row per run, one column per check.
pub(crate) fn render(t: &TrendReport) -> String {
    let clean = |s: &str| terminal_line(s, 30);
    let mut out = format!(
        "trend of {} over {} {} (success %, {} intervals clustered by input)\n\n",
        clean(&t.name),
        t.runs.len(),
        plural(t.runs.len(), "run"),
        t.runs
            .first()
            .and_then(|r| r.rates.iter().flatten().next())
            .map_or("95%".to_string(), |(r, _)| threshold_pct(r.confidence))
    );
    let mut header = vec![
        "run".to_string(),
        "created".to_string(),
        "system".to_string(),
    ];
    header.extend(t.checks.iter().map(|c| clean(c)));
    // A last column only when some run is marked ([`TrendMark`]).
    let marked = t.runs.iter().any(|r| !r.marks.is_empty());
    if marked {
        header.push("marks".to_string());
    }
    let rows: Vec<Vec<String>> = t
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                r.run.id.to_string(),
                clean(&r.run.created_at),
                clean(&r.run.system_label),
            ];
            row.extend(r.rates.iter().map(cell));
            if marked {
                row.push(r.marks_line());
            }
            row
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let mut s = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(r));
    }
    if marked {
        out.push_str(MARKS_KEY);
    }
    out
}
