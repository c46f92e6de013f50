//! Built-in validator kinds (paper §2.1: predicates over the output `o`).
//!
//! One [`Builtin`] enum covers every kind; [`Builtin::Not`] negates any of
//! them, so "not-contains" is `Not(Contains)`. Regular expressions and JSON
//! schemas are compiled once, when the builtin is built; checking an output
//! never fails (an output that is not JSON simply fails `is-json`).

use regex::{Regex, RegexBuilder};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Upper bound on the compiled size of a user regex (bytes), so that a
/// pathological pattern is a configuration error, not a memory blow-up.
const REGEX_SIZE_LIMIT: usize = 1 << 22;

/// Why a builtin could not be built: the field at fault and the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct BuiltinError {
    pub field: &'static str,
    pub reason: String,
}

fn err(field: &'static str, reason: impl Into<String>) -> BuiltinError {
    BuiltinError {
        field,
        reason: reason.into(),
    }
}

pub(crate) fn compile_regex(field: &'static str, pattern: &str) -> Result<Regex, BuiltinError> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| err(field, format!("invalid regex: {e}")))
}

/// A literal string to look for, case-sensitively or not. The
/// case-insensitive form (Unicode simple case folding) is a regex compiled
/// once for the operation it serves (contains, starts, ends, equals).
#[derive(Clone, Debug)]
pub struct Literal {
    value: String,
    folded: Option<Regex>,
}

#[derive(Clone, Copy)]
enum Anchor {
    None,
    Start,
    End,
    Both,
}

impl Literal {
    fn new(value: &str, case_insensitive: bool, anchor: Anchor) -> Self {
        let folded = case_insensitive.then(|| {
            let esc = regex::escape(value);
            let pat = match anchor {
                Anchor::None => format!("(?i:{esc})"),
                Anchor::Start => format!(r"\A(?i:{esc})"),
                Anchor::End => format!(r"(?i:{esc})\z"),
                Anchor::Both => format!(r"\A(?i:{esc})\z"),
            };
            // An escaped literal always compiles; its size is linear in it.
            Regex::new(&pat).expect("escaped literal is a valid regex")
        });
        Literal {
            value: value.to_string(),
            folded,
        }
    }

    /// The literal as given.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether matching ignores case.
    pub fn case_insensitive(&self) -> bool {
        self.folded.is_some()
    }
}

/// What [`Builtin::Count`] counts: non-overlapping occurrences of a
/// substring (as Python's `str.count`, the paper's `o.count("'")`), or
/// non-overlapping matches of a regex.
#[derive(Clone, Debug)]
pub enum Counter {
    /// Occurrences of a substring; the regex is set when case-insensitive.
    Substring(Literal),
    /// Matches of a regex.
    Regex(Regex),
}

impl Counter {
    /// The number of occurrences in `text`.
    pub fn count(&self, text: &str) -> usize {
        match self {
            Counter::Substring(l) => match &l.folded {
                Some(re) => re.find_iter(text).count(),
                None => count_substring(text, &l.value),
            },
            Counter::Regex(re) => re.find_iter(text).count(),
        }
    }

    /// Whether appending text never lowers [`count`](Self::count), so a
    /// prefix's count is a lower bound for the whole output's. True for a
    /// non-empty substring: every match is exactly as many chars long as
    /// the literal (case folding maps a char to a char), so a match that
    /// would start before a match of the prefix and run past the prefix's
    /// end would have to be longer than it; the leftmost-first scan of a
    /// longer text thus finds every match it found in the prefix. False
    /// for a regex: with alternation or greedy repetition a longer text
    /// can turn many short matches into one long one (`a.*b|a` matches
    /// `aaaa` four times and `aaaab` once).
    pub fn is_monotone(&self) -> bool {
        match self {
            Counter::Substring(l) => !l.value.is_empty(),
            Counter::Regex(_) => false,
        }
    }
}

