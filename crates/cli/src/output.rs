//! Rendering a stored run: the `--format`/`--output` options and the report
//! context built from the store.

use crate::failure::Failure;
use clap::Args;
use probity_core::Cell;
use probity_engine::run::stored::{self, StoredRun};
use probity_engine::store::{SampleRow, Store};
use probity_report::{
    html, render, render_to, Document, Example, FailingSample, Format, RunReport,
};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;

/// How many failing outputs a report quotes.
const EXAMPLES_PER_CHECK: usize = 1;

#[derive(Args, Clone)]
pub struct OutputArgs {
    /// Report format on stdout (or in --output).
    #[arg(long, default_value = "text", ignore_case = true, value_parser = format_parser())]
    pub format: Format,
    /// Write the report to this file instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also write JUnit XML here (for CI test reports).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Also write Markdown here (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Colour in the text report: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
}

/// The formats' canonical names as possible values (listed by `--help`),
/// each with its aliases (`txt`, `xml`, `md`, `gfm`, `htm`), accepted but
/// not listed.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let aliases = |f: Format| -> &'static [&'static str] {
        match f {
            Format::Text => &["txt"],
            Format::Json => &[],
            Format::Junit => &["xml"],
            Format::Markdown => &["md", "gfm"],
            Format::Html => &["htm"],
        }
    };
    PossibleValuesParser::new(
        Format::ALL.map(|f| PossibleValue::new(f.name()).aliases(aliases(f).iter().copied())),
    )
    .map(|s| {
        s.parse::<Format>()
            .expect("every possible value is a format name or alias")
    })
}

impl OutputArgs {
    pub fn color(&self) -> bool {
        match self.color.as_str() {
            "always" => true,
            "never" => false,
            _ => {
                self.output.is_none()
                    && std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }

    /// Whether a document was asked for beyond the text on a terminal: a
    /// file (`--output`, `--junit`, `--markdown`) or a machine format on
    /// standard output.
    pub fn wants_document(&self) -> bool {
        self.output.is_some()
            || self.junit.is_some()
            || self.markdown.is_some()
            || self.format != Format::Text
    }

    /// The files asked for (`--output`, `--junit`, `--markdown`).
    pub fn files(&self) -> Vec<&std::path::Path> {
        [&self.output, &self.junit, &self.markdown]
            .into_iter()
            .flatten()
            .map(|p| p.as_path())
            .collect()
    }

    /// An error when `--output`, `--junit` or `--markdown` names a file the
    /// command reads and keeps (`crate::protected`): asked before a run
    /// starts, and again by [`OutputArgs::emit`].
    pub fn check_targets(&self) -> Result<(), Failure> {
        for path in self.files() {
            crate::protected::check(path)?;
        }
        Ok(())
    }

    /// Write a document (a run's report, with its comparison when it has
    /// a baseline; a comparison) in every requested form: `--format` on
    /// stdout or in `--output`, and JUnit and Markdown beside it.
    pub fn emit<'a>(&self, doc: impl Into<Document<'a>>) -> Result<(), Failure> {
        self.check_targets()?;
        let doc = doc.into();
        match &self.output {
            // Written as rendered: a large JSON report is never held whole.
            Some(path) => {
                let failed = |e: std::io::Error| {
                    Failure::incomplete(format!("cannot write {}: {e}", path.display()))
                };
                let file = std::fs::File::create(path).map_err(failed)?;
                let mut out = std::io::BufWriter::new(file);
                render_to(doc, self.format, self.color(), &mut out).map_err(failed)?;
                std::io::Write::flush(&mut out).map_err(failed)?;
            }
            None => {
                let color = self.color();
                crate::stdout::stream(|w| render_to(doc, self.format, color, w));
            }
        }
        if let Some(path) = &self.junit {
            write(path, &render(doc, Format::Junit, false))?;
        }
        if let Some(path) = &self.markdown {
            append(path, &render(doc, Format::Markdown, false))?;
        }
        Ok(())
    }
}

pub(crate) fn write(path: &PathBuf, text: &str) -> Result<(), Failure> {
    crate::protected::check(path)?;
    std::fs::write(path, text)
        .map_err(|e| Failure::incomplete(format!("cannot write {}: {e}", path.display())))
}

/// Step summaries are appended to, as GitHub expects.
pub(crate) fn append(path: &PathBuf, text: &str) -> Result<(), Failure> {
    use std::io::Write;
    crate::protected::check(path)?;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Failure::incomplete(format!("cannot write {}: {e}", path.display())))
}

