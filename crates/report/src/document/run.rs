//! The report of a run ([`RunReport`]): the run, the core's [`Summary`],
//! input labels and fields, failing outputs, the causes of errors (apart
//! from failures: not measured), for the HTML report and the heatmap the
//! tensor, for a run with a retry policy the guarded system beside its
//! prediction, and for a run with a baseline its comparison.

use crate::document::comparison::ComparisonReport;
use crate::document::info::RunInfo;
use crate::numbers::plural;
use probity_core::causes::{Cause, Causes};
use probity_core::stats::Decision;
use probity_core::{Cell, ReliabilityTensor, Summary};
use serde_json::{Map, Value};

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
    /// input then repetition order, with `failed` and `errored` filled in;
    /// `output`, `error` and `reasons` are left for the caller to fill from
    /// the run store. With more than `limit` of them (0: no limit), exactly
    /// `limit`, evenly spaced over all of them: the `o`-th failing output
    /// (from 0, of `F`) is taken when ⌊(o+1)·limit/F⌋ > ⌊o·limit/F⌋, so a
    /// large run's sample reaches every part of it, not only its first
    /// inputs.
    pub fn from_tensor(t: &ReliabilityTensor, limit: usize) -> Vec<FailingSample> {
        let (n, m, _) = t.shape();
        let mut cells = Vec::new();
        let failing = |cells: &[Cell]| cells.iter().any(|c| matches!(c, Cell::Fail | Cell::Error));
        let mut total = 0usize;
        for i in 0..n {
            for j in 0..m {
                t.output_cells(i, j, &mut cells);
                total += failing(&cells) as usize;
            }
        }
        let take =
            |o: usize| limit == 0 || total <= limit || (o + 1) * limit / total > o * limit / total;
        let mut out = Vec::with_capacity(if limit == 0 { total } else { total.min(limit) });
        let mut o = 0;
        for i in 0..n {
            for j in 0..m {
                t.output_cells(i, j, &mut cells);
                if !failing(&cells) {
                    continue;
                }
                o += 1;
                if !take(o - 1) {
                    continue;
                }
                let pick = |want: Cell| -> Vec<usize> {
                    cells
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c == want)
                        .map(|(k, _)| k)
                        .collect()
                };
                out.push(FailingSample {
                    input: i,
                    repetition: j,
                    failed: pick(Cell::Fail),
                    errored: pick(Cell::Error),
                    ..FailingSample::default()
                });
            }
        }
        out
    }
}

/// Everything the report of a run shows.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
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
    /// report and [`crate::heatmap()`] draw their heatmaps from it; without it they
    /// say the heatmaps are unavailable. Other formats ignore it.
    pub tensor: Option<ReliabilityTensor>,
    /// Failing outputs for the HTML report's browser, in the order to
    /// show them; the page shows the first [`crate::html::FAILURES_SHOWN`], so a
    /// caller may stop collecting there (the page counts the total on the
    /// tensor). Start from [`FailingSample::from_tensor`]. Other formats
    /// ignore it.
    pub failures: Vec<FailingSample>,
    /// The guarded system measured beside its retry plan's prediction
    /// (paper §4.2), for a run made with a `[retry]` policy; `None`
    /// otherwise. Every format shows it.
    pub guarded: Option<probity_core::guarded::RetryCheck>,
    /// The run compared with a baseline run (`probity run --baseline`):
    /// every format shows it as a section of the run's report (the JSON
    /// report as a `comparison` field, JUnit as `regression: CHECK` test
    /// cases); `None` for a run without a baseline.
    pub baseline: Option<ComparisonReport>,
    /// Why cells are errors, grouped (sorted, most common cause first):
    /// calls to the system that failed after their retries (`system`, not
    /// measured), and per check the outputs it could not judge. A check
    /// that erred on every output is broken ([`RunReport::broken`]): every
    /// format shows it as BROKEN with its message, not as a verdict about
    /// the system. `Causes::default()` when unknown: no errors shown.
    pub causes: Causes,
    /// The fields of input `i`, at key `i`, as the dataset gave them
    /// (untrusted text: every format escapes them); shown beside the
    /// failing outputs of the input. Only the quoted inputs' are needed
    /// (a million inputs' fields are hundreds of megabytes); absent when
    /// unknown.
    pub input_fields: std::collections::BTreeMap<usize, Map<String, Value>>,
    /// A serve run's live rates: per check, the first and the published
    /// attempts' confidence sequences over all traffic and the current
    /// epoch, the display window, and the alarms raised — what `probity
    /// monitor` shows. The checks' verdicts are then the first attempts'
    /// sequences' (`Summary::with_live`). `None` for other runs.
    pub live: Option<probity_core::monitor::LiveSnapshot>,
}