/// Whether `re` matches every text beginning with `prefix`: some match
/// ends strictly before the prefix's end. The regex crate has no
/// look-around: its assertions (`^`, `$`, `\A`, `\z`, `\b`, `\B`, in
/// multi-line and CRLF modes too) look at most one char either side of
/// their position, so a match ending at a char boundary before the end
/// of the prefix reads only the prefix — the char after its end included
/// — and is a match of any longer text. `shortest_match` gives the
/// earliest end of any match; a match ending exactly at the prefix's end
/// might depend on what follows (`a$`, `a\b`), so it settles nothing.
fn regex_settled(re: &Regex, prefix: &str) -> bool {
    re.shortest_match(prefix)
        .is_some_and(|end| end < prefix.len())
}

/// A compiled JSON schema and its source.
#[derive(Clone)]
pub struct JsonSchema {
    source: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl JsonSchema {
    /// Compile `schema` (any draft `jsonschema` supports, detected from
    /// `$schema`; no remote `$ref` resolution).
    pub fn compile(schema: &Value) -> Result<Self, BuiltinError> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| err("schema", format!("invalid JSON schema: {e}")))?;
        Ok(JsonSchema {
            source: Arc::new(schema.clone()),
            validator: Arc::new(validator),
        })
    }

    /// The schema as given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Whether `instance` satisfies the schema.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }
}

impl fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JsonSchema").field(&self.source).finish()
    }
}

/// A built-in predicate over the output. Build with the constructors
/// ([`Builtin::contains`], [`Builtin::regex`], …), negate with
/// [`Builtin::negate`], apply with [`Builtin::check`].
///
/// Bounds (`min`, `max`) are inclusive; `None` means unbounded on that side.
#[derive(Clone, Debug)]
pub enum Builtin {
    /// The output contains the literal.
    Contains(Literal),
    /// The regex matches somewhere in the output (use `^…$` / `\A…\z` to
    /// anchor).
    Regex(Regex),
    /// The number of occurrences lies in `[min, max]`: the paper's
    /// `o.count("'") <= 3` is `Count { Substring("'"), None, Some(3) }`.
    Count {
        counter: Counter,
        min: Option<usize>,
        max: Option<usize>,
    },
    /// The length in Unicode scalar values (chars) lies in `[min, max]`.
    Length {
        min: Option<usize>,
        max: Option<usize>,
    },
    /// The number of whitespace-separated words lies in `[min, max]`.
    Words {
        min: Option<usize>,
        max: Option<usize>,
    },
    /// The output (trimmed of surrounding whitespace if `trim`) equals the
    /// literal.
    Equals { literal: Literal, trim: bool },
    /// The output (with leading whitespace trimmed if `trim`) starts with the
    /// literal.
    StartsWith { literal: Literal, trim: bool },
    /// The output (with trailing whitespace trimmed if `trim`) ends with the
    /// literal.
    EndsWith { literal: Literal, trim: bool },
    /// The output parses as JSON (any value; surrounding whitespace allowed).
    IsJson,
    /// The output parses as JSON and satisfies the schema.
    JsonSchema(JsonSchema),
    /// The negation of the inner builtin.
    Not(Box<Builtin>),
}

fn within(n: usize, min: Option<usize>, max: Option<usize>) -> bool {
    min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m)
}

fn check_bounds(min: Option<usize>, max: Option<usize>) -> Result<(), BuiltinError> {
    match (min, max) {
        (None, None) => Err(err("min", "at least one of `min` and `max` is required")),
        (Some(a), Some(b)) if a > b => Err(err("max", format!("max {b} is below min {a}"))),
        _ => Ok(()),
    }
}

