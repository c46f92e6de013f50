//! promptfoo's test cases read as inputs (docs/config.md, "promptfoo's
//! tests"): a test `{"vars": {...}, "assert": [...]}` is an input whose
//! fields are its `vars` and whose checks are its assertions, each turned
//! into a check in probity's keys ([`assertion`]) for
//! [`crate::config::carried`] to compile.
//!
//! Only assertion types with a probity kind of the same meaning are read;
//! any other (JavaScript, Python, similarity, cost, …) is refused, naming
//! the type, never dropped: a check the user asked for that is silently
//! not made would read as a pass. promptfoo files are YAML more often than
//! JSON; probity reads JSON and JSON lines (one test per line), so a YAML
//! file is converted first (`yq -o json tests.yaml > tests.json`) rather
//! than a YAML parser being added to the dependency tree.

use serde_json::{Map, Value};

/// One check an input carries, as written, in probity's keys: where it is
/// in the input (`checks[0]`, `assert[1]`), the name it gets when it gives
/// none (its kind or promptfoo's type: `contains`, `icontains`,
/// `llm-rubric`), and its table (`kind`, `value`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct CarriedCheck {
    pub at: String,
    pub default_name: String,
    pub table: Map<String, Value>,
}

/// The keys of a promptfoo test case probity reads. `description` and
/// `metadata` are notes for people and are not read.
const TEST_KEYS: &[&str] = &["vars", "assert", "description", "metadata"];

/// Whether `fields` is a promptfoo test case (it has a `vars` object)
/// rather than an input's own fields.
pub fn is_test(fields: &Map<String, Value>) -> bool {
    fields.get("vars").is_some_and(Value::is_object)
}

/// A promptfoo test case: its `vars` (the input's fields) and its
/// assertions in probity's keys. Errors name the key, the assertion's
/// index and its type.
pub fn test(
    mut fields: Map<String, Value>,
) -> Result<(Map<String, Value>, Vec<CarriedCheck>), String> {
    if let Some(key) = fields.keys().find(|k| !TEST_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "key `{key}` of a promptfoo test is not read by probity (it reads {}): {}",
            TEST_KEYS.join(", "),
            unsupported_test_key(key)
        ));
    }
    let Some(Value::Object(vars)) = fields.remove("vars") else {
        return Err("`vars` must be an object of the test's variables".into());
    };
    let checks = match fields.remove("assert") {
        None => Vec::new(),
        Some(list) => asserts(&list)?,
    };
    Ok((vars, checks))
}

fn unsupported_test_key(key: &str) -> &'static str {
    match key {
        "options" | "provider" | "providers" => {
            "the system under test is [system] and its prompt [prompt] in probity.toml"
        }
        "threshold" => "each check has its own threshold (`minimum_success_percentage`)",
        _ => "remove it or move it into `vars`",
    }
}

/// A list of promptfoo assertions (an input's `assert`) in probity's keys.
pub fn asserts(list: &Value) -> Result<Vec<CarriedCheck>, String> {
    let Value::Array(items) = list else {
        return Err("`assert` must be a list of assertions".into());
    };
    items
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let at = format!("assert[{k}]");
            let (default_name, table) = assertion(a).map_err(|e| format!("{at}: {e}"))?;
            Ok(CarriedCheck {
                at,
                default_name,
                table,
            })
        })
        .collect()
}

/// The keys of an assertion probity reads: `metric` is its name.
const ASSERT_KEYS: &[&str] = &["type", "value", "metric"];

/// One promptfoo assertion as a probity check: its default name (the
/// type) and its table. `not-` before a type negates it.
///
/// | promptfoo | probity |
/// | --- | --- |
/// | `contains`, `icontains` | `contains` (`case_insensitive` for `i…`) |
/// | `equals` | `equals` |
/// | `starts-with` | `starts-with` |
/// | `regex` | `regex` (`value` is the `pattern`) |
/// | `is-json` | `is-json`, or `json-schema` when `value` is a schema |
/// | `llm-rubric` | a judge with `value` as its rubric (not negatable) |
fn assertion(a: &Value) -> Result<(String, Map<String, Value>), String> {
    let Value::Object(a) = a else {
        return Err("an assertion must be an object with a `type`".into());
    };
    let ty = match a.get("type") {
        Some(Value::String(t)) => t.as_str(),
        _ => return Err("an assertion needs a `type` (a string)".into()),
    };
    if let Some(key) = a.keys().find(|k| !ASSERT_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "type `{ty}`: key `{key}` is not read by probity (it reads type, value, metric){}",
            match key.as_str() {
                "weight" => ": each check is reported apart, not summed into a score",
                "threshold" => ": a check passes or fails each output",
                "provider" | "rubricPrompt" => ": a rubric's judge is the [system] provider",
                _ => "",
            }
        ));
    }
    let (negated, base) = match ty.strip_prefix("not-") {
        Some(b) => (true, b),
        None => (false, ty),
    };
    let mut t = Map::new();
    let mut kind = |k: &str| {
        t.insert("kind".into(), Value::String(k.into()));
    };
    match base {
        "contains" | "icontains" => {
            kind(if negated { "not-contains" } else { "contains" });
            if base == "icontains" {
                t.insert("case_insensitive".into(), Value::Bool(true));
            }
            t.insert("value".into(), text(a, ty)?);
        }
        "equals" | "starts-with" => {
            kind(base);
            t.insert("value".into(), text(a, ty)?);
        }
        "regex" => {
            kind("regex");
            t.insert("pattern".into(), text(a, ty)?);
        }
        "is-json" => match a.get("value") {
            None => kind("is-json"),
            Some(schema) => {
                kind("json-schema");
                t.insert("schema".into(), schema.clone());
            }
        },
        "llm-rubric" if !negated => {
            kind("judge");
            t.insert("instructions".into(), text(a, ty)?);
        }
        _ => return Err(unsupported(ty)),
    }
    if negated && base != "contains" && base != "icontains" {
        t.insert("negate".into(), Value::Bool(true));
    }
    if let Some(metric) = a.get("metric") {
        t.insert("name".into(), metric.clone());
    }
    Ok((ty.to_string(), t))
}

