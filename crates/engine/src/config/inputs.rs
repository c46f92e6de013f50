//! Loading the inputs `input_1 … input_N` (§2.2): JSONL, CSV, or inline
//! `[[input]]` tables.
//!
//! Each input's id is its `id` field when present (it must be unique), else
//! its 1-based position. An input may carry a conversation in `messages`
//! (OpenAI's chat shape): it is read whole when the inputs are loaded, and
//! a message that cannot be sent on is an error naming the line, the
//! message and the field ([`crate::provider::template::input_conversation`]).
//!
//! A JSON line, a JSON file's element or an `[[input]]` table may carry
//! its own checks: `checks` (probity's keys) and `assert` (promptfoo's
//! assertions), taken out of its fields and kept as [`Carried`] for
//! [`crate::config::carried`] to compile into columns. A promptfoo test
//! case (`{"vars": {...}, "assert": [...]}`, [`promptfoo`]) is read as the
//! input its `vars` are; a JSON file may hold a list of inputs or tests, or
//! promptfoo's `{"tests": [...]}`.

use crate::config::promptfoo::{self, CarriedCheck};
use probity_core::Input;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum InputError {
    #[error("cannot read inputs {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: inputs must be .jsonl, .json or .csv, not {extension:?}")]
    Extension { path: PathBuf, extension: String },
    #[error("inline [[input]] #{index}: {message}")]
    Inline { index: usize, message: String },
    #[error("{origin}: input id {id:?} appears twice; ids must be unique")]
    DuplicateId { origin: String, id: String },
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    /// A check an input carries is wrong: `origin` is where the input is
    /// (`tests.jsonl:3`, `tests.json: tests[2]`, `inline [[input]] #2`).
    #[error("{origin}: {message}")]
    Carried { origin: String, message: String },
}

/// The checks one input carries, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The input's index among the loaded inputs.
    pub input: usize,
    /// Where the input is: `tests.jsonl:3`, `tests.json: tests[2]` (`[2]`
    /// in a plain list), `inline [[input]] #2`.
    pub origin: String,
    pub checks: Vec<CarriedCheck>,
}

/// The inputs loaded, and the checks some of them carry.
#[derive(Debug, Default)]
pub struct Loaded {
    pub inputs: Vec<Input>,
    pub carried: Vec<Carried>,
}

impl Loaded {
    /// Add one input read at `origin`, with the checks it carries.
    fn push(
        &mut self,
        (input, checks): (Input, Vec<CarriedCheck>),
        origin: impl FnOnce() -> String,
    ) {
        if !checks.is_empty() {
            self.carried.push(Carried {
                input: self.inputs.len(),
                origin: origin(),
                checks,
            });
        }
        self.inputs.push(input);
    }
}

/// Inputs from `file` (if set) followed by the inline tables.
pub(crate) fn load_inputs(
    file: &Option<PathBuf>,
    inline: &[Map<String, Value>],
) -> Result<Loaded, InputError> {
    let mut loaded = match file {
        Some(path) => read_file(path)?,
        None => Loaded::default(),
    };
    for (index, fields) in inline.iter().enumerate() {
        let position = loaded.inputs.len() + 1;
        let read =
            to_input(fields.clone(), position, true).map_err(|message| InputError::Inline {
                index: index + 1,
                message,
            })?;
        loaded.push(read, || format!("inline [[input]] #{}", index + 1));
    }
    let inputs = &loaded.inputs;
    let origin = file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "[[input]]".into());
    let mut seen = HashSet::new();
    if let Some(dup) = inputs.iter().find(|i| !seen.insert(i.id.as_str())) {
        return Err(InputError::DuplicateId {
            origin,
            id: dup.id.clone(),
        });
    }
    Ok(loaded)
}

fn read_file(path: &Path) -> Result<Loaded, InputError> {
    let read_err = |source| InputError::Read {
        path: path.to_path_buf(),
        source,
    };
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "jsonl" => {
            let text = std::fs::read_to_string(path).map_err(read_err)?;
            parse_jsonl(&text, path)
        }
        "json" => {
            let text = std::fs::read_to_string(path).map_err(read_err)?;
            parse_json_file(&text, path).unwrap_or_else(|| parse_jsonl(&text, path))
        }
        "csv" => {
            let bytes = std::fs::read(path).map_err(read_err)?;
            Ok(Loaded {
                inputs: parse_csv(bytes.as_slice(), path)?,
                carried: Vec::new(),
            })
        }
        "yaml" | "yml" => Err(InputError::File {
            path: path.to_path_buf(),
            message: format!(
                "probity reads inputs (and promptfoo tests) as JSON or JSON lines, not YAML: convert it once with `yq -o json {} > {}.json` and point `inputs` at that",
                path.display(),
                path.with_extension("").display()
            ),
        }),
        _ => Err(InputError::Extension {
            path: path.to_path_buf(),
            extension,
        }),
    }
}

