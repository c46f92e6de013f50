//! The `--config` file of `probity serve` (docs/serve.md): its keys, and
//! [`load`], which checks every one before anything listens.

pub use super::classes::Classes;
use crate::checks::check::Checks;
use crate::checks::validator_table::ValidatorTable;
use crate::checks::verifier::VerifierSpec;
use crate::provider::call::Caller;
use crate::provider::types::Provider;
use crate::retry::guard::Guard;
use crate::retry::policy::RetryPolicy;
use crate::system::config::ProviderConfig;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to answer when no attempt passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NothingPassed {
    /// HTTP 422 with every attempt's reasons.
    #[default]
    Error,
    /// HTTP 200 with the last output, flagged `x-probity-outcome: nothing-passed`.
    Last,
}

fn d_listen() -> String {
    "127.0.0.1:8090".into()
}
fn d_timeout() -> f64 {
    60.0
}
fn d_call_attempts() -> u32 {
    3
}
fn d_pin() -> Vec<String> {
    vec!["model".into()]
}
fn d_body_timeout() -> f64 {
    10.0
}
fn d_max_body_mb() -> f64 {
    32.0
}
fn d_keepalive() -> f64 {
    10.0
}
fn d_stream_upstream() -> bool {
    true
}
fn d_confidence() -> f64 {
    0.95
}
fn d_queue_wait() -> f64 {
    5.0
}

/// The `--config` file of `probity serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "d_listen")]
    pub listen: String,
    /// The environment variable holding the bearer token clients must send.
    #[serde(default)]
    pub token_env: Option<String>,
    #[serde(default)]
    pub on_nothing_passed: NothingPassed,
    #[serde(default = "d_timeout")]
    pub timeout_s: f64,
    #[serde(default = "d_call_attempts")]
    pub call_attempts: u32,
    #[serde(default)]
    pub requests_per_minute: Option<f64>,
    /// Under `requests_per_minute`, the longest a request waits for its
    /// turn; one that would wait longer is answered HTTP 429 with
    /// `Retry-After` at once.
    #[serde(default = "d_queue_wait")]
    pub queue_wait_s: f64,
    /// Request fields the configuration decides: a client's value for
    /// them is not forwarded (the `[upstream]` table's is used, and the
    /// answer's `x-probity-pinned` header names them). Every other field a
    /// client sets wins over `[upstream]`'s default.
    #[serde(default = "d_pin")]
    pub pin: Vec<String>,
    /// Seconds a client may take to send its request body (HTTP 408 after).
    #[serde(default = "d_body_timeout")]
    pub body_timeout_s: f64,
    /// Largest request body, in MiB (HTTP 413 above).
    #[serde(default = "d_max_body_mb")]
    pub max_body_mb: f64,
    /// While a streamed answer is held for its checks, an SSE comment is
    /// sent this often so proxies and clients do not time out.
    #[serde(default = "d_keepalive")]
    pub stream_keepalive_s: f64,
    /// Ask an upstream that can stream (`openai`) for a streamed answer
    /// and abandon it as soon as its prefix settles a deciding validator's
    /// failure (docs/serve.md, "Cutting failing answers short").
    #[serde(default = "d_stream_upstream")]
    pub stream_upstream: bool,
    /// The confidence of each check's live confidence sequence (`/metrics`).
    #[serde(default = "d_confidence")]
    pub confidence: f64,
    /// The upstream provider, and its price (`price = {…}`).
    #[serde(default)]
    pub upstream: crate::system::Priced<ProviderConfig>,
    #[serde(default)]
    pub retry: RetryPolicy,
    #[serde(default, rename = "validator")]
    pub validators: Vec<ValidatorTable>,
    #[serde(default, rename = "verifier")]
    pub verifiers: Vec<VerifierSpec>,
    /// Checks over an answer's tool calls and conversation, as structure
    /// (docs/serve.md, "Checking tool calls"); read with their lines by
    /// [`crate::agent::config::answer_checks`].
    #[serde(default, rename = "agent_check", skip_serializing_if = "Vec::is_empty")]
    pub agent_checks: Vec<toml::Value>,
    /// Attempts per class of request (§4.2.5): a file `probity plan RUN
    /// --by FIELD --out FILE` wrote. A request's class is its
    /// `x-probity-class` header, else its body's `metadata.FIELD`; a
    /// request of no listed class gets `[retry] attempts`.
    #[serde(default)]
    pub classes: Option<PathBuf>,
    /// Live monitoring: epochs, window, alarms' webhook, a baseline run.
    #[serde(default)]
    pub monitor: super::monitor::MonitorConfig,
    /// Where the served traffic is recorded unless `--store` or
    /// `PROBITY_STORE` says otherwise (replicas share a PostgreSQL store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::config::StoreTable>,
}

