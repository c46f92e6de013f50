//! The one redaction point: every secret value a configuration reads (an
//! API key variable, any `${ENV:…}` reference in a URL, header or body) is
//! registered here when it is read, and every text that comes back from a
//! provider or a server — outputs, error messages, bodies quoted in them —
//! passes through [`redact`] in [`crate::provider::call::Caller::call`] before
//! anything stores, prints, reports or answers it.
//!
//! A secret is replaced by `***` wherever it appears in any form an
//! upstream may echo it in, so that no decoding of what remains gives it
//! back:
//!
//! - as a substring (in a URL path, an echoed `Authorization` header, a
//!   JSON string);
//! - JSON-escaped, each character independently: `\u0073` (hex in either
//!   case, UTF-16 surrogate pairs beyond the BMP), `\/`, `\"`, `\\`, and
//!   the same escaped again (`\\u0073`, any number of backslashes);
//! - percent-encoded, each character independently: `%73` (either case),
//!   `+` for a space, and the same encoded again (`%2573`);
//! - base64, standard (`+/`) or URL-safe (`-_`) alphabet, padded or not, at
//!   any of the three byte alignments inside a longer base64 string (as in
//!   `Basic dXNlcjpzZWNyZXQ=`): the characters that encode the secret's
//!   bytes alone are masked, which leaves at most a few bits of its first
//!   and last byte. Those characters may themselves be JSON-escaped or
//!   percent-encoded.
//!
//! Encodings nest only as listed: a secret base64'd twice, or hex-encoded,
//! is not recognised.
//!
//! Cost: the forms of all secrets are compiled into one [`regex::Regex`]
//! when a secret is registered (rarely: when a configuration is read), so
//! [`redact`] is one scan of the text, and returns it borrowed when nothing
//! matches (the common case, on every model output).
//!
//! Values shorter than [`MIN_SECRET_LEN`] are not registered: replacing
//! every `1` or `on` in every message would garble them and hide nothing
//! worth hiding. Values longer than [`MAX_ENCODED_LEN`] (a whole body in an
//! environment variable, say) are masked as substrings only, which keeps
//! the compiled matcher small.

use crate::provider::types::ProviderError;
use base64::Engine as _;
use regex::{NoExpand, Regex};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::RwLock;

/// Shortest value treated as a secret, in bytes.
pub const MIN_SECRET_LEN: usize = 4;

/// Longest secret, in bytes, whose encoded forms are masked; longer ones
/// are masked where they appear literally.
pub const MAX_ENCODED_LEN: usize = 512;

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// The registered secrets, longest first, and the matcher of all their
/// forms (`None` before any is registered, or should the matcher not
/// compile: then only the literal values are masked).
struct Secrets {
    values: Vec<String>,
    matcher: Option<Regex>,
}

static SECRETS: RwLock<Secrets> = RwLock::new(Secrets {
    values: Vec::new(),
    matcher: None,
});

/// Remember `value` as a secret (idempotent). Compiles the matcher of
/// every secret's forms anew when `value` is new.
pub(crate) fn register(value: &str) {
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    if secrets.values.iter().any(|s| s == value) {
        return;
    }
    secrets.values.push(value.to_string());
    // Longest first, so a secret containing another is masked whole.
    secrets.values.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.matcher = matcher(&secrets.values);
}

/// `text` with every registered secret, in every form listed in the module
/// documentation, replaced by [`MASK`]; borrowed when there is none.
pub fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    match &secrets.matcher {
        Some(re) => re.replace_all(text, NoExpand(MASK)),
        None => literal(text, &secrets.values),
    }
}

/// `text` with the literal `secrets` masked: the fallback should the
/// matcher not compile.
fn literal<'t>(text: &'t str, secrets: &[String]) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for s in secrets {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), MASK));
        }
    }
    out
}