impl Builtin {
    /// Whether every output beginning with `prefix` fails this check,
    /// whatever follows (see [`crate::validator::Validator::fails_on_prefix`]).
    /// Sure failures only: `false` when the rest could still pass.
    ///
    /// The rules, each sound because the quantity it reads can only grow
    /// (or the part of the output it reads is already complete) as text is
    /// appended:
    ///
    /// * `Length`, `Words` with a `max`: the prefix already has more chars
    ///   (words) than `max`. Appending never lowers either count: the last
    ///   word may grow, but it stays one word.
    /// * `Count` of a substring with a `max`: the prefix already has more
    ///   occurrences ([`Counter::is_monotone`]). Regex counts never.
    /// * `StartsWith`, `Equals`: the prefix fails and so does its best
    ///   continuation, the rest of the literal (`best_completion`).
    /// * `Not(Contains)`, `Not(StartsWith)`: the prefix already passes the
    ///   inner check, and a longer output still does.
    /// * `Not(Regex)`: a match of the regex ends before the prefix does
    ///   (`regex_settled`).
    /// * `Not(Length)`, `Not(Words)`, `Not(Count)` of a substring, with no
    ///   `max`: the prefix already reaches `min`, so every output is within
    ///   the bounds and the negation fails.
    ///
    /// `Contains`, `Regex`, `EndsWith`, `IsJson`, `JsonSchema` and the
    /// other negations are never settled by a prefix here.
    pub fn fails_on_prefix(&self, prefix: &str) -> bool {
        match self {
            Builtin::Length { max: Some(max), .. } => prefix.chars().count() > *max,
            Builtin::Words { max: Some(max), .. } => word_count(prefix) > *max,
            Builtin::Count {
                counter,
                max: Some(max),
                ..
            } => counter.is_monotone() && counter.count(prefix) > *max,
            Builtin::StartsWith { .. } | Builtin::Equals { .. } => {
                !self.check(prefix)
                    && self
                        .best_completion(prefix)
                        .is_some_and(|o| !self.check(&o))
            }
            Builtin::Not(inner) => inner.settled_on_prefix(prefix),
            _ => false,
        }
    }

    /// Whether [`Builtin::fails_on_prefix`] can ever be true for this check
    /// (its arms, without a prefix): when no check of a guard can, reading
    /// an upstream's stream is not worth its cost.
    pub fn may_fail_on_prefix(&self) -> bool {
        match self {
            Builtin::Length { max: Some(_), .. }
            | Builtin::Words { max: Some(_), .. }
            | Builtin::StartsWith { .. }
            | Builtin::Equals { .. } => true,
            Builtin::Count {
                counter,
                max: Some(_),
                ..
            } => counter.is_monotone(),
            Builtin::Not(inner) => inner.may_settle_on_prefix(),
            _ => false,
        }
    }

    /// Whether [`Builtin::settled_on_prefix`] can ever be true (its arms).
    fn may_settle_on_prefix(&self) -> bool {
        match self {
            Builtin::Contains(_)
            | Builtin::StartsWith { .. }
            | Builtin::Regex(_)
            | Builtin::Length { max: None, .. }
            | Builtin::Words { max: None, .. } => true,
            Builtin::Count {
                counter, max: None, ..
            } => counter.is_monotone(),
            Builtin::Not(inner) => inner.may_fail_on_prefix(),
            _ => false,
        }
    }

    /// Whether every output beginning with `prefix` passes this check: the
    /// sure failures of its negation (see [`Builtin::fails_on_prefix`]).
    fn settled_on_prefix(&self, prefix: &str) -> bool {
        match self {
            // What the prefix contains or starts with, so does any longer
            // output: the literal's match lies inside the prefix (a
            // case-insensitive literal is a regex with no assertion but
            // `\A`, so its match is one in the longer output too; `trim`
            // only strips whitespace before a prefix that then starts with
            // the literal, or the literal is empty).
            Builtin::Contains(_) | Builtin::StartsWith { .. } => self.check(prefix),
            Builtin::Regex(re) => regex_settled(re, prefix),
            Builtin::Length { min, max: None } => prefix.chars().count() >= min.unwrap_or(0),
            Builtin::Words { min, max: None } => word_count(prefix) >= min.unwrap_or(0),
            Builtin::Count {
                counter,
                min,
                max: None,
            } => counter.is_monotone() && counter.count(prefix) >= min.unwrap_or(0),
            Builtin::Not(inner) => inner.fails_on_prefix(prefix),
            _ => false,
        }
    }

