//! What every provider speaks: a [`Request`] (rendered messages for one
//! input, its repetition and attempt) in, a [`Completion`] or a typed
//! [`ProviderError`] out, behind the [`Provider`] trait.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use thiserror::Error;

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

/// A request to the system: rendered messages for one input and the index
/// of the repetition (`j`) it is for. `input` carries the dataset row for
/// providers that want the fields themselves (command, sim).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub messages: Vec<Message>,
    pub repetition: u32,
    /// Attempt number within a retry loop (0 for a plain test run).
    pub attempt: u32,
    pub input: probity_core::Input,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// Why a call produced no output.
#[derive(Debug, Clone, Error, PartialEq, Serialize, Deserialize)]
pub enum ProviderError {
    #[error("rate limited (HTTP 429){}", retry_after.map(|d| format!(", retry after {:.1}s", d.as_secs_f64())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    #[error("server error: HTTP {status}: {body}")]
    Server { status: u16, body: String },
    #[error("request rejected: HTTP {status}: {body}")]
    Rejected { status: u16, body: String },
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("transport error: {0}")]
    Transport(String),
    #[error("malformed response: {0}")]
    BadResponse(String),
    #[error("command failed: {0}")]
    Command(String),
    /// A system running in this process (a Python callable) raised: the
    /// exception's type and message. Final, like a rejection.
    #[error("the system raised {0}")]
    Raised(String),
}

impl ProviderError {
    /// Whether trying again may help: rate limits, 5xx, timeouts and
    /// transport failures. Rejections (4xx other than 429) and malformed
    /// answers are final.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
                | ProviderError::Timeout(_)
                | ProviderError::Transport(_)
        )
    }

    /// The server's requested wait, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

/// The system under test.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// One call. Implementations apply no retries of their own: the runner
    /// owns backoff, rate limits and timeouts.
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError>;

    /// A stable description of everything that determines the answer besides
    /// the messages (kind, model, sampling parameters), used in the cache
    /// key. Never includes secrets.
    fn fingerprint(&self) -> String;
}

#[async_trait::async_trait]
impl<P: Provider + ?Sized> Provider for std::sync::Arc<P> {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        (**self).complete(request).await
    }

    fn fingerprint(&self) -> String {
        (**self).fingerprint()
    }
}
