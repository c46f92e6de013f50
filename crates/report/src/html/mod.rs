//! The HTML format (`--format html`): every document as one
//! self-contained page (no network, no CDN, no external fonts), charts in
//! inline SVG (`svg`).
//!
//! | document | module | page |
//! | --- | --- | --- |
//! | run | [`run`] ([`tensor`], [`guarded`], [`comparison`]) | calls and reuse, verdicts (BROKEN checks), each rate's inputs and scope, errors with their causes, consistency per input, heatmaps, profiles, retry plan, guarded system, failing outputs beside their inputs (an agent's episode drawn as a conversation: [`transcript`]), filters; the comparison with a baseline as a section |
//! | comparison | [`comparison`] | a table of changes with interval bars around zero |
//! | trend | [`trend`] | one chart and one table per check |
//! | plan | [`plan`] | the plan's text in a `<pre>` |
//! | variants | [`variants`] | the variant × check matrix, cost per variant, differences as interval bars around zero, inputs with every variant's outputs side by side |
//!
//! [`page`] holds what the pages share: the run page's style, script and
//! Content-Security-Policy, and the small pages' shell. Pages are laid out
//! by minijinja templates (`templates/`, through [`template`]), which
//! escape every value they print with [`crate::sanitize::html_escape`]
//! unless Rust code marked it as markup (the SVG charts of `svg.rs`,
//! which escape their own labels); no run data is put inside `<script>`
//! or `<style>`. Every rate bar on a page uses one scale
//! ([`run::page_scale`]).

pub mod comparison;
pub mod guarded;
pub mod page;
pub mod plan;
pub mod run;
pub mod sample;
pub mod template;
pub mod tensor;
pub mod transcript;
pub mod trend;
pub mod variants;
pub mod view;

use crate::document::Document;

pub use page::{content_security_policy, SCRIPT};
pub use run::{FAILURES_SHOWN, OUTPUT_MAX_CHARS, PROFILE_MAX_ROWS};
pub use tensor::{HEATMAP_MAX_INPUTS, HEATMAP_MAX_REPETITIONS};

/// Render `doc` as an HTML page.
pub(crate) fn render(doc: Document<'_>) -> String {
    match doc {
        Document::Run(r) => run::page(r),
        Document::Comparison(c) => comparison::page(c),
        Document::Trend(t) => trend::page(t),
        Document::Plan(p) => plan::page(p),
        Document::Variants(v) => variants::page(v),
    }
}
