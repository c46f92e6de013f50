//! Where an output meets its checks: the K columns of the reliability
//! tensor `R[i][j][k]` (paper §3.6) for one output — validators first
//! (§2.1, evaluated in-process with the input prepared once for all its
//! outputs), then verifiers (§4, one judge call each, or a cached
//! judgement).
//!
//! Every path that checks an output — a run, a guarded retry, a
//! revalidation, live traffic through `probity serve` — goes through
//! [`Checks`].

use crate::checks::verifier::{JudgePrice, JudgeVerdict, Verifier};
use crate::provider::call::Caller;
use crate::provider::types::Provider;
use crate::store::{JudgementCache, JudgementRow, RunTotals};
use probity_core::agent::{AgentCheck, Transcript};
use probity_core::cost::{Price, RunPrices, RunUsage, Usage};
use probity_core::validator::{on_eval_stack, PreparedInput};
use probity_core::{Cell, CheckInfo, CheckKind, Input, Validator, Verdict};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Run `f` off the async workers: on the expression evaluation pool (large
/// stacks, see [`on_eval_stack`]), with the current tokio worker handing
/// its other tasks over meanwhile (`block_in_place`) on a multi-threaded
/// runtime, so a slow check never stalls unrelated requests.
pub(crate) fn off_async_workers<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(|| on_eval_stack(f))
    } else {
        on_eval_stack(f)
    }
}

/// Run `f`, which may block, with the current tokio worker handing its
/// other tasks over meanwhile (`block_in_place`) on a multi-threaded
/// runtime.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

/// The checks, in column order: validators, then verifiers, then the
/// checks over an answer in its conversation.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    pub validators: Vec<Validator>,
    pub verifiers: Vec<Verifier>,
    /// Checks over an answer's tool calls and its conversation, as
    /// structure (`[[agent_check]]` in a `probity serve` configuration;
    /// issue 34 item 9c). They read the [`Exchange`] a guard passes.
    pub conversation: Vec<ConversationCheck>,
    /// Once set, validators not yet begun are not evaluated (their cells
    /// are Error, reason [`STOPPED`]): a run that stopped does not wait
    /// for the checks of outputs it will not keep. Shared by clones; a new
    /// use of the checks gives itself its own ([`StopFlag::default`]).
    pub stop: StopFlag,
}

/// A flag that stops the evaluation of validators ([`Checks::stop`]).
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Stop: validators not yet begun are skipped from now on.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The reason of a validator cell not evaluated because its use stopped
/// ([`Checks::stop`]); such an output is not kept.
pub const STOPPED: &str = "not evaluated: the run stopped";

/// A check over an answer in its conversation: an agent check kind that
/// needs no environment (`tool_called`, `tool_not_called`, `calls`,
/// `tool_calls`, `every_turn`, `transcript`), judged on
/// [`Transcript::answer`] — the request's messages as context, the answer
/// (its text and tool calls, as the upstream sent them) as the one turn.
#[derive(Debug, Clone)]
pub struct ConversationCheck {
    pub info: CheckInfo,
    pub check: AgentCheck,
}

/// What a conversation check reads: the answer in its conversation, or why
/// there is none to read (the cell is then an Error with that reason —
/// never a verdict about the model).
pub type Exchange<'a> = Result<&'a Transcript, &'a str>;

/// Why a conversation check has nothing to read on a path that keeps only
/// an answer's text (a run, a revalidation).
pub const NO_EXCHANGE: &str = "not evaluated: this check reads an answer's tool calls as structure, which only `probity serve` passes";

/// One output's validator cells, and the reasons `(k, reason)` of those
/// that are errors.
pub(crate) type Validated = (Vec<Cell>, Vec<(usize, String)>);

/// One output's cells and reasons.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub cells: Vec<Cell>,
    /// `(k, reason)`: Error reasons of any check, a verifier's reasons.
    pub reasons: Vec<(usize, String)>,
    pub judge_calls: u64,
    /// Judgements served from the judge cache.
    pub judge_cached: u64,
}

/// The reason of a verifier cell left unjudged because calls are off
/// (`probity revalidate --no-calls` and a judgement not in the cache).
pub const NOT_JUDGED: &str = "not judged: --no-calls";

