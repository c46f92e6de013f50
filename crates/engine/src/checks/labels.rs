//! A verifier's labelled set (`calibration = "labels.jsonl"` in a
//! `[[verifier]]` table): pairs a human judged, on which the judge's
//! sensitivity and specificity are measured (paper §4;
//! `probity_core::stats::calibration`).
//!
//! One JSON object a line (blank lines and lines starting with `#` are
//! skipped):
//!
//! ```text
//! {"input": "Thank you!", "output": "You're welcome.", "label": "PASS"}
//! {"input": {"text": "Give me JSON", "lang": "en"}, "output": "sure", "label": false}
//! ```
//!
//! `input` is the input's text, or its fields as an object (as a line of an
//! inputs file: the judge sees the same text a run's input gives it);
//! `output` the output judged; `label` the human verdict: `"PASS"` /
//! `"FAIL"` (any case) or `true` / `false`. Unknown keys are refused. A
//! set needs at least one PASS and one FAIL: without both, sensitivity or
//! specificity cannot be measured.
//!
//! Pairs sampled by the judge's verdict with known fractions (every output
//! the judge failed, 10 % of those it passed — cheap and informative) are
//! declared by one line, anywhere in the file:
//!
//! ```text
//! {"sampling": {"PASS": 0.1, "FAIL": 1.0}}
//! ```
//!
//! the share of the outputs the judge passed (`PASS`) and failed (`FAIL`)
//! that a human labelled, each in (0, 1] (a class left out: 1). Each pair
//! then weighs 1/fraction of the judge's verdict on it in the sensitivity,
//! specificity and corrected interval (`probity_core::stats::Sampling`);
//! the judge's verdict is the one it gives when measured, so the judge
//! should answer as it did when the pairs were sampled (temperature 0).

use probity_core::stats::Sampling;
use probity_core::Input;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One labelled pair.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledPair {
    pub input: Input,
    pub output: String,
    /// The human verdict.
    pub pass: bool,
    /// Its line in the file (1-based).
    pub line: usize,
}

/// A verifier's labelled set, as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledSet {
    pub path: PathBuf,
    pub pairs: Vec<LabelledPair>,
    /// The sampling fractions per judged class, when the file declares
    /// them (module docs).
    pub sampling: Option<Sampling>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    input: Value,
    output: String,
    label: Value,
}

impl LabelledSet {
    /// Read `path`. Errors name the file and, for a bad line, its number
    /// and what is wrong with it.
    pub fn load(path: &Path) -> Result<LabelledSet, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("calibration file {}: {e}", path.display()))?;
        LabelledSet::parse(path, &text)
    }

    /// Parse `text`, the content of `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<LabelledSet, String> {
        let at = |line: usize, what: String| format!("{} line {line}: {what}", path.display());
        let mut pairs = Vec::new();
        let mut sampling: Option<(usize, Sampling)> = None;
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(trimmed) {
                if let Some(declared) = o.get("sampling") {
                    if let Some((first, _)) = sampling {
                        return Err(at(
                            line,
                            format!("a second \"sampling\" line (the first is line {first})"),
                        ));
                    }
                    if o.len() > 1 {
                        return Err(at(line, "a \"sampling\" line has no other key".into()));
                    }
                    sampling = Some((line, parse_sampling(declared).map_err(|e| at(line, e))?));
                    continue;
                }
            }
            let l: Line = serde_json::from_str(trimmed).map_err(|e| {
                at(
                    line,
                    format!("{e} (expected {{\"input\": …, \"output\": \"…\", \"label\": \"PASS\" or \"FAIL\"}})"),
                )
            })?;
            let pass = match &l.label {
                Value::Bool(b) => *b,
                Value::String(s) => match s.trim().to_ascii_uppercase().as_str() {
                    "PASS" => true,
                    "FAIL" => false,
                    _ => {
                        return Err(at(
                            line,
                            format!("label {s:?} is neither \"PASS\" nor \"FAIL\""),
                        ))
                    }
                },
                other => {
                    return Err(at(
                        line,
                        format!("label {other} must be \"PASS\", \"FAIL\", true or false"),
                    ))
                }
            };
            let id = format!("label-{line}");
            let input = match l.input {
                Value::String(s) => Input::text(id, s),
                Value::Object(fields) => Input {
                    id,
                    fields: fields.into(),
                },
                other => {
                    return Err(at(
                        line,
                        format!("input {other} must be a string or an object of fields"),
                    ))
                }
            };
            pairs.push(LabelledPair {
                input,
                output: l.output,
                pass,
                line,
            });
        }
        let passes = pairs.iter().filter(|p| p.pass).count();
        let missing = if pairs.is_empty() {
            Some("it has no labelled pair")
        } else if passes == 0 {
            Some("it has no PASS example, so the judge's sensitivity P(PASS | truly passes) cannot be measured")
        } else if passes == pairs.len() {
            Some("it has no FAIL example, so the judge's specificity P(FAIL | truly fails) cannot be measured")
        } else {
            None
        };
        if let Some(why) = missing {
            return Err(format!("calibration file {}: {why}", path.display()));
        }
        Ok(LabelledSet {
            path: path.to_path_buf(),
            pairs,
            sampling: sampling.map(|(_, s)| s),
        })
    }
}

