//! Deciding a check on a prefix of the output (a streamed answer):
//! `fails_on_prefix(p)` must imply that every output beginning with `p`
//! fails — soundness, checked on random prefixes and continuations — and
//! each rule must fire where it should.

use probity_core::validator::{Builtin, Expression, Validator};
use probity_core::{Input, Verdict};
use proptest::prelude::*;

/// Chars that exercise case folding (`K`, the Kelvin sign, `ß`, `ẞ`),
/// whitespace (`\r\n` for CRLF mode), word boundaries and quotes.
const ALPHABET: &str = "[aAbkK\u{212A}ß\u{1E9E}' \\n\\r1]";

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("{ALPHABET}{{0,{max}}}")).expect("a valid pattern")
}

/// A continuation: random text around the literal, so that continuations
/// completing the literal (the ones an unsound rule would miss) are common.
fn continuation(literal: String) -> impl Strategy<Value = String> {
    (text(4), any::<bool>(), text(4)).prop_map(move |(a, with, b)| {
        if with {
            format!("{a}{literal}{b}")
        } else {
            format!("{a}{b}")
        }
    })
}

fn bound() -> impl Strategy<Value = Option<usize>> {
    proptest::option::of(0usize..6)
}

const PATTERNS: &[&str] = &[
    "a", "a$", r"a\z", r"a\b", r"\ba", r"a\B", "(?m)a$", "(?Rm)a$", "(?m)^b", "(?Rm)^b", "^a",
    "a+", "a.*b|a", "ab|a", r"\s", "", "x*", "(?m)$", r"\b", r"(?i)k", r"a\s*$", "[^a]",
];

fn pattern() -> impl Strategy<Value = &'static str> {
    prop::sample::select(PATTERNS)
}

/// Any builtin worth deciding on a prefix, negated or not, with the
/// literal it is about (for continuations that contain it).
fn builtin() -> impl Strategy<Value = (Builtin, String)> {
    let lit = || text(3);
    let base = prop_oneof![
        (lit(), any::<bool>()).prop_map(|(v, ci)| {
            let b = if ci {
                Builtin::contains_ci(&v)
            } else {
                Builtin::contains(&v)
            };
            (b, v)
        }),
        pattern().prop_map(|p| (Builtin::regex(p).expect("valid"), "a".to_string())),
        (lit(), any::<bool>(), bound(), bound())
            .prop_filter_map("valid count", |(v, ci, min, max)| {
                Builtin::count(&v, ci, min, max).ok().map(|b| (b, v))
            }),
        (pattern(), bound(), bound()).prop_filter_map("valid count", |(p, min, max)| {
            Builtin::count_matches(p, min, max)
                .ok()
                .map(|b| (b, "a".to_string()))
        }),
        (bound(), bound()).prop_filter_map("valid length", |(min, max)| {
            Builtin::length(min, max).ok().map(|b| (b, "a".to_string()))
        }),
        (bound(), bound()).prop_filter_map("valid words", |(min, max)| {
            Builtin::words(min, max).ok().map(|b| (b, "a ".to_string()))
        }),
        (lit(), any::<bool>(), any::<bool>())
            .prop_map(|(v, ci, trim)| (Builtin::equals(&v, ci, trim), v)),
        (lit(), any::<bool>(), any::<bool>())
            .prop_map(|(v, ci, trim)| (Builtin::starts_with(&v, ci, trim), v)),
        (lit(), any::<bool>(), any::<bool>())
            .prop_map(|(v, ci, trim)| (Builtin::ends_with(&v, ci, trim), v)),
        Just((Builtin::is_json(), "1".to_string())),
    ];
    (base, any::<bool>()).prop_map(|((b, lit), neg)| (if neg { b.negate() } else { b }, lit))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Soundness: a settled prefix fails whatever follows it.
    #[test]
    fn a_builtin_settled_on_a_prefix_fails_every_continuation(
        (b, cont) in builtin().prop_flat_map(|(b, lit)| (Just(b), continuation(lit))),
        prefix in text(10),
    ) {
        if b.fails_on_prefix(&prefix) {
            let whole = format!("{prefix}{cont}");
            prop_assert!(!b.check(&whole), "{b:?} settled on {prefix:?} but passes {whole:?}");
            // A guard streams only when a check may settle: this one may.
            prop_assert!(b.may_fail_on_prefix(), "{b:?} settled but says it never may");
        }
    }

    /// Soundness of the regex rules on a narrow alphabet, where long runs
    /// of matches (which a longer text could merge) are common.
    #[test]
    fn a_regex_check_settled_on_a_prefix_fails_every_continuation(
        p in pattern(),
        (min, max) in (bound(), bound()),
        neg in any::<bool>(),
        prefix in "[ab \n]{0,10}",
        cont in "[ab \n]{0,4}",
    ) {
        let whole = format!("{prefix}{cont}");
        let mut checks = vec![Builtin::regex(p).expect("valid")];
        checks.extend(Builtin::count_matches(p, min, max).ok());
        for b in checks {
            let b = if neg { b.negate() } else { b };
            if b.fails_on_prefix(&prefix) {
                prop_assert!(!b.check(&whole), "{b:?} settled on {prefix:?} but passes {whole:?}");
                prop_assert!(b.may_fail_on_prefix(), "{b:?} settled but says it never may");
            }
        }
    }
}

