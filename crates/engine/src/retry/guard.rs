//! The guard (paper §4.1, §4.2): generate, check with validators and
//! verifiers, and on failure ask again — with the reasons fed back — up to
//! `m` attempts; publish the first output that passes, or report that
//! nothing passed with every attempt's reasons.
//!
//! The same [`Guard`] runs inside `probity run` (a `[retry]` table: the
//! guarded system is measured) and at runtime (`probity serve`, or as a
//! library around any [`Provider`]):
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use probity_engine::{Caller, Checks, Guard, GuardOutcome, RetryPolicy};
//! use probity_engine::provider::{Message, Role};
//! use probity_core::{Input, Validator};
//! use std::sync::Arc;
//! let provider = probity_engine::system::ProviderConfig::default().build()?;
//! let checks = Checks {
//!     validators: vec![Validator::new("short").check(|o: &str| o.len() < 500)],
//!     verifiers: vec![],
//!     ..Checks::default()
//! };
//! let guard = Guard::new(provider, Arc::new(checks), RetryPolicy::default(), Arc::new(Caller::default()))?;
//! let messages = [Message::text(Role::User, "Thank you!")];
//! match guard.run(&messages, &Input::text("live", "Thank you!"), 0).await {
//!     GuardOutcome::Published { output, .. } => println!("{output}"),
//!     GuardOutcome::NothingPassed { attempts, .. } => eprintln!("{} attempts failed", attempts.len()),
//! }
//! # Ok(()) }
//! ```

use crate::checks::cache_key::attempt_key;
use crate::checks::check::{Checks, Judging, NO_EXCHANGE};
use crate::provider::call::{Answer, CallFailure, Caller};
use crate::provider::template::TemplateError;
use crate::provider::types::{
    AnswerMeta, Api, CutWhen, Message, Provider, ProviderError, Request, WireRequest,
};
use crate::retry::exchange::{exchange, needs_history};
use crate::retry::policy::{Feedback, RetryPolicy};
use crate::store::{AttemptRow, CachedOutput, OutputCache, SampleRow};
use probity_core::validator::PreparedInput;
use probity_core::{Cell, Input};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// One attempt: its output (or why there is none), verdicts and reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1-based.
    pub number: u32,
    pub output: Option<String>,
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Calls to the system for this attempt (retries on errors included;
    /// 0 when served from the store).
    pub call_attempts: u32,
    /// Calls to judges.
    pub judge_calls: u64,
    pub cells: Vec<Cell>,
    /// `(k, reason)`.
    pub reasons: Vec<(usize, String)>,
    /// Passed every deciding check.
    pub passed: bool,
    /// What was (or would be) fed back after this attempt.
    pub feedback: Vec<String>,
    /// The request's cache key (see [`crate::checks::cache_key::attempt_key`])
    /// when the guard keys its attempts ([`Guard::keyed`], or it has an
    /// output cache) and the attempt has an output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// What the upstream said besides the output (model, finish reason,
    /// tool calls), for a Chat Completions client ([`Guard::run_wire`]).
    #[serde(skip)]
    pub meta: Option<Arc<AnswerMeta>>,
    /// The upstream's HTTP status when its call failed with one (429,
    /// 4xx, 5xx), so a client can be told the upstream refused it.
    #[serde(skip)]
    pub upstream_status: Option<u16>,
    /// Why the upstream's call failed (redacted), when it did: what
    /// `probity serve` tells its client (a 429's wait, a 400's code).
    #[serde(skip)]
    pub upstream_error: Option<ProviderError>,
    /// Abandoned on a prefix that settled a failure
    /// ([`Guard::cutting_streams`]): `output` is that prefix, not an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl Attempt {
    /// This attempt as stored for sample `(input_idx, repetition)`;
    /// `cached`: keep its cache key (outputs only) so an identical request
    /// is served from the store.
    pub fn row(
        &self,
        input_idx: usize,
        repetition: usize,
        published: bool,
        cached: bool,
    ) -> AttemptRow {
        AttemptRow {
            input_idx,
            repetition,
            attempt: self.number,
            output: self.output.clone(),
            error: self.error.clone(),
            latency_ms: self.latency_ms,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            call_attempts: self.call_attempts,
            judge_calls: self.judge_calls,
            cells: self.cells.clone(),
            reasons: self.reasons.clone(),
            passed: self.passed,
            published,
            cache_key: self
                .cache_key
                .clone()
                .filter(|_| cached && self.output.is_some()),
        }
    }
}

