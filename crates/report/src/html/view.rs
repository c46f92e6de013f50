//! The pages of `probity view`, the local viewer over the run store: the
//! runs list with its filters, a run's report, all of a run's outputs
//! with filters (check, input, verdict), two runs compared with their
//! outputs side by side, a name's trend, and a live run's rates
//! refreshing. Each is one template (`templates/view_*.html`) on the same
//! layer as the reports ([`crate::html::template`]: every value escaped
//! unless made markup here).
//!
//! Filters are plain GET forms (`?verdict=fail&check=1`): they work
//! without JavaScript, a filtered page has its own address, and the
//! viewer's pages carry no script at all (their Content-Security-Policy,
//! [`VIEW_CSP`], allows none). The run's report page keeps its own script
//! and policy.

use crate::document::comparison::ComparisonReport;
use crate::document::run::{FailingSample, RunReport};
use crate::document::trend::TrendReport;
use crate::html::page::{PageShell, STYLE};
use crate::html::run::{output, page_scale, Output};
use crate::html::sample::{badge_of, sample_verdict, ShownOutput};
use crate::html::template::{markup, render};
use crate::numbers::{decision_word, interval, name, pct, plural};
use crate::svg::{bar, bar_axis, decision_colour};
use minijinja::Value;
use serde::Serialize;

/// The Content-Security-Policy of the viewer's pages: no script, no
/// network but the forms' own GET requests to the viewer. (Framing is
/// refused by the server's `X-Frame-Options`: `frame-ancestors` has no
/// effect in a `<meta>` policy.)
pub const VIEW_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
     base-uri 'none'; form-action 'self'";

/// Outputs listed on one outputs page; the page says when there are more.
pub const OUTPUTS_SHOWN: usize = 1000;
/// Shared inputs shown side by side on a comparison page.
pub const PAIRS_SHOWN: usize = 200;
/// Outputs of one input shown per run on a comparison page.
pub const PAIR_OUTPUTS: usize = 5;
/// Characters of one output on a comparison page.
const PAIR_OUTPUT_CHARS: usize = 1200;

const VIEW_STYLE: &str = "nav.viewer{display:flex;gap:1rem;align-items:center;padding:.5rem 0;border-bottom:2px solid var(--line)}\
nav.viewer a{color:#1d4ed8;text-decoration:none}\
form.filters{position:static}\
.output-card{border:1px solid var(--line);border-left:4px solid #15803d;border-radius:6px;padding:.4rem .7rem;margin:.5rem 0}\
.output-card.fail{border-left-color:#b91c1c}.output-card.error{border-left-color:#b45309}\
.output-card h3{margin:0 0 .3rem;font-size:.95rem}\
.sides{display:grid;grid-template-columns:1fr 1fr;gap:1rem}\
.pair{border-top:1px solid var(--line);margin-top:1rem}";

fn shell(title: String, refresh: Option<u32>) -> PageShell {
    PageShell {
        csp: VIEW_CSP.to_string(),
        title,
        style: markup(format!("{STYLE}\n{VIEW_STYLE}")),
        script: None,
        footer: Some(format!(
            "probity {} · probity view (local; the store is read, never written)",
            env!("CARGO_PKG_VERSION")
        )),
        refresh,
    }
}

// ---------------------------------------------------------------- runs

/// One stored run in the runs list.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunEntry {
    pub id: i64,
    pub name: String,
    pub created: String,
    /// `complete`, `running`, `interrupted`, …
    pub status: String,
    /// A compact label of the system (`sim seed 42`, `openai/gpt-4o`).
    pub system: String,
    pub shape: String,
    pub calls: u64,
    /// Checks passing, of all: `None` when no verdict is known.
    pub passed: Option<(usize, usize)>,
    /// Whether a `probity serve` run is still being written.
    pub live: bool,
    /// A variant of a variants run (`[[variant]]`): its variant's name,
    /// linked to the variants page.
    pub variant: Option<String>,
}

impl RunEntry {
    /// `pass` (every check passes), `fail`, or `none` (no verdict).
    pub fn verdict(&self) -> &'static str {
        match self.passed {
            Some((p, n)) if p == n && n > 0 => "pass",
            Some((_, n)) if n > 0 => "fail",
            _ => "none",
        }
    }
}