/// `b` settles `yes` and not `no`.
fn fires(b: &Builtin, yes: &str, no: &str) {
    assert!(b.fails_on_prefix(yes), "{b:?} should settle {yes:?}");
    assert!(!b.fails_on_prefix(no), "{b:?} should not settle {no:?}");
}

#[test]
fn length_and_words_over_their_maximum() {
    fires(&Builtin::length(None, Some(5)).unwrap(), "123456", "12345");
    fires(&Builtin::length(Some(2), Some(5)).unwrap(), "ééééé é", "éé");
    // The last word may still grow, but it stays one word.
    fires(
        &Builtin::words(None, Some(2)).unwrap(),
        "one two thr",
        "one tw",
    );
    fires(&Builtin::words(None, Some(2)).unwrap(), "a b c", "a b   ");
    // A minimum is never settled: more text may reach it.
    assert!(!Builtin::length(Some(5), None).unwrap().fails_on_prefix(""));
    assert!(!Builtin::words(Some(5), None).unwrap().fails_on_prefix("a"));
}

#[test]
fn a_substring_counted_past_its_maximum() {
    let paper = Builtin::count("'", false, None, Some(3)).unwrap();
    fires(&paper, "can't won't don't isn't", "can't won't don't");
    let ab = Builtin::count("aba", false, None, Some(1)).unwrap();
    fires(&ab, "abaaba", "ababa");
    let ci = Builtin::count("k", true, None, Some(1)).unwrap();
    fires(&ci, "K\u{212A}", "k");
}

#[test]
fn a_regex_count_is_never_settled() {
    // `a.*b|a`: four matches in `aaaa`, one in `aaaab`.
    let b = Builtin::count_matches("a.*b|a", None, Some(2)).unwrap();
    assert!(!b.fails_on_prefix("aaaa"));
    assert!(b.check("aaaab"));
}

#[test]
fn starts_with_and_equals_once_the_prefix_departs_from_the_literal() {
    fires(&Builtin::starts_with("Hello", false, false), "Help", "Hel");
    fires(&Builtin::starts_with("Hello", false, false), " Hello", "");
    fires(&Builtin::starts_with("Hello", false, true), " Help", "  He");
    fires(
        &Builtin::starts_with("Hello", true, true),
        "\n hELp",
        "\n hELL",
    );
    fires(&Builtin::equals("yes", false, false), "yes!", "yes");
    fires(&Builtin::equals("yes", false, false), "ya", "ye");
    // Trimmed: trailing whitespace is not yet a departure, more text is.
    fires(&Builtin::equals("yes", true, true), " YES no", " YES \n");
    fires(&Builtin::equals("yes", true, true), " yo", " ");
    // Case folding: the Kelvin sign is a `k`.
    fires(
        &Builtin::equals("ok", true, false),
        "o\u{212A}!",
        "O\u{212A}",
    );
}

