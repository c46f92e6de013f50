//! The run configuration: a TOML file (docs/config.md),
//! loaded into an [`Experiment`].
//!
//! ```toml
//! name = "polite-assistant"
//!
//! [system]                 # the system under test (a provider)
//! provider = "sim"
//!
//! [prompt]
//! system = "You are a polite assistant. Never use contractions."
//! user = "{{ input.text }}"
//!
//! [experiment]
//! inputs = "inputs.jsonl"  # or [[input]] tables below
//! outputs_per_input = 20
//! strategy = "all"         # rows | columns | all
//!
//! [[validator]]
//! name = "contraction_validator"
//! check = '''count(output, "'") <= 3'''
//! minimum_success_percentage = 0.95
//! ```
//!
//! Unknown keys are errors, and every error names the file, the line and
//! column, and the field.

pub(crate) mod applicability;
pub(crate) mod carried;
pub mod concurrency;
pub mod example;
pub mod inputs;
pub mod key_lines;
pub mod matrix;
pub mod promptfoo;
pub mod set;
pub mod variant;

use crate::agent::config as agent;
use crate::bounds;
use crate::checks::check::Checks;
use crate::checks::validator_table::ValidatorTable;
use crate::checks::verifier::{Verifier, VerifierSpec};
use crate::config::inputs::{load_inputs, InputError};
use crate::provider::call::CallSettings;
use crate::provider::template::{
    ConversationPrompt, ConversationSystem, ConversationUser, PromptTemplate,
};
use crate::retry::policy::RetryPolicy;
use crate::run::experiment::{Experiment, Source};
use crate::run::revalidate::Recheck;
use crate::store::settings::{Analysis, StoredSettings};
use crate::system::config::ProviderConfig;
use crate::system::Priced;
use probity_core::stats::ClusterMethod;
use probity_core::stats::VerdictMode;
use probity_core::validator::ValidatorError;
use probity_core::{
    Aggregate, AnalysisOptions, ErrorPolicy, Input, IntervalMethod, Strategy, Validator,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;

/// A configuration problem: always names where.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Inputs(#[from] InputError),
    /// The system under test cannot be built (a missing key variable, a
    /// template that does not compile, …).
    #[error("{path}: [system] {message}")]
    System { path: PathBuf, message: String },
}

/// The prompt templates (minijinja): what the system is asked for input `i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    /// The system message, if any.
    #[serde(default)]
    pub system: Option<String>,
    /// The user message; `{{ input.text }}` by default.
    #[serde(default = "default_user_prompt")]
    pub user: String,
    /// For an input with its own conversation (`messages`): when `system`
    /// is added to it (docs/config.md).
    #[serde(default, skip_serializing_if = "is_default")]
    pub conversation_system: ConversationSystem,
    /// For an input with its own conversation: whether `user` renders its
    /// last (user) message.
    #[serde(default, skip_serializing_if = "is_default")]
    pub conversation_user: ConversationUser,
}

fn default_user_prompt() -> String {
    "{{ input.text }}".into()
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            system: None,
            user: default_user_prompt(),
            conversation_system: ConversationSystem::default(),
            conversation_user: ConversationUser::default(),
        }
    }
}

