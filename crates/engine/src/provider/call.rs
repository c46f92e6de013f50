//! Calls with the engine's machinery: client-side rate limits, a per-call
//! timeout, and retries with backoff on rate limits, 5xx and timeouts (not
//! on an answer saying the request's structured output is unsupported). One
//! [`Caller`] makes every call of a run (to the system and to judges), so
//! its counters are the run's.

use crate::provider::limits::{Backoff, RateLimiter};
use crate::provider::load::UpstreamLoad;
use crate::provider::negotiate::says_format_unsupported;
use crate::provider::types::{
    AnswerMeta, Api, CutWhen, Message, Provider, ProviderError, Request, WireAnswer, WireRequest,
};
use crate::store::{CachedOutput, CallMarks, RunTotals};
use probity_core::cost::{RunUsage, Usage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
// tokio's clock: the same as std's, and paused in tests.
use tokio::time::Instant;

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
    /// Answered calls' usage, input and output apart (cost in money).
    pub usage: UsageCounter,
    /// Of `calls`, those made to judges (retries included).
    pub judge_calls: AtomicU64,
    /// Judgements served from the judge cache (no call).
    pub judge_cached: AtomicU64,
    /// Attempts whose output was served from the output cache (no call;
    /// not counting a first attempt the runner found in the store itself).
    pub outputs_cached: AtomicU64,
    /// Latency per calls in flight: notices an upstream answering one
    /// call at a time ([`UpstreamLoad`]).
    pub load: UpstreamLoad,
    /// Microseconds calls waited on this side before they were sent (rate
    /// limits, the `auto` concurrency limit): never counted against
    /// `timeout`, never in a latency.
    pub queued_us: AtomicU64,
    /// Microseconds answered calls took from sending to answer (the
    /// upstream's service time, with any time queued at the upstream).
    pub service_us: AtomicU64,
    /// Of `calls`, those that ended: answered, failed, or cut short (the
    /// call's future dropped). `calls - ended` are in flight.
    pub ended: AtomicU64,
    /// A shared run's: each call's count is committed with the writer's
    /// next batch before the call is sent ([`Caller::mark_calls_on`]).
    marks: std::sync::OnceLock<CallMarks>,
}

/// Counts a call ended when dropped: answered, failed, or cut short.
struct Ends<'a>(&'a AtomicU64);

impl Drop for Ends<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Calls answering in this long on average or longer wait for their count
/// to be committed before they are sent ([`Caller::mark_calls_on`]);
/// faster ones do not: a commit takes a few ms, which would cost a fast
/// system a large share of its speed.
const MARK_WAIT_FROM_US: u64 = 50_000;

/// The first calls of a process always wait for their count's commit,
/// whatever their speed (their average is not known yet).
const MARK_WAIT_FIRST: u64 = 16;

impl Default for Caller {
    /// No rate limit, 60 s per call, 4 tries.
    fn default() -> Self {
        let s = CallSettings::default();
        Caller::new(Arc::new(RateLimiter::default()), s.timeout, s.call_attempts)
    }
}

