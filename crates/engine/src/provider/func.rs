//! `FnProvider`: a Rust closure as the system under test (library use).

use super::types::{Completion, Provider, ProviderError, Request};

/// Wraps a synchronous closure `Fn(&Request) -> Result<Completion, ProviderError>`
/// as a [`Provider`]. The closure runs on the calling task, so it should be
/// quick; for blocking work, wrap it yourself.
pub struct FnProvider<F> {
    f: F,
    fingerprint: String,
}

impl<F> FnProvider<F>
where
    F: Fn(&Request) -> Result<Completion, ProviderError> + Send + Sync + 'static,
{
    /// A provider calling `f`, with fingerprint `"fn"`.
    pub fn new(f: F) -> Self {
        FnProvider {
            f,
            fingerprint: "fn".to_string(),
        }
    }

    /// Sets the fingerprint (part of the output cache key): change it when
    /// the closure's behaviour changes, or cached outputs will be reused.
    pub fn with_fingerprint(mut self, fingerprint: impl Into<String>) -> Self {
        self.fingerprint = fingerprint.into();
        self
    }
}

impl<F> std::fmt::Debug for FnProvider<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnProvider")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl<F> Provider for FnProvider<F>
where
    F: Fn(&Request) -> Result<Completion, ProviderError> + Send + Sync + 'static,
{
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        (self.f)(request)
    }

    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }
}
