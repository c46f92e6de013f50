//! Variants side by side in the terminal (`probity run` of a file with
//! `[[variant]]` tables): the matrix (a row per check, a column per
//! variant, each cell its rate, interval and verdict), each variant's
//! cost, each pair's differences with its verdict, and the conclusion.
//! Names go through [`terminal_line`].

use crate::document::variants::VariantsReport;
use crate::facts::variants::{cell, conclusion, cost_line, difference, method_line, verdict};
use crate::numbers::plural;
use crate::sanitize::terminal_line;
use crate::text::paint::Paint;
use probity_core::compare::Direction;

/// Pads `s` to `w` characters.
fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

/// The variants report as terminal text.
pub(crate) fn render(r: &VariantsReport, color: bool) -> String {
    let p = Paint { on: color };
    let clean = |s: &str| terminal_line(s, 40);
    let c = &r.comparison;
    let mut t = String::new();
    let reference = c.reference.and_then(|i| c.names.get(i)).map_or_else(
        || "every pair".to_string(),
        |n| format!("reference {}", clean(n)),
    );
    t.push_str(&format!(
        "{}\n{}\n\n",
        p.wrap(
            "1",
            &format!(
                "probity variants: {} (group {}), {} {}, {reference}",
                clean(&r.name),
                r.group,
                r.variants.len(),
                plural(r.variants.len(), "variant")
            )
        ),
        p.wrap("2", &method_line(c))
    ));
    // The matrix.
    let checks = r.checks();
    let head: Vec<String> = r
        .variants
        .iter()
        .map(|v| format!("{} (run {})", clean(&v.name), v.report.run.id))
        .collect();
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|k| (0..r.variants.len()).map(|v| cell(r.cell(v, k))).collect())
        .collect();
    let first = checks
        .iter()
        .map(|k| clean(k).chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let widths: Vec<usize> = (0..r.variants.len())
        .map(|v| {
            rows.iter()
                .map(|row| row[v].chars().count())
                .chain([head[v].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    t.push_str(&pad("check", first));
    for (h, w) in head.iter().zip(&widths) {
        t.push_str(&format!("  {}", pad(h, *w)));
    }
    t.push('\n');
    for (k, row) in checks.iter().zip(&rows) {
        t.push_str(&pad(&clean(k), first));
        for (v, (s, w)) in row.iter().zip(&widths).enumerate() {
            let s = pad(s, *w);
            let code = match r.cell(v, k).map(|c| c.verdict.decision) {
                Some(probity_core::stats::Decision::Fail) => "31",
                Some(probity_core::stats::Decision::Pass) => "32",
                _ => "",
            };
            t.push_str("  ");
            t.push_str(&if code.is_empty() { s } else { p.wrap(code, &s) });
        }
        t.push('\n');
    }
    let verdicts: Vec<String> = r
        .variants
        .iter()
        .map(|v| {
            format!(
                "{}: {}",
                clean(&v.name),
                terminal_line(&v.report.conclusion(), 120)
            )
        })
        .collect();
    t.push('\n');
    for line in verdicts {
        t.push_str(&format!("{line}\n"));
    }
    // Cost.
    t.push_str(&format!("\n{}\n", p.wrap("1", "cost per variant")));
    let nw = r
        .variants
        .iter()
        .map(|v| clean(&v.name).chars().count())
        .max()
        .unwrap_or(0);
    for v in &r.variants {
        t.push_str(&format!(
            "  {}  {}\n",
            pad(&clean(&v.name), nw),
            cost_line(&v.cost, &v.report.run.cost)
        ));
    }
    // Differences.
    if !c.pairs.is_empty() {
        t.push_str(&format!(
            "\n{}\n",
            p.wrap("1", "differences (B − A, paired by input)")
        ));
    }
    for pair in &c.pairs {
        t.push_str(&format!(
            "  {} − {}\n",
            clean(&c.names[pair.candidate]),
            clean(&c.names[pair.baseline])
        ));
        let kw = pair
            .comparison
            .checks
            .iter()
            .map(|k| clean(&k.name).chars().count())
            .max()
            .unwrap_or(0);
        for k in &pair.comparison.checks {
            let word = format!("{:<26}", verdict(k.direction));
            let word = match k.direction {
                Direction::Improved => p.wrap("1;32", &word),
                Direction::Regressed => p.wrap("1;31", &word),
                _ => word,
            };
            t.push_str(&format!(
                "    {}  {word}  {}\n",
                pad(&clean(&k.name), kw),
                difference(k, c.options.multiple)
            ));
        }
    }
    t.push('\n');
    t.push_str(&p.wrap("1", &terminal_line(&conclusion(r), 0)));
    t.push('\n');
    t
}