impl Attempt {
    /// This attempt as the sample `(input_idx, repetition)` of the
    /// single-attempt tensor (the first attempt of a guarded sample is its
    /// sample), stored under `cache_key`.
    pub(crate) fn sample_row(
        &self,
        input_idx: usize,
        repetition: usize,
        cache_key: String,
    ) -> SampleRow {
        SampleRow {
            input_idx,
            repetition,
            cache_key,
            output: self.output.clone(),
            error: self.error.clone(),
            latency_ms: self.latency_ms,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            call_attempts: self.call_attempts,
            cells: self.cells.clone(),
            reasons: self.reasons.clone(),
        }
    }
}

/// Which attempt is made, and how its answer is asked for.
#[derive(Debug, Clone, Copy)]
struct Turn {
    number: u32,
    asked: Asked,
}

/// How an attempt's answer is asked for ([`Guard::cutting_streams`],
/// [`Guard::keeping_the_last_attempt_whole`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// Whole, not streamed.
    Whole,
    /// Streamed and cut short as soon as its prefix settles a failure.
    Cuttable,
    /// Streamed like the attempts before it (the same request), never cut.
    Uncut,
}

impl Asked {
    /// Attempt `number` of `max_attempts`: streamed when cutting streams;
    /// the final one never cut when kept whole — and then a lone attempt
    /// is asked for whole, since streaming it would buy nothing (no
    /// earlier attempt to match, no later one to start sooner).
    fn for_attempt(cut_streams: bool, whole_last: bool, number: u32, max_attempts: u32) -> Self {
        match (cut_streams, whole_last && number == max_attempts) {
            (false, _) => Asked::Whole,
            (true, false) => Asked::Cuttable,
            (true, true) if max_attempts == 1 => Asked::Whole,
            (true, true) => Asked::Uncut,
        }
    }
}

/// Why a guard stopped without publishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// All `m` attempts failed.
    Exhausted,
    /// The overall deadline passed.
    Deadline,
    /// The upstream answered HTTP 429 ([`Guard::bounding_upstream_retries`]):
    /// the client is to wait and ask again, not the guard.
    RateLimited,
    /// The upstream failed (5xx, timeout, unreachable) and the request's
    /// retries for such failures were spent
    /// ([`Guard::bounding_upstream_retries`]).
    UpstreamFailed,
    /// The upstream refused the request (HTTP 4xx other than 408, 409 and
    /// 429): the same request would be refused again, so no attempt
    /// follows.
    Refused,
    /// No check failed the output, but one could not judge it (a broken
    /// expression, a judge that did not answer): another output would not
    /// mend the check, so no attempt follows.
    Unjudged,
    /// The upstream answered with nothing the checks can read (an audio
    /// answer without a transcript, an output of built-in tool calls only;
    /// `provider::openai::NO_TEXT`): the request asks for that kind of
    /// answer, so no attempt follows.
    Unreadable,
}

/// The guard's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum GuardOutcome {
    /// The first output that passed; it is the last attempt.
    Published {
        output: String,
        attempts: Vec<Attempt>,
    },
    /// Nothing passed: no output is published.
    NothingPassed { attempts: Vec<Attempt>, stop: Stop },
}

impl GuardOutcome {
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            GuardOutcome::Published { attempts, .. }
            | GuardOutcome::NothingPassed { attempts, .. } => attempts,
        }
    }

    pub fn published(&self) -> Option<&str> {
        match self {
            GuardOutcome::Published { output, .. } => Some(output),
            GuardOutcome::NothingPassed { .. } => None,
        }
    }
}

