//! Test doubles shared by the engine's integration tests.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use probity_engine::provider::{Completion, Provider, ProviderError, Request};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts the calls that reach a provider (the system or a judge).
pub struct Counting {
    pub inner: Arc<dyn Provider>,
    pub calls: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl Provider for Counting {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.complete(request).await
    }

    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }
}
