//! An input's fields (§2.2, `input_i`): a JSON object held as its
//! canonical compact text, one allocation per input.
//!
//! A `serde_json::Map` is a B-tree whose first leaf alone is about 600
//! bytes, whatever the number of fields: a million two-field inputs took
//! over 600 MB. The text is the map's own serialisation (keys in sorted
//! order, compact), so it is what the run store writes and what two equal
//! maps have in common; fields are parsed when read.

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// The fields of one input: a JSON object, held as its canonical text
/// (`Value::Object(map).to_string()`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Fields(Box<str>);

impl Fields {
    /// No fields (`{}`).
    pub fn new() -> Self {
        Fields("{}".into())
    }

    /// The fields of `map`.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        // Serialising a map of `Value`s cannot fail (string keys only).
        Fields(serde_json::to_string(map).unwrap_or_default().into())
    }

    /// The fields as a map (parsed: a copy).
    pub fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.0).unwrap_or_default()
    }

    /// The canonical JSON text: an object, keys sorted, compact.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The value of field `name` (parsed: a copy), `None` when absent.
    /// Only that field's value is built; the others are skipped.
    pub fn get(&self, name: &str) -> Option<Value> {
        let mut de = serde_json::Deserializer::from_str(&self.0);
        Find(name).deserialize(&mut de).ok().flatten()
    }

    /// Whether field `name` is there.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The field names, in sorted order.
    pub fn keys(&self) -> Vec<String> {
        self.to_map().into_iter().map(|(k, _)| k).collect()
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.to_map().len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        &*self.0 == "{}"
    }

    /// Set field `name` to `value`, returning its previous value.
    pub fn insert(&mut self, name: String, value: Value) -> Option<Value> {
        let mut map = self.to_map();
        let old = map.insert(name, value);
        *self = Fields::from_map(&map);
        old
    }
}

impl Default for Fields {
    fn default() -> Self {
        Fields::new()
    }
}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Map<String, Value>> for Fields {
    fn from(map: Map<String, Value>) -> Self {
        Fields::from_map(&map)
    }
}

impl From<&Fields> for Map<String, Value> {
    fn from(f: &Fields) -> Self {
        f.to_map()
    }
}

/// Written as the JSON object it is.
impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(d).map(Fields::from)
    }
}

/// Reads one field of a JSON object, skipping the rest.
struct Find<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is) = a.next_key_seed(KeyIs(self.0))? {
            if is {
                found = Some(a.next_value::<Value>()?);
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a key is the one sought (no copy of the key).
struct KeyIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn fields_read_as_the_map_they_were_made_from() {
        let m = map(
            json!({"text": "Thank you \"x\" é", "id": "q1", "n": 3.5, "tags": ["a"],
                           "a\\b": null, "nested": {"z": 1, "a": [true]}}),
        );
        let f = Fields::from(m.clone());
        assert_eq!(f.to_map(), m);
        // The text is the map's serialisation: what the store writes.
        assert_eq!(f.as_json(), Value::Object(m.clone()).to_string());
        for (k, v) in &m {
            assert_eq!(f.get(k).as_ref(), Some(v), "{k}");
            assert!(f.contains_key(k));
        }
        assert_eq!(f.get("absent"), None);
        assert!(!f.contains_key("tex"));
        assert_eq!(f.keys(), m.keys().cloned().collect::<Vec<_>>());
        assert_eq!(f.len(), 6);
        assert!(!f.is_empty() && Fields::new().is_empty());
        // Serde: the object itself, both ways.
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v, Value::Object(m.clone()));
        let back: Fields = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn insert_replaces_and_keeps_the_text_canonical() {
        let mut f = Fields::new();
        assert_eq!(f.insert("b".into(), json!(1)), None);
        assert_eq!(f.insert("a".into(), json!("x")), None);
        assert_eq!(f.insert("b".into(), json!(2)), Some(json!(1)));
        assert_eq!(f.as_json(), r#"{"a":"x","b":2}"#);
        // Equal maps built in another order are equal fields.
        let g = Fields::from(map(json!({"b": 2, "a": "x"})));
        assert_eq!(f, g);
    }
}
