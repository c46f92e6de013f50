//! Built-in validator kinds: each positive, negative and negated; the
//! closure builder API; field validation.

use probity_core::validator::{Builtin, Check, Validator, ValidatorError};
use probity_core::{Input, Verdict};
use proptest::prelude::*;
use serde_json::json;

/// `b` gives `want` on `o`, and its negation gives the opposite.
fn assert_kind(b: &Builtin, o: &str, want: bool) {
    assert_eq!(b.check(o), want, "{b:?} on {o:?}");
    let n = b.clone().negate();
    assert_eq!(n.check(o), !want, "negated {b:?} on {o:?}");
    assert_eq!(
        n.negate().check(o),
        want,
        "double negation of {b:?} on {o:?}"
    );
}

#[test]
fn contains_and_not_contains() {
    let b = Builtin::contains("welcome");
    assert_kind(&b, "You're welcome!", true);
    assert_kind(&b, "You're WELCOME!", false);
    assert_kind(&b, "", false);
    let ci = Builtin::contains_ci("welcome");
    assert_kind(&ci, "You're WELCOME!", true);
    assert_kind(&ci, "You're Wélcome", false);
    let nc = Builtin::not_contains("sorry");
    assert_kind(&nc, "I am sorry", false);
    assert_kind(&nc, "I am Sorry", true);
    let nci = Builtin::not_contains_ci("sorry");
    assert_kind(&nci, "I am SORRY", false);
    assert_kind(&nci, "I am glad", true);
    // Regex metacharacters in a case-insensitive literal are literal.
    let dots = Builtin::contains_ci("a.b");
    assert_kind(&dots, "xA.By", true);
    assert_kind(&dots, "axb", false);
    // Unicode case folding.
    assert_kind(&Builtin::contains_ci("straße"), "STRASSE straße", true);
    assert_kind(&Builtin::contains_ci("émile"), "ÉMILE", true);
}

#[test]
fn regex() {
    let b = Builtin::regex(r"^\d{3}-\d{4}$").unwrap();
    assert_kind(&b, "555-1234", true);
    assert_kind(&b, "555-12345", false);
    let ci = Builtin::regex(r"(?i)thank\s+you").unwrap();
    assert_kind(&ci, "THANK  you", true);
    let err = Builtin::regex("(unclosed").unwrap_err();
    assert_eq!(err.field, "pattern");
}

#[test]
fn count_substring_and_regex() {
    // The paper's o.count("'") <= 3.
    let b = Builtin::count("'", false, None, Some(3)).unwrap();
    assert_kind(&b, "I can't and won't and don't and isn't", false);
    assert_kind(&b, "I can't and won't and don't", true);
    assert_kind(&b, "no contractions", true);
    // Long text (exercises the blocked byte count) with exactly 600 quotes.
    let long = "ab'".repeat(600);
    assert!(Builtin::count("'", false, Some(600), Some(600))
        .unwrap()
        .check(&long));
    assert!(!Builtin::count("'", false, Some(601), None)
        .unwrap()
        .check(&long));
    // Lower bound, multi-byte needle, non-overlapping.
    let b = Builtin::count("aa", false, Some(2), None).unwrap();
    assert_kind(&b, "aaaa", true);
    assert_kind(&b, "aaa", false);
    let ci = Builtin::count("the", true, Some(2), Some(2)).unwrap();
    assert_kind(&ci, "The cat and THE dog", true);
    assert_kind(&ci, "The cat", false);
    let re = Builtin::count_matches(r"\d+", Some(3), Some(3)).unwrap();
    assert_kind(&re, "a1b22c333", true);
    assert_kind(&re, "a1b22", false);
    assert_eq!(
        Builtin::count("", false, None, Some(1)).unwrap_err().field,
        "value"
    );
    assert_eq!(
        Builtin::count("x", false, None, None).unwrap_err().field,
        "min"
    );
    assert_eq!(
        Builtin::count("x", false, Some(3), Some(1))
            .unwrap_err()
            .field,
        "max"
    );
}

#[test]
fn length_in_chars_and_words() {
    let b = Builtin::length(Some(2), Some(5)).unwrap();
    assert_kind(&b, "héllo", true); // 5 chars, 6 bytes
    assert_kind(&b, "héllo!", false);
    assert_kind(&b, "h", false);
    let w = Builtin::words(None, Some(3)).unwrap();
    assert_kind(&w, "  one\ttwo\nthree ", true);
    assert_kind(&w, "one two three four", false);
    let w = Builtin::words(Some(1), None).unwrap();
    assert_kind(&w, "   ", false);
}

