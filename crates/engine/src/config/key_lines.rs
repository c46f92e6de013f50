//! Where keys are written in a TOML text: the line (1-based) of a byte
//! offset, and of every dotted key under a table, for errors that name the
//! line of a field (`[[variant]]`, `[matrix]`).

use std::collections::HashMap;
use toml::de::DeTable;

/// The line (1-based) of byte `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Every key under `t` as `prefix` + `dotted.key` → its byte offset in
/// `text` (its line: [`line_of`]), into `keys`; `first` becomes the
/// smallest offset seen.
pub fn walk(t: &DeTable<'_>, prefix: &str, keys: &mut HashMap<String, usize>, first: &mut usize) {
    for (k, v) in t.iter() {
        let path = format!("{prefix}{}", k.get_ref());
        *first = (*first).min(k.span().start);
        keys.insert(path.clone(), k.span().start);
        if let toml::de::DeValue::Table(inner) = v.get_ref() {
            walk(inner, &format!("{path}."), keys, first);
        }
    }
}
