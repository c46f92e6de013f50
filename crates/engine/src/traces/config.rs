//! The `--config` file of `probity collect` and `probity traces import`
//! (docs/traces.md): the checks applied to traced spans, how their rates
//! are grouped and watched, and the receiver's limits.

use crate::checks::check::Checks;
use crate::checks::validator_table::ValidatorTable;
use crate::checks::verifier::VerifierSpec;
use crate::serve::monitor::MonitorConfig;
use crate::system::config::ProviderConfig;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

fn d_listen() -> String {
    "127.0.0.1:4318".into()
}
fn d_confidence() -> f64 {
    0.95
}
fn d_max_body_mb() -> f64 {
    16.0
}
fn d_max_pending() -> usize {
    20_000
}
fn d_group_by() -> String {
    "model".into()
}
fn d_max_groups() -> usize {
    50
}
fn d_judge_share() -> f64 {
    1.0
}

/// The configuration of trace checking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// The run the traced spans are recorded under (default: the file's
    /// name without `.toml`).
    #[serde(default)]
    pub name: Option<String>,
    /// Where `probity collect` listens for OTLP/HTTP (4318 is OTLP's port).
    #[serde(default = "d_listen")]
    pub listen: String,
    /// The environment variable holding the bearer token exporters must
    /// send (`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer …`).
    #[serde(default)]
    pub token_env: Option<String>,
    /// The confidence of each check's live confidence sequence.
    #[serde(default = "d_confidence")]
    pub confidence: f64,
    /// Largest OTLP request body, in MiB (HTTP 413 above).
    #[serde(default = "d_max_body_mb")]
    pub max_body_mb: f64,
    /// Spans received but not yet checked, at most: an export that would
    /// go beyond is answered 429 with Retry-After (the exporter retries).
    #[serde(default = "d_max_pending")]
    pub max_pending_spans: usize,
    /// How the live rates are grouped: `model`, `operation`, `service`,
    /// `convention`, `none`, or `attribute:KEY` (a span attribute).
    #[serde(default = "d_group_by")]
    pub group_by: String,
    /// Groups watched apart at most; spans of further groups are watched
    /// under `other` (a high-cardinality attribute cannot exhaust memory).
    #[serde(default = "d_max_groups")]
    pub max_groups: usize,
    /// The operations checked (`chat`, `invoke_agent`, `execute_tool`,
    /// …); empty: every operation.
    #[serde(default)]
    pub operations: Vec<String>,
    /// The judge of `[[verifier]]`s that name no `[verifier.system]`.
    #[serde(default)]
    pub judge: ProviderConfig,
    /// The share of mapped spans the `[[verifier]]`s judge, each span drawn
    /// independently with this probability (validators check every span).
    #[serde(default = "d_judge_share")]
    pub judge_share: f64,
    /// Spans judged per hour at most (counted on probity's clock from the
    /// run's start); the sampled spans beyond are not judged, and counted.
    #[serde(default)]
    pub judge_budget_per_hour: Option<u64>,
    /// An OTLP/HTTP logs endpoint each check's verdict on a span is sent
    /// to, as a `gen_ai.evaluation.result` event parented to the span.
    #[serde(default)]
    pub export: Option<String>,
    #[serde(default, rename = "validator")]
    pub validators: Vec<ValidatorTable>,
    #[serde(default, rename = "verifier")]
    pub verifiers: Vec<VerifierSpec>,
    /// Live monitoring: epochs, window, alarms' webhook, a baseline run.
    #[serde(default)]
    pub monitor: MonitorConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::config::StoreTable>,
}

/// How spans are grouped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    None,
    Model,
    Operation,
    Service,
    Convention,
    Attribute(String),
}

impl GroupBy {
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        Ok(match s {
            "none" => GroupBy::None,
            "model" => GroupBy::Model,
            "operation" => GroupBy::Operation,
            "service" => GroupBy::Service,
            "convention" => GroupBy::Convention,
            other => match other.strip_prefix("attribute:") {
                Some(key) if !key.is_empty() => GroupBy::Attribute(key.to_string()),
                _ => {
                    return Err(format!(
                        "group_by = {other:?}: expected model, operation, service, convention, none or attribute:KEY"
                    ))
                }
            },
        })
    }
}