/// One regex for every form of every secret (longest secret first, so
/// that the leftmost match is the longest). `None` when there are no
/// secrets or it does not compile within the size limit.
fn matcher(secrets: &[String]) -> Option<Regex> {
    if secrets.is_empty() {
        return None;
    }
    let mut forms = Vec::new();
    for s in secrets {
        if s.len() > MAX_ENCODED_LEN {
            forms.push(regex::escape(s));
            continue;
        }
        forms.push(s.chars().map(char_forms).collect::<String>());
        for middle in base64_middles(s.as_bytes()) {
            forms.push(middle.chars().map(base64_char_forms).collect());
        }
    }
    regex::RegexBuilder::new(&forms.join("|"))
        .size_limit(64 << 20)
        .build()
        .ok()
}

/// A pattern for `c` written literally, JSON-escaped or percent-encoded.
fn char_forms(c: char) -> String {
    let mut alts = vec![regex::escape(c.encode_utf8(&mut [0; 4]))];
    // JSON: `\uXXXX` per UTF-16 unit; backslashes doubled per nesting.
    let mut u = String::new();
    for unit in c.encode_utf16(&mut [0; 2]) {
        let _ = write!(u, r"\\+u{}", hex(&format!("{unit:04X}")));
    }
    alts.push(u);
    if let Some(short) = json_short_escape(c) {
        alts.push(format!(r"\\+{}", regex::escape(short)));
    }
    // URLs: `%XX` per UTF-8 byte; `%25XX` when encoded twice.
    let mut p = String::new();
    for byte in c.encode_utf8(&mut [0; 4]).bytes() {
        let _ = write!(p, "%(?:25)*{}", hex(&format!("{byte:02X}")));
    }
    alts.push(p);
    if c == ' ' {
        alts.push(r"\+".into());
    }
    format!("(?:{})", alts.join("|"))
}

/// The letter of JSON's two-character escape of `c`, if it has one.
fn json_short_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\"",
        '\\' => "\\",
        '/' => "/",
        '\u{8}' => "b",
        '\u{c}' => "f",
        '\n' => "n",
        '\r' => "r",
        '\t' => "t",
        _ => return None,
    })
}

/// A pattern for the upper-case hex digits `digits` in either case.
fn hex(digits: &str) -> String {
    digits
        .chars()
        .map(|d| {
            if d.is_ascii_alphabetic() {
                format!("[{d}{}]", d.to_ascii_lowercase())
            } else {
                d.to_string()
            }
        })
        .collect()
}

/// A pattern for the standard-alphabet base64 character `c` in either
/// alphabet, each form as [`char_forms`].
fn base64_char_forms(c: char) -> String {
    match c {
        '+' => format!("(?:{}|{})", char_forms('+'), char_forms('-')),
        '/' => format!("(?:{}|{})", char_forms('/'), char_forms('_')),
        c => char_forms(c),
    }
}

/// For each byte alignment of `secret` inside a longer base64 string (the
/// secret preceded by 0, 1 or 2 bytes), the standard base64 characters
/// that depend on the secret's bytes alone: the same wherever the secret
/// appears at that alignment.
fn base64_middles(secret: &[u8]) -> Vec<String> {
    (0..3)
        .filter_map(|k| {
            let mut bytes = vec![0; k];
            bytes.extend_from_slice(secret);
            let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
            // Characters before `start` carry bits of the preceding bytes,
            // those from `end` on bits of the following ones.
            let start = [0, 2, 3][k];
            let end = bytes.len() * 4 / 3;
            encoded.get(start..end).map(str::to_string)
        })
        .filter(|m| !m.is_empty())
        .collect()
}

/// `text` (an error, which may quote a model's or a judge's answer:
/// untrusted) as one short line for a log, a terminal or a client's
/// message: secrets redacted, control characters made spaces, at most 300
/// characters.
pub(crate) fn one_line(text: &str) -> String {
    const MAX: usize = 300;
    let clean: String = redact(text)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match clean.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &clean[..cut]),
        None => clean,
    }
}

