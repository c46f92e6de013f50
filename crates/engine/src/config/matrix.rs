//! `[matrix]`: lists of values for fields of `[system]` and `[prompt]`,
//! expanded to their product as variants (docs/config.md, Matrix) — what
//! promptfoo's prompts × providers grid is, run as a variants run with its
//! paired comparison and Holm adjustment.
//!
//! ```toml
//! [matrix]
//! prompt.system = { terse = "Answer in one sentence.", polite = "Be polite." }
//! system.model = ["gpt-4o-mini", "gpt-4o"]
//! ```
//!
//! A field holds a list of values (each named by itself: a short string,
//! after its last '/', or a number) or a table of named values (`name =
//! value`, for long prompts). Combinations are taken in the written order,
//! the last field varying fastest; the first combination is the reference.
//! Each is named `label=value · label=value`, a field's label being its
//! last key (`prompt` for `prompt.system`), or the whole dotted key when
//! two fields would share one.

use crate::config::key_lines::{line_of, walk};
use crate::config::set::Set;
use crate::config::ConfigError;
use std::collections::HashMap;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::Value;

/// Most variants a matrix may expand to: each is a whole run.
pub const MAX_VARIANTS: usize = 64;

/// Longest name a value gets from itself; a longer one is numbered.
const MAX_VALUE_LABEL: usize = 24;

/// Separator of a combination's `label=value` parts.
pub const SEPARATOR: &str = " · ";

/// One combination of the matrix: its name and its fields, as `--set`s
/// with the line each field is written on.
#[derive(Debug, Clone, PartialEq)]
pub struct Combination {
    pub name: String,
    /// The line of the `[matrix]` table.
    pub line: usize,
    pub sets: Vec<(Set, usize)>,
}

/// A field of the matrix: its dotted path, its line, and its values, each
/// with the name it is shown by.
struct Field {
    path: Vec<String>,
    line: usize,
    /// Where it is written (byte offset): the fields' order.
    offset: usize,
    values: Vec<(String, Value)>,
}

fn invalid(path: &Path, line: usize, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        path: path.to_path_buf(),
        message: format!("line {line}: [matrix]: {message}"),
    }
}

/// The `[matrix]` table's line and its keys' byte offsets.
fn lines(text: &str) -> (usize, HashMap<String, usize>) {
    let mut keys = HashMap::new();
    let Ok(doc) = DeTable::parse(text) else {
        return (1, keys);
    };
    let Some((k, v)) = doc
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "matrix")
    else {
        return (1, keys);
    };
    let mut first = usize::MAX;
    if let DeValue::Table(t) = v.get_ref() {
        walk(t, "", &mut keys, &mut first);
    }
    // The header `[matrix]` (or the key `matrix`), not its first field.
    let header = text
        .lines()
        .position(|l| {
            let t = l.trim_start();
            t.starts_with("[matrix]") || t.starts_with("[matrix.")
        })
        .map_or_else(|| line_of(text, k.span().start), |i| i + 1);
    (header, keys)
}

/// The line of the `[matrix]` table in `text` (1 when it has none).
pub fn table_line(text: &str) -> usize {
    lines(text).0
}

/// The combinations of `matrix` (the `[matrix]` table of `text`, read from
/// `path`), in order. An empty list, a key that is no field of `[system]`
/// or `[prompt]`, a value that is neither a list nor a table of named
/// values, two values shown by one name, a name over `max_name` characters,
/// or more than [`MAX_VARIANTS`] combinations is an error naming the file,
/// the line and the field. The fields' values are checked when each
/// variant's configuration is built (as a `[[variant]]`'s are).
pub fn expand(
    matrix: &Value,
    text: &str,
    path: &Path,
    max_name: usize,
) -> Result<Vec<Combination>, ConfigError> {
    let (at, keys) = lines(text);
    let Value::Table(top) = matrix else {
        return Err(invalid(
            path,
            at,
            "must be a table of fields (`system.model = [\"a\", \"b\"]`)",
        ));
    };
    if top.is_empty() {
        return Err(invalid(path, at, "has no field; give lists of values for fields of [system] and [prompt] (e.g. system.model = [\"a\", \"b\"])"));
    }
    let offset = |k: &str| keys.get(k).copied();
    let line = |k: &str| offset(k).map_or(at, |o| line_of(text, o));
    let mut fields = Vec::new();
    for (table, inner) in top {
        if table != "system" && table != "prompt" {
            return Err(invalid(
                path,
                line(table),
                format!("unknown key `{table}`; a matrix holds lists of values for fields of [system] and [prompt] (system.FIELD, prompt.FIELD)"),
            ));
        }
        let Value::Table(inner) = inner else {
            return Err(invalid(
                path,
                line(table),
                format!("`{table}` must hold fields of [{table}] (`{table}.FIELD = [values]`)"),
            ));
        };
        for (name, values) in inner {
            let dotted = format!("{table}.{name}");
            let mut f = field(&dotted, values, line(&dotted), &keys, text, path)?;
            f.offset = offset(&dotted).unwrap_or(0);
            fields.push(f);
        }
    }
    fields.sort_by_key(|f| f.offset);
    let count = fields
        .iter()
        .try_fold(1usize, |n, f| n.checked_mul(f.values.len()))
        .unwrap_or(usize::MAX);
    if count > MAX_VARIANTS {
        let sizes: Vec<String> = fields
            .iter()
            .map(|f| format!("{} {}", f.path.join("."), f.values.len()))
            .collect();
        return Err(invalid(
            path,
            at,
            format!(
                "{count} combinations ({}), more than {MAX_VARIANTS}: each is a whole run; shorten a list or split the file",
                sizes.join(" × ")
            ),
        ));
    }
    let labels = labels(&fields);
    let mut out = Vec::with_capacity(count);
    for k in 0..count {
        let mut rest = k;
        let mut parts = Vec::with_capacity(fields.len());
        let mut sets = Vec::with_capacity(fields.len());
        for (f, label) in fields.iter().zip(&labels).rev() {
            let (shown, value) = &f.values[rest % f.values.len()];
            rest /= f.values.len();
            parts.push(format!("{label}={shown}"));
            sets.push((
                Set {
                    path: f.path.clone(),
                    value: value.clone(),
                },
                f.line,
            ));
        }
        parts.reverse();
        sets.reverse();
        let name = parts.join(SEPARATOR);
        if name.chars().count() > max_name {
            return Err(invalid(
                path,
                at,
                format!("the combination's name {name:?} is over {max_name} characters; name long values with a table (`prompt.system = {{ terse = \"…\" }}`)"),
            ));
        }
        out.push(Combination {
            name,
            line: at,
            sets,
        });
    }
    Ok(out)
}