/// A loaded configuration (no `Debug`: it holds the token).
pub struct Loaded {
    pub config: TracesConfig,
    pub name: String,
    pub text: String,
    pub hash: String,
    pub checks: Checks,
    pub group_by: GroupBy,
    /// The bearer token, read from `token_env` (never logged or stored).
    pub token: Option<String>,
}

/// Read and check a configuration; errors name the file and the key.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let (text, mut config): (String, TracesConfig) = crate::toml_error::read_file(path)?;
    let at = |m: String| format!("{}: {m}", path.display());
    let dir = path.parent().unwrap_or(Path::new("."));
    config.judge.resolve_paths(dir);
    for v in &mut config.validators {
        v.resolve_paths(dir);
    }
    for v in &mut config.verifiers {
        v.resolve_paths(dir);
    }
    if config.validators.is_empty() && config.verifiers.is_empty() {
        return Err(at(
            "no [[validator]] or [[verifier]] tables: traces need at least one check".into(),
        ));
    }
    if !probity_core::monitor::watchable(config.confidence) {
        return Err(at(format!(
            "confidence = {}: must be {}",
            probity_core::number::written(config.confidence),
            probity_core::monitor::CONFIDENCE_RANGE
        )));
    }
    if !(config.max_body_mb.is_finite() && config.max_body_mb > 0.0 && config.max_body_mb <= 1024.0)
    {
        return Err(at(format!(
            "max_body_mb must be a number of MiB in (0, 1024], not {}",
            config.max_body_mb
        )));
    }
    if config.max_pending_spans == 0 || config.max_groups == 0 {
        return Err(at(
            "max_pending_spans and max_groups must be at least 1".into()
        ));
    }
    if let Some(problem) = config.monitor.problem() {
        return Err(at(problem));
    }
    if let Some(store) = &config.store {
        store.location().map_err(at)?;
    }
    if let Some(v) = config.verifiers.iter().find(|v| v.calibration.is_some()) {
        return Err(at(format!(
            "[[verifier]] {}: `calibration` is not applied to traced spans yet (its rate would read uncorrected); remove it, or check the traces with `probity revalidate` of the imported run",
            v.name
        )));
    }
    check_judge_sampling(&config).map_err(at)?;
    if let Some(url) = &config.export {
        check_export(url).map_err(|e| at(format!("export = {url:?}: {e}")))?;
    }
    let group_by = GroupBy::parse(&config.group_by).map_err(at)?;
    let (validators, verifiers) = crate::checks::validator_table::compile_checks(
        &config.validators,
        &config.verifiers,
        &config.judge,
    )
    .map_err(at)?;
    let token =
        crate::checks::validator_table::token_from_env(config.token_env.as_deref()).map_err(at)?;
    let name = config.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "traces".into())
    });
    Ok(Loaded {
        name,
        hash: hex::encode(Sha256::digest(text.as_bytes())),
        text,
        checks: Checks {
            validators,
            verifiers,
            ..Checks::default()
        },
        group_by,
        token,
        config,
    })
}

/// `judge_share` is a probability in (0, 1]; a share or a budget asks for
/// judges, so a file without `[[verifier]]` that sets one is refused
/// rather than silently ignored.
fn check_judge_sampling(c: &TracesConfig) -> Result<(), String> {
    if !(c.judge_share.is_finite() && c.judge_share > 0.0 && c.judge_share <= 1.0) {
        return Err(format!(
            "judge_share = {}: must be a share of spans in (0, 1]",
            probity_core::number::written(c.judge_share)
        ));
    }
    if c.judge_budget_per_hour == Some(0) {
        return Err(
            "judge_budget_per_hour = 0: must be at least 1 (or left out: no budget)".into(),
        );
    }
    let sampled = c.judge_share < 1.0 || c.judge_budget_per_hour.is_some();
    if sampled && c.verifiers.is_empty() {
        return Err(
            "judge_share and judge_budget_per_hour apply to [[verifier]]s, and there is none (validators check every span)"
                .into(),
        );
    }
    Ok(())
}

#[cfg(feature = "otlp-proto")]
fn check_export(url: &str) -> Result<(), String> {
    super::export::endpoint(url).map(|_| ())
}

#[cfg(not(feature = "otlp-proto"))]
fn check_export(_: &str) -> Result<(), String> {
    Err("this build sends no OTLP (built without the otlp-proto feature)".into())
}
