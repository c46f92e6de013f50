//! Measuring a verifier's judge on its labelled set (paper §4;
//! `checks::labels`; `probity_core::stats::calibration`): the judge is
//! asked about every labelled pair, as it is asked about a run's outputs,
//! and its answers are counted against the human labels. The counts go
//! with the run (its stored settings), and `Summary::with_calibration`
//! turns them into the judge's sensitivity, specificity and the corrected
//! rate.

use crate::checks::check::Checks;
use crate::checks::labels::LabelledSet;
use crate::checks::verifier::{JudgeVerdict, Verifier};
use crate::provider::call::Caller;
use probity_core::stats::LabelCounts;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How many labelled pairs are judged at once (the caller's rate limits
/// still apply).
const CONCURRENT: usize = 16;

/// The repetition a labelled pair is asked as (part of the judge's seed
/// for the simulated judge; a run's outputs are 0, 1, …, M − 1).
const LABELLED_REPETITION: u32 = u32::MAX;

/// Ask `verifier`'s judge about every pair of `set` (through `caller`: its
/// calls count as the verifier's) and count its answers against the
/// labels; a pair the judge cannot judge (a failed call, an unreadable
/// answer) is counted in `errors`.
pub async fn measure(verifier: &Verifier, set: &LabelledSet, caller: &Arc<Caller>) -> LabelCounts {
    let mut counts = LabelCounts::default();
    let mut pending = set.pairs.iter();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.len() < CONCURRENT {
            let Some(pair) = pending.next() else { break };
            let (v, caller, pair) = (verifier.clone(), caller.clone(), pair.clone());
            tasks.spawn(async move {
                let request = v.request(&pair.input, &pair.output, LABELLED_REPETITION, 1);
                let answer = caller.call(v.judge.as_ref(), &request).await;
                let made = u64::from(match &answer {
                    Ok(a) => a.attempts,
                    Err((_, tries)) => *tries,
                });
                caller.judge_calls.fetch_add(made, Ordering::Relaxed);
                v.calls.fetch_add(made, Ordering::Relaxed);
                let j = v.judgement(answer.as_ref().map(|a| a.text.as_str()).map_err(|(e, _)| e));
                (pair.pass, j.verdict)
            });
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        match done {
            Ok((label, verdict)) => match verdict {
                JudgeVerdict::Error => counts.errors += 1,
                v => {
                    let judged_pass = v == JudgeVerdict::Pass;
                    if label {
                        counts.pass_labels += 1;
                        counts.judged_pass += u64::from(judged_pass);
                    } else {
                        counts.fail_labels += 1;
                        counts.judged_fail += u64::from(!judged_pass);
                    }
                }
            },
            Err(_) => counts.errors += 1,
        }
    }
    counts
}

/// [`measure`] for every calibrated verifier of `checks`, in column order:
/// `None` for validators and verifiers without a labelled set; empty when
/// no verifier has one.
pub async fn measure_all(checks: &Checks, caller: &Arc<Caller>) -> Vec<Option<LabelCounts>> {
    if checks.verifiers.iter().all(|v| v.calibration.is_none()) {
        return Vec::new();
    }
    let mut out = vec![None; checks.validators.len()];
    for v in &checks.verifiers {
        out.push(match &v.calibration {
            Some(set) => Some(measure(v, set, caller).await),
            None => None,
        });
    }
    out
}
