//! Variants side by side in HTML: the variant × check matrix (each cell
//! its rate, interval and verdict), the cost per variant, each pair's
//! differences as interval bars around zero with their Holm-adjusted
//! p-values, then inputs with every variant's outputs of them side by
//! side. A page of its own (`--format html`) or the viewer's
//! (`probity view`, `/variants/{group}`); the markup is the `variants`
//! macro of `templates/variants_section.html`, this module gathers its
//! data as plain text (the template escapes every value; model output
//! is untrusted).

use crate::document::run::FailingSample;
use crate::document::variants::VariantsReport;
use crate::facts::comparison::{p_value, points, points_interval};
use crate::facts::variants::{conclusion, cost_line, method_line, verdict};
use crate::html::page::PageShell;
use crate::html::sample::{sample_verdict, ShownOutput};
use crate::html::template::{markup, render};
use crate::numbers::{decision_word, interval, name, pct};
use crate::svg::{diff_axis, diff_bar, diff_span};
use minijinja::Value;
use probity_core::compare::Direction;
use serde::Serialize;

/// Inputs shown side by side.
pub const INPUTS_SHOWN: usize = 50;
/// Outputs of one input shown per variant (failing ones first).
pub const OUTPUTS_PER_INPUT: usize = 3;
/// Characters of one output shown.
const OUTPUT_CHARS: usize = 1200;

/// The grid of the side-by-side view (one column per variant).
pub(crate) const VARIANTS_STYLE: &str = ".variant-sides{display:grid;grid-auto-flow:column;grid-auto-columns:minmax(16rem,1fr);gap:1rem;overflow-x:auto}\
.variant-input{border-top:1px solid var(--line);margin-top:1rem}.variant-side{min-width:0}.variant-side pre.output{white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere}\
.variant-output{border:1px solid var(--line);border-left:4px solid #15803d;border-radius:6px;padding:.3rem .6rem;margin:.4rem 0}\
.variant-output.fail{border-left-color:#b91c1c}.variant-output.error{border-left-color:#b45309}\
td.cell.pass{background:#f0fdf4}td.cell.fail{background:#fef2f2}td.cell.inconclusive{background:#fffbeb}";

#[derive(Serialize)]
struct Head {
    name: String,
    run: i64,
    reference: bool,
    class: &'static str,
    conclusion: String,
    system: String,
}

#[derive(Serialize)]
struct Cell {
    class: &'static str,
    rate: String,
    interval: String,
    word: String,
}

#[derive(Serialize)]
struct Row {
    check: String,
    cells: Vec<Cell>,
}

#[derive(Serialize)]
struct Cost {
    name: String,
    line: String,
}

#[derive(Serialize)]
struct Diff {
    pair: String,
    check: String,
    class: &'static str,
    word: &'static str,
    change: String,
    interval: String,
    bar: Value,
    p: String,
    p_adjusted: String,
}

#[derive(Serialize)]
struct Side {
    name: String,
    passed: String,
    outputs: Vec<ShownOutput>,
}

#[derive(Serialize)]
struct InputRow {
    label: String,
    sides: Vec<Side>,
}

/// The data of the variants section.
#[derive(Serialize)]
pub(crate) struct VariantsContext {
    name: String,
    group: i64,
    class: &'static str,
    conclusion: String,
    method: String,
    heads: Vec<Head>,
    rows: Vec<Row>,
    costs: Vec<Cost>,
    axis: Value,
    adjusted_head: &'static str,
    diffs: Vec<Diff>,
    inputs: Vec<InputRow>,
    inputs_note: String,
    /// Runs linked to the viewer's pages (`probity view`); a report's
    /// own page has nowhere to link to.
    linked: bool,
}

fn side(r: &VariantsReport, v: usize, samples: &[FailingSample]) -> Side {
    let report = &r.variants[v].report;
    let passed = samples
        .iter()
        .filter(|s| sample_verdict(s) == "pass")
        .count();
    let mut sorted: Vec<&FailingSample> = samples.iter().collect();
    sorted.sort_by_key(|s| (sample_verdict(s) == "pass", s.repetition));
    Side {
        name: r.variants[v].name.clone(),
        passed: format!("{passed} of {} passed", samples.len()),
        outputs: sorted
            .into_iter()
            .take(OUTPUTS_PER_INPUT)
            .map(|s| ShownOutput::of(report, s, OUTPUT_CHARS))
            .collect(),
    }
}