#[test]
fn negations_once_the_prefix_passes_the_inner_check() {
    fires(
        &Builtin::not_contains("SECRET"),
        "the SECRET is",
        "the SECR",
    );
    fires(&Builtin::not_contains_ci("secret"), "the SeCrEt", "the SeC");
    fires(
        &Builtin::starts_with("Sure", true, true).negate(),
        "  sure, ",
        "  su",
    );
    fires(
        &Builtin::length(Some(3), None).unwrap().negate(),
        "abc",
        "ab",
    );
    fires(
        &Builtin::words(Some(2), None).unwrap().negate(),
        "a b",
        "a ",
    );
    fires(
        &Builtin::count("'", false, Some(2), None).unwrap().negate(),
        "''",
        "'",
    );
    // With a maximum, more text can always leave the bounds.
    assert!(!Builtin::length(Some(1), Some(9))
        .unwrap()
        .negate()
        .fails_on_prefix("abc"));
}

#[test]
fn a_forbidden_regex_once_a_match_ends_inside_the_prefix() {
    let no_url = Builtin::regex("https?://").unwrap().negate();
    fires(&no_url, "see http://x", "see http:/");
    // `$` and `\b` at the very end depend on what follows.
    assert!(!Builtin::regex("a$").unwrap().negate().fails_on_prefix("xa"));
    fires(&Builtin::regex(r"a\b").unwrap().negate(), "ba ", "ba");
    // Multi-line: the newline after the match is inside the prefix.
    fires(&Builtin::regex("(?m)a$").unwrap().negate(), "a\n", "a");
    fires(&Builtin::regex("(?Rm)a$").unwrap().negate(), "a\r", "a");
    // A greedy match still ending at the end: an earlier end settles it.
    fires(&Builtin::regex("a+").unwrap().negate(), "aa", "");
}

#[test]
fn checks_more_text_could_still_pass_are_never_settled() {
    for b in [
        Builtin::contains("x"),
        Builtin::regex("^x").unwrap(),
        Builtin::ends_with("x", false, false),
        Builtin::is_json(),
        Builtin::ends_with("x", false, false).negate(),
        Builtin::equals("x", false, false).negate(),
        Builtin::is_json().negate(),
    ] {
        for p in ["", "abc", "x", "{\"a\": 1}", "}}"] {
            assert!(!b.fails_on_prefix(p), "{b:?} settled {p:?}");
        }
    }
}

/// An expression of a recognised shape (or not), with `L` standing for a
/// literal, `P` for a pattern and `N` for a number.
const SHAPES: &[&str] = &[
    "count(output, L) <= N",
    "output.count(L) < N",
    "count( output ,L )==N",
    "len(output) <= N",
    "output.len < N",
    "output.len() == N",
    "chars(output) <= N",
    "words(output) <= N",
    "words(output) < N",
    "output.contains(L)",
    "!output.contains(L)",
    "! contains(output, L)",
    "!(L in output)",
    "L in output",
    "output.starts_with(L)",
    "!output.starts_with(L)",
    "output == L",
    "L == output",
    "matches(output, P)",
    "!matches(output, P)",
    "count(output, L) <= N && !output.contains(L)",
    "!(len(output) < N && !matches(output, P))",
    "(words(output) <= N) && !(output.starts_with(L));",
    "count(output, L) <= N || len(output) <= N",
];

/// Shapes whose literal may be a char (`'x'`).
fn takes_a_char(shape: &str) -> bool {
    shape.contains("L in") || shape.contains("contains(")
}

