//! The one rendering layer of every HTML page (reports and `probity
//! view`): minijinja templates under `html/templates/`, compiled into the
//! binary, with HTML auto-escaping on for every template.
//!
//! Escaping by default: every value a template prints goes through
//! [`html_escape`] (the same function every hand-written fragment used
//! before: it also strips terminal escapes, control characters and
//! bidirectional overrides) unless it was made with [`markup`] — the
//! charts of `svg.rs`, which escape their own labels, and the page's
//! constant script and style. Templates never use `|safe`; a value is
//! markup only when Rust code says so, so a template slip cannot let run
//! data through unescaped.

use crate::sanitize::{html_escape, truncate_chars};
use minijinja::{AutoEscape, Environment, Value};
use serde::Serialize;
use std::sync::OnceLock;

/// The templates, by name. `base.html` is the shell the others extend.
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("macros.html", include_str!("templates/macros.html")),
    ("run.html", include_str!("templates/run.html")),
    ("comparison.html", include_str!("templates/comparison.html")),
    ("trend.html", include_str!("templates/trend.html")),
    ("plan.html", include_str!("templates/plan.html")),
    (
        "variants_section.html",
        include_str!("templates/variants_section.html"),
    ),
    ("variants.html", include_str!("templates/variants.html")),
    (
        "view_variants.html",
        include_str!("templates/view_variants.html"),
    ),
    ("view_base.html", include_str!("templates/view_base.html")),
    ("view_runs.html", include_str!("templates/view_runs.html")),
    (
        "view_outputs.html",
        include_str!("templates/view_outputs.html"),
    ),
    (
        "view_compare.html",
        include_str!("templates/view_compare.html"),
    ),
    ("view_live.html", include_str!("templates/view_live.html")),
    ("view_trend.html", include_str!("templates/view_trend.html")),
    (
        "view_message.html",
        include_str!("templates/view_message.html"),
    ),
];

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        env.set_formatter(|out, state, value| {
            if state.auto_escape() == AutoEscape::Html
                && !value.is_safe()
                && !value.is_undefined()
                && !value.is_none()
            {
                out.write_str(&html_escape(&value.to_string()))?;
                Ok(())
            } else {
                minijinja::escape_formatter(out, state, value)
            }
        });
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        // `x|short(40)`: cut to 40 characters with `…` (0: no limit); the
        // result is still plain text, escaped when printed.
        env.add_filter("short", |s: String, n: usize| {
            truncate_chars(&s, n).into_owned()
        });
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .unwrap_or_else(|e| panic!("template {name}: {e:#}"));
        }
        env
    })
}

/// Render template `name` with `ctx`. The templates are compiled into
/// the binary and tested, so a failure is a bug in probity: it panics
/// with the template's error rather than returning half a page.
pub fn render(name: &str, ctx: impl Serialize) -> String {
    let t = environment()
        .get_template(name)
        .unwrap_or_else(|e| panic!("template {name}: {e:#}"));
    t.render(ctx)
        .unwrap_or_else(|e| panic!("rendering {name}: {e:#}"))
}

/// Markup made by probity's own code (an SVG chart, the page's script):
/// printed as it is. Never give it text from a run that was not escaped.
pub fn markup(s: impl Into<String>) -> Value {
    Value::from_safe_string(s.into())
}
