//! A retry plan in HTML: a small page quoting the plan's text
//! ([`crate::text`]) in a `<pre>` (`templates/plan.html`). `probity plan`
//! prints text; this is the plan for a caller that asks for a page.

use crate::document::plan::PlanReport;
use crate::html::page::PageShell;
use crate::html::template::render;
use serde::Serialize;

#[derive(Serialize)]
struct Page {
    page: PageShell,
    text: String,
}

/// The plan as a small self-contained page.
pub(crate) fn page(p: &PlanReport) -> String {
    let title = match &p.run {
        Some(r) => format!("probity retry plan: run #{} {}", r.run.id, r.run.name),
        None => "probity retry plan".to_string(),
    };
    render(
        "plan.html",
        Page {
            page: PageShell::small(title),
            text: crate::text::plan::render(p),
        },
    )
}