/// The `[experiment]` table: the design of the binomial experiment (§2.2)
/// and how it is run and judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExperimentConfig {
    /// A JSONL or CSV file of inputs, relative to the config file.
    pub inputs: Option<PathBuf>,
    /// M, the outputs sampled per input (§2.2.2; 1 is §2.2.1).
    pub outputs_per_input: usize,
    /// Which slice a validator's success percentage is broken down by.
    pub strategy: Strategy,
    /// How validators combine into one figure (§3.3).
    pub aggregate: Aggregate,
    /// Confidence level of every interval.
    pub confidence: f64,
    pub interval: IntervalMethod,
    /// Whether errors count as failures (`as-failure`) or are excluded.
    pub errors: ErrorPolicy,
    /// `point` (the paper), `lower-bound` or `three-way`.
    pub verdict: VerdictMode,
    /// Calls in flight at once: a number, or `"auto"` (found while the
    /// run goes, [`concurrency::Concurrency::Auto`]).
    pub concurrency: concurrency::Concurrency,
    /// Seconds before one call is abandoned (and retried).
    pub timeout_s: f64,
    /// Seconds the whole run may take; what is done by then is reported.
    pub deadline_s: Option<f64>,
    /// Attempts per call on rate limits, 5xx and timeouts (1 = no retry).
    pub call_attempts: u32,
    /// Client-side limit on requests per minute.
    pub requests_per_minute: Option<f64>,
    /// Client-side limit on tokens (prompt + completion) per minute.
    pub tokens_per_minute: Option<f64>,
    /// Target probability for the retry plan's m (§4.2.2).
    pub retry_target: f64,
    /// How repeated outputs of one input are accounted for in intervals
    /// (`profile`, the default; `beta-binomial`; `icc-bound`;
    /// `design-effect`; `binomial`: as if independent). See
    /// `crates/core/STATISTICS.md`.
    #[serde(skip_serializing_if = "is_default")]
    pub cluster: ClusterMethod,
    /// k of pass^k and pass@k (consistency over k outputs of one input);
    /// the retry plan's m by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<u32>,
    /// The share of samples whose call may fail (after its retries) before
    /// the run stops with no verdict, exit 3; 1 never stops.
    pub error_budget: f64,
    /// A numeric field of the inputs that weights them (§3.6.7, weighted
    /// aggregation); every input weighs the same without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_field: Option<String>,
    /// Sequential testing: N × M is the budget; the run stops as soon as
    /// every check's verdict is settled (docs/config.md).
    #[serde(skip_serializing_if = "is_default")]
    pub sequential: bool,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Default for ExperimentConfig {
    fn default() -> Self {
        let o = AnalysisOptions::default();
        ExperimentConfig {
            inputs: None,
            outputs_per_input: 10,
            strategy: Strategy::All,
            aggregate: Aggregate::Min,
            confidence: o.confidence,
            interval: o.interval,
            errors: o.errors,
            verdict: o.verdict,
            concurrency: concurrency::Concurrency::default(),
            timeout_s: 60.0,
            deadline_s: None,
            call_attempts: 4,
            requests_per_minute: None,
            tokens_per_minute: None,
            retry_target: 0.99,
            cluster: o.cluster,
            pass_k: o.pass_k,
            error_budget: crate::run::experiment::DEFAULT_ERROR_BUDGET,
            weight_field: None,
            sequential: false,
        }
    }
}

impl ExperimentConfig {
    pub fn analysis(&self) -> AnalysisOptions {
        AnalysisOptions {
            confidence: self.confidence,
            interval: self.interval,
            errors: self.errors,
            verdict: self.verdict,
            cluster: self.cluster,
            pass_k: self.pass_k,
        }
    }
}

/// The file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Name under which runs are stored and compared; the file stem by default.
    #[serde(default)]
    pub name: Option<String>,
    /// The system under test's provider, and its price (`price = {…}`).
    #[serde(default)]
    pub system: Priced<ProviderConfig>,
    #[serde(default)]
    pub prompt: PromptConfig,
    #[serde(default)]
    pub experiment: ExperimentConfig,
    #[serde(default, rename = "validator")]
    pub validators: Vec<ValidatorTable>,
    /// LLM judges (§4): columns after the validators.
    #[serde(default, rename = "verifier", skip_serializing_if = "Vec::is_empty")]
    pub verifiers: Vec<VerifierSpec>,
    /// A retry policy (§4.1, §4.2): the run then measures the guarded system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Inline inputs, one table each.
    #[serde(default, rename = "input")]
    pub inputs: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Where this configuration's runs are stored, unless `--store` or
    /// `PROBITY_STORE` says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreTable>,
    /// The agent under test (docs/agents.md): with it, each output is one
    /// whole episode. These tables are read whole by
    /// [`agent::AgentConfig::from_toml`] (errors naming their line); here
    /// they are kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<serde_json::Value>,
    #[serde(default, rename = "tool", skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
    #[serde(default, rename = "agent_check", skip_serializing_if = "Vec::is_empty")]
    pub agent_checks: Vec<serde_json::Value>,
    #[serde(default, rename = "user_check", skip_serializing_if = "Vec::is_empty")]
    pub user_checks: Vec<serde_json::Value>,
}

