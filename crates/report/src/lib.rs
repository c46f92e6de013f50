//! # probity-report
//!
//! Reports of a reliability test run, in four formats:
//!
//! | format | module | for |
//! | --- | --- | --- |
//! | [`Format::Text`] | [`text`] | the terminal (optionally coloured) |
//! | [`Format::Json`] | [`json`] | tools: a stable, versioned schema (`probity.report.v1`, see `SCHEMA.md`) |
//! | [`Format::Junit`] | [`junit`] | CI test reporters (GitLab, GitHub actions): one test case per check |
//! | [`Format::Markdown`] | [`markdown`] | `$GITHUB_STEP_SUMMARY` and pull-request comments |
//! | [`Format::Html`] | [`html`] | one self-contained page: verdicts, heatmaps of the tensor, profiles, retry plan, guarded system, failing outputs |
//!
//! [`heatmap()`] draws the input × check grid in a terminal.
//!
//! The CLI fills a [`Report`] (run metadata, the core's [`Summary`], input
//! labels, a few failing outputs, and for the HTML report and the heatmap
//! the tensor and every failing output, and for a run with a retry policy
//! the guarded system beside its prediction) and calls [`render`].
//!
//! Model outputs, input ids and check names are treated as untrusted text:
//! every format escapes them for its medium (terminal control sequences,
//! XML, Markdown, HTML), see [`sanitize`].

pub mod compare;
pub mod guarded;
pub mod heatmap;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sanitize;
pub mod text;
pub mod trend;

mod facts;
mod numbers;

pub use heatmap::heatmap;

use probity_core::stats::Decision;
use probity_core::{Cell, ReliabilityTensor, Summary};
use std::fmt;

/// Metadata of one run, as the run store knows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// The run's id in the run store.
    pub id: i64,
    /// The run's (experiment's) name.
    pub name: String,
    /// When the run was created, as stored (RFC 3339 preferred).
    pub created_at: String,
    /// Hash of the configuration the run was made with.
    pub config_hash: String,
    /// The system under test: provider and model, e.g. `openai/gpt-4o-mini`.
    pub system: String,
    /// Wall-clock duration of the run in seconds, when known.
    pub duration_s: Option<f64>,
    /// Calls made to the model for this run.
    pub model_calls: u64,
    /// Outputs served from the cache instead of a model call.
    pub cached: u64,
    /// False when the run stopped before every output was sampled and
    /// validated.
    pub complete: bool,
}

/// A failing output to show in a report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Example {
    /// Index `k` of the check (into `summary.checks`).
    pub check: usize,
    /// Index `i` of the input (into `input_labels`).
    pub input: usize,
    /// Index `j` of the repetition.
    pub repetition: usize,
    /// The model's output, verbatim (untrusted).
    pub output: String,
    /// Why the check failed, when it says (e.g. a judge's reasons).
    pub reason: Option<String>,
}

/// One output that failed (or errored on) at least one check, for the
/// HTML report's browser of failing outputs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FailingSample {
    /// Index `i` of the input (into `input_labels`).
    pub input: usize,
    /// Index `j` of the repetition.
    pub repetition: usize,
    /// The model's output, verbatim (untrusted); `None` when the call
    /// produced none (e.g. a provider error).
    pub output: Option<String>,
    /// Why there is no output, or the provider's error, when known.
    pub error: Option<String>,
    /// Checks `k` whose verdict on this output is a failure.
    pub failed: Vec<usize>,
    /// Checks `k` that could not judge this output (predicate, judge or
    /// provider error).
    pub errored: Vec<usize>,
    /// Reasons given by checks, as `(k, reason)` (e.g. a judge's reasons or
    /// an error message).
    pub reasons: Vec<(usize, String)>,
}

impl FailingSample {
    /// The outputs of `t` with at least one `Fail` or `Error` cell, in
    /// input then repetition order, at most `limit` of them (0: no limit),
    /// with `failed` and `errored` filled in; `output`, `error` and
    /// `reasons` are left for the caller to fill from the run store.
    pub fn from_tensor(t: &ReliabilityTensor, limit: usize) -> Vec<FailingSample> {
        let (n, m, _) = t.shape();
        let mut out = Vec::new();
        let mut cells = Vec::new();
        for i in 0..n {
            for j in 0..m {
                if limit > 0 && out.len() >= limit {
                    return out;
                }
                t.output_cells(i, j, &mut cells);
                let pick = |want: Cell| -> Vec<usize> {
                    cells
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c == want)
                        .map(|(k, _)| k)
                        .collect()
                };
                let failed = pick(Cell::Fail);
                let errored = pick(Cell::Error);
                if !failed.is_empty() || !errored.is_empty() {
                    out.push(FailingSample {
                        input: i,
                        repetition: j,
                        failed,
                        errored,
                        ..FailingSample::default()
                    });
                }
            }
        }
        out
    }
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub run: RunInfo,
    pub summary: Summary,
    /// Input ids, index `i`; inputs without a label are shown as `#i`.
    pub input_labels: Vec<String>,
    /// Failing outputs to show: the first one per check is used by the
    /// text and Markdown reports; JSON lists them all.
    pub examples: Vec<Example>,
    /// Target probability that a guarded call publishes an output, for the
    /// retry plan (e.g. 0.99).
    pub retry_target: f64,
    /// The reliability tensor the summary was computed from. The HTML
    /// report and [`heatmap()`] draw their heatmaps from it; without it they
    /// say the heatmaps are unavailable. Other formats ignore it.
    pub tensor: Option<ReliabilityTensor>,
    /// Failing outputs for the HTML report's browser, in the order to
    /// show them; the page shows the first [`html::FAILURES_SHOWN`], so a
    /// caller may stop collecting there (the page counts the total on the
    /// tensor). Start from [`FailingSample::from_tensor`]. Other formats
    /// ignore it.
    pub failures: Vec<FailingSample>,
    /// The guarded system measured beside its retry plan's prediction
    /// (paper §4.2), for a run made with a `[retry]` policy; `None`
    /// otherwise. Every format shows it (see [`guarded`]).
    pub guarded: Option<probity_core::guarded::RetryCheck>,
}