/// Field `dotted` (written on `line`): its values, each with its name.
fn field(
    dotted: &str,
    values: &Value,
    line: usize,
    keys: &HashMap<String, usize>,
    text: &str,
    path: &Path,
) -> Result<Field, ConfigError> {
    let named: Vec<(String, Value)> = match values {
        Value::Array(items) => {
            let shown: Vec<Option<String>> = items.iter().map(value_label).collect();
            let distinct: std::collections::HashSet<&Option<String>> = shown.iter().collect();
            let by_self = shown.iter().all(Option::is_some) && distinct.len() == items.len();
            items
                .iter()
                .zip(shown)
                .enumerate()
                .map(|(i, (v, s))| match (by_self, s) {
                    (true, Some(s)) => (s, v.clone()),
                    _ => (format!("#{}", i + 1), v.clone()),
                })
                .collect()
        }
        Value::Table(t) => {
            let mut named: Vec<(usize, String, Value)> = t
                .iter()
                .map(|(k, v)| {
                    let at = keys.get(&format!("{dotted}.{k}")).copied().unwrap_or(0);
                    (at, k.clone(), v.clone())
                })
                .collect();
            named.sort_by_key(|(at, _, _)| *at);
            for (at, k, _) in &named {
                if k.is_empty() || k.contains('/') || k.chars().any(char::is_control) {
                    return Err(invalid(
                        path,
                        line_of(text, *at),
                        format!("{dotted}: the value's name {k:?} must be non-empty, without '/' or control characters"),
                    ));
                }
            }
            named.into_iter().map(|(_, k, v)| (k, v)).collect()
        }
        other => {
            return Err(invalid(
                path,
                line,
                format!(
                    "{dotted}: must be a list of values (`[\"a\", \"b\"]`) or a table of named values (`{{ terse = \"…\" }}`), not a {}",
                    other.type_str()
                ),
            ))
        }
    };
    if named.is_empty() {
        return Err(invalid(
            path,
            line,
            format!("{dotted}: an empty list; give at least one value"),
        ));
    }
    Ok(Field {
        path: dotted.split('.').map(str::to_string).collect(),
        line,
        offset: 0,
        values: named,
    })
}

/// The name value `v` of a list is shown by: a string of at most
/// [`MAX_VALUE_LABEL`] characters after its last '/' (a model's
/// `org/name`), or a number or boolean; `None` for anything else.
fn value_label(v: &Value) -> Option<String> {
    let s = match v {
        Value::String(s) => s.rsplit('/').next().unwrap_or(s).trim().to_string(),
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) => v.to_string(),
        _ => return None,
    };
    let ok = !s.is_empty()
        && s.chars().count() <= MAX_VALUE_LABEL
        && !s.chars().any(char::is_control)
        && !s.contains(SEPARATOR.trim());
    ok.then_some(s)
}

/// Each field's label: its last key (`prompt` for `prompt.system`), or
/// its whole dotted key when another field has the same label.
fn labels(fields: &[Field]) -> Vec<String> {
    let short = |f: &Field| match f.path.as_slice() {
        [t, s] if t == "prompt" && s == "system" => "prompt".to_string(),
        p => p.last().cloned().unwrap_or_default(),
    };
    let all: Vec<String> = fields.iter().map(short).collect();
    fields
        .iter()
        .zip(&all)
        .map(|(f, s)| match all.iter().filter(|o| *o == s).count() {
            1 => s.clone(),
            _ => f.path.join("."),
        })
        .collect()
}