/// The data of the variants section of `r`; `linked`: in the viewer.
pub(crate) fn context(r: &VariantsReport, linked: bool) -> VariantsContext {
    let c = &r.comparison;
    let heads = r
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| Head {
            name: v.name.clone(),
            run: v.report.run.id,
            reference: c.reference == Some(i),
            class: if v.report.passed() { "pass" } else { "fail" },
            conclusion: v.report.conclusion(),
            system: v.report.run.system_label.clone(),
        })
        .collect();
    let rows = r
        .checks()
        .into_iter()
        .map(|k| Row {
            cells: (0..r.variants.len())
                .map(|v| match r.cell(v, &k) {
                    Some(s) if s.rate.n > 0 => Cell {
                        class: name(s.verdict.decision),
                        rate: pct(s.rate.estimate),
                        interval: interval(s.rate.interval.lower, s.rate.interval.upper),
                        word: decision_word(s.verdict.decision),
                    },
                    found => Cell {
                        class: "none",
                        rate: "–".into(),
                        interval: String::new(),
                        word: if found.is_some() {
                            "no data"
                        } else {
                            "not a check of this variant"
                        }
                        .into(),
                    },
                })
                .collect(),
            check: k,
        })
        .collect();
    let span = c
        .pairs
        .iter()
        .map(|p| diff_span(&p.comparison))
        .fold(0.0_f64, f64::max)
        .max(0.01);
    let diffs = c
        .pairs
        .iter()
        .flat_map(|p| {
            let pair = format!("{} − {}", c.names[p.candidate], c.names[p.baseline]);
            p.comparison.checks.iter().map(move |k| Diff {
                pair: pair.clone(),
                check: k.name.clone(),
                class: match k.direction {
                    Direction::Regressed => "fail",
                    Direction::Improved => "pass",
                    _ => "neutral",
                },
                word: verdict(k.direction),
                change: points(k.decisive().mean_diff),
                interval: points_interval(k.decisive()),
                bar: markup(diff_bar(k, span)),
                p: p_value(k.p_value),
                p_adjusted: p_value(k.p_adjusted),
            })
        })
        .collect();
    let inputs = r
        .side_by_side
        .iter()
        .map(|row| InputRow {
            label: row.label.clone(),
            sides: row
                .outputs
                .iter()
                .enumerate()
                .map(|(v, samples)| side(r, v, samples))
                .collect(),
        })
        .collect::<Vec<_>>();
    let inputs_note = if inputs.len() < r.inputs {
        format!("Showing {} of {} inputs.", inputs.len(), r.inputs)
    } else {
        String::new()
    };
    VariantsContext {
        name: r.name.clone(),
        group: r.group,
        class: if r.passed() { "pass" } else { "fail" },
        conclusion: conclusion(r),
        method: method_line(c),
        heads,
        rows,
        costs: r
            .variants
            .iter()
            .map(|v| Cost {
                name: v.name.clone(),
                line: cost_line(&v.cost, &v.report.run.cost),
            })
            .collect(),
        axis: markup(diff_axis(span)),
        adjusted_head: match c.options.multiple {
            probity_core::stats::MultipleTesting::Holm => "Holm-adjusted p",
            probity_core::stats::MultipleTesting::None => "p (no correction)",
        },
        diffs,
        inputs,
        inputs_note,
        linked,
    }
}

#[derive(Serialize)]
struct Page {
    page: PageShell,
    variants: VariantsContext,
}

/// A self-contained page of the variants report.
pub(crate) fn page(r: &VariantsReport) -> String {
    let mut shell = PageShell::small(format!("probity variants: {} (group {})", r.name, r.group));
    shell.style = markup(format!("{}\n{VARIANTS_STYLE}", shell.style));
    render(
        "variants.html",
        Page {
            page: shell,
            variants: context(r, false),
        },
    )
}