#[test]
fn equals_starts_ends() {
    let e = Builtin::equals("Yes", false, false);
    assert_kind(&e, "Yes", true);
    assert_kind(&e, "Yes ", false);
    assert_kind(&e, "yes", false);
    let e = Builtin::equals("Yes", true, true);
    assert_kind(&e, "  yES\n", true);
    assert_kind(&e, "yes sir", false);
    let s = Builtin::starts_with("Dear", false, false);
    assert_kind(&s, "Dear Sir", true);
    assert_kind(&s, " Dear Sir", false);
    let s = Builtin::starts_with("dear", true, true);
    assert_kind(&s, "\n DEAR Sir", true);
    assert_kind(&s, "My dear", false);
    let t = Builtin::ends_with("Regards.", false, false);
    assert_kind(&t, "Best Regards.", true);
    assert_kind(&t, "Best Regards.\n", false);
    let t = Builtin::ends_with("regards.", true, true);
    assert_kind(&t, "Best REGARDS.\n", true);
    assert_kind(&t, "regards. ok", false);
}

#[test]
fn json_and_schema() {
    let j = Builtin::is_json();
    assert_kind(&j, r#" {"a": [1, 2.5, null, "x"]} "#, true);
    assert_kind(&j, "42", true);
    assert_kind(&j, "{'a': 1}", false);
    assert_kind(&j, "Sure! {\"a\": 1}", false);
    let s = Builtin::json_schema(&json!({
        "type": "object",
        "required": ["answer"],
        "properties": {"answer": {"type": "string", "minLength": 1},
                       "confidence": {"type": "number", "minimum": 0, "maximum": 1}}
    }))
    .unwrap();
    assert_kind(&s, r#"{"answer": "42", "confidence": 0.9}"#, true);
    assert_kind(&s, r#"{"answer": ""}"#, false);
    assert_kind(&s, r#"{"confidence": 0.9}"#, false);
    assert_kind(&s, r#"{"answer": "42", "confidence": 2}"#, false);
    assert_kind(&s, "not json", false);
    let err = Builtin::json_schema(&json!({"type": "no-such-type"})).unwrap_err();
    assert_eq!(err.field, "schema");
}

#[test]
fn closure_builder_paper_shape() {
    let v = Validator::new("contraction_validator")
        .message("Output contains too many contractions")
        .minimum_success_percentage(0.95)
        .weight(2.0)
        .check(|o: &str| o.matches('\'').count() <= 3);
    assert_eq!(v.name, "contraction_validator");
    assert_eq!(v.message, "Output contains too many contractions");
    assert_eq!(v.minimum_success_percentage, 0.95);
    assert_eq!(v.weight, 2.0);
    assert!(v.validate().is_ok());
    let i = Input::text("0", "");
    assert_eq!(v.evaluate(&i, "can't won't don't isn't"), Verdict::Fail);
    assert_eq!(v.evaluate(&i, "cannot"), Verdict::Pass);

    let p = Validator::new("politeness_validator")
        .minimum_success_percentage(0.9)
        .check_with_input(|i: &Input, o: &str| {
            if i.as_text().contains("Thank you") {
                o.contains("You're welcome")
            } else {
                true
            }
        });
    assert!(matches!(p.check, Check::InputOutput(_)));
    assert_eq!(
        p.evaluate(&Input::text("a", "Thank you"), "ok"),
        Verdict::Fail
    );
    assert_eq!(
        p.evaluate(&Input::text("a", "Thank you"), "You're welcome"),
        Verdict::Pass
    );
    assert_eq!(p.evaluate(&Input::text("b", "Hi"), "ok"), Verdict::Pass);
}

#[test]
fn defaults_and_setters_after_check() {
    let v = Validator::new("v").builtin(Builtin::is_json());
    assert_eq!(v.message, "v");
    assert_eq!(v.minimum_success_percentage, 1.0);
    assert_eq!(v.weight, 1.0);
    let v = v.message("m").weight(0.5).minimum_success_percentage(0.8);
    assert_eq!(
        (v.message.as_str(), v.weight, v.minimum_success_percentage),
        ("m", 0.5, 0.8)
    );
}

#[test]
fn threshold_and_weight_are_validated() {
    for p in [-0.1, 1.01, f64::NAN] {
        let err = Validator::new("t")
            .minimum_success_percentage(p)
            .check(|_| true)
            .validated()
            .unwrap_err();
        match &err {
            ValidatorError::InvalidField {
                validator, field, ..
            } => {
                assert_eq!(validator, "t");
                assert_eq!(field, "minimum_success_percentage");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("`t`"));
    }
    for w in [-1.0, f64::INFINITY, f64::NAN] {
        let err = Validator::new("w")
            .weight(w)
            .expression("true")
            .unwrap_err();
        assert!(
            matches!(&err, ValidatorError::InvalidField { field, .. } if field == "weight"),
            "{err:?}"
        );
    }
    assert!(Validator::new("ok")
        .weight(0.0)
        .minimum_success_percentage(0.0)
        .check(|_| true)
        .validate()
        .is_ok());
}

#[test]
fn panicking_closure_is_an_error_verdict() {
    let v = Validator::new("boom").check(|o: &str| {
        if o == "boom" {
            panic!("kaboom")
        }
        true
    });
    let i = Input::text("0", "");
    match v.evaluate(&i, "boom") {
        Verdict::Error { reason } => assert!(reason.contains("kaboom"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(v.evaluate(&i, "fine"), Verdict::Pass);
}

proptest! {
    #[test]
    fn negate_contains(o in ".{0,40}", needle in "[a-c']{1,3}", ci in any::<bool>()) {
        let b = if ci { Builtin::contains_ci(&needle) } else { Builtin::contains(&needle) };
        prop_assert_eq!(b.clone().negate().check(&o), !b.check(&o));
        if !ci {
            prop_assert_eq!(b.check(&o), o.contains(&needle));
        }
    }

    #[test]
    fn negate_regex(o in "[a-c0-9 ]{0,40}", pat in prop::sample::select(vec![r"\d+", "^a", "b$", "a.c", "(ab)+", "[0-9]{2}"])) {
        let b = Builtin::regex(pat).unwrap();
        prop_assert_eq!(b.clone().negate().check(&o), !b.check(&o));
    }

    #[test]
    fn negate_length(o in "\\PC{0,30}", min in 0usize..20, span in 0usize..20) {
        let b = Builtin::length(Some(min), Some(min + span)).unwrap();
        let n = o.chars().count();
        prop_assert_eq!(b.check(&o), n >= min && n <= min + span);
        prop_assert_eq!(b.clone().negate().check(&o), !b.check(&o));
    }

    #[test]
    fn count_agrees_with_str_matches(o in "[a'b]{0,600}", needle in prop::sample::select(vec!["'", "a", "ab", "'b"])) {
        let want = o.matches(needle).count();
        prop_assert_eq!(probity_core::validator::builtin::count_substring(&o, needle), want);
        let b = Builtin::count(needle, false, Some(want), Some(want)).unwrap();
        prop_assert!(b.check(&o));
    }
}

#[test]
fn a_prefix_settles_only_sure_failures() {
    use probity_core::validator::Builtin;
    let not_secret = Builtin::Not(Box::new(Builtin::contains("SECRET")));
    assert!(not_secret.fails_on_prefix("the SECRET is"));
    assert!(!not_secret.fails_on_prefix("the SECR"));
    let short = Builtin::Length {
        min: None,
        max: Some(5),
    };
    assert!(short.fails_on_prefix("123456"));
    assert!(!short.fails_on_prefix("12345"));
    // A check the rest of the output could still pass is never settled.
    assert!(!Builtin::contains("x").fails_on_prefix("abc"));
}

#[test]
fn only_checks_a_prefix_can_settle_may_cut_a_stream() {
    use probity_core::validator::Builtin;
    let cut = [
        Builtin::Not(Box::new(Builtin::contains("x"))),
        Builtin::Length {
            min: None,
            max: Some(3),
        },
    ];
    for b in &cut {
        assert!(b.may_fail_on_prefix(), "{b:?}");
        assert!(b.fails_on_prefix("xxxx"), "{b:?}");
    }
    for b in [Builtin::contains("x"), Builtin::IsJson] {
        assert!(!b.may_fail_on_prefix(), "{b:?}");
    }
}
