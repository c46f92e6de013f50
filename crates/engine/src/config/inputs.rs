//! Loading the inputs `input_1 … input_N` (§2.2): JSONL, CSV, or inline
//! `[[input]]` tables.
//!
//! Each input's id is its `id` field when present (it must be unique), else
//! its 1-based position. An input may carry a conversation in `messages`
//! (OpenAI's chat shape): it is read whole when the inputs are loaded, and
//! a message that cannot be sent on is an error naming the line, the
//! message and the field ([`crate::provider::template::input_conversation`]).

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
}

/// Inputs from `file` (if set) followed by the inline tables.
pub(crate) fn load_inputs(
    file: &Option<PathBuf>,
    inline: &[Map<String, Value>],
) -> Result<Vec<Input>, InputError> {
    let mut inputs = match file {
        Some(path) => read_file(path)?,
        None => Vec::new(),
    };
    for (index, fields) in inline.iter().enumerate() {
        let position = inputs.len() + 1;
        inputs.push(
            to_input(fields.clone(), position).map_err(|message| InputError::Inline {
                index: index + 1,
                message,
            })?,
        );
    }
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
    Ok(inputs)
}

fn read_file(path: &Path) -> Result<Vec<Input>, InputError> {
    let read_err = |source| InputError::Read {
        path: path.to_path_buf(),
        source,
    };
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "jsonl" | "json" => {
            let text = std::fs::read_to_string(path).map_err(read_err)?;
            parse_jsonl(&text, path)
        }
        "csv" => {
            let bytes = std::fs::read(path).map_err(read_err)?;
            parse_csv(bytes.as_slice(), path)
        }
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

/// One JSON object per non-blank line (a leading byte order mark is
/// skipped).
pub fn parse_jsonl(text: &str, path: &Path) -> Result<Vec<Input>, InputError> {
    let text = strip_bom(text);
    let mut out = Vec::new();
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
        out.push(to_input(fields, out.len() + 1).map_err(err)?);
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
        out.push(
            to_input(fields, out.len() + 1).map_err(|message| InputError::Line {
                path: path.to_path_buf(),
                line,
                message,
            })?,
        );
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

fn to_input(fields: Map<String, Value>, position: usize) -> Result<Input, String> {
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
    Ok(input)
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
        let ok = parse_jsonl("{\"text\":\"hi\"}\n\n{\"id\":\"b\",\"text\":\"yo\"}\n", p).unwrap();
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
        let rows = parse_jsonl(&format!("{ok}\n"), p).unwrap();
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
