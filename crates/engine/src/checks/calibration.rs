//! Measuring a verifier's judge on its labelled set (paper §4;
//! `checks::labels`; `probity_core::stats::calibration`): the judge is
//! asked about every labelled pair, as it is asked about a run's outputs,
//! and its answers are counted against the human labels. The counts go
//! with the run (its stored settings), and `Summary::with_calibration`
//! turns them into the judge's sensitivity, specificity and the corrected
//! rate.
//!
//! With a cache ([`measure_all_cached`]; the run store's
//! `calibration_verdicts`) a verdict is asked once: every readable PASS or
//! FAIL is kept under the key of the judge's request ([`label_key`]), and a
//! later run whose judge would ask the very same question — the same judge
//! (its fingerprint: kind, model, sampling settings, seed), the same
//! instructions and structured-output mode, the same pair's input and
//! output, the same repetition and attempt — reads it instead of calling.
//! A changed part is another key: the judge is asked. Failed calls and
//! unreadable answers are never kept (they are asked again next time).
//! The counts say how many verdicts were reused (`LabelCounts::reused`).
//! A judge whose answers may have changed behind the same name (a provider
//! moved a model alias) is asked afresh ([`LabelAnswers::AskAgain`],
//! `--fresh-labels`): nothing is read, and its answers replace what was
//! kept.

use crate::checks::check::Checks;
use crate::checks::labels::{LabelledPair, LabelledSet};
use crate::checks::verifier::{JudgeVerdict, Judgement, Verifier};
use crate::provider::call::Caller;
use crate::provider::types::Request;
use crate::store::{LabelVerdict, LabelVerdictCache};
use probity_core::stats::LabelCounts;
use sha2::{Digest, Sha256};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How many labelled pairs are judged at once (the caller's rate limits
/// still apply).
const CONCURRENT: usize = 16;

/// The repetition a labelled pair is asked as (part of the judge's seed
/// for the simulated judge; a run's outputs are 0, 1, …, M − 1).
const LABELLED_REPETITION: u32 = u32::MAX;

/// The attempt a labelled pair is asked as.
const LABELLED_ATTEMPT: u32 = 1;

/// New verdicts are kept a batch of this many at a time, so a measurement
/// stopped halfway keeps most of what it paid for.
const KEEP_EVERY: usize = 64;

/// The first part of every [`label_key`]: names this key's layout and the
/// way a verdict is read from the judge's answer
/// (`verifier::parse_judgement`). Bump it when either changes meaning, so
/// verdicts read the old way are asked again.
const KEY_VERSION: &str = "probity-label-verdict|v1";

/// The judge's request about `pair`, its rubric rendered for the pair's
/// input; `Err` when the rubric cannot be rendered for it (a field the
/// labelled input lacks) — never the template sent as written, which
/// would measure the judge on a question the run never asks.
fn labelled_request(verifier: &Verifier, pair: &LabelledPair) -> Result<Request, String> {
    let instructions = verifier.instructions_for(&pair.input)?;
    Ok(verifier.request(
        &instructions,
        &pair.input,
        &pair.output,
        LABELLED_REPETITION,
        LABELLED_ATTEMPT,
    ))
}

/// Ask `verifier`'s judge about one labelled `pair` through `caller` (its
/// calls counted as the verifier's judge calls) and read its answer.
pub(crate) async fn ask_about(
    verifier: &Verifier,
    pair: &LabelledPair,
    caller: &Caller,
) -> Judgement {
    let request = match labelled_request(verifier, pair) {
        Ok(r) => r,
        Err(why) => {
            return Judgement {
                verdict: JudgeVerdict::Error,
                reasons: vec![format!("the labelled pair's rubric: {why}")],
            }
        }
    };
    let answer = caller.call(verifier.judge.as_ref(), &request).await;
    let made = u64::from(match &answer {
        Ok(a) => a.attempts,
        Err((_, tries)) => *tries,
    });
    caller.judge_calls.fetch_add(made, Ordering::Relaxed);
    verifier.calls.fetch_add(made, Ordering::Relaxed);
    if let Ok(a) = &answer {
        verifier.usage.add(a.input_tokens, a.output_tokens);
    }
    verifier.judgement(answer.as_ref().map(|a| a.text.as_str()).map_err(|(e, _)| e))
}

/// Whether the verdicts a cache keeps for the same questions are read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum LabelAnswers {
    /// Read what is kept; ask the rest.
    #[default]
    Reuse,
    /// Ask every pair again and replace what is kept with the readable
    /// answers (`probity run --fresh-labels`, `probity serve
    /// --fresh-labels`): the judge may answer differently behind the same
    /// model name.
    AskAgain,
}