/// A provider wrapped with checks and a retry policy.
pub struct Guard {
    provider: Arc<dyn Provider>,
    checks: Arc<Checks>,
    policy: RetryPolicy,
    caller: Arc<Caller>,
    feedback: Feedback,
    columns: Vec<usize>,
    judging: Judging,
    /// Outputs of earlier identical attempts; `None`: every attempt calls.
    outputs: Option<Arc<dyn OutputCache>>,
    /// The provider's fingerprint, for the attempts' cache keys.
    fingerprint: String,
    /// Key every attempt, so a later run can reuse its output.
    keyed: bool,
    /// Read a Chat Completions client's answers as the upstream streams
    /// them and abandon one as soon as its prefix fails a deciding
    /// validator ([`Guard::cutting_streams`]).
    cut_streams: bool,
    /// The final attempt is asked for whole even when streams are cut
    /// ([`Guard::keeping_the_last_attempt_whole`]).
    whole_last: bool,
    /// The system's calls and their retries per request, when bounded
    /// ([`Guard::bounding_upstream_retries`]).
    upstream: Option<UpstreamRetries>,
}

/// How the system's calls are made under [`Guard::bounding_upstream_retries`].
struct UpstreamRetries {
    /// Makes the system's calls, one try each.
    caller: Arc<Caller>,
    /// Retries per request for transient failures, in all.
    retries: u32,
}

impl Guard {
    pub fn new(
        provider: Arc<dyn Provider>,
        checks: Arc<Checks>,
        policy: RetryPolicy,
        caller: Arc<Caller>,
    ) -> Result<Self, TemplateError> {
        let feedback = Feedback::new(policy.feedback_template.as_deref())?;
        let columns = policy.on.columns(&checks);
        let fingerprint = provider.fingerprint();
        Ok(Guard {
            fingerprint,
            keyed: false,
            cut_streams: false,
            whole_last: false,
            upstream: None,
            outputs: None,
            provider,
            checks,
            policy,
            caller,
            feedback,
            columns,
            judging: Judging::default(),
        })
    }

    /// Judgements from (and into) `judging`'s cache.
    pub(crate) fn with_judging(mut self, judging: Judging) -> Self {
        self.judging = judging;
        self
    }

    /// Attempts' outputs from `outputs` when it holds them (an attempt whose
    /// request — fingerprint, messages with feedback, repetition, attempt
    /// index — was answered before is not asked again); new outputs are
    /// put into it. Without it (the default) every attempt is a call.
    pub fn with_outputs(mut self, outputs: Arc<dyn OutputCache>) -> Self {
        self.outputs = Some(outputs);
        self
    }

    /// Key every attempt's request (see [`Attempt::cache_key`]), so a later
    /// run can reuse its output, without reading any cache.
    pub fn keyed(mut self) -> Self {
        self.keyed = true;
        self
    }

    /// For [`Guard::run_wire`]: read each answer as the upstream streams
    /// it, and abandon it — dropping the call, so the upstream stops
    /// generating — as soon as its prefix settles a deciding validator's
    /// failure ([`probity_core::Validator::fails_on_prefix`]); the next
    /// attempt starts at once. The abandoned attempt keeps the prefix as
    /// its output, `Fail` in the settled columns and `Missing` (not
    /// measured) in the others.
    ///
    /// Only when a deciding validator can be settled by a prefix at all
    /// ([`probity_core::Validator::may_fail_on_prefix`]): otherwise the
    /// answer is asked for whole, as without this.
    pub fn cutting_streams(mut self) -> Self {
        let validators = &self.checks.validators;
        self.cut_streams = self
            .columns
            .iter()
            .any(|&k| validators.get(k).is_some_and(|v| v.may_fail_on_prefix()));
        self
    }

    /// With [`Guard::cutting_streams`]: never cut the final attempt, so
    /// that when nothing passes the last output is a whole answer — for a
    /// guard that then publishes it (`on_nothing_passed = "last"`). A lone
    /// attempt is then asked for whole ([`Asked::for_attempt`]).
    pub fn keeping_the_last_attempt_whole(mut self) -> Self {
        self.whole_last = true;
        self
    }

