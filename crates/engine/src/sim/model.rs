//! The simulated model: its configuration and the [`SimModel`] provider.

use super::rates::{SimEvents, TrueRates};
use super::rng::{Fnv, SplitMix64};
use super::text;
use crate::provider::error::ConfigError;
use crate::provider::types::{Completion, Message, Provider, ProviderError, Request, Role};
use serde::{Deserialize, Serialize};
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

/// Settings of the simulator. Every field has a default.
///
/// ```toml
/// provider = "sim"
/// seed = 42                 # optional: pin the draws (see below)
/// contractions = 0.1        # P(reply uses > 3 apostrophe contractions)
/// omit_welcome = 0.15       # P(no "You're welcome" | message contains "Thank you")
/// invalid_json = 0.05       # P(malformed JSON | message contains "JSON")
/// error_rate = 0.0          # P(call fails with a simulated HTTP 500)
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
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ConfigError::Invalid(format!(
                    "sim {name} must be a probability in [0, 1], got {p}"
                )));
            }
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
}

/// Stream labels, so each use of randomness has its own independent draws.
const STREAM_CALL: u64 = 1;
const STREAM_RATE: u64 = 2;
const STREAM_LATENCY: u64 = 3;

impl SimModel {
    /// A model with the given settings (validated).
    pub fn new(config: SimConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let seed = config.seed.unwrap_or_else(rand::random);
        Ok(SimModel { config, seed })
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

    /// One output for `messages` at `repetition` and `attempt`: a pure
    /// function of the configuration, the model's seed and the arguments. Fails with
    /// `ProviderError::Server { status: 500, .. }` with probability
    /// `error_rate`.
    pub fn generate(
        &self,
        messages: &[Message],
        repetition: u64,
        attempt: u64,
    ) -> Result<SimOutput, ProviderError> {
        let rates = self.true_rates(messages);
        let seed = Fnv::new()
            .u64(self.seed)
            .u64(STREAM_CALL)
            .u64(hash_messages(messages))
            .u64(repetition)
            .u64(attempt)
            .finish();
        let mut rng = SplitMix64::new(seed);
        // Fixed draw order: each event has its own uniform, whatever the others do.
        let u_error = rng.next_f64();
        let u_contractions = rng.next_f64();
        let u_welcome = rng.next_f64();
        let u_json = rng.next_f64();
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
    /// Sleeps for [`SimModel::latency`], then returns [`SimModel::generate`]
    /// for the request's messages, repetition and attempt.
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        let (rep, attempt) = (u64::from(request.repetition), u64::from(request.attempt));
        let latency = self.latency(&request.messages, rep, attempt);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let out = self.generate(&request.messages, rep, attempt)?;
        Ok(Completion {
            text: out.text,
            input_tokens: Some(out.input_tokens),
            output_tokens: Some(out.output_tokens),
        })
    }

    /// `sim|v{generator}|{…}` over everything but latency (which does not
    /// change the answer).
    fn fingerprint(&self) -> String {
        let c = &self.config;
        format!(
            "sim|v{GENERATOR_VERSION}|{}",
            serde_json::json!({
                "seed": c.seed,
                "contractions": c.contractions,
                "omit_welcome": c.omit_welcome,
                "invalid_json": c.invalid_json,
                "error_rate": c.error_rate,
                "input_spread": c.input_spread,
            })
        )
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
