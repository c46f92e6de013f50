//! The JSON format (`--format json`): one versioned, documented document
//! per kind (`SCHEMA.md`), for tools.
//!
//! | document | module | schema |
//! | --- | --- | --- |
//! | run | [`run`] | `probity.report.v1`, with its comparison as `comparison` |
//! | comparison | [`comparison`] | `probity.compare.v1` |
//! | trend | [`trend`] | `probity.trend.v1` |
//! | plan | [`plan`] | `probity.plan.v1` |
//! | variants | [`variants`] | `probity.variants.v1` |
//!
//! Text is written verbatim (JSON escapes it); rates are fractions; a
//! float that is not finite is `null`.

pub mod calibration;
pub mod comparison;
pub mod cost;
pub mod live;
pub mod plan;
pub mod run;
pub mod trend;
pub mod variants;

use crate::document::Document;

pub use run::SCHEMA;

/// Render `doc` as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(doc: Document<'_>) -> String {
    match doc {
        Document::Run(r) => run::render(r),
        Document::Comparison(c) => comparison::render(c),
        Document::Trend(t) => trend::render(t),
        Document::Plan(p) => plan::render(p),
        Document::Variants(v) => variants::render(v),
    }
}
