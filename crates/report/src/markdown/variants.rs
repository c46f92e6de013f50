//! Variants side by side in Markdown: the conclusion, the variant ×
//! check matrix, the cost per variant, and each pair's differences with
//! their Holm-adjusted p-values. Names go through [`md_cell`] /
//! [`md_inline`].

use crate::document::variants::VariantsReport;
use crate::facts::comparison::{p_value, points, points_interval};
use crate::facts::variants::{cell, conclusion, cost_line, method_line, verdict};
use crate::sanitize::{md_cell, md_inline};
use probity_core::compare::Direction;
use probity_core::stats::MultipleTesting;

/// The report as a Markdown section (`###` heading).
pub(super) fn render(r: &VariantsReport) -> String {
    let c = &r.comparison;
    let badge = if r.passed() { "✅" } else { "❌" };
    let mut md = format!(
        "### {badge} Variants of {} (group {})\n\n**{}**\n\n{}\n\n",
        md_inline(&r.name),
        r.group,
        md_inline(&conclusion(r)),
        md_inline(&method_line(c))
    );
    // The matrix.
    md.push_str("| check |");
    for (i, v) in r.variants.iter().enumerate() {
        let mark = if c.reference == Some(i) {
            " (reference)"
        } else {
            ""
        };
        md.push_str(&format!(
            " {}{mark} · run #{} |",
            md_cell(&v.name),
            v.report.run.id
        ));
    }
    md.push_str("\n| --- |");
    md.push_str(&" --- |".repeat(r.variants.len()));
    md.push('\n');
    for k in r.checks() {
        md.push_str(&format!("| {} |", md_cell(&k)));
        for v in 0..r.variants.len() {
            md.push_str(&format!(" {} |", md_cell(&cell(r.cell(v, &k)))));
        }
        md.push('\n');
    }
    md.push_str("\n**Cost per variant**\n\n| variant | verdict | cost |\n| --- | --- | --- |\n");
    for v in &r.variants {
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            md_cell(&v.name),
            md_cell(&v.report.conclusion()),
            md_cell(&cost_line(&v.cost, &v.report.run.cost))
        ));
    }
    if !c.pairs.is_empty() {
        let adjusted = match c.options.multiple {
            MultipleTesting::Holm => "Holm-adjusted p",
            MultipleTesting::None => "p (no correction)",
        };
        md.push_str(&format!(
            "\n**Differences (B − A, paired by input)**\n\n| B − A | check | verdict | change (pts) | interval | p | {adjusted} |\n| --- | --- | --- | ---: | --- | ---: | ---: |\n"
        ));
        for p in &c.pairs {
            for k in &p.comparison.checks {
                let icon = match k.direction {
                    Direction::Improved => "⬆️ ",
                    Direction::Regressed => "⬇️ ",
                    _ => "",
                };
                md.push_str(&format!(
                    "| {} − {} | {} | {icon}{} | {} | {} | {} | {} |\n",
                    md_cell(&c.names[p.candidate]),
                    md_cell(&c.names[p.baseline]),
                    md_cell(&k.name),
                    verdict(k.direction),
                    points(k.decisive().mean_diff),
                    points_interval(k.decisive()),
                    md_cell(&p_value(k.p_value)),
                    md_cell(&p_value(k.p_adjusted)),
                ));
            }
        }
    }
    md.push('\n');
    md
}
