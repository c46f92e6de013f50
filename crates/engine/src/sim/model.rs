//! The simulated model: its configuration and the [`SimModel`] provider.

use super::rates::{SimEvents, TrueRates};
use super::rng::{Fnv, SplitMix64};
use super::text;
use crate::provider::error::ConfigError;
use crate::provider::limits::MAX_RETRY_AFTER;
use crate::provider::types::{Completion, Message, Provider, ProviderError, Request, Role};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Version of the output generator, part of the fingerprint: bump it when
/// the generated texts change, so cached outputs are not reused.
const GENERATOR_VERSION: u32 = 1;

fn d_contractions() -> f64 {
    0.1
}
fn d_omit_welcome() -> f64 {
    0.15
}
fn d_invalid_json() -> f64 {
    0.05
}
fn d_retry_after_s() -> f64 {
    1.0
}

/// Settings of the simulator. Every field has a default.
///
/// ```toml
/// provider = "sim"
/// seed = 42                 # optional: pin the draws (see below)
/// contractions = 0.1        # P(reply uses > 3 apostrophe contractions)
/// omit_welcome = 0.15       # P(no "You're welcome" | message contains "Thank you")
/// invalid_json = 0.05       # P(malformed JSON | message contains "JSON")
/// error_rate = 0.0          # P(a call fails with a simulated HTTP 500)
/// rate_limit = 0.0          # P(a call is answered HTTP 429 with Retry-After)
/// retry_after_s = 1.0       # the Retry-After of that 429, in seconds (≤ 300)
/// sticky_errors = false     # true: a failed request fails again on every retry
/// latency_ms = 0            # mean latency per call
/// latency_jitter_ms = 0     # latency uniform in mean ± jitter (clamped at 0)
/// input_spread = 0.0        # 0 ≤ ρ < 1: per-input heterogeneity (see below)
/// token_ms = 0              # `probity sim serve` only: time per generated token
/// ```
///
/// `seed` pins the simulator: every run then draws the same outputs for
/// the same calls, to the digit. Without it every run (every
/// [`SimModel::new`]) draws a fresh seed, so a second run samples afresh
/// as a real system would — the seed a run drew is not stored; pin one to
/// reproduce. The fingerprint (and so the run's config hash and system
/// label) says `"seed": null` for an unpinned simulator, so its runs
/// compare and resume as one system. Inputs' own rates (`input_spread`)
/// come from the pinned seed or 0: an input's difficulty is part of the
/// system, the same in every run.
///
/// `input_spread` = 0 gives every input exactly the configured rates. A
/// value ρ in (0, 1) gives each input its own rate for each event, drawn
/// once (deterministically, from a hash of the seed and the input's
/// messages) from a Beta distribution with the configured rate as mean and
/// concentration κ = 1/ρ − 1. ρ is then the intra-input correlation of the
/// event across repetitions, so the design effect of M repetitions is
/// 1 + (M − 1)ρ. The population mean of the rates is the configured rate.
///
/// `error_rate` and `rate_limit` are per call and, by default, independent
/// across a call's retries, as a real provider's transient errors are: a
/// call retried up to `a` times fails for good with probability
/// `error_rate^a` (about, with `rate_limit` beside it). The first try of a
/// request draws exactly as a single call always has; each retry of the
/// same request (same messages, repetition and attempt — the caller
/// resends it unchanged) draws afresh from its own stream, numbered by
/// how many times this model has been sent that request. With
/// `sticky_errors = true` the failure is a pure function of the request:
/// every retry of a failed call fails again (a request the provider
/// cannot serve), so retries cannot help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// `None`: a fresh seed per [`SimModel::new`] (per run).
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default = "d_contractions")]
    pub contractions: f64,
    #[serde(default = "d_omit_welcome")]
    pub omit_welcome: f64,
    #[serde(default = "d_invalid_json")]
    pub invalid_json: f64,
    #[serde(default)]
    pub error_rate: f64,
    /// P(a call is answered HTTP 429 with `Retry-After: retry_after_s`).
    #[serde(default)]
    pub rate_limit: f64,
    /// The `Retry-After` of a simulated 429, in seconds (fractions allowed).
    #[serde(default = "d_retry_after_s")]
    pub retry_after_s: f64,
    /// Failures are a pure function of the request: retries fail again.
    #[serde(default)]
    pub sticky_errors: bool,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default)]
    pub latency_jitter_ms: u64,
    #[serde(default)]
    pub input_spread: f64,
    /// Milliseconds per token of a streamed answer (`"stream": true` to
    /// `probity sim serve`), after `latency_ms`; the in-process provider
    /// does not stream and ignores it.
    #[serde(default)]
    pub token_ms: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: None,
            contractions: d_contractions(),
            omit_welcome: d_omit_welcome(),
            invalid_json: d_invalid_json(),
            error_rate: 0.0,
            rate_limit: 0.0,
            retry_after_s: d_retry_after_s(),
            sticky_errors: false,
            latency_ms: 0,
            latency_jitter_ms: 0,
            input_spread: 0.0,
            token_ms: 0,
        }
    }
}

