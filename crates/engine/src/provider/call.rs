//! Calls with the engine's machinery: client-side rate limits, a per-call
//! timeout, and retries with backoff on rate limits, 5xx and timeouts. One
//! [`Caller`] makes every call of a run (to the system and to judges), so
//! its counters are the run's.

use crate::provider::limits::{Backoff, RateLimiter};
use crate::provider::types::{
    AnswerMeta, CutWhen, Message, Provider, ProviderError, Request, WireAnswer, WireRequest,
};
use crate::store::{CachedOutput, RunTotals};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How calls are made: the settings every [`Caller`] is built from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallSettings {
    /// One call is abandoned (and retried) after this long.
    pub timeout: Duration,
    /// Tries per call on retryable errors (1 = no retry).
    pub call_attempts: u32,
    /// Client-side limit on requests per minute.
    pub requests_per_minute: Option<f64>,
    /// Client-side limit on tokens (prompt + completion) per minute.
    pub tokens_per_minute: Option<f64>,
}

impl Default for CallSettings {
    /// No rate limit, 60 s per call, 4 tries.
    fn default() -> Self {
        CallSettings {
            timeout: Duration::from_secs(60),
            call_attempts: 4,
            requests_per_minute: None,
            tokens_per_minute: None,
        }
    }
}

impl CallSettings {
    /// The caller for one run (or one server): its own rate limiter and
    /// counters.
    pub fn caller(&self) -> Arc<Caller> {
        Arc::new(Caller::new(
            Arc::new(RateLimiter::new(
                self.requests_per_minute,
                self.tokens_per_minute,
            )),
            self.timeout,
            self.call_attempts,
        ))
    }
}

/// Makes calls with rate limits, timeout and retries; counts every call.
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
        let s = CallSettings::default();
        Caller::new(Arc::new(RateLimiter::default()), s.timeout, s.call_attempts)
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
    /// What the upstream said besides, for a Chat Completions client
    /// ([`Caller::call_wire`]); redacted like the text.
    pub meta: Option<Arc<AnswerMeta>>,
    /// Abandoned while it streamed: `text` is a prefix that settles a
    /// failure ([`Caller::call_wire`] with a `cut`).
    pub cut: bool,
}

impl From<CachedOutput> for Answer {
    /// A stored answer: no call made.
    fn from(hit: CachedOutput) -> Self {
        Answer {
            text: hit.output,
            latency_ms: hit.latency_ms,
            input_tokens: hit.input_tokens,
            output_tokens: hit.output_tokens,
            attempts: 0,
            meta: None,
            cut: false,
        }
    }
}

impl From<&Answer> for CachedOutput {
    fn from(a: &Answer) -> Self {
        CachedOutput {
            output: a.text.clone(),
            latency_ms: a.latency_ms,
            input_tokens: a.input_tokens,
            output_tokens: a.output_tokens,
        }
    }
}

/// `meta` with every text the upstream chose redacted
/// ([`crate::provider::redact`]); JSON values are redacted as their serialized text.
fn redact_meta(meta: AnswerMeta) -> AnswerMeta {
    use crate::provider::redact::redact_owned;
    let json = |v: serde_json::Value| {
        let text = v.to_string();
        let clean = redact_owned(text.clone());
        if clean == text {
            v
        } else {
            serde_json::from_str(&clean).unwrap_or(serde_json::Value::Null)
        }
    };
    AnswerMeta {
        content: meta.content.map(redact_owned),
        tool_calls: meta.tool_calls.map(json),
        finish_reason: meta.finish_reason.map(redact_owned),
        model: meta.model.map(redact_owned),
        logprobs: meta.logprobs.map(json),
        system_fingerprint: meta.system_fingerprint.map(redact_owned),
    }
}

/// The tokens a call of `messages` is expected to use before it is made:
/// a quarter of their characters' bytes (what the token limit is debited
/// with until the provider reports the real use).
pub fn estimated_tokens(messages: &[Message]) -> f64 {
    messages.iter().map(|m| m.content.len()).sum::<usize>() as f64 / 4.0
}

/// A call that failed after its tries: the last error and the number of
/// tries.
pub type CallFailure = (ProviderError, u32);

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
    ) -> Result<Answer, CallFailure> {
        self.call_with(request, || async {
            provider
                .complete(request)
                .await
                .map(|completion| WireAnswer {
                    completion,
                    meta: None,
                    cut: false,
                })
        })
        .await
    }

    /// [`Caller::call`] for a Chat Completions client: `wire`'s messages
    /// and fields go with the request ([`Provider::complete_wire`]) and
    /// the answer keeps the upstream's metadata.
    /// With `cut`, the answer is read as the upstream streams it and
    /// abandoned as soon as its prefix settles a failure
    /// ([`Provider::stream_wire`]).
    pub async fn call_wire(
        &self,
        provider: &dyn Provider,
        request: &Request,
        wire: &WireRequest,
        cut: Option<CutWhen<'_>>,
    ) -> Result<Answer, CallFailure> {
        self.call_with(request, || async {
            match cut {
                Some(cut) => provider.stream_wire(request, wire, cut).await,
                None => provider.complete_wire(request, wire).await,
            }
        })
        .await
    }

    async fn call_with<F, Fut>(&self, request: &Request, mut once: F) -> Result<Answer, CallFailure>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<WireAnswer, ProviderError>>,
    {
        let estimate = estimated_tokens(&request.messages);
        let mut attempt = 0;
        loop {
            self.limiter.acquire(estimate).await;
            self.calls.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            let result = match tokio::time::timeout(self.timeout, once()).await {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout(self.timeout)),
            };
            attempt += 1;
            match result {
                Ok(WireAnswer {
                    completion: c,
                    meta,
                    cut,
                }) => {
                    let used = c.input_tokens.unwrap_or(0) + c.output_tokens.unwrap_or(0);
                    if used > 0 {
                        self.limiter.settle(estimate, used as f64).await;
                        self.tokens.fetch_add(used, Ordering::Relaxed);
                    }
                    return Ok(Answer {
                        // The one redaction point (crate::provider::redact).
                        text: crate::provider::redact::redact_owned(c.text),
                        latency_ms: Some(started.elapsed().as_secs_f64() * 1000.0),
                        input_tokens: c.input_tokens,
                        output_tokens: c.output_tokens,
                        attempts: attempt,
                        meta: meta.map(|m| Arc::new(redact_meta(m))),
                        cut,
                    });
                }
                Err(e) if e.is_retryable() && attempt < self.call_attempts => {
                    tokio::time::sleep(self.backoff.delay(attempt - 1, e.retry_after())).await;
                }
                Err(e) => return Err((crate::provider::redact::error(e), attempt)),
            }
        }
    }

    /// This caller's counts: calls (judges' included), judge calls, tokens
    /// (per check: see [`crate::checks::check::Checks::judge_calls`]).
    pub fn totals(&self) -> RunTotals {
        RunTotals {
            model_calls: Caller::count(&self.calls),
            judge_calls: Caller::count(&self.judge_calls),
            tokens: Caller::count(&self.tokens),
            judge_calls_by_check: Vec::new(),
        }
    }

    /// A counter's current value.
    pub fn count(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
