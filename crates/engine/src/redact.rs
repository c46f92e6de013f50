//! The one redaction point: every secret value a configuration reads (an
//! API key variable, any `${ENV:…}` reference in a URL, header or body) is
//! registered here when it is read, and every text that comes back from a
//! provider or a server — outputs, error messages, bodies quoted in them —
//! passes through [`redact`] in [`crate::call::Caller::call`] before
//! anything stores, prints, reports or answers it. A secret is replaced by
//! `***` wherever it appears as a substring (in a URL path, an echoed
//! `Authorization` header, a JSON string).
//!
//! Values shorter than [`MIN_SECRET_LEN`] are not registered: replacing
//! every `1` or `on` in every message would garble them and hide nothing
//! worth hiding.

use crate::provider::types::ProviderError;
use std::borrow::Cow;
use std::sync::RwLock;

/// Shortest value treated as a secret, in bytes.
pub const MIN_SECRET_LEN: usize = 4;

/// What a secret is replaced by.
pub const MASK: &str = "***";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remember `value` as a secret (idempotent).
pub fn register(value: &str) {
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    if !secrets.iter().any(|s| s == value) {
        secrets.push(value.to_string());
        // Longest first, so a secret containing another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every registered secret replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    let mut out = Cow::Borrowed(text);
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), MASK));
        }
    }
    out
}

/// [`redact`] into an owned string, reusing it when nothing changes.
pub fn redact_owned(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

/// `e` with its texts redacted.
pub fn error(e: ProviderError) -> ProviderError {
    match e {
        ProviderError::Server { status, body } => ProviderError::Server {
            status,
            body: redact_owned(body),
        },
        ProviderError::Rejected { status, body } => ProviderError::Rejected {
            status,
            body: redact_owned(body),
        },
        ProviderError::Transport(m) => ProviderError::Transport(redact_owned(m)),
        ProviderError::BadResponse(m) => ProviderError::BadResponse(redact_owned(m)),
        ProviderError::Command(m) => ProviderError::Command(redact_owned(m)),
        ProviderError::Raised(m) => ProviderError::Raised(redact_owned(m)),
        e @ (ProviderError::RateLimited { .. } | ProviderError::Timeout(_)) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_are_masked_and_short_values_ignored() {
        register("sk-test-redact-1234567890");
        register("ab");
        assert_eq!(
            redact("Authorization: Bearer sk-test-redact-1234567890; ab").as_ref(),
            "Authorization: Bearer ***; ab"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }
}
