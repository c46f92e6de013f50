//! Attempts per class of request (paper §4.2.5, m adapted to the input):
//! the file `probity plan RUN --by FIELD --out FILE` writes —
//!
//! ```toml
//! field = "category"
//! [attempts]
//! billing = 2
//! refunds = 5
//! ```
//!
//! — and how a request's class is found: its `x-probity-class` header,
//! else its body's `metadata.FIELD` (the Chat Completions `metadata`
//! object, when the upstream takes it: a request with a field the upstream
//! does not take is refused, docs/serve.md). A request of no listed class gets the policy's attempts; every
//! class's attempts are still bounded by `[retry] deadline_s`.

use axum::http::HeaderMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The most attempts a class may ask for.
const MAX_ATTEMPTS: u32 = 100;

/// Attempts per class.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classes {
    /// The input field the classes are values of (`metadata.FIELD`).
    pub field: String,
    pub attempts: BTreeMap<String, u32>,
}

impl Classes {
    /// Read and check the file at `path`.
    pub fn load(path: &Path) -> Result<Classes, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let classes: Classes =
            toml::from_str(&text).map_err(|e| crate::toml_error::describe(&e, &text))?;
        if let Some((class, m)) = classes
            .attempts
            .iter()
            .find(|(_, &m)| m == 0 || m > MAX_ATTEMPTS)
        {
            return Err(format!(
                "[attempts] {class:?} = {m}: attempts must be 1 to {MAX_ATTEMPTS}"
            ));
        }
        Ok(classes)
    }

    /// The attempts for a request with `headers` and `metadata` (its
    /// body's `metadata` object, if any); `None`: no listed class.
    pub fn attempts_for(
        &self,
        headers: &HeaderMap,
        metadata: Option<&serde_json::Value>,
    ) -> Option<u32> {
        let from_header = headers
            .get("x-probity-class")
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        let from_body = metadata
            .and_then(|m| m.get(&self.field))
            .and_then(|v| v.as_str());
        let class = from_header.or(from_body)?;
        self.attempts.get(class).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> Classes {
        toml::from_str("field = \"category\"\n[attempts]\nbilling = 2\nrefunds = 5\n").unwrap()
    }

    #[test]
    fn the_header_wins_then_the_metadata_field() {
        let c = classes();
        let mut h = HeaderMap::new();
        let meta = serde_json::json!({"category": "refunds"});
        assert_eq!(c.attempts_for(&h, Some(&meta)), Some(5));
        h.insert("x-probity-class", "billing".parse().unwrap());
        assert_eq!(c.attempts_for(&h, Some(&meta)), Some(2));
        assert_eq!(c.attempts_for(&HeaderMap::new(), None), None);
        let unknown = serde_json::json!({"category": "other"});
        assert_eq!(c.attempts_for(&HeaderMap::new(), Some(&unknown)), None);
    }

    #[test]
    fn attempts_out_of_range_are_refused_naming_the_class() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "field = \"x\"\n[attempts]\nbad = 0\n").unwrap();
        let e = Classes::load(&path).unwrap_err();
        assert!(e.contains("\"bad\" = 0"), "{e}");
    }
}
