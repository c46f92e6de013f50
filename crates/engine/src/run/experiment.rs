//! The library's front door: an [`Experiment`] — in the spirit of
//! Inspect's Task — is everything a reliability test needs (§2.2, §3): the
//! system under test, the inputs and how each is put to the system, the
//! checks (validators and verifiers), M outputs per input, an optional
//! retry policy (§4.1, §4.2), and how calls are made and results analysed.
//!
//! Build one in code, or load one from a TOML file with
//! [`crate::config::Config::load`] and [`crate::config::Config::experiment`];
//! then [`crate::run::runner::run`] it into a [`crate::run::runner::Sink`] (the run
//! store or memory).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use probity_core::{Input, Validator};
//! use probity_engine::{run, Experiment, Sink};
//! let system = probity_engine::system::ProviderConfig::default().build()?;
//! let experiment = Experiment::new("polite", system)
//!     .inputs([Input::text("q1", "Thank you!")])
//!     .validator(Validator::new("short").check(|o: &str| o.len() < 500))
//!     .outputs_per_input(20);
//! run(&experiment, Sink::Memory).await?.assert_passed();
//! # Ok(()) }
//! ```

use crate::checks::check::Checks;
use crate::checks::verifier::Verifier;
use crate::provider::call::CallSettings;
use crate::provider::limits::Pace;
use crate::provider::template::{PromptTemplate, TemplateError};
use crate::provider::types::Provider;
use crate::retry::policy::RetryPolicy;
use crate::store::records::VariantTag;
use crate::store::settings::{Analysis, StoredSequential, StoredSettings};
use probity_core::{Input, Validator};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The default error budget: 5% of the samples.
pub(crate) const DEFAULT_ERROR_BUDGET: f64 = 0.05;

/// Where an experiment was loaded from: the configuration's path, its text
/// as loaded (stored with every run) and its hash (runs with the same hash
/// ask the same questions; `--resume` continues one).
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
    pub hash: String,
}

/// A reliability test: N inputs × M outputs of one system, K checks.
pub struct Experiment {
    /// The name runs are stored and compared under.
    pub name: String,
    /// The system under test.
    pub system: Arc<dyn Provider>,
    /// What the system is asked for each input (`{{ input.text }}` by
    /// default).
    pub prompt: Arc<PromptTemplate>,
    /// The N inputs, shared with the run's tasks (never copied).
    pub inputs: Arc<[Input]>,
    /// The K checks: validators, then verifiers.
    pub checks: Checks,
    /// M, the outputs sampled per input (§2.2.2; 1 is §2.2.1).
    pub outputs_per_input: usize,
    /// A retry policy: the run then measures the guarded system (§4.2),
    /// every attempt stored. `None`: one attempt per sample.
    pub retry: Option<RetryPolicy>,
    /// How the tensor is analysed.
    pub analysis: Analysis,
    /// Rate limits, per-call timeout and retries on transient errors.
    pub calls: CallSettings,
    /// Calls in flight at once (with `auto_concurrency`, at most).
    pub concurrency: usize,
    /// `concurrency = "auto"`: the calls sent at once start at one and
    /// double while the upstream's throughput grows with them
    /// ([`crate::provider::load::UpstreamLoad::auto`]).
    pub auto_concurrency: bool,
    /// The whole run's time limit; what is done by then is reported.
    pub deadline: Option<Duration>,
    /// The share of samples whose call may fail before the run stops with
    /// no verdict (failed calls are not measured; 1 never stops).
    pub error_budget: f64,
    /// Sequential testing (`[experiment] sequential`, `--sequential`):
    /// N × M becomes the budget and the run stops as soon as every check's
    /// verdict is settled (`probity_core::sequential`); `None`: every
    /// sample is taken.
    pub sequential: Option<Sequential>,
    /// The configuration file it was loaded from, if any.
    pub source: Option<Source>,
    /// The variant it is of a variants run (`[[variant]]`), stored with
    /// its run; `None` for an experiment of its own.
    pub variant: Option<VariantTag>,
    /// The agent under test (docs/agents.md): each output is one whole
    /// episode, judged first by the agent checks (the first columns), then
    /// by `checks` over the agent's last reply.
    pub agent: Option<Arc<crate::agent::config::AgentConfig>>,
    /// The price of the system's tokens (`[system] price`), stored with
    /// each run beside its judges' (cost in money); `None`: not priced.
    pub price: Option<probity_core::cost::Price>,
}

/// How a sequential run orders its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sequential {
    /// The seed of the input order; `None`: drawn when the run starts
    /// (stored with the run either way, so `--resume` replays the order).
    pub seed: Option<u64>,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name)
            .field("system", &self.system.fingerprint())
            .field("inputs", &self.inputs.len())
            .field("checks", &self.checks.infos())
            .field("outputs_per_input", &self.outputs_per_input)
            .field("retry", &self.retry)
            .finish()
    }
}

impl Experiment {
    /// An experiment of `system` with no inputs and no checks yet, the
    /// prompt `{{ input.text }}`, M = 10, concurrency 16, default analysis
    /// and call settings.
    pub fn new(name: impl Into<String>, system: Arc<dyn Provider>) -> Self {
        Experiment {
            name: name.into(),
            system,
            prompt: Arc::new(
                PromptTemplate::new(None, "{{ input.text }}").expect("the default prompt compiles"),
            ),
            inputs: Arc::from(Vec::new()),
            checks: Checks::default(),
            outputs_per_input: 10,
            retry: None,
            analysis: Analysis::default(),
            calls: CallSettings::default(),
            concurrency: 16,
            auto_concurrency: false,
            deadline: None,
            error_budget: DEFAULT_ERROR_BUDGET,
            sequential: None,
            source: None,
            variant: None,
            agent: None,
            price: None,
        }
    }

