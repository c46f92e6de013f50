//! The shell every HTML page shares: the run report's style, script and
//! Content-Security-Policy, the small pages of a comparison, a trend or a
//! plan, and what every section of them says the same way.
//!
//! Security: the one `<script>` is a constant that reads no run data but
//! `data-` attributes and option values; a Content-Security-Policy allows
//! only that script (by its SHA-256 hash), no inline event handlers, and
//! no network access at all, so an escaping slip could still not run
//! script or phone home. The small pages allow no script at all.

use crate::html::template::markup;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use minijinja::Value;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Longest label (input id, check name) in tables.
pub const LABEL_CHARS: usize = 40;
/// Longest label in charts.
pub const CHART_LABEL_CHARS: usize = 26;

/// The page's only script. It reads nothing from the run but option
/// values and `data-` attributes; the filter state lives in the URL hash
/// (`#validator=K&input=I`), applied on load. It marks the body
/// `data-ready="1"` when done (the browser test looks for it).
pub const SCRIPT: &str = r##"
(function () {
  "use strict";
  var d = document;
  var fv = d.getElementById("f-validator");
  var fi = d.getElementById("f-input");
  var rv = d.getElementById("rep-validator");
  var count = d.getElementById("f-count");
  function has(sel, v) {
    if (!sel) return false;
    for (var n = 0; n < sel.options.length; n++) if (sel.options[n].value === v) return true;
    return false;
  }
  function okValidator(el, v) {
    if (v === "") return true;
    var a = el.getAttribute("data-validators");
    if (a !== null) return (" " + a + " ").indexOf(" " + v + " ") >= 0;
    a = el.getAttribute("data-validator");
    return a === null || a === v;
  }
  function okInput(el, i) {
    if (i === "") return true;
    var a = el.getAttribute("data-input");
    return a === null || a === i;
  }
  function apply() {
    var v = fv ? fv.value : "", i = fi ? fi.value : "";
    d.querySelectorAll(".filterable").forEach(function (el) {
      el.hidden = !(okValidator(el, v) && okInput(el, i));
    });
    if (count) {
      var all = d.querySelectorAll(".failure").length;
      var shown = d.querySelectorAll(".failure:not([hidden])").length;
      count.textContent = shown + " of " + all + " shown";
    }
  }
  function showRep() {
    if (!rv) return;
    d.querySelectorAll("figure.rep").forEach(function (f) {
      f.hidden = f.getAttribute("data-rep") !== rv.value;
    });
  }
  function fromHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    var v = p.get("validator"), i = p.get("input");
    if (fv) fv.value = v !== null && has(fv, v) ? v : "";
    if (fi) fi.value = i !== null && has(fi, i) ? i : "";
    if (v !== null && has(rv, v)) rv.value = v;
  }
  function toHash() {
    var h = [];
    if (fv && fv.value !== "") h.push("validator=" + fv.value);
    if (fi && fi.value !== "") h.push("input=" + fi.value);
    history.replaceState(null, "", h.length ? "#" + h.join("&") : location.pathname + location.search);
  }
  if (fv) fv.addEventListener("change", function () { if (has(rv, fv.value)) rv.value = fv.value; showRep(); apply(); toHash(); });
  if (fi) fi.addEventListener("change", function () { apply(); toHash(); });
  if (rv) rv.addEventListener("change", showRep);
  window.addEventListener("hashchange", function () {
    // Section links (#checks) keep the filters; only #key=value sets them.
    if (location.hash.indexOf("=") < 0) return;
    fromHash(); showRep(); apply();
  });
  d.querySelectorAll(".needs-js").forEach(function (el) { el.hidden = false; });
  fromHash();
  showRep();
  apply();
  d.body.setAttribute("data-ready", "1");
})();
"##;