impl RunReport {
    /// True when every check's verdict is `Pass` (inconclusive does not
    /// pass) and no check is broken. The CLI's exit code follows this.
    pub fn passed(&self) -> bool {
        self.summary.passed() && self.broken().is_empty()
    }

    /// Broken checks: those that could not judge any output (they erred
    /// on every output there was), with their most common message. Their
    /// verdict is no verdict about the system.
    pub fn broken(&self) -> Vec<(usize, &Cause)> {
        self.causes
            .broken()
            .into_iter()
            .filter(|(k, _)| *k < self.summary.checks.len())
            .collect()
    }

    /// The most common message of check `k` when it is broken.
    pub fn broken_cause(&self, k: usize) -> Option<&Cause> {
        self.broken()
            .into_iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, c)| c)
    }

    /// The fields of input `i`, when known and not empty.
    pub fn input_fields_of(&self, i: usize) -> Option<&Map<String, Value>> {
        self.input_fields.get(&i).filter(|f| !f.is_empty())
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

    /// Whether no check judged any output (every rate over nothing).
    pub fn nothing_judged(&self) -> bool {
        self.summary.checks.iter().all(|c| c.rate.n == 0)
    }

    /// Counts of checks by decision: `(pass, fail, inconclusive)`, broken
    /// checks included (by the decision their rate was given).
    pub fn tally(&self) -> (usize, usize, usize) {
        Self::count(self.summary.checks.iter())
    }

    fn count<'a>(
        checks: impl Iterator<Item = &'a probity_core::CheckSummary>,
    ) -> (usize, usize, usize) {
        let mut t = (0, 0, 0);
        for c in checks {
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
    ///
    /// With broken checks: `NO VERDICT: 1 of 2 checks broken (could not
    /// judge any output); of the others, 1 pass`.
    pub fn conclusion(&self) -> String {
        let (pass, fail, inconclusive) = self.tally();
        let k = self.summary.checks.len();
        let broken: Vec<usize> = self.broken().into_iter().map(|(k, _)| k).collect();
        let mut s = if !broken.is_empty() {
            let b = broken.len();
            let mut s = format!(
                "NO VERDICT: {b} of {k} {} broken (could not judge any output)",
                plural(k, "check")
            );
            let rest = Self::count(
                self.summary
                    .checks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !broken.contains(i))
                    .map(|(_, c)| c),
            );
            let mut parts = Vec::new();
            if rest.0 > 0 {
                parts.push(format!("{} pass", rest.0));
            }
            if rest.1 > 0 {
                parts.push(format!("{} below minimum", rest.1));
            }
            if rest.2 > 0 {
                parts.push(format!("{} inconclusive", rest.2));
            }
            if !parts.is_empty() {
                s.push_str(&format!("; of the others, {}", parts.join(", ")));
            }
            s
        } else if k == 0 {
            // Nothing was judged: no verdict, and not a pass.
            "NO VERDICT: no checks to judge".to_string()
        } else if self.nothing_judged() {
            // No output was judged by any check (the run stopped first,
            // every call failed, a guard with no traffic yet): nothing is
            // known about the system.
            "NO VERDICT: no output was judged".to_string()
        } else if self.passed() {
            format!(
                "PASS: {pass} of {k} {} meet their minimum",
                plural(k, "check")
            )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every other output of 10 inputs × 10 fails: 50 failing outputs.
    fn tensor() -> ReliabilityTensor {
        let mut t = ReliabilityTensor::new(10, 10, 2).unwrap();
        for i in 0..10 {
            for j in 0..10 {
                let bad = (i * 10 + j) % 2 == 1;
                t.set(i, j, 0, Cell::Pass).unwrap();
                t.set(i, j, 1, if bad { Cell::Fail } else { Cell::Pass })
                    .unwrap();
            }
        }
        t
    }

    #[test]
    fn failing_outputs_beyond_the_limit_are_sampled_evenly_over_the_run() {
        let t = tensor();
        let all = FailingSample::from_tensor(&t, 0);
        assert_eq!(all.len(), 50);
        assert_eq!(FailingSample::from_tensor(&t, 50), all);
        let some = FailingSample::from_tensor(&t, 10);
        assert_eq!(some.len(), 10);
        // One in five, the last of each five: one from every input.
        let at: Vec<_> = some.iter().map(|f| (f.input, f.repetition)).collect();
        let expected: Vec<_> = (0..10).map(|i| (i, 9)).collect();
        assert_eq!(at, expected);
        assert!(some.iter().all(|f| f.failed == [1] && f.errored.is_empty()));
        let three = FailingSample::from_tensor(&t, 3);
        assert_eq!(three.len(), 3);
        assert!(three[2].input == 9, "the sample reaches the last input");
    }
}