/// A loaded guard configuration.
pub struct Loaded {
    pub config: ServeConfig,
    /// The attempts per class of request, when `classes` names a file.
    pub classes: Option<Classes>,
    pub name: String,
    pub text: String,
    pub hash: String,
    pub checks: Checks,
    /// The bearer token, read from `token_env` (never logged or stored).
    pub token: Option<String>,
    /// The upstream provider, built (its key variables read).
    pub upstream: Arc<dyn Provider>,
    /// What the operator should hear before the guard listens.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("name", &self.name)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Read and check a guard configuration; errors name the file.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let (text, mut config): (String, ServeConfig) = crate::toml_error::read_file(path)?;
    let at = |m: String| format!("{}: {m}", path.display());
    // Relative paths in provider tables resolve against the file's directory.
    let dir = path.parent().unwrap_or(Path::new("."));
    config.upstream.resolve_paths(dir);
    for v in &mut config.validators {
        v.resolve_paths(dir);
    }
    for v in &mut config.verifiers {
        v.resolve_paths(dir);
    }
    if config.validators.is_empty() && config.verifiers.is_empty() && config.agent_checks.is_empty()
    {
        return Err(at(
            "no [[validator]], [[verifier]] or [[agent_check]] tables: the guard needs at least one check".into(),
        ));
    }
    config
        .retry
        .validate()
        .map_err(|m| at(format!("[retry] {m}")))?;
    for (key, value) in [
        ("timeout_s", config.timeout_s),
        ("body_timeout_s", config.body_timeout_s),
        ("stream_keepalive_s", config.stream_keepalive_s),
        ("queue_wait_s", config.queue_wait_s),
    ] {
        crate::bounds::seconds(key, value).map_err(at)?;
    }
    if let Some(store) = &config.store {
        store.location().map_err(at)?;
    }
    if let Some(problem) = config.monitor.problem() {
        return Err(at(problem));
    }
    let classes = match &config.classes {
        Some(file) => {
            let file = dir.join(file);
            Some(
                Classes::load(&file)
                    .map_err(|e| at(format!("classes = {:?}: {e}", file.display())))?,
            )
        }
        None => None,
    };
    // The check the watches' own: a confidence they cannot be made at is
    // refused here, named as written, not when the server starts.
    if !probity_core::monitor::watchable(config.confidence) {
        return Err(at(format!(
            "confidence = {}: must be {}",
            probity_core::number::written(config.confidence),
            probity_core::monitor::CONFIDENCE_RANGE
        )));
    }
    // Live traffic waits for its upstream call: under one call a minute,
    // each request would wait minutes (1e-300: for ever) for its turn.
    if let Some(r) = config
        .requests_per_minute
        .filter(|r| !(r.is_finite() && *r >= 1.0))
    {
        return Err(at(format!(
            "requests_per_minute = {}: must be at least 1 (a guard answers live traffic; a request would wait minutes or for ever for its upstream call)",
            probity_core::number::written(r)
        )));
    }
    if !(config.max_body_mb.is_finite() && config.max_body_mb > 0.0 && config.max_body_mb <= 1024.0)
    {
        return Err(at(format!(
            "max_body_mb must be a number of MiB in (0, 1024], not {}",
            config.max_body_mb
        )));
    }
    let (validators, verifiers) = crate::checks::validator_table::compile_checks(
        &config.validators,
        &config.verifiers,
        &config.upstream,
    )
    .map_err(at)?;
    let conversation = crate::agent::config::answer_checks(&text).map_err(at)?;
    if let Some(dup) = crate::checks::check::first_duplicate(
        (validators.iter().map(|v| v.name.as_str()))
            .chain(verifiers.iter().map(|v| v.name.as_str()))
            .chain(conversation.iter().map(|c| c.info.name.as_str())),
    ) {
        return Err(at(format!(
            "two checks are named {dup:?}; names must be unique"
        )));
    }
    let token =
        crate::checks::validator_table::token_from_env(config.token_env.as_deref()).map_err(at)?;
    let name = config.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "guard".into())
    });
    let warnings = check_pins(&config.pin).map_err(at)?;
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let upstream = config
        .upstream
        .build()
        .map_err(|e| at(format!("[upstream] {e}")))?;
    // The feedback template compiles (checked by `validate` above too).
    Guard::new(
        upstream.clone(),
        Arc::new(Checks::default()),
        config.retry.clone(),
        Arc::new(Caller::default()),
    )
    .map_err(|e| at(format!("[retry] {e}")))?;
    Ok(Loaded {
        config,
        classes,
        name,
        text,
        hash,
        checks: Checks {
            validators,
            verifiers,
            conversation,
            ..Checks::default()
        },
        token,
        upstream,
        warnings,
    })
}

