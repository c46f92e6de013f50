//! Why a provider configuration cannot be turned into a provider.

use crate::provider::template::TemplateError;
use thiserror::Error;

/// A provider configuration that cannot be turned into a provider.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ConfigError {
    /// An environment variable the configuration names is not set.
    #[error("environment variable `{var}` is not set (needed for {needed_for})")]
    MissingEnv { var: String, needed_for: String },
    /// A value is out of range or malformed.
    #[error("invalid provider configuration: {0}")]
    Invalid(String),
    /// A request or prompt template does not compile.
    #[error(transparent)]
    Template(#[from] TemplateError),
}