    /// For `StartsWith` and `Equals`: `prefix` followed by the literal's
    /// chars past the (trimmed) prefix's length. If neither it nor `prefix`
    /// itself passes, no output beginning with `prefix` does:
    ///
    /// * Without `trim`, an output passes only if its first chars match the
    ///   literal's char for char (a case-insensitive literal is a regex
    ///   matching exactly one char per char of it, no whitespace char has a
    ///   case variant). So the prefix must match the literal's start (and
    ///   for `Equals`, not be longer), and then the literal's rest completes
    ///   it.
    /// * With `trim`, let `q` be the prefix without its leading whitespace.
    ///   If `q` is empty, the trimmed output is the trimmed continuation,
    ///   and the literal itself is the best continuation (it fails only if
    ///   trimming changes it; `Equals` with an empty literal passes on
    ///   `prefix`). Otherwise the trimmed output is `q` followed by the
    ///   continuation (trimmed at its end for `Equals`): a continuation of
    ///   only whitespace leaves `prefix`'s verdict, any other gives
    ///   `q` + (continuation without trailing whitespace), which must match
    ///   the literal as without `trim` — the literal's rest does when
    ///   anything does.
    fn best_completion(&self, prefix: &str) -> Option<String> {
        let (literal, trim) = match self {
            Builtin::StartsWith { literal, trim } | Builtin::Equals { literal, trim } => {
                (literal, *trim)
            }
            _ => return None,
        };
        let q = if trim { prefix.trim_start() } else { prefix };
        let rest: String = literal.value.chars().skip(q.chars().count()).collect();
        Some(format!("{prefix}{rest}"))
    }

    /// The output contains `value` (case-sensitively).
    pub fn contains(value: &str) -> Self {
        Builtin::Contains(Literal::new(value, false, Anchor::None))
    }

    /// The output contains `value`, ignoring case.
    pub fn contains_ci(value: &str) -> Self {
        Builtin::Contains(Literal::new(value, true, Anchor::None))
    }

    /// The output does not contain `value`: `contains(value).negate()`.
    pub fn not_contains(value: &str) -> Self {
        Self::contains(value).negate()
    }

    /// The output does not contain `value`, ignoring case.
    pub fn not_contains_ci(value: &str) -> Self {
        Self::contains_ci(value).negate()
    }

    /// The regex `pattern` matches somewhere in the output; compiled once.
    /// Use an inline flag (`(?i)`) for case-insensitivity.
    pub fn regex(pattern: &str) -> Result<Self, BuiltinError> {
        Ok(Builtin::Regex(compile_regex("pattern", pattern)?))
    }

    /// The number of (non-overlapping) occurrences of `needle` lies in
    /// `[min, max]`. `needle` must not be empty; at least one bound is
    /// required.
    pub fn count(
        needle: &str,
        case_insensitive: bool,
        min: Option<usize>,
        max: Option<usize>,
    ) -> Result<Self, BuiltinError> {
        if needle.is_empty() {
            return Err(err("value", "the substring to count must not be empty"));
        }
        check_bounds(min, max)?;
        Ok(Builtin::Count {
            counter: Counter::Substring(Literal::new(needle, case_insensitive, Anchor::None)),
            min,
            max,
        })
    }

    /// The number of (non-overlapping) matches of the regex `pattern` lies
    /// in `[min, max]`.
    pub fn count_matches(
        pattern: &str,
        min: Option<usize>,
        max: Option<usize>,
    ) -> Result<Self, BuiltinError> {
        check_bounds(min, max)?;
        Ok(Builtin::Count {
            counter: Counter::Regex(compile_regex("pattern", pattern)?),
            min,
            max,
        })
    }

    /// The length in characters lies in `[min, max]`.
    pub fn length(min: Option<usize>, max: Option<usize>) -> Result<Self, BuiltinError> {
        check_bounds(min, max)?;
        Ok(Builtin::Length { min, max })
    }

