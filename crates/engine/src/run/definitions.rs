//! What each check of a stored run measures, read from the configuration
//! text it stores: its `[[validator]]` or `[[verifier]]` table. Runs whose
//! checks share names and columns may still define a check otherwise (a
//! changed `check` expression, judge or prompt between two deployments);
//! `probity monitor --since` must not pool them as one rate
//! ([`super::live::LiveFollow`]).
//!
//! A check's definition is its table without the keys that do not change
//! which outputs pass: `name`, `message`, `minimum_success_percentage`
//! (the watches take the minimum of the runs pooled first) and `weight`.
//! A program validator's file is named, not read: a changed file behind
//! the same path is not seen.

use std::collections::BTreeMap;

/// Keys of a check's table left out of its definition (module docs).
const NOT_DEFINING: [&str; 4] = ["name", "message", "minimum_success_percentage", "weight"];

/// Each check's definition in the stored configuration `text`, by name;
/// `None` when the text is not TOML (then nothing can be told).
pub fn definitions(text: &str) -> Option<BTreeMap<String, toml::Value>> {
    let doc: toml::Table = toml::from_str(text).ok()?;
    let mut out = BTreeMap::new();
    for key in ["validator", "verifier"] {
        let Some(toml::Value::Array(tables)) = doc.get(key) else {
            continue;
        };
        for t in tables {
            let Some(table) = t.as_table() else { continue };
            let Some(name) = table.get("name").and_then(toml::Value::as_str) else {
                continue;
            };
            let mut defining = table.clone();
            for k in NOT_DEFINING {
                defining.remove(k);
            }
            // The kind is part of it: a validator and a verifier of one
            // name are not the same check.
            defining.insert("kind".into(), toml::Value::String(key.into()));
            out.insert(name.to_string(), toml::Value::Table(defining));
        }
    }
    Some(out)
}

/// The checks (of `names`) that `a` and `b` define otherwise; none when
/// either could not be read.
pub(crate) fn differing(
    names: &[String],
    a: Option<&BTreeMap<String, toml::Value>>,
    b: Option<&BTreeMap<String, toml::Value>>,
) -> Vec<String> {
    let (Some(a), Some(b)) = (a, b) else {
        return Vec::new();
    };
    names
        .iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"
name = "g"
[monitor]
epoch = 50
[[validator]]
name = "short"
check = '''len(output) < 100'''
message = "too long"
minimum_success_percentage = 0.9
[[validator]]
name = "polite"
check = '''output.contains("please")'''
"#;

    fn names() -> Vec<String> {
        vec!["short".into(), "polite".into()]
    }

    #[test]
    fn a_changed_expression_differs_a_changed_message_or_minimum_does_not() {
        let a = definitions(A);
        let same = definitions(
            &A.replace("too long", "over 100")
                .replace("0.9", "0.95")
                .replace("epoch = 50", "epoch = 10"),
        );
        assert_eq!(
            differing(&names(), a.as_ref(), same.as_ref()),
            Vec::<String>::new()
        );
        let other = definitions(&A.replace("< 100", "< 200"));
        assert_eq!(
            differing(&names(), a.as_ref(), other.as_ref()),
            vec!["short"]
        );
        // The check given as a verifier of the same name is another check.
        let verifier = definitions(&A.replace(
            "[[validator]]\nname = \"polite\"",
            "[[verifier]]\nname = \"polite\"",
        ));
        assert_eq!(
            differing(&names(), a.as_ref(), verifier.as_ref()),
            vec!["polite"]
        );
        // Unreadable text: nothing can be told.
        assert_eq!(
            differing(&names(), a.as_ref(), definitions("{").as_ref()),
            Vec::<String>::new()
        );
    }
}