    /// Bound what one request may cost the system (`probity serve`,
    /// docs/serve.md "When the upstream fails"): its calls go through
    /// `caller`, which must make one try per call (the judges keep this
    /// guard's own caller and its retries); a transient failure (5xx,
    /// timeout, unreachable) is retried — the same attempt again, after
    /// the caller's backoff, within the deadline — at most `retries` times
    /// per request in all, then the request stops
    /// ([`Stop::UpstreamFailed`]); an HTTP 429 stops it at once
    /// ([`Stop::RateLimited`]) — the client backs off, not the guard. A
    /// request thus costs at most `attempts + retries` calls to the system.
    pub fn bounding_upstream_retries(mut self, caller: Arc<Caller>, retries: u32) -> Self {
        self.upstream = Some(UpstreamRetries { caller, retries });
        self
    }

    /// The calls, judge calls and tokens this guard's callers counted
    /// (the system's caller's added when it has one of its own).
    pub fn totals(&self) -> crate::store::RunTotals {
        let mut t = self.caller.totals();
        if let Some(u) = &self.upstream {
            let s = u.caller.totals();
            t.model_calls += s.model_calls;
            t.calls_ended += s.calls_ended;
            t.tokens += s.tokens;
            t.usage.system = t.usage.system + s.usage.system;
        }
        t
    }

    /// The caller the system's calls go through.
    fn system_caller(&self) -> &Caller {
        self.upstream.as_ref().map_or(&self.caller, |u| &u.caller)
    }

    /// Whether the prefix `text` settles a deciding validator's failure.
    fn settled(&self, text: &str) -> bool {
        let validators = &self.checks.validators;
        self.columns
            .iter()
            .any(|&k| validators.get(k).is_some_and(|v| v.fails_on_prefix(text)))
    }

    /// The attempt abandoned on `a`'s prefix: its settled columns `Fail`,
    /// the rest `Missing`; the feedback the failed validators' messages.
    fn cut_attempt(&self, number: u32, key: Option<String>, a: Answer) -> Attempt {
        let validators = &self.checks.validators;
        let mut cells = vec![Cell::Missing; self.checks.len()];
        let mut failed = Vec::new();
        for &k in &self.columns {
            if validators
                .get(k)
                .is_some_and(|v| v.fails_on_prefix(&a.text))
            {
                cells[k] = Cell::Fail;
                failed.push(k);
            }
        }
        let checked = crate::checks::check::Checked {
            cells,
            reasons: Vec::new(),
            judge_calls: 0,
            judge_cached: 0,
        };
        Attempt {
            number,
            feedback: self.checks.feedback(&checked, &failed),
            output: Some(a.text),
            error: None,
            latency_ms: a.latency_ms,
            input_tokens: a.input_tokens,
            output_tokens: a.output_tokens,
            call_attempts: a.attempts,
            judge_calls: 0,
            cells: checked.cells,
            reasons: Vec::new(),
            passed: false,
            cache_key: key,
            meta: a.meta,
            upstream_status: None,
            upstream_error: None,
            cut: true,
        }
    }

