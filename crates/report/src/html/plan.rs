//! A retry plan in HTML: a small page quoting the plan's text
//! ([`crate::text`]) in a `<pre>`, escaped. `probity plan` prints text;
//! this is the plan for a caller that asks for a page.

use crate::document::plan::PlanReport;
use crate::html::page::small_page;
use crate::sanitize::html_escape;

/// The plan as a small self-contained page.
pub(crate) fn page(p: &PlanReport) -> String {
    let title = match &p.run {
        Some(r) => format!("probity retry plan: run #{} {}", r.run.id, r.run.name),
        None => "probity retry plan".to_string(),
    };
    small_page(
        &title,
        &format!(
            "<h1>{}</h1>\n<pre>{}</pre>\n",
            html_escape(&title),
            html_escape(&crate::text::plan::render(p))
        ),
    )
}