/// `{"PASS": f, "FAIL": f}` (classes in any case, each optional: 1). Errors
/// name the field (`sampling.PASS`) and what is wrong.
fn parse_sampling(v: &Value) -> Result<Sampling, String> {
    let Value::Object(classes) = v else {
        return Err(format!(
            "sampling {v} must be an object of fractions per judged class, e.g. {{\"PASS\": 0.1, \"FAIL\": 1.0}}"
        ));
    };
    let (mut pass, mut fail) = (1.0, 1.0);
    for (class, f) in classes {
        let slot = match class.trim().to_ascii_uppercase().as_str() {
            "PASS" => &mut pass,
            "FAIL" => &mut fail,
            _ => {
                return Err(format!(
                    "sampling.{class}: unknown judged class (expected \"PASS\" or \"FAIL\")"
                ))
            }
        };
        *slot = match f.as_f64() {
            Some(x) if x > 0.0 && x <= 1.0 => x,
            _ => {
                return Err(format!(
                    "sampling.{class} = {f}: a sampling fraction must be a number in (0, 1] (the share of the outputs the judge said {class} that a human labelled)"
                ))
            }
        };
    }
    Sampling::new(pass, fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LabelledSet, String> {
        LabelledSet::parse(Path::new("labels.jsonl"), text)
    }

    #[test]
    fn reads_strings_booleans_and_fields() {
        let set = parse(concat!(
            "# a comment\n",
            "{\"input\": \"Thank you\", \"output\": \"You're welcome\", \"label\": \"PASS\"}\n",
            "\n",
            "{\"input\": {\"text\": \"JSON please\"}, \"output\": \"no\", \"label\": false}\n",
            "{\"input\": \"x\", \"output\": \"y\", \"label\": \"fail\"}\n",
        ))
        .unwrap();
        assert_eq!(set.pairs.len(), 3);
        assert_eq!(
            (
                set.pairs[0].pass,
                set.pairs[0].line,
                set.pairs[0].input.as_text()
            ),
            (true, 2, "Thank you".to_string())
        );
        assert_eq!((set.pairs[1].pass, set.pairs[1].line), (false, 4));
        assert_eq!(set.pairs[1].input.as_text(), "JSON please");
        assert!(!set.pairs[2].pass);
    }

    #[test]
    fn a_bad_line_is_named_with_what_is_wrong() {
        let e = parse("{\"input\": \"a\", \"output\": \"b\", \"label\": \"PASS\"}\n{\"input\": \"a\", \"output\": \"b\", \"label\": \"maybe\"}\n").unwrap_err();
        assert!(e.starts_with("labels.jsonl line 2: "), "{e}");
        assert!(e.contains("\"maybe\""), "{e}");
        let e = parse("{\"input\": \"a\", \"output\": \"b\"}\n").unwrap_err();
        assert!(e.starts_with("labels.jsonl line 1: "), "{e}");
        assert!(e.contains("label"), "{e}");
        let e = parse("not json\n").unwrap_err();
        assert!(e.starts_with("labels.jsonl line 1: "), "{e}");
        let e = parse("{\"input\": \"a\", \"output\": \"b\", \"label\": true, \"extra\": 1}")
            .unwrap_err();
        assert!(e.contains("extra"), "{e}");
        let e = parse("{\"input\": 3, \"output\": \"b\", \"label\": true}").unwrap_err();
        assert!(e.contains("input 3"), "{e}");
    }

    #[test]
    fn a_sampling_line_declares_the_fractions_per_judged_class() {
        let pairs = "{\"input\": \"a\", \"output\": \"b\", \"label\": \"PASS\"}\n{\"input\": \"a\", \"output\": \"c\", \"label\": \"FAIL\"}\n";
        let set = parse(&format!("{{\"sampling\": {{\"pass\": 0.1}}}}\n{pairs}")).unwrap();
        assert_eq!(set.pairs.len(), 2);
        assert_eq!(set.sampling, Some(Sampling::new(0.1, 1.0).unwrap()));
        assert_eq!(parse(pairs).unwrap().sampling, None);
        for (decl, field) in [
            ("{\"PASS\": 0}", "sampling.PASS = 0"),
            ("{\"FAIL\": 1.5}", "sampling.FAIL = 1.5"),
            ("{\"FAIL\": \"half\"}", "sampling.FAIL = \"half\""),
            ("{\"MAYBE\": 0.5}", "sampling.MAYBE: unknown judged class"),
            ("0.5", "must be an object"),
        ] {
            let e = parse(&format!("{pairs}{{\"sampling\": {decl}}}\n")).unwrap_err();
            assert!(e.starts_with("labels.jsonl line 3: "), "{e}");
            assert!(e.contains(field), "{e}");
        }
        let e = parse(&format!(
            "{{\"sampling\": {{}}}}\n{pairs}{{\"sampling\": {{}}}}\n"
        ))
        .unwrap_err();
        assert!(
            e.starts_with("labels.jsonl line 4: ") && e.contains("line 1"),
            "{e}"
        );
    }

    #[test]
    fn a_set_without_both_labels_cannot_measure_the_judge() {
        let e = parse("{\"input\": \"a\", \"output\": \"b\", \"label\": true}\n").unwrap_err();
        assert!(
            e.contains("no FAIL example") && e.contains("specificity"),
            "{e}"
        );
        let e = parse("{\"input\": \"a\", \"output\": \"b\", \"label\": \"FAIL\"}\n").unwrap_err();
        assert!(
            e.contains("no PASS example") && e.contains("sensitivity"),
            "{e}"
        );
        let e = parse("\n# nothing\n").unwrap_err();
        assert!(e.contains("no labelled pair"), "{e}");
    }
}