/// [`redact`] into an owned string, reusing it when nothing changes.
pub(crate) fn redact_owned(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

/// `e` with its texts redacted.
pub fn error(e: ProviderError) -> ProviderError {
    match e {
        ProviderError::Server { status, body } => ProviderError::Server {
            status,
            body: redact_owned(body),
        },
        ProviderError::Rejected { status, body } => ProviderError::Rejected {
            status,
            body: redact_owned(body),
        },
        ProviderError::Transport(m) => ProviderError::Transport(redact_owned(m)),
        ProviderError::BadResponse(m) => ProviderError::BadResponse(redact_owned(m)),
        ProviderError::Command(m) => ProviderError::Command(redact_owned(m)),
        ProviderError::Raised(m) => ProviderError::Raised(redact_owned(m)),
        ProviderError::Unsendable(m) => ProviderError::Unsendable(redact_owned(m)),
        e @ (ProviderError::RateLimited { .. } | ProviderError::Timeout(_)) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_are_masked_and_short_values_ignored() {
        register("sk-test-redact-1234567890");
        register("ab");
        assert_eq!(
            redact("Authorization: Bearer sk-test-redact-1234567890; ab").as_ref(),
            "Authorization: Bearer ***; ab"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    /// `s` with each character `\uXXXX`-escaped in the case `upper`
    /// chooses, except those at the positions in `keep`.
    fn json_escaped(s: &str, upper: bool, keep: &[usize]) -> String {
        s.chars()
            .enumerate()
            .map(|(i, c)| match (keep.contains(&i), upper) {
                (true, _) => c.to_string(),
                (false, true) => format!("\\u{:04X}", c as u32),
                (false, false) => format!("\\u{:04x}", c as u32),
            })
            .collect()
    }

    /// `s` with each byte `%XX`-encoded, in the case `upper` chooses,
    /// except those at the positions in `keep`.
    fn percent_encoded(s: &str, upper: bool, keep: &[usize]) -> String {
        s.bytes()
            .enumerate()
            .map(|(i, b)| match (keep.contains(&i), upper) {
                (true, _) => char::from(b).to_string(),
                (false, true) => format!("%{b:02X}"),
                (false, false) => format!("%{b:02x}"),
            })
            .collect()
    }

    #[test]
    fn json_escapes_in_any_mix_and_case_are_masked() {
        let key = "sk-json-Ab12/cd34\"ef";
        register(key);
        for escaped in [
            json_escaped(key, false, &[]),
            json_escaped(key, true, &[]),
            json_escaped(key, true, &[0, 3, 5, 9]),
            json_escaped(key, false, &[1, 2, 4, 6, 7, 8]),
        ] {
            let body = format!("{{\"error\":\"bad key '{escaped}'\"}}");
            assert_eq!(redact(&body), "{\"error\":\"bad key '***'\"}", "{body}");
        }
        // JSON's own escapes of `/` and `"`, and one nested level deeper.
        let short = r#"sk-json-Ab12\/cd34\"ef"#;
        assert_eq!(redact(&format!("k={short}.")), "k=***.");
        let nested = r#"\\u0073k-json-Ab12\\/cd34\\\"e\\u0066"#;
        assert_eq!(redact(&format!("k={nested}.")), "k=***.");
        // A surrogate pair beyond the BMP, in either case.
        register("emoji-\u{1F511}-key");
        assert_eq!(redact(r"emoji-\uD83D\udd11-key"), "***");
    }

    #[test]
    fn percent_encodings_in_any_mix_and_case_are_masked() {
        let key = "sk-pct/Ab12 cd34+ef=";
        register(key);
        for encoded in [
            percent_encoded(key, false, &[]),
            percent_encoded(key, true, &[]),
            percent_encoded(key, true, &[0, 1, 2, 7, 8]),
            percent_encoded(key, false, &[3, 4, 5, 6, 10, 11]),
            "sk-pct%2FAb12+cd34%2Bef%3D".to_string(),
            "sk-pct%252FAb12%2520cd34%252Bef%253D".to_string(),
        ] {
            let url = format!("https://h/v1?key={encoded}&x=1");
            assert_eq!(redact(&url), "https://h/v1?key=***&x=1", "{url}");
        }
    }

    #[test]
    fn base64_in_either_alphabet_at_every_alignment_is_masked() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        // `~?` make the characters 62 (`+`, `-`) and 63 (`/`, `_`) appear
        // in the encodings at every alignment.
        let key = "sk-b64~~~?~?-Zy98xw76";
        register(key);
        for prefix in ["", "u:", "us:", "user:"] {
            for suffix in ["", "!", "!!", "!!!"] {
                let plain = format!("{prefix}{key}{suffix}");
                for (encoded, c62_c63) in [
                    (STANDARD.encode(&plain), ['+', '/']),
                    (URL_SAFE_NO_PAD.encode(&plain), ['-', '_']),
                ] {
                    assert!(c62_c63.iter().all(|&c| encoded.contains(c)), "{encoded}");
                    let text = format!("Authorization: Basic {encoded}\n");
                    let out = redact(&text);
                    assert!(out.contains(MASK), "{text}");
                    let left = out.trim_start_matches("Authorization: Basic ").trim_end();
                    // Only characters sharing bits with the text around the
                    // secret are left: fewer bits than one of its bytes.
                    let (before, after) = left.split_once(MASK).unwrap();
                    // (One more at the end: the last byte's low bits.)
                    let prefix_chars = (4 * prefix.len()).div_ceil(3);
                    assert!(before.len() <= prefix_chars, "{text} -> {out}");
                    let suffix_chars = (4 * suffix.len()).div_ceil(3) + 1;
                    let after = after.trim_end_matches('=');
                    assert!(after.len() <= suffix_chars, "{text} -> {out}");
                }
            }
        }
        // A base64 string quoted in JSON with `/` escaped, and one
        // percent-encoded in a URL.
        let json = STANDARD.encode(format!("u:{key}")).replace('/', r"\/");
        assert!(json.contains(r"\/"));
        assert!(redact(&json).contains(MASK), "{json}");
        let url = STANDARD
            .encode(format!("u:{key}"))
            .replace('+', "%2B")
            .replace('/', "%2f");
        assert!(url.contains('%'));
        assert!(redact(&url).contains(MASK), "{url}");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        register("sk-plain-Q7w8e9r0t1y2");
        let texts = [
            "The quick brown fox: 100% sure, \\u0073k? a+b=c, %73k-plain, sk-plain-Q7w8e9r0t1y",
            r#"{\"content\":\"caf\u00e9 \/ 50%25 \u0073k-plain-Q7w8e9r0t1\"}"#,
            "c2stcGxhaW4tUTd3OGU5cjB0MXk=", // base64 of the secret without its last character
            "aGVsbG8gd29ybGQ=",
        ];
        for t in texts {
            assert!(
                matches!(redact(t), Cow::Borrowed(_)),
                "{t} -> {}",
                redact(t)
            );
        }
    }

    #[test]
    fn a_secret_containing_another_is_masked_whole() {
        register("inner-secret-42");
        register("outer-inner-secret-42-tail");
        assert_eq!(
            redact("a outer-inner-secret-42-tail b inner-secret-42 c"),
            "a *** b *** c"
        );
        assert_eq!(
            redact(&json_escaped("outer-inner-secret-42-tail", false, &[2])),
            "***"
        );
    }
}

#[cfg(test)]
mod cost {
    use super::*;
    use std::time::Instant;

    /// Time per [`redact`] call on a 2 KB model output with three
    /// registered secrets and nothing to mask (the common case). Prints the
    /// figure; asserts nothing about time.
    /// `cargo test -p probity-engine --release --lib redact::cost -- --ignored --nocapture`
    #[test]
    #[ignore = "timing: run by hand"]
    fn cost_per_call_on_a_2kb_output() {
        register("sk-proj-cost0aB3xY9zQ7wE2rT5uI8oP1aS4dF6gH");
        register("AIzaSyCost-9x8w7v6u5t4s3r2q1p0onmlkj");
        register("cost-token-2f6c1d9e8b7a");
        let sentence =
            "The quick brown fox jumps over the lazy dog; it's 42% sure, \\u2019 and all. ";
        let output: String = sentence.repeat(2048 / sentence.len() + 1)[..2048].to_string();
        let calls = 20_000;
        let t = Instant::now();
        let mut masked = 0;
        for _ in 0..calls {
            masked += usize::from(matches!(
                redact(std::hint::black_box(&output)),
                Cow::Owned(_)
            ));
        }
        let per = t.elapsed() / calls;
        assert_eq!(masked, 0);
        println!(
            "redact: {per:?} per call on a {} B output, 3 secrets",
            output.len()
        );
    }
}
