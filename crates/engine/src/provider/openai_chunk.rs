//! One `chat.completion.chunk` of a streamed answer, read straight into
//! the parts [`super::openai_stream::Assembly`] takes: the text of its
//! delta borrowed from the event's data where it has no escapes, and a
//! [`Value`] built only for what is kept whole (usage, logprobs, tool
//! calls, fields the guard does not read itself).
//!
//! A chunk is read as looking its fields up in a [`Value`] would read it:
//! a field of an unexpected type is as good as absent (a numeric `model`
//! is no model; a `choices` that is not a list has no first choice), a
//! repeated key's last value wins, and only the first choice counts. It
//! is hand-written rather than derived because a derived struct refuses
//! a mistyped or repeated field, and `#[serde(flatten)]` (for the fields
//! kept whole) buffers every other field through serde's private
//! `Content` first. Building the whole chunk as a `Value` (one map, key
//! and string per field, about 25 allocations for a one-token chunk) was
//! a tenth of `probity serve`'s CPU per streamed request (bench/guard.sh,
//! Figure 4).

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A chunk's parts. `None` and empty where the chunk does not carry them.
#[derive(Debug, Default)]
pub(crate) struct Chunk<'a> {
    /// The `error` field (an error mid-stream), when it is not null (a
    /// null one is among the [`Chunk::others`]).
    pub error: Option<Value>,
    pub model: Option<Cow<'a, str>>,
    pub system_fingerprint: Option<Cow<'a, str>>,
    /// `usage`, when it is an object.
    pub usage: Option<Value>,
    /// `choices[0]`, when it is an object.
    pub choice: Option<Choice<'a>>,
    /// Top-level fields other than `id`, `object`, `created` and the above.
    pub others: Vec<(String, Value)>,
}

/// A chunk's first choice.
#[derive(Debug, Default)]
pub(crate) struct Choice<'a> {
    pub finish_reason: Option<Cow<'a, str>>,
    /// `logprobs.content`, when it is a list.
    pub logprobs: Option<Vec<Value>>,
    /// The choice's fields other than `index`, `delta`, `finish_reason`
    /// and `logprobs`.
    pub others: Vec<(String, Value)>,
    /// `delta`, when it is an object.
    pub delta: Option<Delta<'a>>,
}

/// A choice's delta.
#[derive(Debug, Default)]
pub(crate) struct Delta<'a> {
    /// `content`, when it is a string.
    pub content: Option<Cow<'a, str>>,
    /// `tool_calls`, when it is a list.
    pub tool_calls: Vec<Value>,
    /// The delta's fields other than `role`, `content` and `tool_calls`
    /// that are not null.
    pub others: Map<String, Value>,
}

impl<'a> Chunk<'a> {
    /// Read one event's data. Data that is JSON but not an object is an
    /// empty chunk; data that is not JSON is an error.
    pub fn parse(data: &'a str) -> serde_json::Result<Self> {
        Ok(serde_json::from_str::<IfObject<Chunk<'a>>>(data)?
            .0
            .unwrap_or_default())
    }
}

/// A JSON string, borrowed when it has no escapes; any other JSON value
/// reads as `None` (and is skipped).
#[derive(Default)]
struct IfString<'a>(Option<Cow<'a, str>>);

/// `T` read from a JSON object; any other JSON value reads as `None`
/// (and is skipped).
struct IfObject<T>(Option<T>);

/// The first element of a JSON list read as [`IfObject`]; the rest
/// skipped. Anything but a list reads as `None`.
struct First<T>(Option<T>);

/// Visits any JSON value, the kinds `Self` does not take skipped.
macro_rules! skip_other_kinds {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
    };
}

impl<T> Default for IfObject<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

/// Skip the value of the entry whose key `map` just gave.
fn skip_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

/// Skip every element of `seq`.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skip every entry of `map`.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de: 'a, 'a> Deserialize<'de> for IfString<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = IfString<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(IfString(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(IfString(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(IfString(Some(Cow::Owned(s))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq).map(|()| IfString(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map).map(|()| IfString(None))
            }
            skip_other_kinds!();
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// What reads itself from a JSON object's entries.
trait FromEntries<'de>: Sized + Default {
    /// Take the value of `key` from `map`.
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A)
        -> Result<(), A::Error>;
}

impl<'de, T: FromEntries<'de>> Deserialize<'de> for IfObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: FromEntries<'de>> Visitor<'de> for V<T> {
            type Value = IfObject<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut t = T::default();
                while let Some(IfString(key)) = map.next_key::<IfString<'de>>()? {
                    t.entry(key.unwrap_or_default(), &mut map)?;
                }
                Ok(IfObject(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq).map(|()| IfObject(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(IfObject(None))
            }
            skip_other_kinds!();
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de, T: FromEntries<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: FromEntries<'de>> Visitor<'de> for V<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<IfObject<T>>()?.and_then(|f| f.0);
                skip_seq(seq).map(|()| First(first))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map).map(|()| First(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(First(None))
            }
            skip_other_kinds!();
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de> FromEntries<'de> for Chunk<'de> {
    fn entry<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "error" => match map.next_value::<Value>()? {
                Value::Null => {
                    self.error = None;
                    self.others.push((key.into_owned(), Value::Null));
                }
                e => self.error = Some(e),
            },
            "model" => self.model = map.next_value::<IfString>()?.0,
            "system_fingerprint" => self.system_fingerprint = map.next_value::<IfString>()?.0,
            "usage" => self.usage = Some(map.next_value::<Value>()?).filter(Value::is_object),
            "choices" => self.choice = map.next_value::<First<Choice>>()?.0,
            "id" | "object" | "created" => skip_value(map)?,
            _ => self.others.push((key.into_owned(), map.next_value()?)),
        }
        Ok(())
    }
}

impl<'de> FromEntries<'de> for Choice<'de> {
    fn entry<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "finish_reason" => self.finish_reason = map.next_value::<IfString>()?.0,
            "logprobs" => {
                self.logprobs = match map.next_value::<Value>()? {
                    Value::Object(mut l) => match l.remove("content") {
                        Some(Value::Array(items)) => Some(items),
                        _ => None,
                    },
                    _ => None,
                }
            }
            "delta" => self.delta = map.next_value::<IfObject<Delta>>()?.0,
            "index" => skip_value(map)?,
            _ => self.others.push((key.into_owned(), map.next_value()?)),
        }
        Ok(())
    }
}

impl<'de> FromEntries<'de> for Delta<'de> {
    fn entry<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "content" => self.content = map.next_value::<IfString>()?.0,
            "tool_calls" => {
                self.tool_calls = match map.next_value::<Value>()? {
                    Value::Array(calls) => calls,
                    _ => Vec::new(),
                }
            }
            "role" => skip_value(map)?,
            _ => match map.next_value::<Value>()? {
                Value::Null => {
                    self.others.remove(&*key);
                }
                v => {
                    self.others.insert(key.into_owned(), v);
                }
            },
        }
        Ok(())
    }
}