    /// The guarded system.
    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    pub fn checks(&self) -> &Checks {
        &self.checks
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Where its judgements are cached.
    pub fn judging(&self) -> &Judging {
        &self.judging
    }

    /// The deciding columns.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Guard one request: `messages` rendered for `input`.
    pub async fn run(&self, messages: &[Message], input: &Input, repetition: u32) -> GuardOutcome {
        self.run_from(messages, &PreparedInput::new(input), repetition, None)
            .await
    }

    /// As [`Guard::run`], with the first attempt's answer already known
    /// (served from the store, or called by the runner).
    pub(crate) async fn run_from(
        &self,
        messages: &[Message],
        input: &PreparedInput<'_>,
        repetition: u32,
        first: Option<Result<Answer, CallFailure>>,
    ) -> GuardOutcome {
        self.guard(messages, input, repetition, first, None, None)
            .await
    }

    /// Guard one request of a Chat Completions client (`probity serve`):
    /// `messages` flattened for the checks, `wire` the client's messages as
    /// sent and the fields to forward; every attempt keeps the upstream's
    /// metadata ([`Attempt::meta`]).
    pub async fn run_wire(
        &self,
        messages: &[Message],
        input: &Input,
        repetition: u32,
        wire: &WireRequest,
    ) -> GuardOutcome {
        self.run_wire_with(messages, input, repetition, wire, None)
            .await
    }

    /// [`Guard::run_wire`] with at most `attempts` attempts instead of the
    /// policy's (a request's class, §4.2.5); the policy's deadline still
    /// bounds them.
    pub async fn run_wire_with(
        &self,
        messages: &[Message],
        input: &Input,
        repetition: u32,
        wire: &WireRequest,
        attempts: Option<u32>,
    ) -> GuardOutcome {
        self.run_api_with(messages, input, repetition, (wire, Api::Chat), attempts)
            .await
    }

    /// [`Guard::run_wire_with`] for a client of `api`: a Responses API
    /// client's `wire` holds its `input` items, each attempt's answer is
    /// read whole ([`Caller::call_api`]).
    pub(crate) async fn run_api_with(
        &self,
        messages: &[Message],
        input: &Input,
        repetition: u32,
        wire: (&WireRequest, Api),
        attempts: Option<u32>,
    ) -> GuardOutcome {
        self.guard(
            messages,
            &PreparedInput::new(input),
            repetition,
            None,
            Some(wire),
            attempts,
        )
        .await
    }

    async fn guard(
        &self,
        messages: &[Message],
        input: &PreparedInput<'_>,
        repetition: u32,
        first: Option<Result<Answer, CallFailure>>,
        wire: Option<(&WireRequest, Api)>,
        attempts_cap: Option<u32>,
    ) -> GuardOutcome {
        let started = tokio::time::Instant::now();
        let max_attempts = attempts_cap.unwrap_or(self.policy.attempts).max(1);
        let deadline = self
            .policy
            .deadline_s
            .and_then(|s| started.checked_add(crate::bounds::clamp_seconds(s)));
        let attempt_timeout = self
            .policy
            .attempt_timeout_s
            .map(crate::bounds::clamp_seconds);
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut current = messages.to_vec();
        let mut first = first;
        // The request's retries for transient upstream failures, in all.
        let retries = AtomicU32::new(self.upstream.as_ref().map_or(0, |u| u.retries));
        for number in 1..=max_attempts {
            // The first attempt is always made (and bounded by the limits
            // below), so an outcome always has at least one attempt.
            if number > 1 && deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return GuardOutcome::NothingPassed {
                    attempts,
                    stop: Stop::Deadline,
                };
            }
            let known = first.take();
            let turn = Turn {
                number,
                asked: Asked::for_attempt(self.cut_streams, self.whole_last, number, max_attempts),
            };
            let work = self.attempt(&current, input, repetition, turn, known, (wire, &retries));
            let limit = match (attempt_timeout, deadline) {
                (Some(t), Some(d)) => Some((tokio::time::Instant::now() + t).min(d)),
                (Some(t), None) => Some(tokio::time::Instant::now() + t),
                (None, Some(d)) => Some(d),
                (None, None) => None,
            };
            let attempt = match limit {
                // Biased towards the limit: an attempt still running when
                // the limit passes timed out, even if it would complete in
                // the same instant (a loaded machine polls late).
                Some(at) => match tokio::select! {
                    biased;
                    _ = tokio::time::sleep_until(at) => None,
                    a = work => Some(a),
                } {
                    Some(a) => a,
                    None => {
                        let over_deadline = deadline.is_some_and(|d| at >= d);
                        attempts.push(self.timed_out(number));
                        if over_deadline {
                            return GuardOutcome::NothingPassed {
                                attempts,
                                stop: Stop::Deadline,
                            };
                        }
                        continue;
                    }
                },
                None => work.await,
            };
            let passed = attempt.passed;
            let output = attempt.output.clone();
            let refused = attempt
                .upstream_status
                .is_some_and(|s| (400..500).contains(&s) && ![408, 409, 429].contains(&s));
            let unreadable = matches!(
                &attempt.upstream_error,
                Some(ProviderError::BadResponse(m)) if m.starts_with(crate::provider::types::NO_TEXT)
            );
            let failed = self.upstream_stop(&attempt);
            attempts.push(attempt);
            if refused {
                return GuardOutcome::NothingPassed {
                    attempts,
                    stop: Stop::Refused,
                };
            }
            if unreadable {
                return GuardOutcome::NothingPassed {
                    attempts,
                    stop: Stop::Unreadable,
                };
            }
            if let Some(stop) = failed {
                return GuardOutcome::NothingPassed { attempts, stop };
            }
            if passed {
                return GuardOutcome::Published {
                    output: output.unwrap_or_default(),
                    attempts,
                };
            }
            if self.unjudged(&attempts[attempts.len() - 1]) {
                return GuardOutcome::NothingPassed {
                    attempts,
                    stop: Stop::Unjudged,
                };
            }
            if self.policy.feedback && number < max_attempts {
                let reasons = &attempts[attempts.len() - 1].feedback;
                // No reason (only checks that could not judge, or cells
                // never reached): a plain retry, never "rejected for these
                // reasons:" with none.
                if let (Some(prev), false) = (&output, reasons.is_empty()) {
                    // A feedback template that cannot render for this input
                    // leaves the messages as they were: a plain retry.
                    if let Ok(next) = self.feedback.apply(messages, input.input(), prev, reasons) {
                        current = next;
                    }
                }
            }
        }
        GuardOutcome::NothingPassed {
            attempts,
            stop: Stop::Exhausted,
        }
    }

