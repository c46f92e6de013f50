//! The few shapes of expression a streamed prefix can settle: an
//! expression that is exactly one of them, or a conjunction (`&&`) of
//! them, is read as built-in checks, and decided on a prefix by their
//! rules ([`Builtin::fails_on_prefix`]). Any other expression is never
//! settled on a prefix.
//!
//! Recognised, whitespace-tolerant, `output` being the variable itself:
//!
//! | shape | built-in check |
//! | --- | --- |
//! | `count(output, S) OP N`, `output.count(S) OP N` | count of the substring `S` |
//! | `len(output) OP N`, `output.len() OP N`, `output.len OP N`, `chars(output) OP N` | length in chars |
//! | `words(output) OP N` | words |
//! | `output.contains(S)`, `contains(output, S)`, `S in output` (`S` a string or a char) | contains |
//! | `output.starts_with(S)` | starts with |
//! | `output == S`, `S == output` | equals |
//! | `matches(output, S)` | regex |
//! | `!X`, `(X)`, `X && Y` over the above | negation, grouping, conjunction |
//!
//! `OP` is `<=`, `<` or `==` and `N` a decimal integer; `S` is a
//! double-quoted string (or, where noted, a char literal), decoded by Rhai
//! itself. These are the registered helpers (`count` is
//! [`count_substring`](super::builtin::count_substring), `words` is
//! [`word_count`](super::builtin::word_count), `matches` compiles as
//! [`Builtin::regex`] does) and Rhai's own string functions (`len` counts
//! chars; `contains`, `starts_with` and `==` are Rust's), so each shape's
//! value is exactly its check's. None of them can err, so the expression's
//! value is the conjunction of the checks: it fails on a prefix if any
//! conjunct does (a negated conjunction if every negated conjunct does).

use super::builtin::Builtin;
use regex::Regex;
use rhai::Dynamic;
use std::sync::OnceLock;

/// Built-in checks combined as an expression combines its shapes.
#[derive(Clone, Debug)]
pub(crate) enum PrefixRule {
    /// One shape: its built-in check.
    Check(Builtin),
    /// Passes when every part passes.
    All(Vec<PrefixRule>),
    /// Passes when some part passes (a negated conjunction).
    Any(Vec<PrefixRule>),
}

impl PrefixRule {
    /// Whether every output beginning with `prefix` fails: a conjunction
    /// fails if a part surely does, a disjunction if all of them surely do.
    pub(crate) fn fails_on_prefix(&self, prefix: &str) -> bool {
        match self {
            PrefixRule::Check(b) => b.fails_on_prefix(prefix),
            PrefixRule::All(parts) => parts.iter().any(|p| p.fails_on_prefix(prefix)),
            PrefixRule::Any(parts) => parts.iter().all(|p| p.fails_on_prefix(prefix)),
        }
    }

    /// The negation, by De Morgan's laws.
    #[must_use]
    pub(crate) fn negate(self) -> Self {
        let negate_all = |parts: Vec<PrefixRule>| parts.into_iter().map(Self::negate).collect();
        match self {
            PrefixRule::Check(b) => PrefixRule::Check(b.negate()),
            PrefixRule::All(parts) => PrefixRule::Any(negate_all(parts)),
            PrefixRule::Any(parts) => PrefixRule::All(negate_all(parts)),
        }
    }
}

/// The rule of an expression's source when the whole of it is a
/// recognised shape or a conjunction of them; `None` otherwise.
pub(crate) fn recognise(source: &str) -> Option<PrefixRule> {
    let s = source.trim();
    conjunction(s.strip_suffix(';').unwrap_or(s).trim())
}

fn conjunction(s: &str) -> Option<PrefixRule> {
    let parts = split_and(s)?;
    let mut rules = parts
        .iter()
        .map(|p| term(p.trim()))
        .collect::<Option<Vec<_>>>()?;
    match rules.len() {
        1 => rules.pop(),
        _ => Some(PrefixRule::All(rules)),
    }
}

/// `!X` (`X` a call or a group: `!` binds tighter than comparisons), a
/// group, a call, or a comparison.
fn term(s: &str) -> Option<PrefixRule> {
    match s.strip_prefix('!') {
        Some(rest) => primary(rest.trim_start()).map(PrefixRule::negate),
        None => primary(s).or_else(|| comparison(s)),
    }
}

fn primary(s: &str) -> Option<PrefixRule> {
    match s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        // `(a) && (b)` is not one group: the inner text must split alone.
        Some(inner) if balanced(inner) => conjunction(inner.trim()),
        _ => call(s),
    }
}

/// A string literal (double-quoted, with escapes) or a char literal.
const STR: &str = r#""(?:[^"\\]|\\.)*""#;
const STR_OR_CHAR: &str = r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)+'"#;