impl Report {
    /// True when every check's verdict is `Pass` (inconclusive does not
    /// pass). The CLI's exit code follows this.
    pub fn passed(&self) -> bool {
        self.summary.passed()
    }

    /// The label of input `i`: its id, or `#i` when it has none.
    pub fn input_label(&self, i: usize) -> String {
        match self.input_labels.get(i) {
            Some(l) if !l.is_empty() => l.clone(),
            _ => format!("#{i}"),
        }
    }

    /// The name of check `k`, or `#k` when out of range.
    pub fn check_name(&self, k: usize) -> String {
        self.summary
            .checks
            .get(k)
            .map_or_else(|| format!("#{k}"), |c| c.info.name.clone())
    }

    /// The first example failing output of check `k`.
    pub fn example_for(&self, k: usize) -> Option<&Example> {
        self.examples.iter().find(|e| e.check == k)
    }

    /// Counts of checks by decision: `(pass, fail, inconclusive)`.
    pub fn tally(&self) -> (usize, usize, usize) {
        let mut t = (0, 0, 0);
        for c in &self.summary.checks {
            match c.verdict.decision {
                Decision::Pass => t.0 += 1,
                Decision::Fail => t.1 += 1,
                Decision::Inconclusive => t.2 += 1,
            }
        }
        t
    }

    /// The one-line conclusion shared by the text and Markdown reports,
    /// e.g. `PASS: 2 of 2 checks meet their minimum`.
    pub fn conclusion(&self) -> String {
        let (pass, fail, inconclusive) = self.tally();
        let k = self.summary.checks.len();
        let mut s = if self.passed() {
            if k == 0 {
                "PASS: no checks to judge".to_string()
            } else {
                format!(
                    "PASS: {pass} of {k} {} meet their minimum",
                    plural(k, "check")
                )
            }
        } else if fail > 0 {
            let mut s = format!("FAIL: {fail} of {k} {} below minimum", plural(k, "check"));
            if inconclusive > 0 {
                s.push_str(&format!(", {inconclusive} inconclusive"));
            }
            s
        } else {
            format!(
                "FAIL: {inconclusive} of {k} {} inconclusive (compliance not established)",
                plural(k, "check")
            )
        };
        if !self.run.complete {
            s.push_str(" (run incomplete)");
        }
        s
    }
}

pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// An output format of a report. Its names come from strum: the canonical
/// name (`text`, `json`, `junit`, `markdown`, `html`) is what [`Format::name`]
/// and `Display` give; parsing is case-insensitive and also accepts the
/// aliases `txt`, `xml`, `md`, `gfm` and `htm`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(
    serialize_all = "lowercase",
    ascii_case_insensitive,
    parse_err_ty = UnknownFormat,
    parse_err_fn = UnknownFormat::of
)]
pub enum Format {
    #[default]
    #[strum(to_string = "text", serialize = "txt")]
    Text,
    Json,
    #[strum(to_string = "junit", serialize = "xml")]
    Junit,
    #[strum(to_string = "markdown", serialize = "md", serialize = "gfm")]
    Markdown,
    #[strum(to_string = "html", serialize = "htm")]
    Html,
}

impl Format {
    /// Every format, in the order of [`Format::NAMES`].
    pub const ALL: [Format; 5] = [
        Format::Text,
        Format::Json,
        Format::Junit,
        Format::Markdown,
        Format::Html,
    ];
    /// The canonical names (for a CLI's possible values).
    pub const NAMES: &'static [&'static str] = <Format as strum::VariantNames>::VARIANTS;

    /// The canonical name: `text`, `json`, `junit`, `markdown` or `html`.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Error of parsing a [`Format`] name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl UnknownFormat {
    fn of(name: &str) -> Self {
        UnknownFormat(name.to_string())
    }
}

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown report format `{}`: expected one of {}",
            self.0,
            Format::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownFormat {}

/// Render `report` in `format`. `color` adds ANSI colours to the text
/// format and is ignored by the others (the HTML page is always in
/// colour, and legible in print).
pub fn render(report: &Report, format: Format, color: bool) -> String {
    match format {
        Format::Text => text::render(report, color),
        Format::Json => json::render(report),
        Format::Junit => junit::render(report),
        Format::Markdown => markdown::render(report),
        Format::Html => html::render(report),
    }
}