/// The assertion's `value` as text (a number or bool in its JSON form).
fn text(a: &Map<String, Value>, ty: &str) -> Result<Value, String> {
    match a.get("value") {
        Some(Value::String(s)) => Ok(Value::String(s.clone())),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Value::String(v.to_string())),
        Some(_) => Err(format!("type `{ty}`: `value` must be text")),
        None => Err(format!("type `{ty}` needs a `value`")),
    }
}

/// Why an assertion type is refused, and what to write instead.
fn unsupported(ty: &str) -> String {
    let hint = match ty.trim_start_matches("not-") {
        "javascript" | "python" | "webhook" => {
            "probity runs no promptfoo code assertion; write it as a [[validator]] with `check = …` (an expression over `output` and `input`) or `kind = \"program\"`"
        }
        "llm-rubric" => "a negated rubric is not read; write the rubric the other way round",
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => {
            "write one `contains` per value, or a `regex` with alternatives"
        }
        _ => {
            "probity reads contains, icontains, equals, starts-with, regex, is-json (each negatable with `not-`) and llm-rubric"
        }
    };
    format!("assertion type `{ty}` is not supported: {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn types_map_onto_kinds_and_not_negates() {
        let (vars, checks) = test(obj(json!({
            "description": "capital",
            "vars": {"country": "France"},
            "assert": [
                {"type": "icontains", "value": "paris"},
                {"type": "not-contains", "value": "Berlin"},
                {"type": "not-regex", "value": "^No", "metric": "no_refusal"},
                {"type": "is-json", "value": {"type": "object"}},
                {"type": "llm-rubric", "value": "Names {{ country }}'s capital"},
                {"type": "equals", "value": 42}
            ]
        })))
        .unwrap();
        assert_eq!(vars, obj(json!({"country": "France"})));
        let tables: Vec<Value> = checks
            .iter()
            .map(|c| Value::Object(c.table.clone()))
            .collect();
        assert_eq!(
            tables,
            vec![
                json!({"kind": "contains", "case_insensitive": true, "value": "paris"}),
                json!({"kind": "not-contains", "value": "Berlin"}),
                json!({"kind": "regex", "pattern": "^No", "negate": true, "name": "no_refusal"}),
                json!({"kind": "json-schema", "schema": {"type": "object"}}),
                json!({"kind": "judge", "instructions": "Names {{ country }}'s capital"}),
                json!({"kind": "equals", "value": "42"}),
            ]
        );
        assert_eq!(checks[0].default_name, "icontains");
        assert_eq!(checks[2].at, "assert[2]");
    }

    #[test]
    fn an_unsupported_type_or_key_is_refused_by_index_and_type() {
        let err = test(obj(json!({"vars": {}, "assert": [
            {"type": "contains", "value": "a"},
            {"type": "javascript", "value": "output.length < 9"}
        ]})))
        .unwrap_err();
        assert!(
            err.starts_with("assert[1]: assertion type `javascript` is not supported"),
            "{err}"
        );
        let err = test(obj(json!({"vars": {}, "assert": [
            {"type": "contains", "value": "a", "weight": 3}
        ]})))
        .unwrap_err();
        assert!(
            err.starts_with("assert[0]: type `contains`: key `weight`"),
            "{err}"
        );
        let err = test(obj(json!({"vars": {}, "options": {}}))).unwrap_err();
        assert!(
            err.starts_with("key `options` of a promptfoo test"),
            "{err}"
        );
        let err = test(obj(
            json!({"vars": {}, "assert": [{"type": "not-llm-rubric", "value": "x"}]}),
        ))
        .unwrap_err();
        assert!(err.contains("`not-llm-rubric` is not supported"), "{err}");
    }
}