/// The longest simulated latency, per call or per token, in milliseconds.
pub const MAX_SIM_MS: u64 = 3_600_000;

impl SimConfig {
    /// Checks that probabilities lie in [0, 1], `input_spread` in [0, 1),
    /// and the latencies are at most [`MAX_SIM_MS`] (an hour: a larger one
    /// is a mistake that would hang every call).
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, ms) in [
            ("latency_ms", self.latency_ms),
            ("latency_jitter_ms", self.latency_jitter_ms),
            ("token_ms", self.token_ms),
        ] {
            if ms > MAX_SIM_MS {
                return Err(ConfigError::Invalid(format!(
                    "sim {name} = {ms} is more than {MAX_SIM_MS} (an hour)"
                )));
            }
        }
        for (name, p) in [
            ("contractions", self.contractions),
            ("omit_welcome", self.omit_welcome),
            ("invalid_json", self.invalid_json),
            ("error_rate", self.error_rate),
            ("rate_limit", self.rate_limit),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ConfigError::Invalid(format!(
                    "sim {name} must be a probability in [0, 1], got {p}"
                )));
            }
        }
        let most = MAX_RETRY_AFTER.as_secs_f64();
        if !(0.0..=most).contains(&self.retry_after_s) {
            return Err(ConfigError::Invalid(format!(
                "sim retry_after_s must be in [0, {most}] seconds, got {}",
                self.retry_after_s
            )));
        }
        if !(0.0..1.0).contains(&self.input_spread) {
            return Err(ConfigError::Invalid(format!(
                "sim input_spread must be in [0, 1), got {}",
                self.input_spread
            )));
        }
        Ok(())
    }
}

/// One simulated output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimOutput {
    pub text: String,
    pub events: SimEvents,
    /// Rough token counts (characters / 4, at least 1).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The simulated model. Cheap to clone; implements [`Provider`].
#[derive(Debug, Clone)]
pub struct SimModel {
    config: SimConfig,
    /// The seed of the draws: the pinned one, or fresh for this model.
    seed: u64,
    /// Tries so far per request (hash of messages, repetition, attempt):
    /// numbers a retry's own draws (clones share it).
    tries: Tries,
}

/// Tries so far per request: (hash of messages, repetition, attempt) → count.
type Tries = Arc<Mutex<HashMap<(u64, u64, u64), u64>>>;

/// Stream labels, so each use of randomness has its own independent draws.
const STREAM_CALL: u64 = 1;
const STREAM_RATE: u64 = 2;
const STREAM_LATENCY: u64 = 3;
const STREAM_RETRY: u64 = 4;
const STREAM_LIMIT: u64 = 5;

