//! # probity-report
//!
//! probity's reports: five documents, each in five formats.
//!
//! | document | type | made by |
//! | --- | --- | --- |
//! | a run | [`RunReport`] | `probity run`, `probity report RUN` |
//! | a comparison of two runs | [`ComparisonReport`] | `probity compare`; a run with `--baseline` carries one |
//! | a trend over runs of one name | [`TrendReport`] | `probity report --trend NAME` |
//! | a retry plan | [`PlanReport`] | `probity plan` |
//! | variants side by side | [`VariantsReport`] | `probity run` of a file with `[[variant]]` tables |
//!
//! | format | module | for |
//! | --- | --- | --- |
//! | [`Format::Text`] | [`text`] | the terminal (optionally coloured) |
//! | [`Format::Json`] | [`json`] | tools: stable, versioned schemas (`probity.report.v1`, …, see `SCHEMA.md`) |
//! | [`Format::Junit`] | [`junit`] | CI test reporters (GitLab, GitHub actions): one test case per check |
//! | [`Format::Markdown`] | [`markdown`] | `$GITHUB_STEP_SUMMARY` and pull-request comments |
//! | [`Format::Html`] | [`html`] | one self-contained page: verdicts, heatmaps of the tensor, profiles, retry plan, guarded system, failing outputs |
//!
//! The CLI fills a document and calls [`render`], the one entry:
//! `render(&report, format, color)`. [`heatmap()`] draws a run's tensor in
//! a terminal.
//!
//! Layout, one axis: the documents are data (`document`); each format is
//! one module that renders every document; `svg` draws the HTML pages'
//! charts; `facts`, `numbers` and [`sanitize`] are shared by every
//! format. No module imports this file, and no two modules import each
//! other (`scripts/import_graph.py` checks): `text` imports no other
//! format, and the others may quote its plain text.
//!
//! Model outputs, input ids and check names are treated as untrusted text:
//! every format escapes them for its medium (terminal control sequences,
//! XML, Markdown, HTML), see [`sanitize`].

mod document;
mod facts;
/// What `probity run` says before its outputs about a judge's labels.
pub use facts::calibration::labels_before_run;
/// How every format heads a run's errors (the CLI's progress lines too).
pub use facts::causes::{check_head, system_head};
pub use facts::cost::cost_phrase;
mod format;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
mod numbers;
pub mod sanitize;
mod svg;
pub mod text;

pub use document::comparison::ComparisonReport;
pub use document::info::{AutoConcurrencyInfo, CallsInfo, RunInfo};
pub use document::plan::{JudgedSizing, PlanReport, PlanRun, SampleSizeCheck, SampleSizePlan};
pub use document::run::{Example, FailingSample, RunReport};
pub use document::trend::{TrendMark, TrendReport, TrendRun};
pub use document::variants::{InputOutputs, VariantColumn, VariantsReport};
pub use document::Document;
pub use format::{Format, UnknownFormat};
pub use text::heatmap::heatmap;

/// Render `doc` (a [`RunReport`], [`ComparisonReport`], [`TrendReport`] or
/// [`PlanReport`], by reference, or a [`Document`]) in `format`. `color`
/// adds ANSI colours to the text format and is ignored by the others (the
/// HTML page is always in colour, and legible in print).
///
/// Every format renders every document; where a format has nothing of its
/// own to say about one (JUnit of a trend or a plan, which check nothing)
/// it gives the document's text.
pub fn render<'a>(doc: impl Into<Document<'a>>, format: Format, color: bool) -> String {
    let doc = doc.into();
    match format {
        Format::Text => text::render(doc, color),
        Format::Json => json::render(doc),
        Format::Junit => junit::render(doc),
        Format::Markdown => markdown::render(doc),
        Format::Html => html::render(doc),
    }
}

/// [`render`] into `w`. The JSON report of a run is written as it is
/// serialised, not built as one string first (its size grows with the
/// inputs); every other document is rendered, then written.
pub fn render_to<'a>(
    doc: impl Into<Document<'a>>,
    format: Format,
    color: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match (doc.into(), format) {
        (Document::Run(r), Format::Json) => json::run::write(r, w),
        (doc, format) => w.write_all(render(doc, format, color).as_bytes()),
    }
}