/// How verifiers get their judgements: from a cache when it holds them and
/// `reuse` is on (successful judgements only; new ones are always added),
/// from the judge otherwise — or, with `calls` off, not at all (an Error
/// cell, reason [`NOT_JUDGED`]).
#[derive(Clone)]
pub struct Judging {
    pub cache: Option<Arc<dyn JudgementCache>>,
    pub calls: bool,
    /// Judgements are looked up in the cache before a call; without it
    /// every judgement is asked afresh (and still added to the cache).
    pub reuse: bool,
}

impl Default for Judging {
    /// No cache; every judgement is a call.
    fn default() -> Self {
        Judging {
            cache: None,
            calls: true,
            reuse: false,
        }
    }
}

impl std::fmt::Debug for Judging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judging")
            .field("cache", &self.cache.is_some())
            .field("calls", &self.calls)
            .field("reuse", &self.reuse)
            .finish()
    }
}

/// The time since this process first asked: the clock of the expressions'
/// time limit (`probity_core::validator::expr::MAX_EVAL_TIME`).
fn monotonic() -> std::time::Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// Give expression checks their wall-clock limit (the core reads no clock
/// of its own). Every check made through [`Checks`] does this; call it
/// before evaluating a `Validator` or `Expression` directly.
pub fn install_expression_clock() {
    probity_core::validator::expr::install_clock(monotonic);
}

/// The first of `names` seen before: a check's name is its column, so it
/// is unique among a configuration's checks (validators, verifiers and
/// agent checks alike).
pub(crate) fn first_duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

/// A validator's settings as a column of the tensor.
pub(crate) fn validator_info(v: &Validator) -> CheckInfo {
    CheckInfo {
        name: v.name.clone(),
        message: v.message.clone(),
        minimum_success_percentage: v.minimum_success_percentage,
        weight: v.weight,
        kind: CheckKind::Validator,
    }
}