fn shape_source() -> impl Strategy<Value = (String, String)> {
    (
        prop::sample::select(SHAPES),
        text(3),
        pattern(),
        0usize..6,
        any::<bool>(),
    )
        .prop_map(|(shape, lit, pat, n, char_lit)| {
            let l = match lit.chars().next() {
                Some(c) if char_lit && takes_a_char(shape) => format!("{c:?}"),
                _ => format!("{lit:?}"),
            };
            let src = shape
                .replace('L', &l)
                .replace('P', &format!("{pat:?}"))
                .replace('N', &n.to_string());
            (src, lit)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Soundness for expressions, against Rhai's own evaluation: a settled
    /// prefix never passes, whatever follows.
    #[test]
    fn an_expression_settled_on_a_prefix_never_passes(
        ((src, lit), neg) in (shape_source(), any::<bool>()),
        prefix in text(10),
        cont in text(4),
        with_lit in any::<bool>(),
    ) {
        let e = Expression::compile(&src).map_err(|e| TestCaseError::fail(format!("{src}: {e}")))?;
        let e = if neg { e.negate() } else { e };
        if e.fails_on_prefix(&prefix) {
            let whole = if with_lit { format!("{prefix}{lit}{cont}") } else { format!("{prefix}{cont}") };
            let v = e.evaluate(&Input::text("0", ""), &whole);
            prop_assert!(v != Verdict::Pass, "{src} (negated: {neg}) settled on {prefix:?} but passes {whole:?}");
            prop_assert!(e.may_fail_on_prefix(), "{src} settled but says it never may");
        }
    }
}

fn expr(src: &str) -> Expression {
    Expression::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

/// The expression `src` settles `yes` and not `no`.
fn expr_fires(src: &str, yes: &str, no: &str) {
    let e = expr(src);
    assert!(e.fails_on_prefix(yes), "{src} should settle {yes:?}");
    assert!(!e.fails_on_prefix(no), "{src} should not settle {no:?}");
}

#[test]
fn the_papers_contraction_validator_is_settled_on_its_fourth_quote() {
    let v = Validator::new("contraction_validator")
        .expression(r#"count(output, "'") <= 3"#)
        .unwrap();
    assert!(v.fails_on_prefix("I can't, won't, don't, isn't"));
    assert!(!v.fails_on_prefix("I can't, won't, don't"));
    expr_fires(r#"count(output,"'")<3"#, "'''", "''");
}

#[test]
fn recognised_shapes_fire() {
    expr_fires(r#"!output.contains("sorry")"#, "I am sorry", "I am sor");
    expr_fires(r#"!("sorry" in output)"#, "so sorry", "so");
    expr_fires(r#"!output.contains('!')"#, "hi!", "hi");
    expr_fires("len(output) <= 5", "123456", "12345");
    expr_fires("output.len() < 3", "abc", "ab");
    expr_fires("words(output) <= 2", "a b c", "a b");
    expr_fires(r#"output.starts_with("Sure")"#, "Sorry", "Su");
    expr_fires(r#"output == "yes""#, "yes.", "ye");
    expr_fires(
        r#"!matches(output, "https?://")"#,
        "see https://x",
        "see https:/",
    );
    // A conjunction fails when either part does.
    let both = r#"count(output, "'") <= 1 && !output.contains("X")"#;
    expr_fires(both, "X", "'");
    expr_fires(both, "''", "'");
    // Negated, a conjunction fails when every part surely passes.
    let e = expr(r#"output.contains("a") && output.contains("b")"#).negate();
    assert!(e.fails_on_prefix("ab"));
    assert!(!e.fails_on_prefix("a"));
}

#[test]
fn other_expressions_are_never_settled() {
    for src in [
        r#"count(output, "'") <= 3 || true"#,
        r#"!count(output, "'") <= 3"#,
        r#"count(output, "'") <= 3 // && false"#,
        r#"if true { !output.contains("a") } else { false }"#,
        r#"!output.contains(input_text)"#,
        r#"!output.contains(`a`)"#,
        r#"let x = 1; len(output) <= x"#,
        r#"count_matches(output, "a") <= 1"#,
        r#"len(output) <= 1.5"#,
        r#"!lower(output).contains("a")"#,
        r#"output.contains("a")"#,
        r#"matches(output, "a")"#,
    ] {
        assert!(!expr(src).fails_on_prefix("aaaa aaaa"), "{src} settled");
    }
}
