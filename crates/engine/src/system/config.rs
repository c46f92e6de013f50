//! `ProviderConfig`: which provider to build, from the `[system]` table.

use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use crate::provider::command::{CommandConfig, CommandProvider};
use crate::provider::error::ConfigError;
use crate::provider::http::{HttpConfig, HttpProvider};
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::provider::types::Provider;
use crate::sim::agent::{SimAgentConfig, SimUserConfig};
use crate::sim::model::{SimConfig, SimModel};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which provider runs the system under test, and its settings.
///
/// Deserialized from a table tagged by `provider`; without a `provider` key
/// the built-in simulator (`sim`) is used. Unknown keys are errors.
///
/// ```toml
/// provider = "openai"          # openai | anthropic | http | command | sim
/// model = "gpt-4o-mini"
/// ```
///
/// Adding a provider: a module under `provider/` with its config and its
/// [`Provider`], one variant here, and the arms the compiler then asks for
/// ([`ProviderConfig::build`], [`ProviderConfig::model_name`],
/// [`crate::system::label`]).
// `remote = "Self"`: the derived Deserialize is an inherent function, which
// the trait impl below calls after putting in the default `provider`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "lowercase", remote = "Self")]
#[derive(strum::IntoStaticStr, strum::EnumDiscriminants)]
#[strum(serialize_all = "lowercase")]
#[strum_discriminants(
    name(ProviderKind),
    derive(strum::EnumString, strum::IntoStaticStr),
    strum(serialize_all = "lowercase")
)]
pub enum ProviderConfig {
    Openai(OpenAiConfig),
    Anthropic(AnthropicConfig),
    Http(HttpConfig),
    Command(CommandConfig),
    Sim(SimConfig),
    /// The simulated tool-using agent (an `[agent]` table; docs/agents.md).
    #[serde(rename = "sim-agent")]
    #[strum(serialize = "sim-agent")]
    #[strum_discriminants(strum(serialize = "sim-agent"))]
    SimAgent(SimAgentConfig),
    /// The simulated user (a `[user]` table).
    #[serde(rename = "sim-user")]
    #[strum(serialize = "sim-user")]
    #[strum_discriminants(strum(serialize = "sim-user"))]
    SimUser(SimUserConfig),
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig::Sim(SimConfig::default())
    }
}

impl<'de> Deserialize<'de> for ProviderConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
        let Some(map) = v.as_object_mut() else {
            return Err(D::Error::custom("a provider configuration must be a table"));
        };
        map.entry("provider")
            .or_insert_with(|| serde_json::Value::String("sim".into()));
        ProviderConfig::deserialize(v).map_err(D::Error::custom)
    }
}

impl Serialize for ProviderConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ProviderConfig::serialize(self, s)
    }
}

impl ProviderConfig {
    /// The provider's kind as written in configuration (`"openai"`, …).
    pub fn kind(&self) -> &'static str {
        self.into()
    }

    /// The model it names (`model` of an `openai` or `anthropic` table;
    /// `probity-sim` for the simulator); `None` for providers without one.
    pub fn model_name(&self) -> Option<&str> {
        match self {
            ProviderConfig::Openai(c) => Some(&c.model),
            ProviderConfig::Anthropic(c) => Some(&c.model),
            ProviderConfig::Sim(_) => Some("probity-sim"),
            ProviderConfig::SimAgent(_) => Some("probity-sim-agent"),
            ProviderConfig::SimUser(_) => Some("probity-sim-user"),
            ProviderConfig::Http(_) | ProviderConfig::Command(_) => None,
        }
    }

    /// Resolves the provider's relative paths against `dir`, the directory
    /// of the configuration file it was read from (made absolute here; an
    /// empty `dir` is the working directory). Call it once, when loading a
    /// file. Only the `command` provider has paths (see [`CommandConfig`]):
    /// its program when written with a `/`, and its working directory.
    pub fn resolve_paths(&mut self, dir: &Path) {
        if let ProviderConfig::Command(c) = self {
            c.base_dir = Some(absolute_dir(dir));
        }
    }

    /// Builds the provider: reads the environment variables it names,
    /// compiles its templates and validates its values.
    pub fn build(&self) -> Result<Arc<dyn Provider>, ConfigError> {
        Ok(match self {
            ProviderConfig::Openai(c) => Arc::new(OpenAiProvider::new(c.clone())?),
            ProviderConfig::Anthropic(c) => Arc::new(AnthropicProvider::new(c.clone())?),
            ProviderConfig::Http(c) => Arc::new(HttpProvider::new(c.clone())?),
            ProviderConfig::Command(c) => Arc::new(CommandProvider::new(c.clone())?),
            ProviderConfig::Sim(c) => Arc::new(SimModel::new(c.clone())?),
            ProviderConfig::SimAgent(c) => Arc::new(c.build().map_err(ConfigError::Invalid)?),
            ProviderConfig::SimUser(c) => Arc::new(c.build().map_err(ConfigError::Invalid)?),
        })
    }
}

/// `dir` made absolute (against the working directory); `""` is `.`.
pub(crate) fn absolute_dir(dir: &Path) -> PathBuf {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}
