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
//! use probity_engine::guard::{Caller, Checks, Guard, GuardOutcome, RetryPolicy};
//! use probity_engine::provider::{Message, Role};
//! use probity_core::{Input, Validator};
//! use std::sync::Arc;
//! let provider = probity_engine::provider::ProviderConfig::default().build()?;
//! let checks = Checks {
//!     validators: vec![Validator::new("short").check(|o: &str| o.len() < 500)],
//!     verifiers: vec![],
//! };
//! let guard = Guard::new(provider, Arc::new(checks), RetryPolicy::default(), Arc::new(Caller::default()))?;
//! let messages = [Message { role: Role::User, content: "Thank you!".into() }];
//! match guard.run(&messages, &Input::text("live", "Thank you!"), 0).await {
//!     GuardOutcome::Published { output, .. } => println!("{output}"),
//!     GuardOutcome::NothingPassed { attempts, .. } => eprintln!("{} attempts failed", attempts.len()),
//! }
//! # Ok(()) }
//! ```

use crate::limits::{Backoff, RateLimiter};
use crate::provider::{Message, Provider, ProviderError, Request};
use crate::store::{AttemptRow, CachedOutput, JudgementCache, JudgementRow, OutputCache};
use crate::template::{self, TemplateError, DEFAULT_FEEDBACK_TEMPLATE};
use crate::verifier::{JudgeVerdict, Verifier};
use minijinja::Environment;
use probity_core::{Cell, CheckInfo, CheckKind, Input, Validator, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls with the engine's machinery: rate limits, per-call timeout,
/// retries with backoff on 429 / 5xx / timeouts. Counts every call.
#[derive(Debug)]
pub struct Caller {
    pub limiter: Arc<RateLimiter>,
    pub backoff: Backoff,
    pub timeout: Duration,
    pub call_attempts: u32,
    /// Calls made (retries included).
    pub calls: AtomicU64,
    /// Tokens reported by providers (prompt + completion).
    pub tokens: AtomicU64,
    /// Of `calls`, those made to judges (retries included).
    pub judge_calls: AtomicU64,
    /// Judgements served from the judge cache (no call).
    pub judge_cached: AtomicU64,
    /// Attempts whose output was served from the output cache (no call;
    /// not counting a first attempt the runner found in the store itself).
    pub outputs_cached: AtomicU64,
}

impl Default for Caller {
    /// No rate limit, 60 s per call, 4 tries.
    fn default() -> Self {
        Caller::new(Arc::new(RateLimiter::default()), Duration::from_secs(60), 4)
    }
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub text: String,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Tries it took (0 when served from the store).
    pub attempts: u32,
}

impl Caller {
    pub fn new(limiter: Arc<RateLimiter>, timeout: Duration, call_attempts: u32) -> Self {
        Caller {
            limiter,
            backoff: Backoff::default(),
            timeout,
            call_attempts: call_attempts.max(1),
            calls: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            judge_calls: AtomicU64::new(0),
            judge_cached: AtomicU64::new(0),
            outputs_cached: AtomicU64::new(0),
        }
    }

    /// One call with retries on retryable errors; `Err` carries the last
    /// error and the number of tries.
    pub async fn call(
        &self,
        provider: &dyn Provider,
        request: &Request,
    ) -> Result<Answer, (ProviderError, u32)> {
        let estimate = request
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>() as f64
            / 4.0;
        let mut attempt = 0;
        loop {
            self.limiter.acquire(estimate).await;
            self.calls.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            let result = match tokio::time::timeout(self.timeout, provider.complete(request)).await
            {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout(self.timeout)),
            };
            attempt += 1;
            match result {
                Ok(c) => {
                    let used = c.input_tokens.unwrap_or(0) + c.output_tokens.unwrap_or(0);
                    if used > 0 {
                        self.limiter.settle(estimate, used as f64).await;
                        self.tokens.fetch_add(used, Ordering::Relaxed);
                    }
                    return Ok(Answer {
                        text: c.text,
                        latency_ms: Some(started.elapsed().as_secs_f64() * 1000.0),
                        input_tokens: c.input_tokens,
                        output_tokens: c.output_tokens,
                        attempts: attempt,
                    });
                }
                Err(e) if e.is_retryable() && attempt < self.call_attempts => {
                    tokio::time::sleep(self.backoff.delay(attempt - 1, e.retry_after())).await;
                }
                Err(e) => return Err((e, attempt)),
            }
        }
    }
}

