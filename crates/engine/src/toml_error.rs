//! TOML errors that name their place: one function every configuration
//! reader (`probity.toml`, `probity serve --config`, `probity sim serve
//! --config`) turns a parse error into a message with.
//!
//! The `toml` crate's errors carry "line L, column C" and a caret, except
//! one: a dotted key deeper than the reader's nesting limit
//! (`[a.a.a…]`, more than 80 keys) comes back as a bare "recursion limit" with no
//! position. [`describe`] finds that line itself.

/// Most keys in one dotted key (`a.b.c` is 3) the TOML reader accepts: the
/// tables it opens (all keys but the last) stop at its nesting limit, 80.
pub const MAX_KEY_DEPTH: usize = 80;

/// `e` as a message naming the line: toml's own text when it has a
/// position ("line L, column C", the line and a caret), otherwise the line
/// of `text` it is about, found here, and what is wrong there.
pub fn describe(e: &toml::de::Error, text: &str) -> String {
    let msg = e.to_string();
    if let Some(span) = e.span() {
        if let Some(better) = at_the_key(e.message(), span.start, text) {
            return better;
        }
        if msg.contains("line") {
            return msg.trim_end().to_string();
        }
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        return format!("line {line}: {}", msg.trim_end());
    }
    match too_deep_key(text) {
        Some((line, depth)) => format!(
            "line {line}: a dotted key nested {depth} deep; TOML here allows at most {MAX_KEY_DEPTH} keys in one dotted key ({})",
            msg.trim_end()
        ),
        None => msg.trim_end().to_string(),
    }
}

/// The first number in `text` that is not finite — TOML's `nan`, `inf`,
/// `-inf`, or a float too large for 64 bits (`1e400`) — as "line L: `key`
/// = nan: …"; `None` when every number is finite or `text` is not TOML
/// (its parse error is reported elsewhere). TOML allows them, and no
/// setting of probity takes one: a rate, a weight or a temperature of
/// `nan` would otherwise be dropped or sent as `null` by serde, silently.
pub fn non_finite(text: &str) -> Option<String> {
    use toml::de::{DeTable, DeValue};
    use toml::Spanned;
    fn in_value(v: &Spanned<DeValue<'_>>, key: &str, text: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::Float(f) => {
                let raw = f.as_str().replace('_', "");
                match raw.parse::<f64>() {
                    Ok(x) if !x.is_finite() => {
                        let line = text[..v.span().start.min(text.len())].matches('\n').count() + 1;
                        Some(format!(
                            "line {line}: {key} = {}: not a finite number (every number here must be one)",
                            f.as_str()
                        ))
                    }
                    _ => None,
                }
            }
            DeValue::Array(items) => items.iter().find_map(|i| in_value(i, key, text)),
            DeValue::Table(t) => in_table(t, key, text),
            _ => None,
        }
    }
    fn in_table(t: &DeTable<'_>, prefix: &str, text: &str) -> Option<String> {
        t.iter().find_map(|(k, v)| {
            let key = if prefix.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{prefix}.{}", k.get_ref())
            };
            in_value(v, &key, text)
        })
    }
    let doc = DeTable::parse(text).ok()?;
    in_table(doc.get_ref(), "", text)
}