    /// Every column of the tensor, in order: the agent checks, then the
    /// validators and verifiers.
    pub(crate) fn check_infos(&self) -> Vec<probity_core::CheckInfo> {
        let mut infos = self
            .agent
            .as_ref()
            .map_or_else(Vec::new, |a| a.infos.clone());
        infos.extend(self.checks.infos());
        infos
    }

    /// The number of columns, K.
    pub fn columns(&self) -> usize {
        self.agent.as_ref().map_or(0, |a| a.infos.len()) + self.checks.len()
    }

    /// Add inputs.
    pub fn inputs(mut self, inputs: impl IntoIterator<Item = Input>) -> Self {
        self.inputs = self.inputs.iter().cloned().chain(inputs).collect();
        self
    }

    /// Add a validator (a column after the validators added before it).
    pub fn validator(mut self, v: Validator) -> Self {
        self.checks.validators.push(v);
        self
    }

    /// Add a verifier (columns after every validator).
    pub fn verifier(mut self, v: Verifier) -> Self {
        self.checks.verifiers.push(v);
        self
    }

    /// Set M.
    pub fn outputs_per_input(mut self, m: usize) -> Self {
        self.outputs_per_input = m;
        self
    }

    /// Measure the guarded system under `policy`.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Sequential testing: N × M is the budget, inputs are sampled in a
    /// random order, in rounds, and the run stops once every check's
    /// verdict is established by its confidence sequence, when no open
    /// check can settle within the budget, or when the budget is spent.
    pub fn sequential(mut self) -> Self {
        self.sequential = Some(self.sequential.unwrap_or_default());
        self
    }

    /// [`Experiment::sequential`] with the input order's seed fixed.
    pub fn sequential_seed(mut self, seed: u64) -> Self {
        self.sequential = Some(Sequential { seed: Some(seed) });
        self
    }

    /// Set the calls in flight at once.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Set how the tensor is analysed.
    pub fn analysis(mut self, analysis: Analysis) -> Self {
        self.analysis = analysis;
        self
    }

    /// Set the prompt: an optional system message and the user message,
    /// both minijinja templates over `input`.
    pub fn prompt(mut self, system: Option<&str>, user: &str) -> Result<Self, TemplateError> {
        self.prompt = Arc::new(PromptTemplate::new(system, user)?);
        Ok(self)
    }

    /// What the rate limits make of the calls of `samples` samples (all
    /// N × M, or what a resumed run still lacks): one call to the system
    /// per sample and one per judge, each at its first try; prompts
    /// estimated as the limiter does ([`crate::provider::call::estimated_tokens`]),
    /// rendered only when a token limit is set. A lower bound on the time
    /// the run takes ([`Pace`]).
    pub fn pace(&self, samples: u64) -> Pace {
        let c = &self.calls;
        let per_sample = 1 + self.checks.verifiers.len() as u64;
        let calls = samples.saturating_mul(per_sample);
        let mut prompt_tokens = 0.0;
        if c.tokens_per_minute.is_some() && !self.inputs.is_empty() {
            // The system's prompts, in the proportion the samples are of
            // N × M.
            let all: f64 = self
                .inputs
                .iter()
                .filter_map(|input| self.prompt.render(input).ok())
                .map(|m| crate::provider::call::estimated_tokens(&m))
                .sum();
            let total = (self.inputs.len() * self.outputs_per_input.max(1)) as f64;
            prompt_tokens = all * self.outputs_per_input as f64 * samples as f64 / total;
        }
        Pace::new(
            calls,
            prompt_tokens,
            c.requests_per_minute,
            c.tokens_per_minute,
        )
    }

    /// What is wrong with this experiment before anything is called, if
    /// anything.
    pub fn problem(&self) -> Option<String> {
        if self.inputs.is_empty() {
            return Some("no inputs: a reliability test needs at least one".into());
        }
        use crate::bounds::{within, MAX_CONCURRENCY, MAX_OUTPUTS_PER_INPUT};
        if let Err(m) = within(
            "outputs_per_input",
            self.outputs_per_input,
            MAX_OUTPUTS_PER_INPUT,
        ) {
            return Some(m);
        }
        if self.columns() == 0 {
            return Some(
                "no validators or verifiers: a reliability test needs at least one check".into(),
            );
        }
        if let Err(m) = within("concurrency", self.concurrency, MAX_CONCURRENCY) {
            return Some(m);
        }
        if let Err(m) =
            crate::bounds::shape(self.inputs.len(), self.outputs_per_input, self.columns())
        {
            return Some(m);
        }
        if !(0.0..=1.0).contains(&self.error_budget) {
            return Some(format!(
                "error_budget = {} must be a share of the samples between 0 and 1",
                self.error_budget
            ));
        }
        let mut names = std::collections::HashSet::new();
        self.checks
            .infos()
            .into_iter()
            .find(|c| !names.insert(c.name.clone()))
            .map(|dup| format!("two checks are named {:?}; names must be unique", dup.name))
    }

    /// The settings stored with each run of this experiment.
    pub(crate) fn stored_settings(&self) -> StoredSettings {
        let retry = self.retry.as_ref().map(|r| r.stored(&self.checks));
        StoredSettings {
            // A seed drawn at the run's start is set by the runner; 0
            // here keeps the experiment's identity the same across runs.
            sequential: self.sequential.map(|s| StoredSequential {
                seed: s.seed.unwrap_or(0),
            }),
            prices: self.checks.prices(self.price.as_ref()),
            ..StoredSettings::new(&self.analysis, retry)
        }
    }
}