pub const STYLE: &str = r#"
:root { --fg: #111827; --muted: #4b5563; --line: #d1d5db; --bg: #ffffff; --soft: #f3f4f6; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 0 1.25rem 3rem; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  -webkit-print-color-adjust: exact; print-color-adjust: exact; }
h1 { font-size: 1.5rem; margin: 1.2rem 0 .3rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
p.note, .muted { color: var(--muted); }
.verdict { font-weight: 700; font-size: 1.1rem; padding: .5rem .8rem; border-radius: 6px; border-left: 6px solid; }
.verdict.pass { background: #f0fdf4; border-color: #15803d; color: #14532d; }
.verdict.fail { background: #fef2f2; border-color: #b91c1c; color: #7f1d1d; }
.verdict.inconclusive { background: #fffbeb; border-color: #b45309; color: #78350f; }
.verdict .rule { display: block; font-weight: 400; font-size: .9rem; }
td.nowrap, table.cmp td { white-space: nowrap; }
table.guarded .fig { display: block; font-variant-numeric: tabular-nums; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .6rem 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
nav { display: flex; gap: 1rem; flex-wrap: wrap; padding: .4rem 0; border-bottom: 1px solid var(--line); }
nav a { color: #1d4ed8; text-decoration: none; }
.filters { position: sticky; top: 0; background: #f9fafb; border: 1px solid var(--line); border-radius: 6px;
  padding: .4rem .7rem; margin: .7rem 0; z-index: 2; display: flex; gap: 1.2rem; flex-wrap: wrap; align-items: center; }
.filters[hidden], [hidden] { display: none !important; }
select { font: inherit; max-width: 22rem; }
table { border-collapse: collapse; margin: .4rem 0; }
th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; background: var(--soft); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { display: inline-block; font-weight: 700; font-size: .8rem; padding: .05rem .45rem; border-radius: 4px; color: #fff; }
.badge.pass { background: #15803d; } .badge.fail { background: #b91c1c; } .badge.inconclusive { background: #b45309; }
.badge.neutral { background: #6b7280; }
.msg { color: var(--muted); font-size: .9em; }
.scope { color: #78350f; font-size: .9em; }
details.input { margin: .3rem 0; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .3rem 0; }
dl.fields dd { margin: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: .8rem 0 1.4rem; }
figcaption { color: var(--muted); margin-bottom: .3rem; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
svg.bar { display: block; }
tr.alarmed td { background: #fef2f2; color: #7f1d1d; font-weight: 600; }
.failure { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem; margin: .6rem 0; }
.failure h3 { margin: 0 0 .3rem; font-size: .95rem; }
.failure ul { margin: .3rem 0; padding-left: 1.2rem; }
pre.output { white-space: pre-wrap; word-break: break-word; background: var(--soft); padding: .5rem .7rem;
  border-radius: 4px; max-height: 18em; overflow: auto; margin: .3rem 0; font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.transcript .turn { border-left: 3px solid var(--line); padding: .1rem .6rem; margin: .35rem 0; }
.transcript .role-user { border-left-color: #2563eb; }
.transcript .role-assistant { border-left-color: #15803d; }
.transcript .role-tool { border-left-color: #6b7280; margin-left: 1.2rem; }
.transcript .tool-error, .transcript .failed-turn { border-left-color: #b91c1c; }
.transcript .call { margin: .2rem 0; }
code { font: 13px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
@media print {
  nav, .filters, .needs-js { display: none !important; }
  figure.rep[hidden] { display: block !important; }
  pre.output { max-height: none; overflow: visible; }
  h2 { break-after: avoid; }
  tr, .failure, figure { break-inside: avoid; }
}
"#;

/// `'sha256-…'` of [`SCRIPT`] for the Content-Security-Policy.
fn script_hash() -> String {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()))
    )
}

/// The Content-Security-Policy of the page: nothing from the network,
/// inline styles, and only the page's own script.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {}; \
         base-uri 'none'; form-action 'none'",
        script_hash()
    )
}

/// The style of the small pages (a comparison, a trend, a plan).
pub const PAGE_STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:1rem 2rem;color:#111827}\
table{border-collapse:collapse}th,td{text-align:left;padding:.25rem .6rem;border-bottom:1px solid #e5e7eb}\
th{background:#f3f4f6}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
.badge{font-weight:700;font-size:.8rem;padding:.05rem .45rem;border-radius:4px;color:#fff}\
.badge.pass{background:#15803d}.badge.fail{background:#b91c1c}.badge.inconclusive{background:#6b7280}.badge.neutral{background:#6b7280}\
.verdict{font-weight:700;padding:.5rem .8rem;border-left:6px solid}.verdict.pass{border-color:#15803d}\
.verdict.fail{border-color:#b91c1c}.note{color:#4b5563}\
table.cmp td{white-space:nowrap}svg text{font-family:system-ui,sans-serif}";

/// What every page's shell (`templates/base.html`) needs: its
/// Content-Security-Policy, title, style and script (markup made here),
/// and a footer line.
#[derive(Serialize)]
pub(crate) struct PageShell {
    pub csp: String,
    pub title: String,
    pub style: Value,
    pub script: Option<Value>,
    pub footer: Option<String>,
    /// Seconds after which the page reloads itself (a live run).
    pub refresh: Option<u32>,
}

/// The CSP of the small pages: no script at all.
pub(crate) const SMALL_PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";

impl PageShell {
    /// The shell of a small page (a comparison, a trend, a plan): no
    /// script, [`PAGE_STYLE`].
    pub(crate) fn small(title: String) -> PageShell {
        PageShell {
            csp: SMALL_PAGE_CSP.to_string(),
            title,
            style: markup(PAGE_STYLE),
            script: None,
            footer: None,
            refresh: None,
        }
    }
}

/// ` Showing the 200 worst of 1000 inputs by IRP.`, or nothing when all are
/// shown.
pub(crate) fn capped_note(shown: usize, total: usize, what: &str, by: &str) -> String {
    if shown < total {
        format!(" Showing the {shown} worst of {total} {what} {by}.")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_is_constant_and_hashed() {
        assert!(!SCRIPT.contains("</"));
        assert!(content_security_policy().contains("'sha256-"));
        assert_eq!(script_hash().len(), "'sha256-'".len() + 44);
    }
}
