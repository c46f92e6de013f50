//! Inputs and samples: the `input_i` and `output_ij` of the paper (§2.2).

pub use crate::fields::Fields;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One dataset row, `input_i`: named fields that a prompt template renders.
///
/// The conventional field `text` holds the user message when a dataset has a
/// single free-text column.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Input {
    /// A stable identifier (the dataset's `id` field, or the row number).
    pub id: String,
    /// The row's fields (a JSON object held as its text: see [`Fields`]).
    pub fields: Fields,
}

impl Input {
    /// An input with a single `text` field.
    pub fn text(id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut fields = Fields::new();
        fields.insert("text".into(), Value::String(text.into()));
        Input {
            id: id.into(),
            fields,
        }
    }

    /// The field `name` as a string: strings as they are, other JSON values
    /// in their JSON form, `None` when absent.
    pub fn field_str(&self, name: &str) -> Option<String> {
        self.fields.get(name).map(|v| match v {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    /// All fields joined into one text (`text` alone when present): what a
    /// predicate over "the input" sees when it treats the input as a string,
    /// as the paper's `"Thank you" in i` does.
    pub fn as_text(&self) -> String {
        if let Some(t) = self.field_str("text") {
            return t;
        }
        self.fields
            .to_map()
            .into_iter()
            .map(|(_, v)| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One output of the system, `output_ij`: repetition `j` for input `i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Index `i` of the input.
    pub input: usize,
    /// Index `j` of the repetition, `0..M`.
    pub repetition: usize,
    /// The text the system produced.
    pub output: String,
}