    /// Under [`Guard::bounding_upstream_retries`], why the request stops
    /// after `a`: its call was rate limited, or failed transiently with
    /// the request's retries spent.
    fn upstream_stop(&self, a: &Attempt) -> Option<Stop> {
        self.upstream.as_ref()?;
        match a.upstream_error.as_ref()? {
            ProviderError::RateLimited { .. } => Some(Stop::RateLimited),
            e if e.is_retryable() => Some(Stop::UpstreamFailed),
            _ => None,
        }
    }

    /// One call to the system for `request`: under
    /// [`Guard::bounding_upstream_retries`] a transient failure is tried
    /// again (after the caller's backoff) while the request's `retries`
    /// last, the answer counting every try.
    async fn call_system(
        &self,
        request: &Request,
        wire: Option<(&WireRequest, Api)>,
        cut: Option<CutWhen<'_>>,
        retries: &AtomicU32,
    ) -> Result<Answer, CallFailure> {
        let caller = self.system_caller();
        let mut tries = 0;
        loop {
            let result = match wire {
                Some(wire) => {
                    caller
                        .call_api(self.provider.as_ref(), request, wire, cut)
                        .await
                }
                None => caller.call(self.provider.as_ref(), request).await,
            };
            match result {
                Ok(mut a) => {
                    a.attempts += tries;
                    return Ok(a);
                }
                Err((e, t)) => {
                    tries += t;
                    let transient = self.upstream.is_some()
                        && e.is_retryable()
                        && !matches!(e, ProviderError::RateLimited { .. });
                    let spend = |n: u32| n.checked_sub(1);
                    if !transient
                        || retries
                            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, spend)
                            .is_err()
                    {
                        return Err((e, tries));
                    }
                    tokio::time::sleep(caller.backoff.delay(tries - 1, None)).await;
                }
            }
        }
    }

    /// Whether `a` has an output that no deciding check failed but one
    /// could not judge.
    fn unjudged(&self, a: &Attempt) -> bool {
        let cell = |k: usize| a.cells.get(k).copied().unwrap_or(Cell::Missing);
        a.output.is_some()
            && !self.columns.iter().any(|&k| cell(k) == Cell::Fail)
            && self.columns.iter().any(|&k| cell(k) == Cell::Error)
    }

    fn timed_out(&self, number: u32) -> Attempt {
        let k = self.checks.len();
        Attempt {
            number,
            output: None,
            error: Some("the attempt timed out (attempt_timeout_s / deadline_s)".into()),
            latency_ms: None,
            input_tokens: None,
            output_tokens: None,
            call_attempts: 0,
            judge_calls: 0,
            cells: vec![Cell::Error; k],
            reasons: Vec::new(),
            passed: false,
            feedback: Vec::new(),
            cache_key: None,
            meta: None,
            upstream_status: None,
            upstream_error: None,
            cut: false,
        }
    }

    async fn attempt(
        &self,
        messages: &[Message],
        input: &PreparedInput<'_>,
        repetition: u32,
        turn: Turn,
        known: Option<Result<Answer, CallFailure>>,
        (wire, retries): (Option<(&WireRequest, Api)>, &AtomicU32),
    ) -> Attempt {
        let Turn { number, asked } = turn;
        let key = (self.keyed || self.outputs.is_some())
            .then(|| attempt_key(&self.fingerprint, messages, repetition as usize, number - 1));
        let hit = match (&self.outputs, &key, &known) {
            (Some(cache), Some(key), None) => cache.get(key),
            _ => None,
        };
        let result = match (known, hit) {
            (Some(r), _) => r,
            (None, Some(hit)) => {
                self.caller.outputs_cached.fetch_add(1, Ordering::Relaxed);
                Ok(Answer::from(hit))
            }
            (None, None) => {
                let request = Request {
                    messages: messages.to_vec(),
                    repetition,
                    attempt: number - 1,
                    input: input.input().clone(),
                };
                let settled = |text: &str| self.settled(text);
                let never = |_: &str| false;
                let cut: Option<CutWhen<'_>> = match asked {
                    Asked::Whole => None,
                    Asked::Cuttable => Some(&settled),
                    Asked::Uncut => Some(&never),
                };
                let answer = self.call_system(&request, wire, cut, retries).await;
                if let (Some(cache), Some(key), Ok(a)) = (&self.outputs, &key, &answer) {
                    if !a.cut {
                        cache.put(key, CachedOutput::from(a));
                    }
                }
                answer
            }
        };
        match result {
            Ok(a) if a.cut => self.cut_attempt(number, key, a),
            Ok(a) => {
                let exchange = (!self.checks.conversation.is_empty()).then(|| {
                    let history = needs_history(self.checks.conversation.iter().map(|c| &c.check));
                    exchange(wire, a.meta.as_deref(), history)
                });
                let exchange = match &exchange {
                    None => Err(NO_EXCHANGE),
                    Some(Ok(t)) => Ok(t),
                    Some(Err(why)) => Err(why.as_str()),
                };
                let checked = self
                    .checks
                    .check_exchange(
                        &self.caller,
                        &self.judging,
                        input,
                        (&a.text, exchange),
                        repetition,
                        number - 1,
                    )
                    .await;
                let passed = self
                    .columns
                    .iter()
                    .all(|&k| checked.cells.get(k) == Some(&Cell::Pass));
                let feedback = if passed {
                    Vec::new()
                } else {
                    self.checks.feedback(&checked, &self.columns)
                };
                Attempt {
                    number,
                    output: Some(a.text),
                    error: None,
                    latency_ms: a.latency_ms,
                    input_tokens: a.input_tokens,
                    output_tokens: a.output_tokens,
                    call_attempts: a.attempts,
                    judge_calls: checked.judge_calls,
                    cells: checked.cells,
                    reasons: checked.reasons,
                    passed,
                    feedback,
                    cache_key: key,
                    meta: a.meta,
                    upstream_status: None,
                    upstream_error: None,
                    cut: false,
                }
            }
            Err((e, tries)) => Attempt {
                upstream_status: e.status(),
                upstream_error: Some(e.clone()),
                number,
                output: None,
                error: Some(e.to_string()),
                latency_ms: None,
                input_tokens: None,
                output_tokens: None,
                call_attempts: tries,
                judge_calls: 0,
                cells: vec![Cell::Error; self.checks.len()],
                reasons: Vec::new(),
                passed: false,
                feedback: Vec::new(),
                cache_key: None,
                meta: None,
                cut: false,
            },
        }
    }
}