/// Fields the guard reads itself and never forwards: pinning one means
/// nothing.
const GUARD_OWN: [&str; 4] = ["messages", "stream", "stream_options", "n"];

/// The Chat Completions request's fields (OpenAI's API reference): a pin
/// outside them is likely a typo, though an OpenAI-compatible server may
/// take fields of its own (vLLM's `top_k`), so it is a warning.
const CHAT_FIELDS: &[&str] = &[
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

/// `pin`'s entries checked: one of the guard's own fields is an error;
/// one that is no Chat Completions field a warning, with the field it
/// most resembles.
fn check_pins(pin: &[String]) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for p in pin {
        if GUARD_OWN.contains(&p.as_str()) {
            return Err(format!(
                "pin = [\"{p}\"]: `{p}` is read by the guard itself and never forwarded, so it cannot be pinned; remove it"
            ));
        }
        if !CHAT_FIELDS.contains(&p.as_str()) {
            let near = CHAT_FIELDS
                .iter()
                .map(|f| (strsim::jaro_winkler(p, f), *f))
                .filter(|(score, _)| *score > 0.85)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, f)| format!(" (did you mean `{f}`?)"))
                .unwrap_or_default();
            warnings.push(format!(
                "pin: `{p}` is not a Chat Completions field{near}; it is pinned as written, which only matters if the upstream takes such a field"
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::check_pins;

    #[test]
    fn pins_of_the_guards_own_fields_are_refused_and_typos_named() {
        let pin = |xs: &[&str]| check_pins(&xs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            pin(&["model", "temperature", "seed"]).unwrap(),
            Vec::<String>::new()
        );
        let e = pin(&["model", "messages"]).unwrap_err();
        assert!(e.contains("`messages` is read by the guard itself"), "{e}");
        assert!(pin(&["stream"]).is_err());
        let w = pin(&["temprature", "top_k"]).unwrap();
        assert_eq!(w.len(), 2);
        assert!(
            w[0].contains("`temprature`") && w[0].contains("did you mean `temperature`?"),
            "{w:?}"
        );
        // A vendor's own field (vLLM's top_k) is only a warning.
        assert!(
            w[1].contains("`top_k`") && w[1].contains("pinned as written"),
            "{w:?}"
        );
    }
}
