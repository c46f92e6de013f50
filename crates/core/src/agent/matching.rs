//! Comparing JSON as agent checks need: a tool call's arguments against
//! the expected ones (a subset, key by key), and an environment's final
//! state against the expected state (equal, naming the first place they
//! differ).

use serde_json::Value;

/// Whether `actual` contains `expected`: every key of an expected object
/// is in the actual object with a matching value (other keys are free);
/// arrays match element by element and must have the same length; numbers
/// match by value (`1` matches `1.0`); everything else must be equal.
pub fn is_subset(expected: &Value, actual: &Value) -> bool {
    first_mismatch(expected, actual, true).is_none()
}

/// The JSON pointer (RFC 6901, `/a/0/b`) of the first place `actual`
/// differs from `expected` and what is there, `None` when they are equal
/// (numbers compared by value).
pub fn first_difference(expected: &Value, actual: &Value) -> Option<String> {
    first_mismatch(expected, actual, false)
}

fn first_mismatch(expected: &Value, actual: &Value, subset: bool) -> Option<String> {
    let mut path = String::new();
    walk(expected, actual, subset, &mut path)
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "nothing".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 80 {
                format!("{}…", s.chars().take(80).collect::<String>())
            } else {
                s
            }
        }
    }
}

fn walk(expected: &Value, actual: &Value, subset: bool, path: &mut String) -> Option<String> {
    let here = |path: &str| {
        Some(format!(
            "at `{}`: expected {}, found {}",
            if path.is_empty() { "/" } else { path },
            show(Some(expected)),
            show(Some(actual))
        ))
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let len = path.len();
                path.push('/');
                path.push_str(&escape(k));
                let r = match a.get(k) {
                    Some(av) => walk(ev, av, subset, path),
                    None => Some(format!(
                        "at `{path}`: expected {}, found nothing",
                        show(Some(ev))
                    )),
                };
                if r.is_some() {
                    return r;
                }
                path.truncate(len);
            }
            if !subset {
                if let Some(k) = a.keys().find(|k| !e.contains_key(*k)) {
                    return Some(format!(
                        "at `{path}/{}`: expected nothing, found {}",
                        escape(k),
                        show(a.get(k))
                    ));
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!(
                    "at `{}`: expected {} elements, found {}",
                    if path.is_empty() { "/" } else { path },
                    e.len(),
                    a.len()
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                let r = walk(ev, av, subset, path);
                if r.is_some() {
                    return r;
                }
                path.truncate(len);
            }
            None
        }
        (Value::Number(e), Value::Number(a)) => {
            let same = match (e.as_i64(), a.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => e.as_f64() == a.as_f64(),
            };
            if same {
                None
            } else {
                here(path)
            }
        }
        (e, a) if e == a => None,
        _ => here(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_is_per_key_and_recursive() {
        let actual = json!({"id": "A1", "opts": {"seat": "4A", "meal": true}, "n": 2});
        assert!(is_subset(&json!({"id": "A1"}), &actual));
        assert!(is_subset(
            &json!({"opts": {"seat": "4A"}, "n": 2.0}),
            &actual
        ));
        assert!(!is_subset(&json!({"opts": {"seat": "4B"}}), &actual));
        assert!(!is_subset(&json!({"missing": 1}), &actual));
        assert!(is_subset(&json!({}), &actual));
        assert!(!is_subset(&json!([1]), &json!([1, 2])));
    }

    #[test]
    fn differences_are_named_by_pointer() {
        let e = json!({"users": {"a/b": {"paid": [1, 2]}}});
        let a = json!({"users": {"a/b": {"paid": [1, 3]}}});
        let d = first_difference(&e, &a).unwrap();
        assert!(d.starts_with("at `/users/a~1b/paid/1`"), "{d}");
        assert!(first_difference(&e, &e).is_none());
        let extra = json!({"users": {"a/b": {"paid": [1, 2]}}, "x": 1});
        assert!(first_difference(&e, &extra).unwrap().contains("`/x`"));
        assert!(is_subset(&e, &extra));
    }
}