/// `[store]`: the run store shared by everyone who runs this file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreTable {
    /// A SQLite file (relative to the working directory) or a PostgreSQL
    /// URL without its password (`postgres://ci@db.internal/probity`; the
    /// password comes from `PGPASSWORD`): the file is stored with every
    /// run, so it must hold no secret.
    pub url: String,
}

impl StoreTable {
    /// The location, or why the table is refused (a password written in
    /// the file).
    pub fn location(&self) -> Result<crate::store::StoreLocation, String> {
        let location = crate::store::StoreLocation::parse(&self.url)
            .map_err(|e| format!("[store] url: {e}"))?;
        if let crate::store::StoreLocation::Postgres(url) = &location {
            if url.redacted() != url.secret() {
                return Err(format!(
                    "[store] url = \"{url}\": holds a password, and this file is stored with every run; put the password in PGPASSWORD (or give the URL with --store or PROBITY_STORE) instead"
                ));
            }
        }
        Ok(location)
    }
}

impl ConfigFile {
    /// Resolves every relative path of the providers (`[system]`, the
    /// judges' `[verifier.system]`) against `dir`, the file's directory, as
    /// `[experiment] inputs` is (docs/config.md, Paths).
    pub fn resolve_paths(&mut self, dir: &Path) {
        self.system.resolve_paths(dir);
        for v in &mut self.validators {
            v.resolve_paths(dir);
        }
        for v in &mut self.verifiers {
            v.resolve_paths(dir);
        }
    }
}

/// A loaded, checked configuration: everything a run needs but the system
/// under test itself, which [`Config::experiment`] builds.
pub struct Config {
    pub path: PathBuf,
    /// The file's text as loaded (stored with every run).
    pub text: String,
    pub name: String,
    pub file: ConfigFile,
    pub inputs: Vec<Input>,
    /// The validators and verifiers (with their judges built).
    pub checks: Checks,
    /// The prompt templates, compiled.
    pub prompt: Arc<PromptTemplate>,
    /// SHA-256 over the configuration and the inputs' content: runs with the
    /// same hash ask the same questions.
    pub hash: String,
    /// The agent under test, when the file has an `[agent]` table.
    pub agent: Option<Arc<agent::AgentConfig>>,
}

/// Settings given on the command line in place of the file's
/// (`probity run --outputs M --concurrency C`). They are applied before
/// the configuration is checked, so every bound (samples, cells,
/// concurrency) is checked against what the run will do; the hash is the
/// file's as written, so `--resume` finds a run started with them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrides {
    /// In place of `[experiment] outputs_per_input`.
    pub outputs_per_input: Option<usize>,
    /// In place of `[experiment] concurrency`.
    pub concurrency: Option<concurrency::Concurrency>,
}

impl Overrides {
    /// Write these settings into `e`; returns the values they replaced, to
    /// be put back where the file as written is needed (the hash).
    fn apply(&self, e: &mut ExperimentConfig) -> Overrides {
        let written = Overrides {
            outputs_per_input: Some(e.outputs_per_input),
            concurrency: Some(e.concurrency),
        };
        if let Some(m) = self.outputs_per_input {
            e.outputs_per_input = m;
        }
        if let Some(c) = self.concurrency {
            e.concurrency = c;
        }
        written
    }
}

