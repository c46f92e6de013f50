//! Secrets masked in traced text before it is stored or exported: the
//! values the configuration registered (`provider::redact`) and the
//! well-known shapes of credentials a user may paste into a conversation
//! or a tool may echo (API keys of the major providers and forges, bearer
//! tokens, JWTs, private key blocks, passwords in URLs). Checks see the
//! span's text as it was; the store and exported files hold it masked.

use regex::Regex;
use std::sync::OnceLock;

/// What a masked secret becomes.
pub const MASK: &str = "***";

fn patterns() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            // OpenAI, Anthropic and most "sk-" keys.
            r"\bsk-[A-Za-z0-9_\-]{16,}",
            // AWS access key ids.
            r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            // GitHub tokens.
            r"|\bgh[pousr]_[A-Za-z0-9]{30,}",
            r"|\bgithub_pat_[A-Za-z0-9_]{30,}",
            // Google API keys.
            r"|\bAIza[0-9A-Za-z_\-]{35}",
            // Slack tokens.
            r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}",
            // JSON Web Tokens.
            r"|\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+",
            // Bearer tokens in an echoed header.
            r"|(?i:bearer)\s+[A-Za-z0-9_\-\.=+/]{16,}",
            // PEM private keys.
            r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            // user:password@ in a URL.
            r"|(?P<scheme>[a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+@",
        ))
        .expect("the secret patterns compile")
    })
}

/// `text` with every secret masked.
pub fn mask(text: &str) -> String {
    let registered = crate::provider::redact::redact(text);
    patterns()
        .replace_all(&registered, |c: &regex::Captures<'_>| {
            match c.name("scheme") {
                Some(s) => format!("{}{MASK}@", s.as_str()),
                None => MASK.to_string(),
            }
        })
        .into_owned()
}

/// Every string inside `v` masked.
pub(crate) fn mask_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(mask(s)),
        Value::Array(a) => Value::Array(a.iter().map(mask_json).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), mask_json(v))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::mask;

    #[test]
    fn credentials_are_masked_and_ordinary_text_is_not() {
        let cases = [
            (
                "my key is sk-proj-abcdefghijklmnop1234 ok",
                "my key is *** ok",
            ),
            ("AKIAABCDEFGHIJKLMNOP", "***"),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "token ***",
            ),
            (
                "Authorization: Bearer abc.def-ghi_jkl=mnop",
                "Authorization: ***",
            ),
            (
                "postgres://app:hunter2@db:5432/x",
                "postgres://app:***@db:5432/x",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----!",
                "***!",
            ),
            ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.sig_nature", "***"),
        ];
        for (text, want) in cases {
            assert_eq!(mask(text), want, "{text}");
        }
        // Words that merely resemble the shapes stay.
        for text in [
            "ask-me anything",
            "a skeleton key",
            "bearer of news",
            "https://example.com/a@b",
        ] {
            assert_eq!(mask(text), text);
        }
    }
}