/// The report context of a stored run: its header (calls, tokens, reuse),
/// input ids and fields, the tensor, the failing outputs (one quoted per
/// failing check in text formats, up to [`html::FAILURES_SHOWN`] in the
/// HTML browser), the causes of its errors (counted from every stored
/// sample, most common first), and for a run with a retry policy the
/// guarded system beside its prediction. Only the quoted samples' outputs
/// are read from the store; the causes are counted one row at a time.
pub fn report_for(store: &Store, run: StoredRun) -> Result<RunReport, Failure> {
    let StoredRun {
        record,
        tensor,
        summary,
        causes,
        live,
    } = run;
    let fail = |e: probity_engine::store::StoreError| Failure::incomplete(e.to_string());
    let input_labels = store.input_ids(record.id).map_err(fail)?;
    let guarded = stored::retry_check(store, &record, &tensor).map_err(fail)?;
    let mut failures = FailingSample::from_tensor(&tensor, html::FAILURES_SHOWN);
    // The samples quoted: each check's example, then the failing samples.
    let quoted: Vec<(usize, usize)> = summary
        .checks
        .iter()
        .filter_map(|c| c.example_failure)
        .chain(failures.iter().map(|f| (f.input, f.repetition)))
        .collect();
    let by_cell: HashMap<(usize, usize), SampleRow> = store
        .samples_at(record.id, &quoted)
        .map_err(fail)?
        .into_iter()
        .map(|s| ((s.input_idx, s.repetition), s))
        .collect();
    let mut examples = Vec::new();
    for (k, check) in summary.checks.iter().enumerate() {
        let Some((i, j)) = check.example_failure else {
            continue;
        };
        if let Some(s) = by_cell.get(&(i, j)) {
            examples.extend(s.output.iter().take(EXAMPLES_PER_CHECK).map(|o| {
                Example {
                    check: k,
                    input: i,
                    repetition: j,
                    output: o.clone(),
                    reason: s
                        .reasons
                        .iter()
                        .find(|(kk, _)| *kk == k)
                        .map(|(_, r)| r.clone()),
                }
            }));
        }
    }
    for f in &mut failures {
        if let Some(s) = by_cell.get(&(f.input, f.repetition)) {
            f.output = s.output.clone();
            f.error = s.error.clone();
            f.reasons = s.reasons.clone();
        }
    }
    let causes = match causes {
        Some(known) => known,
        None => store
            .causes(record.id, summary.checks.len())
            .map_err(fail)?
            .sorted(),
    };
    let retry_target = record.settings.retry_target;
    // Fields are shown beside quoted outputs only: read those inputs'.
    let mut shown: Vec<usize> = quoted.iter().map(|(i, _)| *i).collect();
    shown.sort_unstable();
    shown.dedup();
    let input_fields = store
        .inputs_at(record.id, &shown)
        .map_err(fail)?
        .into_iter()
        .map(|(i, input)| (i, input.fields.to_map()))
        .collect();
    let mut run = crate::run_info::run_info(&record);
    if let probity_core::cost::RunCost::Priced(cost) = run.cost {
        run.cost = probity_core::cost::RunCost::Priced(
            match stored::retries_usage(store, &record).map_err(fail)? {
                Some(u) => cost.with_retries(u, record.settings.prices.system.as_ref()),
                None => cost,
            },
        );
    }
    Ok(RunReport {
        run,
        summary,
        input_labels,
        input_fields,
        causes,
        examples,
        retry_target,
        tensor: Some(tensor),
        failures,
        guarded,
        baseline: None,
        live,
    })
}

/// Load run `id` from the store and build its report.
pub fn load_report(store: &Store, id: i64) -> Result<RunReport, Failure> {
    let run = stored::load(store, id).map_err(|e| Failure::usage(e.to_string()))?;
    report_for(store, run)
}

/// A stored sample as the pages show it (passing ones too).
pub fn sample_shown(s: SampleRow) -> FailingSample {
    let pick = |want: Cell| -> Vec<usize> {
        s.cells
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == want)
            .map(|(k, _)| k)
            .collect()
    };
    FailingSample {
        input: s.input_idx,
        repetition: s.repetition,
        failed: pick(Cell::Fail),
        errored: pick(Cell::Error),
        output: s.output,
        error: s.error,
        reasons: s.reasons,
    }
}