/// The UTF-8 byte order mark some editors put first in a file.
const BOM: &str = "\u{feff}";

/// `text` without a leading byte order mark.
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// A JSON file read whole: a list of inputs or promptfoo tests, or
/// promptfoo's `{"tests": [...]}`; `None` when the file is not one JSON
/// list or object with `tests` (it is then read as JSON lines). Errors
/// name the element (`tests[2]`).
fn parse_json_file(text: &str, path: &Path) -> Option<Result<Loaded, InputError>> {
    let value: Value = serde_json::from_str(strip_bom(text)).ok()?;
    let (items, list) = match value {
        Value::Array(items) => (items, ""),
        Value::Object(mut top) => {
            let Some(Value::Array(tests)) = top.remove("tests") else {
                return None;
            };
            if let Some(key) = top.keys().next() {
                return Some(Err(InputError::File {
                    path: path.to_path_buf(),
                    message: format!(
                        "key `{key}`: probity reads only `tests` of a promptfoo file (the prompt is [prompt], the system [system] and the checks for every input [[validator]]/[[verifier]] in probity.toml)"
                    ),
                }));
            }
            (tests, "tests")
        }
        _ => return None,
    };
    let mut loaded = Loaded::default();
    for (k, item) in items.into_iter().enumerate() {
        let at = || format!("{}: {list}[{k}]", path.display());
        let err = |message: String| InputError::Carried {
            origin: at(),
            message,
        };
        let Value::Object(fields) = item else {
            return Some(Err(err(format!(
                "expected an object (an input, or a promptfoo test with `vars`), found {}",
                kind(&item)
            ))));
        };
        match to_input(fields, loaded.inputs.len() + 1, true) {
            Ok(read) => loaded.push(read, at),
            Err(message) => return Some(Err(err(message))),
        }
    }
    Some(Ok(loaded))
}

/// One JSON object per non-blank line (a leading byte order mark is
/// skipped): an input, or a promptfoo test case.
pub fn parse_jsonl(text: &str, path: &Path) -> Result<Loaded, InputError> {
    let text = strip_bom(text);
    let mut out = Loaded::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |message: String| InputError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            message,
        };
        let value: Value =
            serde_json::from_str(line).map_err(|e| err(format!("not valid JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(err(format!(
                "expected a JSON object with the input's fields, found {}",
                kind(&value)
            )));
        };
        let read = to_input(fields, out.inputs.len() + 1, true).map_err(err)?;
        out.push(read, || format!("{}:{}", path.display(), n + 1));
    }
    Ok(out)
}

/// A header row of field names, then one input per row (a leading byte
/// order mark is skipped). A quoted field still open at the end of the
/// file is an error naming the line its quote opened on (the csv reader
/// would take every row after it as that one field's text).
pub fn parse_csv(mut reader: impl std::io::Read, path: &Path) -> Result<Vec<Input>, InputError> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let bytes = bytes.strip_prefix(BOM.as_bytes()).unwrap_or(&bytes);
    if let Some(line) = unclosed_quote(bytes) {
        return Err(InputError::Line {
            path: path.to_path_buf(),
            line,
            message:
                "a quoted field opens here and is never closed (a `\"` without its closing `\"`)"
                    .into(),
        });
    }
    let mut rdr = csv::Reader::from_reader(bytes);
    let headers = rdr
        .headers()
        .map_err(|e| InputError::Line {
            path: path.to_path_buf(),
            line: 1,
            message: format!("cannot read the header row: {e}"),
        })?
        .clone();
    let mut out = Vec::new();
    for record in rdr.records() {
        let record = record.map_err(|e| InputError::Line {
            path: path.to_path_buf(),
            line: e.position().map_or(0, |p| p.line() as usize),
            message: e.to_string(),
        })?;
        let fields: Map<String, Value> = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
            .collect();
        let line = record
            .position()
            .map_or(out.len() + 2, |p| p.line() as usize);
        let (input, _) =
            to_input(fields, out.len() + 1, false).map_err(|message| InputError::Line {
                path: path.to_path_buf(),
                line,
                message,
            })?;
        out.push(input);
    }
    Ok(out)
}

/// The 1-based line where a quoted CSV field opens that the file never
/// closes, as the csv reader reads quotes: a `"` first in a field opens
/// it, `""` inside is an escaped quote, a lone `"` closes it; elsewhere a
/// `"` is text.
fn unclosed_quote(bytes: &[u8]) -> Option<usize> {
    let (mut line, mut opened_at) = (1, None);
    let (mut at_field_start, mut i) = (true, 0);
    while i < bytes.len() {
        let b = bytes[i];
        match opened_at {
            Some(_) => {
                if b == b'"' {
                    if bytes.get(i + 1) == Some(&b'"') {
                        i += 1;
                    } else {
                        opened_at = None;
                    }
                }
            }
            None => {
                if b == b'"' && at_field_start {
                    opened_at = Some(line);
                }
                at_field_start = b == b',' || b == b'\n' || b == b'\r';
            }
        }
        if b == b'\n' {
            line += 1;
        }
        i += 1;
    }
    opened_at
}