impl Config {
    /// Read, parse and check `path`, and load its inputs.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::load_with(path, &Overrides::default())
    }

    /// [`Config::load`] with `overrides` in place of the file's settings,
    /// applied before any check.
    pub(crate) fn load_with(path: &Path, overrides: &Overrides) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_str_with(crate::config::inputs::strip_bom(&text), path, overrides)
    }

    /// Parse and check `text` as if read from `path` (relative input files
    /// resolve against `path`'s directory).
    pub fn from_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
        Config::from_str_with(text, path, &Overrides::default())
    }

    /// [`Config::from_str`] with `overrides` applied before any check.
    pub fn from_str_with(
        text: &str,
        path: &Path,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        // Before the fields are read: serde would take `nan` for a
        // missing value or `null`, and the error would not say why.
        if let Some(message) = crate::toml_error::non_finite(text) {
            return Err(ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            });
        }
        let file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: crate::toml_error::describe(&e, text),
        })?;
        Config::checked(file, text, path, Vec::new(), overrides)
    }

    /// A configuration assembled in code (the Python package): `file` as
    /// if read from `path` (relative paths resolve against its directory;
    /// errors name it), `text` the description stored with each run, and
    /// validators built in code, each with the column it goes to among the
    /// file's validators (`(2, v)`: third; past the end: last), in
    /// increasing order. Every check [`Config::from_str`] makes is made,
    /// and the hash covers `text` too (code is not in `file`).
    pub fn from_parts(
        file: ConfigFile,
        text: &str,
        path: &Path,
        code: Vec<(usize, Validator)>,
    ) -> Result<Config, ConfigError> {
        Config::checked(file, text, path, code, &Overrides::default())
    }

    /// [`Config::from_parts`] with `overrides` applied to `file` before
    /// any check; the hash is over `file` as written.
    fn checked(
        mut file: ConfigFile,
        text: &str,
        path: &Path,
        code: Vec<(usize, Validator)>,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let from_code = !code.is_empty();
        let written = overrides.apply(&mut file.experiment);
        file.resolve_paths(path.parent().unwrap_or(Path::new(".")));
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        check_experiment(&file.experiment).map_err(|m| invalid(format!("[experiment] {m}")))?;
        if let Some(retry) = &file.retry {
            retry
                .validate()
                .map_err(|m| invalid(format!("[retry] {m}")))?;
        }
        let prompt = PromptTemplate::new(file.prompt.system.as_deref(), &file.prompt.user)
            .map_err(|e| invalid(format!("[prompt] {e}")))?
            .with_conversation(ConversationPrompt {
                system: file.prompt.conversation_system,
                user: file.prompt.conversation_user,
            });
        let (mut validators, mut verifiers) = compile_checks(&file, text, code).map_err(invalid)?;
        let loaded = read_inputs(&file, path).map_err(|e| match e {
            Ok(message) => invalid(message),
            Err(e) => ConfigError::Inputs(e),
        })?;
        let inputs = loaded.inputs;
        let specs = file.validators.iter().enumerate();
        crate::checks::templated::resolve(
            specs.filter_map(|(k, t)| match t {
                ValidatorTable::Spec(s) => Some((k, s)),
                ValidatorTable::Program(_) => None,
            }),
            &mut validators,
            &inputs,
        )
        .map_err(invalid)?;
        let taken: Vec<&str> = (validators.iter().map(|v| v.name.as_str()))
            .chain(verifiers.iter().map(|v| v.name.as_str()))
            .collect();
        let (carried_validators, carried_verifiers) =
            carried::columns(&loaded.carried, &inputs, &file.system, &taken)?;
        validators.extend(carried_validators);
        verifiers.extend(carried_verifiers);
        if validators.is_empty() && verifiers.is_empty() && file.agent_checks.is_empty() {
            return Err(invalid(
                "no [[validator]], [[verifier]] or [[agent_check]] tables, and no input carries a check: a reliability test needs at least one check".into(),
            ));
        }
        let agent = match (&file.agent, file.agent_checks.is_empty()) {
            (None, true) => None,
            (None, false) => {
                return Err(invalid(
                    "[[agent_check]] tables need an [agent] table: the agent under test (behind `probity serve` they go in the guard's file: docs/serve.md)".into(),
                ))
            }
            (Some(_), _) => Some(Arc::new(
                agent::AgentConfig::from_toml(text).map_err(invalid)?,
            )),
        };
        let agent_checks = agent.as_ref().map_or(0, |a| a.infos.len());
        if let Some(dup) = crate::checks::check::first_duplicate(
            (agent
                .iter()
                .flat_map(|a| a.infos.iter().map(|i| i.name.as_str())))
            .chain(validators.iter().map(|v| v.name.as_str()))
            .chain(verifiers.iter().map(|v| v.name.as_str())),
        ) {
            return Err(invalid(format!(
                "two checks are named {dup:?}; names must be unique"
            )));
        }
        bounds::shape(
            inputs.len(),
            file.experiment.outputs_per_input,
            agent_checks + validators.len() + verifiers.len(),
        )
        .map_err(|m| invalid(format!("[experiment] {m}")))?;
        check_reads(text, &validators, &verifiers, &inputs).map_err(invalid)?;
        if let Some(store) = &file.store {
            store.location().map_err(invalid)?;
        }
        if let Some(0) = file.experiment.pass_k {
            return Err(invalid(
                "[experiment] pass_k = 0: pass^k and pass@k need k ≥ 1".into(),
            ));
        }
        let name = run_name(&file, path).map_err(invalid)?;
        let mut hash = hash_config(&file, &written, &inputs);
        if !loaded.carried.is_empty() {
            // The inputs' own checks are asked too (taken out of their
            // fields, so not in `inputs`).
            let carried = carried::as_json(&loaded.carried);
            hash = hex::encode(Sha256::digest(format!("{hash}\n{carried}")));
        }
        if from_code {
            hash = hex::encode(Sha256::digest(format!("{hash}\n{text}")));
        }
        let config = Config {
            path: path.to_path_buf(),
            text: text.to_string(),
            name,
            file,
            inputs,
            checks: Checks {
                validators,
                verifiers,
                ..Checks::default()
            },
            prompt: Arc::new(prompt),
            hash,
            agent,
        };
        // The weights are read now, so a bad one stops the run before any call.
        config
            .analysis()
            .input_weights(&config.inputs)
            .map_err(|m| invalid(format!("[experiment] {m}")))?;
        Ok(config)
    }

    /// Where runs of this configuration come from.
    pub fn source(&self) -> Source {
        Source {
            path: self.path.clone(),
            text: self.text.clone(),
            hash: self.hash.clone(),
        }
    }

    /// How runs of this configuration are analysed.
    pub fn analysis(&self) -> Analysis {
        let e = &self.file.experiment;
        Analysis {
            options: e.analysis(),
            strategy: e.strategy,
            aggregate: e.aggregate,
            retry_target: e.retry_target,
            weight_field: e.weight_field.clone(),
        }
    }

    /// How runs of this configuration make calls.
    pub fn calls(&self) -> CallSettings {
        let e = &self.file.experiment;
        CallSettings {
            timeout: bounds::clamp_seconds(e.timeout_s),
            call_attempts: e.call_attempts,
            requests_per_minute: e.requests_per_minute,
            tokens_per_minute: e.tokens_per_minute,
        }
    }

    /// [`Config::experiment`] taking the inputs rather than copying them:
    /// for a caller done with the configuration (one copy of a million
    /// inputs is hundreds of megabytes). The configuration keeps its
    /// hash, text and checks.
    pub fn into_experiment(mut self) -> Result<Experiment, ConfigError> {
        let inputs = std::mem::take(&mut self.inputs);
        let mut experiment = self.experiment()?;
        experiment.inputs = inputs.into();
        Ok(experiment)
    }

    /// The experiment: the `[system]` provider built (reading the key
    /// variables it names), everything else as loaded.
    pub fn experiment(&self) -> Result<Experiment, ConfigError> {
        // The system under test is the agent when there is one: its
        // fingerprint and label are the run's.
        let provider = match self.agent.as_deref().map(|a| &a.agent) {
            Some(agent::AgentSpec::Model { provider, .. }) => provider,
            _ => &self.file.system,
        };
        let system = provider.build().map_err(|e| ConfigError::System {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let e = &self.file.experiment;
        Ok(Experiment {
            name: self.name.clone(),
            system,
            prompt: self.prompt.clone(),
            inputs: self.inputs.clone().into(),
            checks: self.checks.clone(),
            outputs_per_input: e.outputs_per_input,
            retry: self.file.retry.clone(),
            analysis: self.analysis(),
            calls: self.calls(),
            concurrency: e.concurrency.workers(),
            auto_concurrency: e.concurrency.is_auto(),
            deadline: e.deadline_s.map(bounds::clamp_seconds),
            error_budget: e.error_budget,
            sequential: e
                .sequential
                .then(crate::run::experiment::Sequential::default),
            source: Some(self.source()),
            variant: None,
            agent: self.agent.clone(),
            // An agent's own model is not the `[system]` table's: unpriced.
            price: match self.agent.as_deref().map(|a| &a.agent) {
                Some(agent::AgentSpec::Model { .. }) => None,
                _ => self.file.system.price.clone(),
            },
        })
    }

    /// The checks and settings, to revalidate a stored run (the system is
    /// not built: a revalidation never calls it).
    pub fn recheck(&self) -> Recheck<'_> {
        Recheck {
            name: &self.name,
            checks: &self.checks,
            settings: StoredSettings {
                prices: self.checks.prices(self.file.system.price.as_ref()),
                ..StoredSettings::new(&self.analysis(), None)
            },
            calls: self.calls(),
            concurrency: self.file.experiment.concurrency.workers(),
            source: Some(self.source()),
            agent: self.agent.clone(),
            episode: None,
        }
    }
}

