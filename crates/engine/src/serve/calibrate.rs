//! A guard's calibrated verifiers (`calibration = "labels.jsonl"` in a
//! `[[verifier]]` table; paper §4; docs/serve.md, "Calibrated verifiers"):
//! before the guard listens, each judge answers its labelled set, as in
//! `probity run` (`crate::checks::calibration::measure_all_cached`: the
//! verdicts the store keeps for the same questions are read back, the
//! rest asked; the calls count as the verifier's). The counts go into the live run's settings,
//! so its report and `probity monitor` correct the verifier's rate for
//! the judge's errors, and the guard's own watches do the same
//! (`probity_core::monitor::LiveJudge`).
//!
//! What cannot be used stops the guard; what can be used with care is a
//! warning:
//! - the judge's sensitivity or specificity cannot be measured (it judged
//!   no labelled PASS, or no labelled FAIL — every such call failed or was
//!   unreadable): an error naming the verifier, the file and the judge's
//!   failure. The configuration asks for a corrected rate; serving
//!   without one would show the judge's own rate where the operator
//!   asked for the corrected one, and a judge that cannot answer its
//!   labels cannot judge traffic either.
//! - some labelled pairs were not judged: a warning with the count and
//!   the cause (they are left out of both measures, and the report says
//!   how many).
//! - a judge no better than chance (Se + Sp ≤ 1): a warning — the guard
//!   still serves, that verifier's verdict and alarms are then never
//!   established (the report says why).

use crate::checks::calibration::LabelAnswers;
use crate::checks::check::Checks;
use crate::checks::verifier::{JudgeVerdict, Verifier};
use crate::provider::call::Caller;
use crate::store::LabelVerdictCache;
use probity_core::stats::{CalibrationError, JudgeAccuracy, LabelCounts};
use std::sync::Arc;

/// The labelled counts of every check (in column order; empty when no
/// verifier is calibrated), and warnings for the operator.
pub struct Calibration {
    pub labels: Vec<Option<LabelCounts>>,
    pub warnings: Vec<String>,
}

/// Ask every calibrated verifier's judge about its labelled set through
/// `caller`, reading back what `cache` keeps; an error (module docs) names
/// the verifier, the file and the judge's failure. `confidence` is the
/// guard's (for the judge's intervals in the checks made here).
pub async fn calibrate(
    checks: &Checks,
    caller: &Arc<Caller>,
    cache: Option<&mut dyn LabelVerdictCache>,
    answers: LabelAnswers,
    confidence: f64,
) -> Result<Calibration, String> {
    let labels =
        crate::checks::calibration::measure_all_cached(checks, caller, cache, answers).await;
    let mut warnings = Vec::new();
    let first_verifier = checks.validators.len();
    for (k, v) in checks.verifiers.iter().enumerate() {
        let (Some(set), Some(Some(counts))) = (&v.calibration, labels.get(first_verifier + k))
        else {
            continue;
        };
        let at = format!(
            "[[verifier]] {}: calibration = {}",
            v.name,
            set.path.display()
        );
        let total = set.pairs.len();
        let cause = if counts.errors > 0 {
            Some(failure(v, set, caller).await)
        } else {
            None
        };
        match JudgeAccuracy::measure(*counts, confidence) {
            Err(e) => {
                return Err(format!(
                    "{at}: {}; the judge could not judge {} of the {total} labelled pairs ({}), so its rate cannot be corrected. Fix the judge (or remove `calibration`) and start again",
                    unmeasured(&e),
                    counts.errors,
                    cause.as_deref().unwrap_or("no failure seen"),
                ));
            }
            Ok(a) => {
                if let Some(cause) = cause {
                    warnings.push(format!(
                        "{at}: the judge could not judge {} of the {total} labelled pairs ({cause}); they are left out of its sensitivity and specificity",
                        counts.errors
                    ));
                }
                if a.youden <= 0.0 {
                    warnings.push(format!(
                        "{at}: the judge is no better than chance on its labels (sensitivity {:.3}, specificity {:.3}): its rate cannot be corrected, so this verifier's live verdict and its alarm below the minimum are never established",
                        a.sensitivity.estimate, a.specificity.estimate
                    ));
                }
            }
        }
    }
    Ok(Calibration { labels, warnings })
}

/// Why the judge's accuracy cannot be measured, in words.
fn unmeasured(e: &CalibrationError) -> String {
    match e {
        CalibrationError::NoPassLabels => {
            "the judge answered none of the pairs labelled PASS: its sensitivity cannot be measured"
                .into()
        }
        CalibrationError::NoFailLabels => {
            "the judge answered none of the pairs labelled FAIL: its specificity cannot be measured"
                .into()
        }
        other => other.to_string(),
    }
}

/// The judge's failure on the first labelled pair, asked once more (the
/// counts alone do not keep it); counted as a judge call of `v`.
async fn failure(
    v: &Verifier,
    set: &crate::checks::labels::LabelledSet,
    caller: &Arc<Caller>,
) -> String {
    let Some(pair) = set.pairs.first() else {
        return "no labelled pair".into();
    };
    let j = crate::checks::calibration::ask_about(v, pair, caller).await;
    match j.verdict {
        JudgeVerdict::Error => {
            let reason = j.reasons.into_iter().next().unwrap_or_default();
            format!(
                "line {}: {}",
                pair.line,
                crate::provider::redact::one_line(&reason)
            )
        }
        _ => format!(
            "line {}, asked again, was judged: the judge fails on some pairs, not all",
            pair.line
        ),
    }
}