impl SimModel {
    /// A model with the given settings (validated).
    pub fn new(config: SimConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let seed = config.seed.unwrap_or_else(rand::random);
        Ok(SimModel {
            config,
            seed,
            tries: Arc::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The true rates for an input given by its rendered messages: the
    /// configured rates when `input_spread` is 0, else this input's own
    /// (deterministic) rates.
    pub fn true_rates(&self, messages: &[Message]) -> TrueRates {
        let last = last_user(messages);
        let c = &self.config;
        let mut rates = TrueRates {
            contractions: c.contractions,
            omit_welcome: c.omit_welcome,
            invalid_json: c.invalid_json,
            error_rate: c.error_rate,
            thanked: last.contains("Thank you"),
            json_requested: last.contains("JSON"),
        };
        if c.input_spread > 0.0 {
            let kappa = 1.0 / c.input_spread - 1.0;
            let input = hash_messages(messages);
            let draw = |kind: u64, mean: f64| {
                let seed = Fnv::new()
                    .u64(c.seed.unwrap_or(0))
                    .u64(STREAM_RATE)
                    .u64(kind)
                    .u64(input)
                    .finish();
                SplitMix64::new(seed).beta_mean(mean, kappa)
            };
            rates.contractions = draw(1, c.contractions);
            rates.omit_welcome = draw(2, c.omit_welcome);
            rates.invalid_json = draw(3, c.invalid_json);
        }
        rates
    }

    /// The latency of one call: `latency_ms` ± uniform `latency_jitter_ms`,
    /// never negative; deterministic like the output.
    pub fn latency(&self, messages: &[Message], repetition: u64, attempt: u64) -> Duration {
        let c = &self.config;
        if c.latency_ms == 0 && c.latency_jitter_ms == 0 {
            return Duration::ZERO;
        }
        let seed = Fnv::new()
            .u64(self.seed)
            .u64(STREAM_LATENCY)
            .u64(hash_messages(messages))
            .u64(repetition)
            .u64(attempt)
            .finish();
        let u = SplitMix64::new(seed).next_f64() * 2.0 - 1.0;
        let ms = c.latency_ms as f64 + u * c.latency_jitter_ms as f64;
        Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }

    /// One output for `messages` at `repetition` and `attempt`, its first
    /// try: [`SimModel::generate_try`] with `try_no` 0.
    pub fn generate(
        &self,
        messages: &[Message],
        repetition: u64,
        attempt: u64,
    ) -> Result<SimOutput, ProviderError> {
        self.generate_try(messages, repetition, attempt, 0)
    }

    /// One output for `messages` at `repetition` and `attempt`, try
    /// `try_no` of that request (0 the first): a pure function of the
    /// configuration, the model's seed and the arguments. With probability
    /// `rate_limit` it is `ProviderError::RateLimited` with `Retry-After:
    /// retry_after_s`, else with probability `error_rate` it fails with
    /// `ProviderError::Server { status: 500, .. }`. Try 0 draws both from
    /// the request's own stream; a later try draws them afresh (its own
    /// stream, numbered `try_no`) unless `sticky_errors`. The output, when
    /// there is one, depends only on the request, never on `try_no`.
    pub fn generate_try(
        &self,
        messages: &[Message],
        repetition: u64,
        attempt: u64,
        try_no: u64,
    ) -> Result<SimOutput, ProviderError> {
        let rates = self.true_rates(messages);
        let request = hash_messages(messages);
        let seed = Fnv::new()
            .u64(self.seed)
            .u64(STREAM_CALL)
            .u64(request)
            .u64(repetition)
            .u64(attempt)
            .finish();
        let mut rng = SplitMix64::new(seed);
        // Fixed draw order: each event has its own uniform, whatever the others do.
        let u_error = rng.next_f64();
        let u_contractions = rng.next_f64();
        let u_welcome = rng.next_f64();
        let u_json = rng.next_f64();
        let try_no = if self.config.sticky_errors { 0 } else { try_no };
        let fault_draw = |stream: u64| {
            let seed = Fnv::new()
                .u64(self.seed)
                .u64(stream)
                .u64(request)
                .u64(repetition)
                .u64(attempt)
                .u64(try_no)
                .finish();
            SplitMix64::new(seed).next_f64()
        };
        if self.config.rate_limit > 0.0 && fault_draw(STREAM_LIMIT) < self.config.rate_limit {
            return Err(ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs_f64(self.config.retry_after_s)),
                headers: Vec::new(),
            });
        }
        let u_error = if try_no == 0 {
            u_error
        } else {
            fault_draw(STREAM_RETRY)
        };
        if u_error < rates.error_rate {
            return Err(ProviderError::Server {
                status: 500,
                body: "simulated server error".into(),
            });
        }
        let events = SimEvents {
            contractions: u_contractions < rates.contractions,
            omitted_welcome: rates.thanked && u_welcome < rates.omit_welcome,
            invalid_json: rates.json_requested && u_json < rates.invalid_json,
        };
        let last = last_user(messages);
        let text = text::reply(last, &rates, &events, &mut rng);
        let input_chars: usize = messages.iter().map(|m| m.content.len()).sum();
        Ok(SimOutput {
            input_tokens: (input_chars as u64 / 4).max(1),
            output_tokens: (text.len() as u64 / 4).max(1),
            text,
            events,
        })
    }
}

#[async_trait::async_trait]
impl Provider for SimModel {
    /// Sleeps for [`SimModel::latency`], then returns
    /// [`SimModel::generate_try`] for the request's messages, repetition
    /// and attempt, numbering the tries of each request from 0.
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        let (rep, attempt) = (u64::from(request.repetition), u64::from(request.attempt));
        let latency = self.latency(&request.messages, rep, attempt);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let key = (hash_messages(&request.messages), rep, attempt);
        let try_no = {
            let mut tries = self.tries.lock().unwrap_or_else(|e| e.into_inner());
            let n = tries.entry(key).or_insert(0);
            *n += 1;
            *n - 1
        };
        let out = self.generate_try(&request.messages, rep, attempt, try_no)?;
        Ok(Completion {
            text: out.text,
            input_tokens: Some(out.input_tokens),
            output_tokens: Some(out.output_tokens),
        })
    }