/// Answered calls' usage as the providers reported it, counted as calls
/// are answered ([`probity_core::cost::Usage`]).
#[derive(Debug, Default)]
pub struct UsageCounter {
    answered: AtomicU64,
    reported: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

impl UsageCounter {
    /// One answered call's usage (`None`: not reported).
    pub fn add(&self, input: Option<u64>, output: Option<u64>) {
        let u = Usage::of_call(input, output);
        self.answered.fetch_add(u.answered, Ordering::Relaxed);
        self.reported.fetch_add(u.reported, Ordering::Relaxed);
        self.input_tokens
            .fetch_add(u.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(u.output_tokens, Ordering::Relaxed);
    }

    /// The usage so far.
    pub fn get(&self) -> Usage {
        Usage {
            answered: Caller::count(&self.answered),
            reported: Caller::count(&self.reported),
            input_tokens: Caller::count(&self.input_tokens),
            output_tokens: Caller::count(&self.output_tokens),
        }
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
        match crate::provider::redact::redact(&text) {
            std::borrow::Cow::Borrowed(_) => v,
            std::borrow::Cow::Owned(clean) => {
                serde_json::from_str(&clean).unwrap_or(serde_json::Value::Null)
            }
        }
    };
    let map = |m: serde_json::Map<String, serde_json::Value>| match json(m.into()) {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    AnswerMeta {
        content: meta.content.map(redact_owned),
        tool_calls: meta.tool_calls.map(json),
        finish_reason: meta.finish_reason.map(redact_owned),
        model: meta.model.map(redact_owned),
        logprobs: meta.logprobs.map(json),
        system_fingerprint: meta.system_fingerprint.map(redact_owned),
        message_fields: map(meta.message_fields),
        choice_fields: map(meta.choice_fields),
        response_fields: map(meta.response_fields),
        usage: meta.usage.map(json),
        headers: meta
            .headers
            .into_iter()
            .map(|(k, v)| (k, redact_owned(v)))
            .collect(),
        response: meta.response.map(json),
    }
}

/// The tokens a call of `messages` is expected to use before it is made:
/// a quarter of their characters' bytes (what the token limit is debited
/// with until the provider reports the real use).
pub fn estimated_tokens(messages: &[Message]) -> f64 {
    messages.iter().map(|m| m.content.len()).sum::<usize>() as f64 / 4.0
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A call that failed after its tries: the last error and the number of
/// tries.
pub(crate) type CallFailure = (ProviderError, u32);

impl Caller {
    pub fn new(limiter: Arc<RateLimiter>, timeout: Duration, call_attempts: u32) -> Self {
        Caller {
            limiter,
            backoff: Backoff::default(),
            timeout,
            call_attempts: call_attempts.max(1),
            calls: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            usage: UsageCounter::default(),
            judge_calls: AtomicU64::new(0),
            judge_cached: AtomicU64::new(0),
            outputs_cached: AtomicU64::new(0),
            load: UpstreamLoad::default(),
            queued_us: AtomicU64::new(0),
            service_us: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            marks: std::sync::OnceLock::new(),
        }
    }

    /// Count every call this caller sends from now on in `marks`'s writer
    /// before it is sent (a shared run's, issue 38 item 5): the call's
    /// count rides with the writer's next batch — the one that commits the
    /// sample just answered, within its group-commit window — and the call
    /// waits for that commit, so a worker killed outright (kill -9) has
    /// counted every call it had in flight; no commit is added per call.
    /// Calls answering in under [`MARK_WAIT_FROM_US`] on average (after
    /// the first [`MARK_WAIT_FIRST`]) do not wait: their counts are
    /// committed with the next batch, and a kill may miss those sent
    /// within its last commit window. The first `marks` set stays.
    pub fn mark_calls_on(&self, marks: CallMarks) {
        let _ = self.marks.set(marks);
    }

    /// Have the call just counted committed before it is sent, when this
    /// caller marks its calls ([`Caller::mark_calls_on`]).
    async fn mark_started(&self) {
        let Some(marks) = self.marks.get() else {
            return;
        };
        let calls = Caller::count(&self.calls);
        // Over calls ended (failed ones too: a fast refusal is fast).
        let ended = Caller::count(&self.ended).max(1);
        let slow = Caller::count(&self.service_us) >= MARK_WAIT_FROM_US * ended;
        let wait = calls <= MARK_WAIT_FIRST || slow;
        // Calls counted, not usage: this reading's usage has the judges'
        // still in the system's (the checks take them apart), and the
        // writer keeps each count's largest reading.
        let counts = RunTotals {
            usage: RunUsage::default(),
            ..self.totals()
        };
        if let Some(committed) = marks.started(counts, wait) {
            // An error: the writer stopped, and says why itself.
            let _ = committed.await;
        }
    }

    /// This caller with `concurrency = "auto"`, at most `most` calls at
    /// once: the calls sent at once start at one and double while the
    /// upstream's throughput grows with them ([`UpstreamLoad::set_auto`]).
    pub fn auto_concurrency(self, most: usize) -> Self {
        self.load.set_auto(most);
        self
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
        self.call_api(provider, request, (wire, Api::Chat), cut)
            .await
    }

    /// [`Caller::call_wire`] for a client of `api`: a Responses API
    /// request is sent with [`Provider::complete_responses`] and read
    /// whole (never cut).
    pub async fn call_api(
        &self,
        provider: &dyn Provider,
        request: &Request,
        (wire, api): (&WireRequest, Api),
        cut: Option<CutWhen<'_>>,
    ) -> Result<Answer, CallFailure> {
        self.call_with(request, || async {
            match (api, cut) {
                (Api::Responses, _) => provider.complete_responses(request, wire).await,
                (Api::Chat, Some(cut)) => provider.stream_wire(request, wire, cut).await,
                (Api::Chat, None) => provider.complete_wire(request, wire).await,
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
            // Time queued here is the client's, before the timeout starts.
            let queued = Instant::now();
            self.limiter.acquire(estimate).await;
            let in_flight = self.load.enter().await;
            self.queued_us
                .fetch_add(micros(queued.elapsed()), Ordering::Relaxed);
            self.calls.fetch_add(1, Ordering::Relaxed);
            // Ended when dropped, even if this future is (a call cut short).
            let ends = Ends(&self.ended);
            self.mark_started().await;
            let started = Instant::now();
            let result = match tokio::time::timeout(self.timeout, once()).await {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout(self.timeout)),
            };
            let (level, service) = (in_flight.level, started.elapsed());
            drop(in_flight);
            drop(ends);
            attempt += 1;
            match result {
                Ok(WireAnswer {
                    completion: c,
                    meta,
                    cut,
                }) => {
                    self.usage.add(c.input_tokens, c.output_tokens);
                    let used = c.input_tokens.unwrap_or(0) + c.output_tokens.unwrap_or(0);
                    if used > 0 {
                        self.limiter.settle(estimate, used as f64).await;
                        self.tokens.fetch_add(used, Ordering::Relaxed);
                    }
                    self.answered(level, service);
                    return Ok(Answer {
                        // The one redaction point (crate::provider::redact).
                        text: crate::provider::redact::redact_owned(c.text),
                        latency_ms: Some(service.as_secs_f64() * 1000.0),
                        input_tokens: c.input_tokens,
                        output_tokens: c.output_tokens,
                        attempts: attempt,
                        meta: meta.map(|m| Arc::new(redact_meta(m))),
                        cut,
                    });
                }
                // An upstream that says it cannot take the request's
                // structured output will say so again: not retried
                // (crate::provider::negotiate steps a judge down instead).
                Err(e)
                    if e.is_retryable()
                        && !says_format_unsupported(&e)
                        && attempt < self.call_attempts =>
                {
                    tokio::time::sleep(self.backoff.delay(attempt - 1, e.retry_after())).await;
                }
                Err(e) => return Err((crate::provider::redact::error(e), attempt)),
            }
        }
    }

    /// An answered call's latency, kept per calls in flight; the first
    /// time they show an upstream answering one call at a time, a note on
    /// standard error says so and what concurrency it is worth; with
    /// `concurrency = "auto"`, a note says where it settled.
    fn answered(&self, level: u64, service: Duration) {
        self.service_us
            .fetch_add(micros(service), Ordering::Relaxed);
        let (answered, settled) = self.load.answered(level, service);
        if let Some(search) = settled {
            crate::stderr::line(format_args!(
                "note: {search}; the rest wait on this side (not counted against timeout_s)"
            ));
        }
        if let Some(serial) = self.load.notice(answered) {
            crate::stderr::line(format_args!("note: {serial}, or `concurrency = \"auto\"`"));
        }
    }

    /// This caller's counts: calls (judges' included), judge calls, tokens
    /// (per check: see [`crate::checks::check::Checks::judge_calls`]).
    pub fn totals(&self) -> RunTotals {
        // Read before the calls: a reading never counts more ended than
        // made (a call is counted made before it can end).
        let calls_ended = Caller::count(&self.ended);
        RunTotals {
            calls_ended,
            model_calls: Caller::count(&self.calls),
            judge_calls: Caller::count(&self.judge_calls),
            tokens: Caller::count(&self.tokens),
            judge_calls_by_check: Vec::new(),
            // Every call's, until the checks take their judges' apart
            // (`Checks::totals`).
            usage: RunUsage {
                system: self.usage.get(),
                judges: Vec::new(),
            },
        }
    }

    /// A counter's current value.
    pub fn count(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::func::FnProvider;
    use crate::provider::types::{Completion, Role};
    use std::sync::atomic::AtomicU32;

    fn request() -> Request {
        Request {
            messages: vec![Message::text(Role::User, "hi")],
            repetition: 0,
            attempt: 0,
            input: probity_core::Input::text("1", "hi"),
        }
    }

    /// A caller whose backoff does not wait.
    fn caller() -> Caller {
        let mut c = Caller::new(Arc::new(RateLimiter::default()), Duration::from_secs(5), 4);
        c.backoff = Backoff {
            base: Duration::ZERO,
            cap: Duration::ZERO,
        };
        c
    }

    async fn tries(body: &'static str) -> (u32, u32) {
        let made = Arc::new(AtomicU32::new(0));
        let counted = made.clone();
        let p = FnProvider::new(move |_: &Request| {
            counted.fetch_add(1, Ordering::Relaxed);
            Err::<Completion, _>(ProviderError::Server {
                status: 500,
                body: body.into(),
            })
        });
        let (_, attempts) = caller().call(&p, &request()).await.unwrap_err();
        (attempts, made.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn a_server_error_saying_the_format_is_unsupported_is_not_retried() {
        // llama-cpp-python's answer to response_format json_schema.
        let refusal = "{'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}";
        assert_eq!(tries(refusal).await, (1, 1));
        // Any other server error is retried up to call_attempts.
        assert_eq!(tries("overloaded").await, (4, 4));
    }

    /// An upstream answering as many calls at a time as its semaphore
    /// has places, `SERVICE` each, first come first served (a llama.cpp
    /// server with that many slots).
    struct Slots(tokio::sync::Semaphore);

    const SERVICE: Duration = Duration::from_millis(100);

    #[async_trait::async_trait]
    impl Provider for Slots {
        async fn complete(&self, _: &Request) -> Result<Completion, ProviderError> {
            let _slot = self.0.acquire().await.unwrap();
            tokio::time::sleep(SERVICE).await;
            Ok(Completion {
                text: "ok".into(),
                ..Completion::default()
            })
        }
        fn fingerprint(&self) -> String {
            "one-at-a-time".into()
        }
    }

    /// 16 workers making 8 calls each, one after another (the runner's
    /// shape), to an upstream with one slot: every answer's latency, in
    /// the order answered.
    async fn sixteen_workers(caller: Arc<Caller>) -> Vec<f64> {
        workers_on_slots(caller, 16, 8, 1).await
    }

    async fn workers_on_slots(
        caller: Arc<Caller>,
        workers: usize,
        calls: usize,
        slots: usize,
    ) -> Vec<f64> {
        let upstream = Arc::new(Slots(tokio::sync::Semaphore::new(slots)));
        let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
        let workers: Vec<_> = (0..workers)
            .map(|_| {
                let (caller, upstream, answers) =
                    (caller.clone(), upstream.clone(), answers.clone());
                tokio::spawn(async move {
                    for _ in 0..calls {
                        let a = caller.call(upstream.as_ref(), &request()).await.unwrap();
                        answers.lock().unwrap().push(a.latency_ms.unwrap());
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        let latencies = answers.lock().unwrap().clone();
        latencies
    }

    #[tokio::test(start_paused = true)]
    async fn auto_concurrency_sends_a_one_at_a_time_upstream_one_call_at_a_time() {
        let settings = || Caller::new(Arc::new(RateLimiter::default()), Duration::from_secs(60), 1);
        let plain = Arc::new(settings());
        let queued_there = sixteen_workers(plain.clone()).await;
        let auto = Arc::new(settings().auto_concurrency(16));
        let queued_here = sixteen_workers(auto.clone()).await;
        assert_eq!(plain.load.limit(), None, "only asked for");
        assert_eq!(auto.load.limit(), Some(1));
        // Without the limit every call waits behind fifteen at the upstream,
        // and that wait is its latency; with it, the last calls are sent
        // alone and their latency is the service time, the wait counted
        // on this side.
        let last = |l: &[f64]| l[l.len() - 10..].iter().cloned().fold(0.0, f64::max);
        assert!(
            last(&queued_there) >= 15.0 * SERVICE.as_millis() as f64,
            "{queued_there:?}"
        );
        assert!(
            last(&queued_here) <= 1.01 * SERVICE.as_millis() as f64,
            "{queued_here:?}"
        );
        assert!(Caller::count(&auto.queued_us) > 0);
        assert_eq!(Caller::count(&plain.queued_us), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn auto_concurrency_settles_at_what_the_upstream_serves_at_once() {
        // (slots at the upstream, where auto may settle): one at a time
        // settles at 1 (2 bought nothing); four slots at 4; an upstream
        // serving every call at once goes up to the most it may send.
        for (slots, settle) in [(1, 1..=2), (2, 2..=2), (4, 4..=4), (1000, 32..=32)] {
            let caller = Caller::new(Arc::new(RateLimiter::default()), Duration::from_secs(60), 1);
            let caller = Arc::new(caller.auto_concurrency(32));
            workers_on_slots(caller.clone(), 32, 16, slots).await;
            let search = caller.load.auto_search().unwrap();
            assert!(search.settled, "{slots} slots: {search:?}");
            assert!(settle.contains(&search.chosen), "{slots} slots: {search:?}");
            assert_eq!(caller.load.limit(), Some(search.chosen));
            // Each limit tried twice the one before, from 1.
            let tried: Vec<u64> = search.tried.iter().map(|t| t.0).collect();
            assert_eq!(tried[0], 1);
            assert!(tried.windows(2).all(|w| w[1] == 2 * w[0]), "{tried:?}");
            let text = search.to_string();
            assert!(
                text.starts_with(&format!("concurrency auto: {} at a time", search.chosen)),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn an_answer_counts_its_service_time_and_the_calls_in_flight_end() {
        let c = caller();
        let p = FnProvider::new(|_: &Request| {
            std::thread::sleep(Duration::from_millis(5));
            Ok(Completion {
                text: "ok".into(),
                ..Completion::default()
            })
        });
        let a = c.call(&p, &request()).await.unwrap();
        assert_eq!(a.text, "ok");
        assert!(a.latency_ms.unwrap() >= 5.0, "{a:?}");
        assert!(Caller::count(&c.service_us) >= 5_000);
        // No rate limit: nothing queued on this side.
        assert!(Caller::count(&c.queued_us) < 5_000);
        // Calls in flight are released: the next starts alone.
        assert_eq!(c.load.start().level, 1);
    }
}
