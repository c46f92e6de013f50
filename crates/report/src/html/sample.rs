//! One stored output as the viewer's pages and the variants section show
//! it beside others of the same input: its verdict over all checks, the
//! checks it failed, the output cut to a length (the template escapes it).

use crate::document::run::{FailingSample, RunReport};
use crate::sanitize::truncate_chars;
use serde::Serialize;

/// The verdict of one stored output over all checks: `fail` when a check
/// failed, else `error` when one could not judge it (or the call failed),
/// else `pass`.
pub fn sample_verdict(s: &FailingSample) -> &'static str {
    if !s.failed.is_empty() {
        "fail"
    } else if !s.errored.is_empty() || s.output.is_none() {
        "error"
    } else {
        "pass"
    }
}

/// The badge class of a verdict.
pub(crate) fn badge_of(verdict: &str) -> &'static str {
    match verdict {
        "pass" => "pass",
        "fail" => "fail",
        _ => "inconclusive",
    }
}

/// An output shown beside others.
#[derive(Serialize)]
pub(crate) struct ShownOutput {
    repetition: usize,
    verdict: &'static str,
    badge: &'static str,
    failed: String,
    output: Option<String>,
    error: Option<String>,
}

impl ShownOutput {
    /// Sample `s` of run `r`, its output cut to `chars` characters.
    pub(crate) fn of(r: &RunReport, s: &FailingSample, chars: usize) -> ShownOutput {
        let verdict = sample_verdict(s);
        ShownOutput {
            repetition: s.repetition,
            verdict,
            badge: badge_of(verdict),
            failed: s
                .failed
                .iter()
                .map(|k| r.check_name(*k))
                .collect::<Vec<_>>()
                .join(", "),
            output: s
                .output
                .as_ref()
                .map(|o| truncate_chars(o, chars).into_owned()),
            error: s.error.clone(),
        }
    }
}