/// The file's validators (with those built in `code` inserted at their
/// columns) and verifiers, compiled; names unique. Errors name the table
/// (and the line of a `when` that does not compile).
fn compile_checks(
    file: &ConfigFile,
    text: &str,
    code: Vec<(usize, Validator)>,
) -> Result<(Vec<Validator>, Vec<Verifier>), String> {
    // An error in a `when` is placed at its line.
    let located = |kind: &str, k: usize, name: &str, e: String| {
        if e.contains("field `when`") {
            format!("{}: {e}", applicability::table(text, kind, k, name))
        } else {
            format!("[[{kind}]] #{} ({name}): {e}", k + 1)
        }
    };
    let verifiers = file
        .verifiers
        .iter()
        .enumerate()
        .map(|(k, spec)| {
            spec.compile(&file.system)
                .map_err(|e| located("verifier", k, &spec.name, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut validators = file
        .validators
        .iter()
        .enumerate()
        .map(|(k, spec)| {
            spec.compile_before_inputs()
                .map_err(|e: ValidatorError| located("validator", k, spec.name(), e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (at, v) in code {
        v.validate()
            .map_err(|e| format!("validator ({}): {e}", v.name))?;
        validators.insert(at.min(validators.len()), v);
    }
    if let Some(dup) = crate::checks::check::first_duplicate(
        (validators.iter().map(|v| v.name.as_str()))
            .chain(verifiers.iter().map(|v| v.name.as_str())),
    ) {
        return Err(format!(
            "two checks are named {dup:?}; names must be unique"
        ));
    }
    Ok((validators, verifiers))
}

/// The file's inputs (its inputs file's, then its `[[input]]` tables'):
/// `Err(Ok(message))` when there are none, `Err(Err(e))` when they cannot
/// be read.
fn read_inputs(
    file: &ConfigFile,
    path: &Path,
) -> Result<inputs::Loaded, Result<String, InputError>> {
    let base = path.parent().unwrap_or(Path::new("."));
    let inputs = load_inputs(
        &file.experiment.inputs.as_ref().map(|p| base.join(p)),
        &file.inputs,
    )
    .map_err(Err)?;
    if let (true, Some(file)) = (inputs.inputs.is_empty(), &file.experiment.inputs) {
        return Err(Ok(format!(
            "[experiment] inputs = {:?}: the file holds no input (empty, or a CSV with only its header row)",
            file.display().to_string()
        )));
    }
    if inputs.inputs.is_empty() {
        return Err(Ok(
            "no inputs: set [experiment] inputs = \"file.jsonl\" or add [[input]] tables".into(),
        ));
    }
    Ok(inputs)
}

/// What the checks read of the inputs, checked against them before any
/// call. A field an expression reads that no input has can only make the
/// check fail (or err) on every output: a broken check, not a verdict
/// about the system. (A field only some inputs lack is an Error cell, with
/// the field named, for those inputs.) Each `when` is checked by
/// [`applicability::check`].
fn check_reads(
    text: &str,
    validators: &[Validator],
    verifiers: &[Verifier],
    inputs: &[Input],
) -> Result<(), String> {
    for (k, v) in validators.iter().enumerate() {
        for field in v.input_fields() {
            if !inputs.iter().any(|i| i.fields.contains_key(&field)) {
                let mut known: Vec<String> = inputs.iter().flat_map(|i| i.fields.keys()).collect();
                known.sort_unstable();
                known.dedup();
                return Err(format!(
                    "[[validator]] #{} ({}): its check reads input field `{field}`, which no input has (the inputs' fields: {})",
                    k + 1,
                    v.name,
                    known.join(", ")
                ));
            }
        }
    }
    for (k, v) in verifiers.iter().enumerate() {
        check_rubric(k, v, inputs)?;
    }
    let scoped = applicability::scoped(
        text,
        validators,
        verifiers.iter().map(|v| (v.name.as_str(), v.when.as_ref())),
    );
    applicability::check(&scoped, inputs).map(|_| ())
}

/// A judge's rubric that is a template (`{{ country }}`) renders for every
/// input it applies to, checked before any call: the first that does not
/// is an error naming the table, the field, the input and the missing
/// field.
fn check_rubric(k: usize, v: &Verifier, inputs: &[Input]) -> Result<(), String> {
    if !crate::provider::template::is_template(&v.instructions) {
        return Ok(());
    }
    for input in inputs {
        let applies = v.when.as_ref().map_or(Ok(true), |c| c.applies_to(input));
        if applies != Ok(true) {
            continue;
        }
        v.instructions_for(input).map_err(|e| {
            format!(
                "[[verifier]] #{} ({}): field `instructions`: {e}",
                k + 1,
                v.name
            )
        })?;
    }
    Ok(())
}

/// The name runs are stored under: `name`, or the file's stem.
fn run_name(file: &ConfigFile, path: &Path) -> Result<String, String> {
    let name = file.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "probity".into())
    });
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(format!(
            "name = {name:?}: a run's name must have a visible character and no control character (runs are found by it)"
        ));
    }
    Ok(name)
}

fn check_experiment(e: &ExperimentConfig) -> Result<(), String> {
    bounds::within(
        "outputs_per_input",
        e.outputs_per_input,
        bounds::MAX_OUTPUTS_PER_INPUT,
    )?;
    e.concurrency.check()?;
    bounds::within(
        "call_attempts",
        e.call_attempts as usize,
        bounds::MAX_ATTEMPTS as usize,
    )?;
    if let Some(k) = e.pass_k.filter(|&k| k as usize > e.outputs_per_input) {
        return Err(format!(
            "pass_k = {k} is more than outputs_per_input = {}: pass^k and pass@k need k outputs of an input",
            e.outputs_per_input
        ));
    }
    if !(e.confidence > 0.0 && e.confidence < 1.0) {
        return Err(format!(
            "confidence = {} must be strictly between 0 and 1",
            e.confidence
        ));
    }
    if !(e.retry_target > 0.0 && e.retry_target < 1.0) {
        return Err(format!(
            "retry_target = {} must be strictly between 0 and 1",
            e.retry_target
        ));
    }
    bounds::seconds("timeout_s", e.timeout_s)?;
    if let Some(d) = e.deadline_s {
        bounds::seconds("deadline_s", d)?;
    }
    if !(0.0..=1.0).contains(&e.error_budget) {
        return Err(format!(
            "error_budget = {} must be a share of the samples between 0 and 1 (0.05 is 5%)",
            e.error_budget
        ));
    }
    for (field, v) in [
        ("requests_per_minute", e.requests_per_minute),
        ("tokens_per_minute", e.tokens_per_minute),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{field} = {v} must be positive"));
        }
    }
    Ok(())
}

/// SHA-256 over `file` with the `written` settings put back in place of
/// the command line's ([`Overrides::apply`]) and `inputs`.
fn hash_config(file: &ConfigFile, written: &Overrides, inputs: &[Input]) -> String {
    let mut h = Sha256::new();
    // The name does not change what is asked; everything else does.
    let mut f = file.clone();
    f.name = None;
    // Nor where the runs are kept.
    f.store = None;
    written.apply(&mut f.experiment);
    h.update(serde_json::to_vec(&f).unwrap_or_default());
    h.update(serde_json::to_vec(inputs).unwrap_or_default());
    hex::encode(h.finalize())
}