/// The checks, in column order: validators, then verifiers.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    pub validators: Vec<Validator>,
    pub verifiers: Vec<Verifier>,
}

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

/// How verifiers get their judgements: from a cache when it holds them
/// (successful judgements only; new ones are added), from the judge
/// otherwise — or, with `calls` off, not at all (an Error cell, reason
/// [`NOT_JUDGED`]).
#[derive(Clone)]
pub struct Judging {
    pub cache: Option<Arc<dyn JudgementCache>>,
    pub calls: bool,
}

impl Default for Judging {
    /// No cache; every judgement is a call.
    fn default() -> Self {
        Judging {
            cache: None,
            calls: true,
        }
    }
}

impl std::fmt::Debug for Judging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judging")
            .field("cache", &self.cache.is_some())
            .field("calls", &self.calls)
            .finish()
    }
}

impl Checks {
    /// K, the number of columns.
    pub fn len(&self) -> usize {
        self.validators.len() + self.verifiers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The columns' settings.
    pub fn infos(&self) -> Vec<CheckInfo> {
        self.validators
            .iter()
            .map(|v| CheckInfo {
                name: v.name.clone(),
                message: v.message.clone(),
                minimum_success_percentage: v.minimum_success_percentage,
                weight: v.weight,
                kind: CheckKind::Validator,
            })
            .chain(self.verifiers.iter().map(Verifier::info))
            .collect()
    }

    /// Check one output with every validator and every verifier (one judge
    /// call each, through `caller`).
    pub async fn check(
        &self,
        caller: &Caller,
        input: &Input,
        output: &str,
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        self.check_with(
            caller,
            &Judging::default(),
            input,
            output,
            repetition,
            attempt,
        )
        .await
    }

    /// As [`Checks::check`], with judgements from `judging`'s cache when it
    /// holds them.
    pub async fn check_with(
        &self,
        caller: &Caller,
        judging: &Judging,
        input: &Input,
        output: &str,
        repetition: u32,
        attempt: u32,
    ) -> Checked {
        let mut cells = Vec::with_capacity(self.len());
        let mut reasons = Vec::new();
        for (k, v) in self.validators.iter().enumerate() {
            let verdict = v.evaluate(input, output);
            if let Verdict::Error { reason } = &verdict {
                reasons.push((k, reason.clone()));
            }
            cells.push(Cell::from(&verdict));
        }
        let (mut judge_calls, mut judge_cached) = (0, 0);
        for (w, v) in self.verifiers.iter().enumerate() {
            let k = self.validators.len() + w;
            let key = judging
                .cache
                .as_ref()
                .map(|_| v.cache_key(input, output, repetition, attempt));
            if let (Some(cache), Some(key)) = (&judging.cache, &key) {
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
            let request = v.request(input, output, repetition, attempt);
            let answer = caller.call(v.judge.as_ref(), &request).await;
            // This call's tries (the caller's counter is shared by
            // concurrent checks, so a difference of it would over-count).
            let made = u64::from(match &answer {
                Ok(a) => a.attempts,
                Err((_, tries)) => *tries,
            });
            judge_calls += made;
            caller.judge_calls.fetch_add(made, Ordering::Relaxed);
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

    /// The feedback for a failed output: per failing column in `columns`, a
    /// verifier's reasons (its message when it gave none), a validator's
    /// message (its name when it has none), an error's reason.
    pub fn feedback(&self, checked: &Checked, columns: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        for &k in columns {
            let cell = checked.cells.get(k).copied().unwrap_or(Cell::Missing);
            if cell == Cell::Pass {
                continue;
            }
            let (name, message) = if k < self.validators.len() {
                let v = &self.validators[k];
                (&v.name, &v.message)
            } else {
                let v = &self.verifiers[k - self.validators.len()];
                (&v.name, &v.message)
            };
            let own: Vec<&String> = checked
                .reasons
                .iter()
                .filter(|(kk, _)| *kk == k)
                .map(|(_, r)| r)
                .collect();
            let is_verifier = k >= self.validators.len();
            if (is_verifier || cell == Cell::Error) && !own.is_empty() {
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

/// Which checks decide whether an attempt passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetryOn {
    Validators,
    Verifiers,
    #[default]
    All,
}

impl RetryOn {
    /// The deciding columns of a `validators`+`verifiers` wide tensor.
    pub fn columns(self, validators: usize, verifiers: usize) -> Vec<usize> {
        match self {
            RetryOn::Validators => (0..validators).collect(),
            RetryOn::Verifiers => (validators..validators + verifiers).collect(),
            RetryOn::All => (0..validators + verifiers).collect(),
        }
    }
}

fn d_attempts() -> u32 {
    3
}
fn d_true() -> bool {
    true
}

/// The `[retry]` table: the retry policy (§4.1, §4.2.6).
///
/// ```toml
/// [retry]
/// attempts = 4                 # m: attempts in all (retries = m − 1)
/// on = "all"                   # validators | verifiers | all
/// feedback = true              # feed the failing checks' reasons back
/// feedback_template = "..."    # minijinja: input, previous_output, reasons
/// attempt_timeout_s = 30       # one attempt: generation and checks
/// deadline_s = 90              # all attempts of one input
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    #[serde(default = "d_attempts")]
    pub attempts: u32,
    #[serde(default)]
    pub on: RetryOn,
    #[serde(default = "d_true")]
    pub feedback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<f64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: d_attempts(),
            on: RetryOn::All,
            feedback: true,
            feedback_template: None,
            attempt_timeout_s: None,
            deadline_s: None,
        }
    }
}

impl RetryPolicy {
    /// One attempt, no feedback: the plain system.
    pub fn single() -> Self {
        RetryPolicy {
            attempts: 1,
            feedback: false,
            ..RetryPolicy::default()
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.attempts == 0 {
            return Err("attempts must be at least 1".into());
        }
        for (name, v) in [
            ("attempt_timeout_s", self.attempt_timeout_s),
            ("deadline_s", self.deadline_s),
        ] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("{name} = {v} must be a positive number of seconds"));
            }
        }
        if let Some(t) = &self.feedback_template {
            Feedback::new(Some(t)).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The compiled feedback template.
#[derive(Debug)]
pub struct Feedback {
    env: Environment<'static>,
}

impl Feedback {
    /// `template` or [`DEFAULT_FEEDBACK_TEMPLATE`].
    pub fn new(template: Option<&str>) -> Result<Self, TemplateError> {
        let mut env = template::new_env();
        template::add(
            &mut env,
            "feedback",
            template.unwrap_or(DEFAULT_FEEDBACK_TEMPLATE),
        )?;
        Ok(Feedback { env })
    }

    /// `base` with the feedback appended to its last user message (the
    /// paper's "input + reasons").
    pub fn apply(
        &self,
        base: &[Message],
        input: &Input,
        previous_output: &str,
        reasons: &[String],
    ) -> Result<Vec<Message>, TemplateError> {
        let ctx = Value::Object(Map::from_iter([
            ("input".to_string(), template::input_value(input)),
            (
                "previous_output".to_string(),
                Value::String(previous_output.to_string()),
            ),
            (
                "reasons".to_string(),
                Value::Array(reasons.iter().cloned().map(Value::String).collect()),
            ),
        ]));
        let text = template::render_one(&self.env, "feedback", &ctx, input)?;
        let mut messages = base.to_vec();
        match messages
            .iter_mut()
            .rev()
            .find(|m| m.role == crate::provider::Role::User)
        {
            Some(m) => m.content.push_str(&text),
            None => messages.push(Message {
                role: crate::provider::Role::User,
                content: text,
            }),
        }
        Ok(messages)
    }
}

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
    /// The request's cache key (see [`crate::runner::attempt_cache_key`])
    /// when the guard has an output cache and the attempt has an output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
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

/// Why a guard stopped without publishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// All `m` attempts failed.
    Exhausted,
    /// The overall deadline passed.
    Deadline,
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
}

impl Guard {
    pub fn new(
        provider: Arc<dyn Provider>,
        checks: Arc<Checks>,
        policy: RetryPolicy,
        caller: Arc<Caller>,
    ) -> Result<Self, TemplateError> {
        let feedback = Feedback::new(policy.feedback_template.as_deref())?;
        let columns = policy
            .on
            .columns(checks.validators.len(), checks.verifiers.len());
        let fingerprint = provider.fingerprint();
        Ok(Guard {
            fingerprint,
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
    pub fn with_judging(mut self, judging: Judging) -> Self {
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

    pub fn checks(&self) -> &Checks {
        &self.checks
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The deciding columns.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Guard one request: `messages` rendered for `input`.
    pub async fn run(&self, messages: &[Message], input: &Input, repetition: u32) -> GuardOutcome {
        self.run_from(messages, input, repetition, None).await
    }

    /// As [`Guard::run`], with the first attempt's answer already known
    /// (served from the store, or called by the runner).
    pub async fn run_from(
        &self,
        messages: &[Message],
        input: &Input,
        repetition: u32,
        first: Option<Result<Answer, (ProviderError, u32)>>,
    ) -> GuardOutcome {
        let started = tokio::time::Instant::now();
        let deadline = self
            .policy
            .deadline_s
            .map(|s| started + Duration::from_secs_f64(s));
        let attempt_timeout = self.policy.attempt_timeout_s.map(Duration::from_secs_f64);
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut current = messages.to_vec();
        let mut first = first;
        for number in 1..=self.policy.attempts {
            // The first attempt is always made (and bounded by the limits
            // below), so an outcome always has at least one attempt.
            if number > 1 && deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return GuardOutcome::NothingPassed {
                    attempts,
                    stop: Stop::Deadline,
                };
            }
            let known = first.take();
            let work = self.attempt(&current, input, repetition, number, known);
            let limit = match (attempt_timeout, deadline) {
                (Some(t), Some(d)) => Some((tokio::time::Instant::now() + t).min(d)),
                (Some(t), None) => Some(tokio::time::Instant::now() + t),
                (None, Some(d)) => Some(d),
                (None, None) => None,
            };
            let attempt = match limit {
                Some(at) => match tokio::time::timeout_at(at, work).await {
                    Ok(a) => a,
                    Err(_) => {
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
            attempts.push(attempt);
            if passed {
                return GuardOutcome::Published {
                    output: output.unwrap_or_default(),
                    attempts,
                };
            }
            if self.policy.feedback && number < self.policy.attempts {
                if let Some(prev) = &output {
                    let reasons = &attempts[attempts.len() - 1].feedback;
                    // A feedback template that cannot render for this input
                    // leaves the messages as they were: a plain retry.
                    if let Ok(next) = self.feedback.apply(messages, input, prev, reasons) {
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
        }
    }

    async fn attempt(
        &self,
        messages: &[Message],
        input: &Input,
        repetition: u32,
        number: u32,
        known: Option<Result<Answer, (ProviderError, u32)>>,
    ) -> Attempt {
        let key = self.outputs.as_ref().map(|_| {
            crate::runner::attempt_cache_key(
                &self.fingerprint,
                messages,
                repetition as usize,
                number - 1,
            )
        });
        let hit = match (&self.outputs, &key, &known) {
            (Some(cache), Some(key), None) => cache.get(key),
            _ => None,
        };
        let result = match (known, hit) {
            (Some(r), _) => r,
            (None, Some(hit)) => {
                self.caller.outputs_cached.fetch_add(1, Ordering::Relaxed);
                Ok(Answer {
                    text: hit.output,
                    latency_ms: hit.latency_ms,
                    input_tokens: hit.input_tokens,
                    output_tokens: hit.output_tokens,
                    attempts: 0,
                })
            }
            (None, None) => {
                let request = Request {
                    messages: messages.to_vec(),
                    repetition,
                    attempt: number - 1,
                    input: input.clone(),
                };
                let answer = self.caller.call(self.provider.as_ref(), &request).await;
                if let (Some(cache), Some(key), Ok(a)) = (&self.outputs, &key, &answer) {
                    cache.put(
                        key,
                        CachedOutput {
                            output: a.text.clone(),
                            latency_ms: a.latency_ms,
                            input_tokens: a.input_tokens,
                            output_tokens: a.output_tokens,
                        },
                    );
                }
                answer
            }
        };
        match result {
            Ok(a) => {
                let checked = self
                    .checks
                    .check_with(
                        &self.caller,
                        &self.judging,
                        input,
                        &a.text,
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
                }
            }
            Err((e, tries)) => Attempt {
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
            },
        }
    }
}