    /// `sim|v{generator}|{…}` over everything but latency (which does not
    /// change the answer).
    /// The retry fields appear only when set, so a simulator without them
    /// keeps the fingerprint (and config hash) it always had.
    fn fingerprint(&self) -> String {
        let c = &self.config;
        let mut v = serde_json::json!({
            "seed": c.seed,
            "contractions": c.contractions,
            "omit_welcome": c.omit_welcome,
            "invalid_json": c.invalid_json,
            "error_rate": c.error_rate,
            "input_spread": c.input_spread,
        });
        if c.rate_limit > 0.0 {
            v["rate_limit"] = serde_json::json!(c.rate_limit);
            v["retry_after_s"] = serde_json::json!(c.retry_after_s);
        }
        if c.sticky_errors {
            v["sticky_errors"] = serde_json::json!(true);
        }
        format!("sim|v{GENERATOR_VERSION}|{v}")
    }
}

/// The content of the last user message ("" when there is none).
fn last_user(messages: &[Message]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .unwrap_or("")
}

/// A hash of the whole conversation: role and text of every message, and
/// (only where a message has them, so a text-only conversation hashes as
/// it always has) tool calls with their arguments, the call a result
/// answers, the speaker's name.
fn hash_messages(messages: &[Message]) -> u64 {
    let mut h = Fnv::new();
    h.u64(messages.len() as u64);
    for m in messages {
        let role = match m.role {
            Role::System => 0,
            Role::User => 1,
            Role::Assistant => 2,
            Role::Developer => 3,
            Role::Tool => 4,
        };
        h.u64(role).bytes(m.content.as_bytes());
        for call in &m.tool_calls {
            h.u64(5)
                .bytes(call.id.as_bytes())
                .bytes(call.name.as_bytes())
                .bytes(call.arguments.to_string().as_bytes());
        }
        if let Some(id) = &m.tool_call_id {
            h.u64(6).bytes(id.as_bytes());
        }
        if let Some(name) = &m.name {
            h.u64(7).bytes(name.as_bytes());
        }
    }
    h.finish()
}