/// The runs list's filters, as given in the address (empty: any).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunsFilter {
    pub name: String,
    /// `YYYY-MM-DD`: runs created that day or later.
    pub since: String,
    /// `pass`, `fail` or `none`.
    pub verdict: String,
}

impl RunsFilter {
    /// Whether `r` passes the filters. Dates compare as text: the store
    /// writes ISO 8601 (`2024-08-30T12:00:00Z`).
    pub fn keeps(&self, r: &RunEntry) -> bool {
        (self.name.is_empty() || r.name == self.name)
            && (self.since.is_empty() || r.created.as_str() >= self.since.as_str())
            && (self.verdict.is_empty() || r.verdict() == self.verdict)
    }
}

#[derive(Serialize)]
struct RunRow<'a> {
    id: i64,
    name: &'a str,
    created: &'a str,
    status: &'a str,
    system: &'a str,
    shape: &'a str,
    calls: u64,
    verdict: &'static str,
    badge: &'static str,
    tally: String,
    live: bool,
    variant: Option<&'a str>,
}

/// The runs list: every run (newest first) that passes `filter`, with the
/// filter form and a form to compare two runs.
pub fn runs_page(all: &[RunEntry], filter: &RunsFilter) -> String {
    let mut names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let runs: Vec<RunRow> = all
        .iter()
        .filter(|r| filter.keeps(r))
        .map(|r| {
            let verdict = r.verdict();
            RunRow {
                id: r.id,
                name: &r.name,
                created: &r.created,
                status: &r.status,
                system: &r.system,
                shape: &r.shape,
                calls: r.calls,
                verdict,
                badge: match verdict {
                    "pass" => "pass",
                    "fail" => "fail",
                    _ => "neutral",
                },
                tally: match r.passed {
                    Some((p, n)) => format!("{p}/{n} pass"),
                    None => "no verdict".to_string(),
                },
                live: r.live,
                variant: r.variant.as_deref(),
            }
        })
        .collect();
    render(
        "view_runs.html",
        minijinja::context! {
            page => shell("probity view: runs".into(), None),
            links => Vec::<(String, String)>::new(),
            names,
            filter,
            total => all.len(),
            runs,
        },
    )
}

// ---------------------------------------------------------------- a run

/// A run's report page with the viewer's links (its outputs, its trend).
pub fn run_page(r: &RunReport) -> String {
    crate::html::run::page_with_links(r, run_links(r))
}

fn run_links(r: &RunReport) -> Vec<(String, String)> {
    vec![
        (format!("/runs/{}", r.run.id), format!("Run #{}", r.run.id)),
        (
            format!("/runs/{}/outputs", r.run.id),
            "All outputs".to_string(),
        ),
        (trend_href(&r.run.name), format!("Trend of {}", r.run.name)),
    ]
}