impl LabelAnswers {
    /// `--fresh-labels` given or not.
    pub fn fresh(fresh_labels: bool) -> LabelAnswers {
        if fresh_labels {
            LabelAnswers::AskAgain
        } else {
            LabelAnswers::Reuse
        }
    }
}

/// A cache read as empty and written over ([`LabelAnswers::AskAgain`]).
struct Renewing<'c>(&'c mut dyn LabelVerdictCache);

impl LabelVerdictCache for Renewing<'_> {
    fn lookup(&mut self, _keys: &[String]) -> std::collections::HashMap<String, LabelVerdict> {
        std::collections::HashMap::new()
    }

    fn keep(&mut self, rows: &[LabelVerdict]) {
        self.0.replace(rows);
    }

    fn replace(&mut self, rows: &[LabelVerdict]) {
        self.0.replace(rows);
    }
}

/// The cache key of `verifier`'s judge's verdict on `pair`: SHA-256 over
/// length-prefixed parts — [`KEY_VERSION`], the judge's fingerprint (kind,
/// model, sampling settings, seed, and for `openai` the `response_format`
/// structured output sets; never a secret), the structured-output mode,
/// the request's messages as sent (the judge's preamble and the
/// verifier's instructions, the prompt around the pair, the pair's input
/// text and output), the input's fields — then the repetition and attempt
/// the request carries. The pair's line in its file and its human label
/// are not parts: moving a line, or relabelling it, asks nothing again.
pub fn label_key(verifier: &Verifier, pair: &LabelledPair) -> String {
    match labelled_request(verifier, pair) {
        Ok(request) => request_key(verifier, &request),
        // Never asked (an error judgement, not kept): a key of its own.
        Err(why) => format!("unrenderable|{why}"),
    }
}