    /// The number of words lies in `[min, max]`.
    pub fn words(min: Option<usize>, max: Option<usize>) -> Result<Self, BuiltinError> {
        check_bounds(min, max)?;
        Ok(Builtin::Words { min, max })
    }

    /// The output equals `value`.
    pub fn equals(value: &str, case_insensitive: bool, trim: bool) -> Self {
        Builtin::Equals {
            literal: Literal::new(value, case_insensitive, Anchor::Both),
            trim,
        }
    }

    /// The output starts with `value`.
    pub fn starts_with(value: &str, case_insensitive: bool, trim: bool) -> Self {
        Builtin::StartsWith {
            literal: Literal::new(value, case_insensitive, Anchor::Start),
            trim,
        }
    }

    /// The output ends with `value`.
    pub fn ends_with(value: &str, case_insensitive: bool, trim: bool) -> Self {
        Builtin::EndsWith {
            literal: Literal::new(value, case_insensitive, Anchor::End),
            trim,
        }
    }

    /// The output is valid JSON.
    pub fn is_json() -> Self {
        Builtin::IsJson
    }

    /// The output is JSON satisfying `schema`; the schema is compiled once,
    /// and a schema that does not compile is an error.
    pub fn json_schema(schema: &Value) -> Result<Self, BuiltinError> {
        Ok(Builtin::JsonSchema(JsonSchema::compile(schema)?))
    }

    /// The negation: `negate(b).check(o) == !b.check(o)` for every output.
    /// Negating twice gives back the original.
    #[must_use]
    pub fn negate(self) -> Self {
        match self {
            Builtin::Not(inner) => *inner,
            other => Builtin::Not(Box::new(other)),
        }
    }

    /// Apply the predicate to `output`.
    pub fn check(&self, output: &str) -> bool {
        match self {
            Builtin::Contains(l) => match &l.folded {
                Some(re) => re.is_match(output),
                None => output.contains(l.value.as_str()),
            },
            Builtin::Regex(re) => re.is_match(output),
            Builtin::Count { counter, min, max } => within(counter.count(output), *min, *max),
            Builtin::Length { min, max } => within(output.chars().count(), *min, *max),
            Builtin::Words { min, max } => within(word_count(output), *min, *max),
            Builtin::Equals { literal, trim } => {
                let o = if *trim { output.trim() } else { output };
                match &literal.folded {
                    Some(re) => re.is_match(o),
                    None => o == literal.value,
                }
            }
            Builtin::StartsWith { literal, trim } => {
                let o = if *trim { output.trim_start() } else { output };
                match &literal.folded {
                    Some(re) => re.is_match(o),
                    None => o.starts_with(literal.value.as_str()),
                }
            }
            Builtin::EndsWith { literal, trim } => {
                let o = if *trim { output.trim_end() } else { output };
                match &literal.folded {
                    Some(re) => re.is_match(o),
                    None => o.ends_with(literal.value.as_str()),
                }
            }
            Builtin::IsJson => serde_json::from_str::<serde::de::IgnoredAny>(output).is_ok(),
            Builtin::JsonSchema(s) => match serde_json::from_str::<Value>(output) {
                Ok(v) => s.is_valid(&v),
                Err(_) => false,
            },
            Builtin::Not(inner) => !inner.check(output),
        }
    }
}

/// Non-overlapping occurrences of `needle` in `text`, as Python's
/// `str.count`; 0 for an empty needle. A one-byte needle (such as the
/// paper's `"'"`) is counted with a vectorisable byte scan.
pub fn count_substring(text: &str, needle: &str) -> usize {
    match needle.as_bytes() {
        [] => 0,
        // Byte counts in blocks of 255 fit a u8 accumulator, which lets
        // the compiler compare 16+ bytes per instruction.
        [b] => text
            .as_bytes()
            .chunks(255)
            .map(|block| block.iter().fold(0u8, |n, &c| n + u8::from(c == *b)) as usize)
            .sum(),
        _ => text.matches(needle).count(),
    }
}

/// The number of whitespace-separated words in `text` (Unicode whitespace).
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}