fn shape(cell: &'static OnceLock<Regex>, pattern: impl FnOnce() -> String) -> &'static Regex {
    cell.get_or_init(|| Regex::new(&pattern()).expect("a valid shape pattern"))
}

/// A call returning a bool: contains, starts_with, matches.
fn call(s: &str) -> Option<PrefixRule> {
    static CONTAINS: OnceLock<Regex> = OnceLock::new();
    static STARTS: OnceLock<Regex> = OnceLock::new();
    static MATCHES: OnceLock<Regex> = OnceLock::new();
    let contains = shape(&CONTAINS, || {
        format!(
            r"^(?:output\s*\.\s*contains\s*\(\s*(?<a>{STR_OR_CHAR})\s*\)|contains\s*\(\s*output\s*,\s*(?<b>{STR_OR_CHAR})\s*\))$"
        )
    });
    let starts = shape(&STARTS, || {
        format!(r"^output\s*\.\s*starts_with\s*\(\s*({STR})\s*\)$")
    });
    let matches = shape(&MATCHES, || {
        format!(r"^matches\s*\(\s*output\s*,\s*({STR})\s*\)$")
    });
    let builtin = if let Some(c) = contains.captures(s) {
        Builtin::contains(&literal(c.name("a").or(c.name("b"))?.as_str())?)
    } else if let Some(c) = starts.captures(s) {
        Builtin::starts_with(&literal(c.get(1)?.as_str())?, false, false)
    } else {
        Builtin::regex(&literal(matches.captures(s)?.get(1)?.as_str())?).ok()?
    };
    Some(PrefixRule::Check(builtin))
}

/// A comparison: a count, length or word count against a number,
/// `output` against a string, or `S in output`.
fn comparison(s: &str) -> Option<PrefixRule> {
    static MEASURE: OnceLock<Regex> = OnceLock::new();
    static EQUALS: OnceLock<Regex> = OnceLock::new();
    static IN: OnceLock<Regex> = OnceLock::new();
    let measure = shape(&MEASURE, || {
        format!(
            r"^(?:(?:count\s*\(\s*output\s*,|output\s*\.\s*count\s*\()\s*(?<needle>{STR})\s*\)|(?<len>len\s*\(\s*output\s*\)|chars\s*\(\s*output\s*\)|output\s*\.\s*len(?:\s*\(\s*\))?)|(?<words>words\s*\(\s*output\s*\)))\s*(?<op><=|<|==)\s*(?<n>[0-9]+)$"
        )
    });
    let equals = shape(&EQUALS, || {
        format!(r"^(?:output\s*==\s*(?<a>{STR})|(?<b>{STR})\s*==\s*output)$")
    });
    let within = shape(&IN, || format!(r"^({STR_OR_CHAR})\s*in\s+output$"));
    let builtin = if let Some(c) = measure.captures(s) {
        let (min, max) = bounds(&c["op"], c["n"].parse::<i64>().ok()?)?;
        match (c.name("needle"), c.name("len")) {
            (Some(needle), _) => {
                Builtin::count(&literal(needle.as_str())?, false, min, max).ok()?
            }
            (None, Some(_)) => Builtin::length(min, max).ok()?,
            (None, None) => Builtin::words(min, max).ok()?,
        }
    } else if let Some(c) = equals.captures(s) {
        Builtin::equals(
            &literal(c.name("a").or(c.name("b"))?.as_str())?,
            false,
            false,
        )
    } else {
        Builtin::contains(&literal(within.captures(s)?.get(1)?.as_str())?)
    };
    Some(PrefixRule::Check(builtin))
}

/// The bounds `x OP n` sets on a count `x ≥ 0`; `None` when it cannot
/// hold (`x < 0`).
fn bounds(op: &str, n: i64) -> Option<(Option<usize>, Option<usize>)> {
    let n = usize::try_from(n).ok()?;
    match op {
        "<=" => Some((None, Some(n))),
        "<" => Some((None, Some(n.checked_sub(1)?))),
        _ => Some((Some(n), Some(n))),
    }
}

/// A string or char literal's value, as Rhai reads it: Rhai's own parser,
/// with no function registered and a few operations allowed (a literal
/// takes none), so the value is exactly what the check will compare.
fn literal(source: &str) -> Option<String> {
    static LITERALS: std::sync::OnceLock<rhai::Engine> = std::sync::OnceLock::new();
    let engine = LITERALS.get_or_init(|| {
        let mut e = rhai::Engine::new_raw();
        e.set_max_operations(16).set_max_expr_depths(4, 4);
        e
    });
    let value: Dynamic = engine.eval_expression(source).ok()?;
    if value.is_char() {
        return value.as_char().ok().map(String::from);
    }
    value.into_immutable_string().ok().map(|s| s.to_string())
}

/// `s` split at its `&&`s outside literals and brackets; `None` when a
/// literal or a bracket is left open, or `s` has a comment or a
/// back-quoted string (left to Rhai, never recognised).
fn split_and(s: &str) -> Option<Vec<&str>> {
    let bytes = s.as_bytes();
    let (mut parts, mut depth, mut start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'') => i = skip_literal(bytes, i, q)?,
            b'`' => return None,
            b'/' if matches!(bytes.get(i + 1), Some(b'/' | b'*')) => return None,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
            b'&' if depth == 0 && bytes.get(i + 1) == Some(&b'&') => {
                parts.push(&s[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    (depth == 0).then(|| {
        parts.push(&s[start..]);
        parts
    })
}

/// Whether the brackets of `s` (outside literals) close in order and
/// none closes below the start: a group `( … )` whose inner text is
/// balanced is one group, not `(a) && (b)`.
fn balanced(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'') => match skip_literal(bytes, i, q) {
                Some(end) => i = end,
                None => return false,
            },
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

/// The index of the quote closing the literal opened at `open`.
fn skip_literal(bytes: &[u8], open: usize, quote: u8) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b if b == quote => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}