/// The input `fields` hold (a promptfoo test's `vars`), and the checks it
/// carries when `carries` (`checks`, `assert`; a CSV row carries none:
/// its columns are text).
fn to_input(
    mut fields: Map<String, Value>,
    position: usize,
    carries: bool,
) -> Result<(Input, Vec<CarriedCheck>), String> {
    let mut checks = Vec::new();
    if carries && promptfoo::is_test(&fields) {
        (fields, checks) = promptfoo::test(fields)?;
    } else if carries {
        if let Some(list) = fields.remove("checks") {
            checks = own_checks(&list)?;
        }
        if let Some(list) = fields.remove("assert") {
            checks.extend(promptfoo::asserts(&list)?);
        }
    }
    let id = match fields.get("id") {
        None => position.to_string(),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(format!(
                "field \"id\" must be a non-empty string or a number, found {}",
                kind(other)
            ))
        }
    };
    let input = Input {
        id,
        fields: fields.into(),
    };
    crate::provider::template::input_conversation(&input)
        .map_err(|e| format!("input {:?}: field `messages`: {e}", input.id))?;
    Ok((input, checks))
}

/// An input's `checks`: a list of tables in probity's keys, each named by
/// its kind unless it says otherwise.
fn own_checks(list: &Value) -> Result<Vec<CarriedCheck>, String> {
    let Value::Array(items) = list else {
        return Err(format!(
            "field `checks` must be a list of checks, found {}",
            kind(list)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let at = format!("checks[{k}]");
            let Value::Object(table) = c else {
                return Err(format!(
                    "{at}: a check must be an object (`kind`, `value`, …), found {}",
                    kind(c)
                ));
            };
            // Named by its kind (`contains`, `not-regex`), an expression
            // `check`, unless it gives a `name`.
            let negated = table.get("negate") == Some(&Value::Bool(true));
            let default_name = match table.get("kind") {
                Some(Value::String(k)) if negated => format!("not-{k}"),
                Some(Value::String(k)) => k.clone(),
                _ => "check".to_string(),
            };
            Ok(CarriedCheck {
                at,
                default_name,
                table: table.clone(),
            })
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_ids_and_errors_name_the_line() {
        let p = Path::new("in.jsonl");
        let ok = parse_jsonl("{\"text\":\"hi\"}\n\n{\"id\":\"b\",\"text\":\"yo\"}\n", p)
            .unwrap()
            .inputs;
        assert_eq!(ok[0].id, "1");
        assert_eq!(ok[1].id, "b");
        let err = parse_jsonl("{\"text\":\"hi\"}\n[1,2]\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("in.jsonl:2: expected a JSON object"),
            "{err}"
        );
        let err = parse_jsonl("{\"text\":\"hi\"}\n{oops\n", p)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("in.jsonl:2: not valid JSON"), "{err}");
    }

    #[test]
    fn csv_rows_become_fields() {
        let rows = parse_csv(
            "id,text\nx,Thank you!\ny,\"a, b\"\n".as_bytes(),
            Path::new("in.csv"),
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].field_str("text").as_deref(), Some("a, b"));
        assert_eq!(rows[0].id, "x");
        let err = parse_csv("id,text\nx,1,extra\n".as_bytes(), Path::new("in.csv"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("in.csv:2:"), "{err}");
    }

    #[test]
    fn a_conversation_is_read_whole_when_loaded_and_a_bad_message_named() {
        let p = Path::new("chats.jsonl");
        let ok = r#"{"id":"c1","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t","content":"1"}]}"#;
        let bad = r#"{"id":"c2","messages":[{"role":"user","content":"Hi"},{"role":"robot","content":"beep"}]}"#;
        let rows = parse_jsonl(&format!("{ok}\n"), p).unwrap().inputs;
        assert_eq!(
            rows[0]
                .fields
                .get("messages")
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            3
        );
        let err = parse_jsonl(&format!("{ok}\n{bad}\n"), p)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "chats.jsonl:2: input \"c2\": field `messages`: message 1: unknown role `robot` (expected system, developer, user, assistant or tool)"
        );
        // A CSV column holds the conversation as JSON text.
        let csv =
            "id,messages\nx,\"[{\"\"role\"\":\"\"user\"\",\"\"content\"\":\"\"Hi\"\"}]\"\ny,[]\n";
        let err = parse_csv(csv.as_bytes(), Path::new("c.csv"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.csv:3: input \"y\": field `messages`"),
            "{err}"
        );
        assert!(err.contains("`messages` is empty"), "{err}");
    }

    #[test]
    fn duplicate_ids_are_rejected() {
        let mut a = Map::new();
        a.insert("id".into(), Value::String("same".into()));
        let err = load_inputs(&None, &[a.clone(), a]).unwrap_err().to_string();
        assert!(err.contains("\"same\" appears twice"), "{err}");
    }
}