fn request_key(verifier: &Verifier, request: &Request) -> String {
    let fingerprint = verifier.judge.fingerprint();
    let structured = serde_json::to_string(&verifier.structured).unwrap_or_default();
    let messages = serde_json::to_string(&request.messages).unwrap_or_default();
    let mut h = Sha256::new();
    for part in [
        KEY_VERSION,
        fingerprint.as_str(),
        structured.as_str(),
        messages.as_str(),
        request.input.fields.as_json(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.update(u64::from(request.repetition).to_le_bytes());
    h.update(u64::from(request.attempt).to_le_bytes());
    hex::encode(h.finalize())
}

/// Count one pair: its human `label` and the judge's verdict (`None`: no
/// verdict, an error).
fn count(counts: &mut LabelCounts, label: bool, judged_pass: Option<bool>) {
    let Some(judged_pass) = judged_pass else {
        counts.errors += 1;
        return;
    };
    if label {
        counts.pass_labels += 1;
        counts.judged_pass += u64::from(judged_pass);
    } else {
        counts.fail_labels += 1;
        counts.judged_fail += u64::from(!judged_pass);
    }
}

/// Ask `verifier`'s judge about every pair of `set` (through `caller`: its
/// calls count as the verifier's) and count its answers against the
/// labels; a pair the judge cannot judge (a failed call, an unreadable
/// answer) is counted in `errors`. Nothing is cached: see
/// [`measure_cached`].
pub async fn measure(verifier: &Verifier, set: &LabelledSet, caller: &Arc<Caller>) -> LabelCounts {
    measure_with(verifier, set, caller, None).await
}

/// [`measure`] through `cache`: the pairs whose verdict it keeps under
/// their [`label_key`] are counted from it without a call (in `reused`),
/// the others asked, and their readable verdicts kept in it.
pub async fn measure_cached(
    verifier: &Verifier,
    set: &LabelledSet,
    caller: &Arc<Caller>,
    cache: &mut dyn LabelVerdictCache,
) -> LabelCounts {
    measure_with(verifier, set, caller, Some(cache)).await
}

/// The counts from `cache` alone, no call made: `None` unless it keeps a
/// verdict for every pair (`probity revalidate --no-calls`).
pub fn recall(
    verifier: &Verifier,
    set: &LabelledSet,
    cache: &mut dyn LabelVerdictCache,
) -> Option<LabelCounts> {
    let (counts, ask) = from_cache(verifier, set, cache);
    ask.is_empty().then_some(counts)
}

/// `set`'s pairs counted from `cache` where it keeps their verdicts (in
/// `reused`), and the others with their keys: the pairs to ask.
fn from_cache(
    verifier: &Verifier,
    set: &LabelledSet,
    cache: &mut dyn LabelVerdictCache,
) -> (LabelCounts, Vec<(LabelledPair, Option<String>)>) {
    let mut counts = LabelCounts {
        sampling: set.sampling,
        ..LabelCounts::default()
    };
    let mut ask = Vec::new();
    let keys: Vec<String> = set.pairs.iter().map(|p| label_key(verifier, p)).collect();
    let known = cache.lookup(&keys);
    for (pair, key) in set.pairs.iter().zip(keys) {
        match known.get(&key) {
            Some(v) => {
                count(&mut counts, pair.pass, Some(v.pass));
                counts.reused += 1;
            }
            None => ask.push((pair.clone(), Some(key))),
        }
    }
    (counts, ask)
}

/// Count `set`'s pairs: from `cache` where it has them, the rest asked of
/// the judge.
async fn measure_with(
    verifier: &Verifier,
    set: &LabelledSet,
    caller: &Arc<Caller>,
    mut cache: Option<&mut dyn LabelVerdictCache>,
) -> LabelCounts {
    // The pairs to ask, each with its key when there is a cache.
    let (mut counts, ask) = match cache.as_deref_mut() {
        Some(cache) => from_cache(verifier, set, cache),
        None => (
            LabelCounts {
                sampling: set.sampling,
                ..LabelCounts::default()
            },
            set.pairs.iter().map(|p| (p.clone(), None)).collect(),
        ),
    };
    let mut fresh: Vec<LabelVerdict> = Vec::new();
    let mut pending = ask.into_iter();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.len() < CONCURRENT {
            let Some((pair, key)) = pending.next() else {
                break;
            };
            let (v, caller) = (verifier.clone(), caller.clone());
            tasks.spawn(async move {
                let j = ask_about(&v, &pair, &caller).await;
                let judged_pass = match j.verdict {
                    JudgeVerdict::Pass => Some(true),
                    JudgeVerdict::Fail => Some(false),
                    JudgeVerdict::Error => None,
                };
                // Only a readable verdict is kept: errors are asked again.
                let keep = key.zip(judged_pass).map(|(cache_key, pass)| LabelVerdict {
                    cache_key,
                    pass,
                    reasons: j.reasons,
                });
                (pair.pass, judged_pass, keep)
            });
        }
        let Some(done) = tasks.join_next().await else {
            break;
        };
        match done {
            Ok((label, judged_pass, keep)) => {
                count(&mut counts, label, judged_pass);
                fresh.extend(keep);
            }
            Err(_) => counts.errors += 1,
        }
        if fresh.len() >= KEEP_EVERY {
            if let Some(cache) = cache.as_deref_mut() {
                cache.keep(&fresh);
            }
            fresh.clear();
        }
    }
    if let (Some(cache), false) = (cache, fresh.is_empty()) {
        cache.keep(&fresh);
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

/// [`measure_all`] through `cache` ([`measure_cached`]): a verdict kept
/// for the same question is read, not asked, unless `answers` is
/// [`LabelAnswers::AskAgain`] (every pair asked, its answer replacing
/// the kept one); `None` for `cache` is [`measure_all`].
pub async fn measure_all_cached(
    checks: &Checks,
    caller: &Arc<Caller>,
    cache: Option<&mut dyn LabelVerdictCache>,
    answers: LabelAnswers,
) -> Vec<Option<LabelCounts>> {
    let Some(cache) = cache else {
        return measure_all(checks, caller).await;
    };
    let mut renewing;
    let cache: &mut dyn LabelVerdictCache = match answers {
        LabelAnswers::Reuse => cache,
        LabelAnswers::AskAgain => {
            renewing = Renewing(cache);
            &mut renewing
        }
    };
    if checks.verifiers.iter().all(|v| v.calibration.is_none()) {
        return Vec::new();
    }
    let mut out = vec![None; checks.validators.len()];
    for v in &checks.verifiers {
        out.push(match &v.calibration {
            Some(set) => Some(measure_cached(v, set, caller, &mut *cache).await),
            None => None,
        });
    }
    out
}

/// [`recall`] for every calibrated verifier of `checks`, in column order
/// (as [`measure_all`]): `None` too for a verifier whose verdicts `cache`
/// does not all keep; empty when none could be recalled.
pub fn recall_all(checks: &Checks, cache: &mut dyn LabelVerdictCache) -> Vec<Option<LabelCounts>> {
    let mut out = vec![None; checks.validators.len()];
    for v in &checks.verifiers {
        out.push(
            v.calibration
                .as_ref()
                .and_then(|set| recall(v, set, &mut *cache)),
        );
    }
    if out.iter().all(Option::is_none) {
        out.clear();
    }
    out
}