fn trend_href(name: &str) -> String {
    let mut s = String::from("/trend/");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The outputs page's filters (`None`: any).
#[derive(Debug, Clone, Default, Serialize)]
pub struct OutputsFilter {
    pub check: Option<usize>,
    pub input: Option<usize>,
    /// `pass`, `fail` (failed a check) or `error` (not judged, or no output).
    pub verdict: String,
}

impl OutputsFilter {
    /// Whether sample `s` passes the filters; with a check, the verdict is
    /// that check's.
    pub fn keeps(&self, s: &FailingSample) -> bool {
        if self.input.is_some_and(|i| i != s.input) {
            return false;
        }
        let verdict = match self.check {
            Some(k) if s.failed.contains(&k) => "fail",
            Some(k) if s.errored.contains(&k) => "error",
            Some(_) if s.output.is_none() => "error",
            Some(_) => "pass",
            None => sample_verdict(s),
        };
        self.verdict.is_empty() || verdict == self.verdict
    }
}

#[derive(Serialize)]
struct OutputCard {
    #[serde(flatten)]
    o: Output,
    verdict: &'static str,
    badge: &'static str,
}

/// Every stored output of a run (`samples`: one per input × repetition,
/// passing ones too, with their failed and errored checks), filtered.
pub fn outputs_page(r: &RunReport, samples: &[FailingSample], filter: &OutputsFilter) -> String {
    let kept: Vec<&FailingSample> = samples.iter().filter(|s| filter.keeps(s)).collect();
    let shown = kept.len().min(OUTPUTS_SHOWN);
    let outputs: Vec<OutputCard> = kept
        .iter()
        .take(shown)
        .map(|s| {
            let verdict = sample_verdict(s);
            OutputCard {
                o: output(r, s),
                verdict,
                badge: badge_of(verdict),
            }
        })
        .collect();
    let mut inputs: Vec<(usize, String)> = samples
        .iter()
        .map(|s| (s.input, r.input_label(s.input)))
        .collect();
    inputs.dedup();
    render(
        "view_outputs.html",
        minijinja::context! {
            page => shell(format!("probity view: outputs of run #{} {}", r.run.id, r.run.name), None),
            links => run_links(r),
            run => minijinja::context! {
                id => r.run.id,
                name => &r.run.name,
                class => if r.passed() { "pass" } else { "fail" },
                conclusion => r.conclusion(),
            },
            checks => (0..r.summary.checks.len()).map(|k| (k, r.check_name(k))).collect::<Vec<_>>(),
            inputs,
            filter,
            shown,
            matching => kept.len(),
            all => samples.len(),
            capped => shown < kept.len(),
            outputs,
        },
    )
}

// ---------------------------------------------------------------- compare

#[derive(Serialize)]
struct Pair {
    label: String,
    a_passed: String,
    b_passed: String,
    a: Vec<ShownOutput>,
    b: Vec<ShownOutput>,
}

fn side(r: &RunReport, samples: &[&FailingSample]) -> (String, Vec<ShownOutput>) {
    let passed = samples
        .iter()
        .filter(|s| sample_verdict(s) == "pass")
        .count();
    let mut sorted: Vec<&&FailingSample> = samples.iter().collect();
    // Failing outputs first, then in repetition order.
    sorted.sort_by_key(|s| (sample_verdict(s) == "pass", s.repetition));
    let outs = sorted
        .into_iter()
        .take(PAIR_OUTPUTS)
        .map(|s| ShownOutput::of(r, s, PAIR_OUTPUT_CHARS))
        .collect();
    (format!("{passed} of {} passed", samples.len()), outs)
}

/// Two runs compared: the comparison (the same section as a report's),
/// then each shared input (matched by id) with its outputs in A and B
/// side by side; `only_differing` keeps the inputs whose pass counts
/// differ.
pub fn compare_page(
    c: &ComparisonReport,
    a: (&RunReport, &[FailingSample]),
    b: (&RunReport, &[FailingSample]),
    only_differing: bool,
) -> String {
    let (ra, sa) = a;
    let (rb, sb) = b;
    let mut pairs = Vec::new();
    let mut shared = 0;
    for (i, label) in ra.input_labels.iter().enumerate() {
        let Some(j) = rb.input_labels.iter().position(|l| l == label) else {
            continue;
        };
        let xa: Vec<&FailingSample> = sa.iter().filter(|s| s.input == i).collect();
        let xb: Vec<&FailingSample> = sb.iter().filter(|s| s.input == j).collect();
        let pa = xa.iter().filter(|s| sample_verdict(s) == "pass").count();
        let pb = xb.iter().filter(|s| sample_verdict(s) == "pass").count();
        let (na, nb) = (xa.len().max(1) as f64, xb.len().max(1) as f64);
        if only_differing && (pa as f64 / na - pb as f64 / nb).abs() < 1e-12 {
            continue;
        }
        shared += 1;
        if pairs.len() >= PAIRS_SHOWN {
            continue;
        }
        let (a_passed, a_out) = side(ra, &xa);
        let (b_passed, b_out) = side(rb, &xb);
        pairs.push(Pair {
            label: label.clone(),
            a_passed,
            b_passed,
            a: a_out,
            b: b_out,
        });
    }
    let capped = if pairs.len() < shared {
        format!(" Showing {} of {shared} inputs.", pairs.len())
    } else {
        String::new()
    };
    render(
        "view_compare.html",
        minijinja::context! {
            page => shell(format!("probity view: run #{} → #{}", ra.run.id, rb.run.id), None),
            links => vec![
                (format!("/runs/{}", ra.run.id), format!("Run #{}", ra.run.id)),
                (format!("/runs/{}", rb.run.id), format!("Run #{}", rb.run.id)),
            ],
            a => minijinja::context! { id => ra.run.id },
            b => minijinja::context! { id => rb.run.id },
            comparison => crate::html::comparison::context(c),
            only => if only_differing { "differ" } else { "" },
            capped,
            pairs,
        },
    )
}

// ---------------------------------------------------------------- trend

/// A name's trend: a chart and a table per check, runs linked.
pub fn trend_page(t: &TrendReport) -> String {
    render(
        "view_trend.html",
        minijinja::context! {
            page => shell(format!("probity view: trend of {}", t.name), None),
            links => vec![(trend_href(&t.name), format!("Trend of {}", t.name))],
            name => &t.name,
            runs => t.runs.len(),
            checks => crate::html::trend::checks(t),
        },
    )
}

// ---------------------------------------------------------------- variants

/// A variants run side by side (the report's section, in the viewer's
/// frame, every variant's run linked).
pub fn variants_page(r: &crate::document::variants::VariantsReport) -> String {
    let mut page = shell(
        format!("probity view: variants of {} (group {})", r.name, r.group),
        None,
    );
    page.style = markup(format!(
        "{}\n{}",
        page.style,
        crate::html::variants::VARIANTS_STYLE
    ));
    render(
        "view_variants.html",
        minijinja::context! {
            page,
            links => r.variants.iter().map(|v| (format!("/runs/{}", v.report.run.id), format!("Run #{} {}", v.report.run.id, v.name))).collect::<Vec<_>>(),
            variants => crate::html::variants::context(r, true),
        },
    )
}

// ---------------------------------------------------------------- live

#[derive(Serialize)]
struct LiveCheck {
    class: &'static str,
    word: String,
    name: String,
    rate: String,
    bar: Value,
    n: u64,
}

/// A run's rates as they stand, the page reloading itself every
/// `refresh` seconds while `live` (a `probity serve` run being written).
pub fn live_page(r: &RunReport, status: &str, live: bool, refresh: u32, updated: &str) -> String {
    let lo = page_scale(r);
    let checks: Vec<LiveCheck> = r
        .summary
        .checks
        .iter()
        .map(|c| {
            let d = c.verdict.decision;
            LiveCheck {
                class: name(d),
                word: decision_word(d),
                name: c.info.name.clone(),
                rate: if c.rate.n == 0 {
                    "–".to_string()
                } else {
                    format!(
                        "{} {}",
                        pct(c.rate.estimate),
                        interval(c.rate.interval.lower, c.rate.interval.upper)
                    )
                },
                bar: markup(bar(
                    &c.rate,
                    Some(c.verdict.threshold),
                    lo,
                    decision_colour(d),
                )),
                n: c.rate.n,
            }
        })
        .collect();
    let n = r.summary.shape.0;
    render(
        "view_live.html",
        minijinja::context! {
            page => shell(
                format!("probity view: run #{} {} (live)", r.run.id, r.run.name),
                live.then_some(refresh),
            ),
            links => run_links(r),
            run => minijinja::context! { id => r.run.id, name => &r.run.name, status },
            requests => format!("{n} {}", plural(n, "request")),
            live,
            refresh,
            updated,
            scale => format!("{} to 100%", crate::numbers::pct_num(lo)),
            axis => markup(bar_axis(lo)),
            checks,
        },
    )
}

/// A page with one message (not found, a bad request), in the viewer's
/// frame.
pub fn message_page(heading: &str, message: &str) -> String {
    render(
        "view_message.html",
        minijinja::context! {
            page => shell(format!("probity view: {heading}"), None),
            links => Vec::<(String, String)>::new(),
            heading,
            message,
        },
    )
}