impl Checks {
    /// K, the number of columns.
    pub fn len(&self) -> usize {
        self.validators.len() + self.verifiers.len() + self.conversation.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The columns' settings.
    pub fn infos(&self) -> Vec<CheckInfo> {
        self.validators
            .iter()
            .map(validator_info)
            .chain(self.verifiers.iter().map(Verifier::info))
            .chain(self.conversation.iter().map(|c| c.info.clone()))
            .collect()
    }

    /// Each verifier whose judge negotiates structured output: `(check,
    /// mode asked, mode used)` ([`Provider::structured_output`]), in
    /// column order.
    pub(crate) fn structured_outputs(&self) -> Vec<(String, String, String)> {
        self.verifiers
            .iter()
            .filter_map(|v| {
                let (asked, used) = v.judge.structured_output()?;
                Some((v.name.clone(), asked.to_string(), used.to_string()))
            })
            .collect()
    }

    /// Calls made to each check's judge so far, in column order
    /// (validators and conversation checks make none).
    pub fn judge_calls(&self) -> Vec<u64> {
        self.validators
            .iter()
            .map(|_| 0)
            .chain(
                self.verifiers
                    .iter()
                    .map(|v| v.calls.load(Ordering::Relaxed)),
            )
            .chain(self.conversation.iter().map(|_| 0))
            .collect()
    }

    /// Each check's judge's answered calls' usage so far, in column order
    /// (none for validators and conversation checks).
    pub fn judge_usage(&self) -> Vec<Usage> {
        self.validators
            .iter()
            .map(|_| Usage::default())
            .chain(self.verifiers.iter().map(|v| v.usage.get()))
            .chain(self.conversation.iter().map(|_| Usage::default()))
            .collect()
    }

    /// The prices of a run of these checks: the system's (`system`) and
    /// each check's judge's, in column order — a verifier without a judge
    /// of its own is judged by the system's provider, at its price.
    pub fn prices(&self, system: Option<&Price>) -> RunPrices {
        let judge = |v: &Verifier| match &v.price {
            JudgePrice::Own(p) => p.clone(),
            JudgePrice::System => system.cloned(),
        };
        RunPrices {
            system: system.cloned(),
            judges: self
                .validators
                .iter()
                .map(|_| None)
                .chain(self.verifiers.iter().map(judge))
                .chain(self.conversation.iter().map(|_| None))
                .collect(),
        }
    }

    /// A session's totals: `caller`'s (every call's), with each check's
    /// judge calls and judge usage taken apart from the system's.
    pub fn totals(&self, caller: RunTotals) -> RunTotals {
        let judges = self.judge_usage();
        let judged: Usage = judges.iter().copied().sum();
        RunTotals {
            judge_calls_by_check: self.judge_calls(),
            usage: RunUsage {
                system: caller.usage.system.minus(&judged),
                judges,
            },
            ..caller
        }
    }

    /// The conversation checks' columns for one answer (after the
    /// verifiers'): each check's outcome on `exchange`, or, when there is
    /// none to read, an Error cell naming why. A check's failure names
    /// its turn and reason ([`probity_core::agent::Outcome::describe`]).
    pub(crate) fn converse(&self, input: &Input, exchange: Exchange<'_>) -> Validated {
        let first = self.validators.len() + self.verifiers.len();
        let mut cells = Vec::with_capacity(self.conversation.len());
        let mut reasons = Vec::new();
        for (w, c) in self.conversation.iter().enumerate() {
            let (cell, reason) = match exchange {
                Err(why) => (Cell::Error, Some(why.to_string())),
                Ok(t) => {
                    let o = c.check.evaluate(input, t);
                    let reason = o.reason.is_some().then(|| o.describe());
                    (o.cell, reason)
                }
            };
            if let (Cell::Fail | Cell::Error, Some(r)) = (cell, reason) {
                reasons.push((first + w, r));
            }
            cells.push(cell);
        }
        (cells, reasons)
    }

    /// The validator columns for one output: cells, and the reasons of the
    /// cells that are errors. Synchronous: validators make no call. Each
    /// expression is stopped after its time limit, on this process's clock.
    /// A validator not begun when [`Checks::stop`] is set is an Error cell,
    /// reason [`STOPPED`].
    ///
    /// One output's validators run one after another: outputs are checked
    /// in parallel already, and splitting an output's checks as well made
    /// a run with three slow checks take twice as long to find them broken
    /// (every output in flight advanced, none finished).
    pub fn validate(&self, input: &PreparedInput<'_>, output: &str) -> Validated {
        install_expression_clock();
        let mut cells = Vec::with_capacity(self.len());
        let mut reasons = Vec::new();
        for (k, v) in self.validators.iter().enumerate() {
            let (verdict, given) = if self.stop.is_stopped() {
                (Verdict::error(STOPPED), None)
            } else {
                match v.applies(input) {
                    Ok(true) => v.explain_prepared(input, output),
                    Ok(false) => {
                        cells.push(Cell::NotApplicable);
                        continue;
                    }
                    Err(reason) => (Verdict::error(reason), None),
                }
            };
            match (&verdict, given) {
                (Verdict::Error { reason }, _) => reasons.push((k, reason.clone())),
                (Verdict::Fail, Some(reason)) => reasons.push((k, reason)),
                _ => {}
            }
            cells.push(Cell::from(&verdict));
        }
        (cells, reasons)
    }

    /// [`Checks::validate`] on the expressions' evaluation pool (large
    /// stacks; a slow expression never holds an async worker), awaited: the
    /// worker goes on with other tasks meanwhile. One hand-over each way,
    /// where blocking the worker in place would cost a thread hand-over of
    /// the worker itself besides.
    async fn validate_on_eval_pool(
        self: &Arc<Self>,
        input: &probity_core::Input,
        output: &str,
    ) -> Validated {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (checks, input, output) = (self.clone(), input.clone(), output.to_string());
        probity_core::validator::spawn_on_eval_stack(move || {
            // A panic must not reach the pool (rayon aborts on one): the
            // sender is dropped instead, and the cells below are errors.
            let validated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                checks.validate(&PreparedInput::new(&input), &output)
            }));
            if let Ok(v) = validated {
                let _ = tx.send(v);
            }
        });
        rx.await.unwrap_or_else(|_| {
            let reason = "the check's evaluation stopped unexpectedly".to_string();
            (
                vec![Cell::Error; self.validators.len()],
                (0..self.validators.len())
                    .map(|k| (k, reason.clone()))
                    .collect(),
            )
        })
    }

    /// [`Checks::validate`] for many outputs at once, in parallel on the
    /// expressions' evaluation threads: the bulk path of revalidation.
    pub(crate) fn validate_many(&self, outputs: &[(&PreparedInput<'_>, &str)]) -> Vec<Validated> {
        use rayon::prelude::*;
        off_async_workers(|| {
            outputs
                .par_iter()
                .map(|(input, output)| self.validate(input, output))
                .collect()
        })
    }

    /// Whether a validator is a Rhai expression (which may run for up to
    /// its time limit, so is evaluated off the async workers, on the
    /// evaluation pool's large stacks).
    pub(crate) fn has_expressions(&self) -> bool {
        self.validators.iter().any(|v| v.check.has_expression())
    }

    /// Whether a validator is external (a Python callable waiting for the
    /// GIL, a program's answer): it may block, so it is evaluated off the
    /// async workers, on the calling task's own thread (many at once,
    /// unlike the evaluation pool).
    pub(crate) fn has_external(&self) -> bool {
        self.validators.iter().any(|v| v.check.has_external())
    }

    /// Check one output with every validator and every verifier (one judge
    /// call each through `caller`, or a judgement from `judging`'s cache).
    /// The conversation checks, if any, have no exchange to read
    /// ([`NO_EXCHANGE`]); a guard that has one calls
    /// [`Checks::check_exchange`].
    pub async fn check(
        self: &Arc<Self>,
        caller: &Caller,
        judging: &Judging,
        input: &PreparedInput<'_>,
        output: &str,
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        self.check_exchange(
            caller,
            judging,
            input,
            (output, Err(NO_EXCHANGE)),
            repetition,
            attempt,
        )
        .await
    }

    /// [`Checks::check`] of `output`, the conversation checks reading
    /// `exchange`.
    pub async fn check_exchange(
        self: &Arc<Self>,
        caller: &Caller,
        judging: &Judging,
        input: &PreparedInput<'_>,
        (output, exchange): (&str, Exchange<'_>),
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        let mut checked = self
            .validated_and_judged(
                caller,
                judging,
                input,
                output,
                (input.input(), output),
                repetition,
                attempt,
            )
            .await;
        self.add_conversation(&mut checked, input.input(), exchange);
        checked
    }

    /// [`Checks::check`], the verifiers shown `judged` — (input, output)
    /// — instead: an agent's episode, whose judge reads the whole
    /// transcript while its validators read the last reply
    /// (`agent::episode::judge_view`). Conversation checks, if any, have
    /// no exchange ([`NO_EXCHANGE`]): an episode's checks are its own.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn check_judged_as(
        self: &Arc<Self>,
        caller: &Caller,
        judging: &Judging,
        input: &PreparedInput<'_>,
        output: &str,
        judged: (&Input, &str),
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        let mut checked = self
            .validated_and_judged(caller, judging, input, output, judged, repetition, attempt)
            .await;
        self.add_conversation(&mut checked, input.input(), Err(NO_EXCHANGE));
        checked
    }

    fn add_conversation(&self, checked: &mut Checked, input: &Input, exchange: Exchange<'_>) {
        if !self.conversation.is_empty() {
            let (cells, reasons) = self.converse(input, exchange);
            checked.cells.extend(cells);
            checked.reasons.extend(reasons);
        }
    }

    /// The validator and verifier columns of `output` (the verifiers shown
    /// `judged`).
    #[allow(clippy::too_many_arguments)]
    async fn validated_and_judged(
        self: &Arc<Self>,
        caller: &Caller,
        judging: &Judging,
        input: &PreparedInput<'_>,
        output: &str,
        judged: (&Input, &str),
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        let (mut cells, mut reasons) = if self.has_expressions() {
            self.validate_on_eval_pool(input.input(), output).await
        } else if self.has_external() {
            blocking(|| self.validate(input, output))
        } else {
            self.validate(input, output)
        };
        let (mut judge_calls, mut judge_cached) = (0, 0);
        let prepared = input;
        let (input, output) = judged;
        for (w, v) in self.verifiers.iter().enumerate() {
            let k = self.validators.len() + w;
            // Not applicable: no judgement asked, none cached.
            match v.applies(prepared) {
                Ok(false) => {
                    cells.push(Cell::NotApplicable);
                    continue;
                }
                Err(reason) => {
                    cells.push(Cell::Error);
                    reasons.push((k, reason));
                    continue;
                }
                Ok(true) => {}
            }
            // Checked for every input when loaded; an input met later
            // (live traffic) without the field is an Error cell.
            let instructions = match v.instructions_for(input) {
                Ok(i) => i,
                Err(reason) => {
                    cells.push(Cell::Error);
                    reasons.push((k, reason));
                    continue;
                }
            };
            let key = judging
                .cache
                .as_ref()
                .map(|_| v.cache_key(&instructions, input, output, repetition, attempt));
            if let (Some(cache), Some(key), true) = (&judging.cache, &key, judging.reuse) {
                if let Some(hit) = cache.get(key) {
                    judge_cached += 1;
                    caller.judge_cached.fetch_add(1, Ordering::Relaxed);
                    cells.push(if hit.pass { Cell::Pass } else { Cell::Fail });
                    reasons.extend(hit.reasons.into_iter().map(|r| (k, r)));
                    continue;
                }
            }
            if !judging.calls {
                cells.push(Cell::Error);
                reasons.push((k, NOT_JUDGED.to_string()));
                continue;
            }
            let request = v.request(&instructions, input, output, repetition, attempt);
            let answer = caller.call(v.judge.as_ref(), &request).await;
            // This call's tries (the caller's counter is shared by
            // concurrent checks, so a difference of it would over-count).
            let made = u64::from(match &answer {
                Ok(a) => a.attempts,
                Err((_, tries)) => *tries,
            });
            judge_calls += made;
            caller.judge_calls.fetch_add(made, Ordering::Relaxed);
            v.calls.fetch_add(made, Ordering::Relaxed);
            if let Ok(a) = &answer {
                v.usage.add(a.input_tokens, a.output_tokens);
            }
            let j = v.judgement(answer.as_ref().map(|a| a.text.as_str()).map_err(|(e, _)| e));
            let pass = match j.verdict {
                JudgeVerdict::Pass => Some(true),
                JudgeVerdict::Fail => Some(false),
                JudgeVerdict::Error => None,
            };
            // Only a readable PASS or FAIL is cached: errors are asked again.
            if let (Some(cache), Some(key), Some(pass), Ok(a)) =
                (&judging.cache, key, pass, &answer)
            {
                cache.put(JudgementRow {
                    cache_key: key,
                    pass,
                    reasons: j.reasons.clone(),
                    raw: a.text.clone(),
                });
            }
            cells.push(match pass {
                Some(true) => Cell::Pass,
                Some(false) => Cell::Fail,
                None => Cell::Error,
            });
            reasons.extend(j.reasons.into_iter().map(|r| (k, r)));
        }
        Checked {
            cells,
            reasons,
            judge_calls,
            judge_cached,
        }
    }

    /// The feedback for a failed output (§4.1: the reasons fed back): per
    /// failing column in `columns`, a verifier's reasons (its message when
    /// it gave none), a conversation check's reason (the call and its
    /// turn), a validator's message (its name when it has none).
    /// A check that could not judge the output (`Error`: an expression
    /// that failed, a judge that did not answer) gives none: the output
    /// broke no rule there, and the error is the guard's own text, not
    /// something for the model to read or act on.
    pub fn feedback(&self, checked: &Checked, columns: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        for &k in columns {
            let cell = checked.cells.get(k).copied().unwrap_or(Cell::Missing);
            if matches!(cell, Cell::Pass | Cell::Error) {
                continue;
            }
            let (v, w) = (self.validators.len(), self.verifiers.len());
            // A verifier's or conversation check's own reasons say what
            // failed (the judge's words; the call and its turn); a
            // validator's message does.
            let (name, message, own_reasons) = if k < v {
                (&self.validators[k].name, &self.validators[k].message, false)
            } else if k < v + w {
                let j = &self.verifiers[k - v];
                (&j.name, &j.message, true)
            } else if let Some(c) = self.conversation.get(k - v - w) {
                (&c.info.name, &c.info.message, true)
            } else {
                continue;
            };
            let own: Vec<&String> = checked
                .reasons
                .iter()
                .filter(|(kk, _)| *kk == k)
                .map(|(_, r)| r)
                .collect();
            if own_reasons && !own.is_empty() {
                out.extend(own.into_iter().cloned());
            } else if !message.is_empty() {
                out.push(message.clone());
            } else {
                out.push(format!("{name} failed"));
            }
        }
        out
    }
}