/// A field's error that the reader placed on its table's header (the
/// fields of a provider table, `[system]`, `[upstream]`, or of a
/// `[[validator]]` are read as a whole, so serde knows the table, not the
/// line), placed on the field's own line instead: for "unknown field `x`"
/// the line whose key is `x`; for "invalid value: integer `-5`, expected
/// u64" or "invalid type: string \"abc\", expected f64" the one line of
/// the table whose value is that literal (named, since the message does
/// not). `None` when the error is not on a header or no single line fits.
fn at_the_key(message: &str, start: usize, text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let header = text[..start.min(text.len())].matches('\n').count();
    if !lines.get(header)?.trim_start().starts_with('[') {
        return None;
    }
    let unknown = message
        .split_once("unknown field `")
        .and_then(|(_, r)| r.split('`').next());
    let literal = ["integer `", "floating point `", "string \"", "boolean `"]
        .iter()
        .find_map(|p| {
            let rest = message.split_once(p)?.1;
            let end = if p.ends_with('"') { '"' } else { '`' };
            rest.split(end).next()
        });
    let mut found = Vec::new();
    let mut in_multiline: Option<&str> = None;
    for (n, line) in lines.iter().enumerate().skip(header + 1) {
        if let Some(delim) = in_multiline {
            if line.matches(delim).count() % 2 == 1 {
                in_multiline = None;
            }
            continue;
        }
        let t = line.trim_start();
        if t.starts_with('[') {
            break;
        }
        for delim in ["\"\"\"", "'''"] {
            if line.matches(delim).count() % 2 == 1 {
                in_multiline = Some(delim);
            }
        }
        let Some((key, value)) = t.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let value = value.split('#').next().unwrap_or("").trim();
        let fits = match (unknown, literal) {
            (Some(u), _) => key == u,
            (None, Some(l)) => value == l || value.trim_matches('"') == l,
            (None, None) => false,
        };
        if fits {
            found.push((n, key, line));
        }
    }
    let [(n, key, line)] = found[..] else {
        return None;
    };
    let col = line.len() - line.trim_start().len() + 1;
    let width = n.to_string().len();
    let pad = " ".repeat(width);
    let carets = "^".repeat(key.chars().count().max(1));
    let what = if unknown.is_some() {
        message.trim_end().to_string()
    } else {
        format!("`{key}`: {}", message.trim_end())
    };
    Some(format!(
        "TOML parse error at line {}, column {col}\n{pad} |\n{} | {line}\n{pad} | {}{carets}\n{what}",
        n + 1,
        n + 1,
        " ".repeat(col - 1)
    ))
}

/// The first line (1-based) whose key — a `[table]` or `[[array]]` header,
/// or the key of `key = value` — has more than [`MAX_KEY_DEPTH`] dotted
/// parts, with that number; `None` when no line has one. Lines inside
/// multi-line strings are skipped.
pub(crate) fn too_deep_key(text: &str) -> Option<(usize, usize)> {
    let mut in_multiline: Option<&str> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(delim) = in_multiline {
            if line.matches(delim).count() % 2 == 1 {
                in_multiline = None;
            }
            continue;
        }
        let trimmed = line.trim_start();
        let key = trimmed
            .strip_prefix("[[")
            .or_else(|| trimmed.strip_prefix('['))
            .unwrap_or(trimmed);
        let depth = key_depth(key);
        if depth > MAX_KEY_DEPTH {
            return Some((n + 1, depth));
        }
        for delim in ["\"\"\"", "'''"] {
            if line.matches(delim).count() % 2 == 1 {
                in_multiline = Some(delim);
                break;
            }
        }
    }
    None
}

/// The number of dot-separated parts of the key `s` starts with (up to
/// `]`, `=`, `#` or the end), quoted parts (`"a.b"`, `'a.b'`) counting as
/// one; 0 when `s` starts with no key.
fn key_depth(s: &str) -> usize {
    let mut parts = 0;
    let mut in_part = false;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => {
                quote = Some(c);
                if !in_part {
                    parts += 1;
                    in_part = true;
                }
            }
            '.' => in_part = false,
            ']' | '=' | '#' => break,
            c if c.is_whitespace() => {}
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => {
                if !in_part {
                    parts += 1;
                    in_part = true;
                }
            }
            _ => break,
        }
    }
    parts
}

