//! The terminal format (`--format text`, the default): every document as
//! plain text, coloured with ANSI codes when asked.
//!
//! | document | module | shows |
//! | --- | --- | --- |
//! | run | [`run`] | header (calls, tokens, cost in money when priced, reuse), one line per check with its figures, inputs, scope, consistency and errors (BROKEN for a check that could not judge any output), the calls to the system that failed, aggregate, worst inputs, retry plan, the guarded system ([`guarded`]), a serve run's live rates ([`live`]), the conclusion, then the comparison with a baseline ([`comparison`]) |
//! | comparison | [`comparison`] | the runs, one line per check with its change in points, the conclusion |
//! | trend | [`trend`] | a table: one row per run, one column per check |
//! | plan | [`plan`] | the retry plan, its table of attempts or per input |
//! | variants | [`variants`] | the variant × check matrix, each variant's cost, the differences against the reference (or every pair), the conclusion |
//!
//! [`heatmap()`] draws a run's tensor as a heatmap in the terminal.
//!
//! Text is the plain base of the other formats: it imports none of them,
//! and they may quote it (Markdown and HTML quote a trend or a plan
//! verbatim, JUnit the guarded block). Every piece of text from a run goes
//! through [`crate::sanitize::terminal_line`].

pub mod comparison;
pub mod guarded;
pub mod heatmap;
pub mod live;
mod paint;
pub mod plan;
pub mod run;
pub mod trend;
pub mod variants;

use crate::document::Document;

pub use heatmap::heatmap;
pub use run::{EXAMPLE_MAX_CHARS, LINE_MAX_CHARS, NAME_MAX_CHARS};

/// Render `doc` as terminal text; `color` adds ANSI colours and bold.
pub(crate) fn render(doc: Document<'_>, color: bool) -> String {
    match doc {
        Document::Run(r) => run::render(r, color),
        Document::Comparison(c) => comparison::render(c, color),
        Document::Trend(t) => trend::render(t),
        Document::Plan(p) => plan::render(p),
        Document::Variants(v) => variants::render(v, color),
    }
}