/// A server's TOML file (a guard file, a traces file) read and parsed:
/// its text and its table, or an error naming the file — one it cannot
/// read, a non-finite number (named with its line), a parse error (with
/// its line and column).
pub(crate) fn read_file<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<(String, T), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = |m: String| format!("{}: {m}", path.display());
    if let Some(e) = non_finite(&text) {
        return Err(at(e));
    }
    let table = toml::from_str(&text).map_err(|e| at(describe(&e, &text)))?;
    Ok((text, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fields_error_is_placed_on_its_line_not_its_tables_header() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(tag = "provider", rename_all = "lowercase", deny_unknown_fields)]
        #[allow(dead_code)]
        enum P {
            Sim {
                contractions: Option<f64>,
                latency_ms: Option<u64>,
            },
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            system: P,
        }
        let describe_of = |text: &str| describe(&toml::from_str::<F>(text).unwrap_err(), text);
        let text = "[system]\nprovider = \"sim\"\ncontractoins = 0.1\n";
        let e = describe_of(text);
        assert!(e.starts_with("TOML parse error at line 3, column 1"), "{e}");
        assert!(
            e.contains("3 | contractoins = 0.1") && e.contains("unknown field `contractoins`"),
            "{e}"
        );
        let text = "[system]\nprovider = \"sim\"\n  latency_ms = -5 # ms\n";
        let e = describe_of(text);
        assert!(e.starts_with("TOML parse error at line 3, column 3"), "{e}");
        assert!(
            e.contains("`latency_ms`: invalid value: integer `-5`"),
            "{e}"
        );
        let text = "[system]\nprovider = \"sim\"\ncontractions = \"lots\"\n";
        let e = describe_of(text);
        assert!(
            e.contains("line 3") && e.contains("`contractions`: invalid type: string"),
            "{e}"
        );
    }

    #[test]
    fn non_finite_numbers_are_named_with_their_line() {
        let text = "name = \"x\"\n[system]\nprovider = \"openai\"\ntemperature = nan\n";
        assert_eq!(
            non_finite(text).unwrap(),
            "line 4: system.temperature = nan: not a finite number (every number here must be one)"
        );
        for (text, key) in [
            (
                "[system]\nextra = { temperature = -inf }\n",
                "system.extra.temperature = -inf",
            ),
            (
                "[[validator]]\nweight = 1e400\n",
                "validator.weight = 1e400",
            ),
            ("a = [1.0, +inf]\n", "a = +inf"),
        ] {
            let e = non_finite(text).unwrap();
            assert!(e.contains(key), "{text}: {e}");
        }
        assert_eq!(
            non_finite("a = 1.5\nb = [0.1, 1e300]\n[c]\nd = -0.0\n"),
            None
        );
        assert_eq!(non_finite("not toml ="), None);
    }

    fn deep(n: usize) -> String {
        vec!["a"; n].join(".")
    }

    #[test]
    fn key_depth_counts_dotted_parts() {
        assert_eq!(key_depth("a.b.c]"), 3);
        assert_eq!(key_depth("a . \"b.c\" . 'd' = 1"), 3);
        assert_eq!(key_depth("x = 1.5"), 1);
        assert_eq!(key_depth(""), 0);
        assert_eq!(key_depth("# a.b.c"), 0);
    }

    #[test]
    fn the_line_of_a_too_deep_header_or_key_is_found() {
        let text = format!("x = 1\n\n[{}]\ny = 2\n", deep(100));
        assert_eq!(too_deep_key(&text), Some((3, 100)));
        let text = format!("x = 1\n{} = 2\n", deep(85));
        assert_eq!(too_deep_key(&text), Some((2, 85)));
        let text = format!("[[{}]]\n", deep(90));
        assert_eq!(too_deep_key(&text), Some((1, 90)));
        assert_eq!(too_deep_key(&format!("[{}]\n", deep(80))), None);
    }

    #[test]
    fn lines_inside_multiline_strings_are_not_keys() {
        let text = format!("s = '''\n[{}]\n'''\n[{}]\n", deep(100), deep(81));
        assert_eq!(too_deep_key(&text), Some((4, 81)));
    }

    #[test]
    fn a_too_deep_header_is_described_with_its_line() {
        let text = format!("name = \"x\"\n\n[{}]\nx = 1\n", deep(100));
        let e = toml::from_str::<toml::Table>(&text).unwrap_err();
        let m = describe(&e, &text);
        assert!(m.starts_with("line 3: a dotted key nested 100 deep"), "{m}");
        assert!(m.contains("at most 80"), "{m}");
    }

    #[test]
    fn the_reader_accepts_exactly_max_key_depth() {
        let ok = format!("[{}]\n", deep(MAX_KEY_DEPTH));
        assert!(toml::from_str::<toml::Table>(&ok).is_ok());
        let bad = format!("[{}]\n", deep(MAX_KEY_DEPTH + 1));
        assert!(toml::from_str::<toml::Table>(&bad).is_err());
    }

    #[test]
    fn errors_with_a_position_keep_toml_s_text() {
        let text = "x = \n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        assert!(describe(&e, text).contains("line 1"));
    }
}
