//! `probity run --set KEY=VALUE`: one field of the configuration file
//! replaced from the command line, for a quick A/B without a second file
//! (`--set system.model=gpt-4o --set prompt.system="Be brief."`).
//!
//! `KEY` is a dotted path of tables (`system.model`, `experiment.confidence`,
//! `system.seed`); a path through an array of tables names it by index
//! (`validator.0.minimum_success_percentage`). `VALUE` is read as one TOML
//! value when it is one (`0.9`, `true`, `42`, `"quoted"`, `[1, 2]`) and as
//! a string otherwise (`gpt-4o`, `Be brief.`). The file's text is parsed,
//! the fields are set, and the result is the configuration the run uses:
//! it is checked like a file (every field, unknown keys refused), stored
//! with the run as its text, and hashed — so a run with `--set` is a
//! different configuration from the file alone, and `--resume` finds it
//! only with the same `--set`s.

use toml::{Table, Value};

/// One `KEY=VALUE` from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Set {
    pub path: Vec<String>,
    pub value: Value,
}

impl Set {
    /// Parse `KEY=VALUE`; the error says what is wrong with it (the
    /// caller names the argument: clap's "invalid value '…' for '--set'").
    pub fn parse(arg: &str) -> Result<Set, String> {
        let (key, raw) = arg
            .split_once('=')
            .ok_or("expected KEY=VALUE, e.g. system.model=gpt-4o")?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
            return Err("the key must be a dotted path such as system.model".into());
        }
        Ok(Set {
            path: key.split('.').map(|p| p.trim().to_string()).collect(),
            value: value_of(raw)?,
        })
    }
}

/// `raw` as one TOML value, else as a string. A whole number TOML cannot
/// hold (beyond ±9223372036854775807, TOML's 64-bit integers) is an error:
/// read as a string it would reach the field as "invalid type: string",
/// hiding that the number is the problem.
fn value_of(raw: &str) -> Result<Value, String> {
    let doc = format!("v = {raw}");
    match doc.parse::<Table>() {
        Ok(t) if matches!(t.get("v"), Some(Value::Float(x)) if !x.is_finite()) => {
            Err(not_finite(raw))
        }
        Ok(mut t) if t.len() == 1 => Ok(t.remove("v").unwrap_or_else(|| Value::String(raw.into()))),
        _ if raw.trim().parse::<f64>().is_ok_and(|x| !x.is_finite()) => Err(not_finite(raw)),
        _ if is_whole_number(raw) => Err(format!(
            "{} is too large: whole numbers are at most {} (TOML's 64-bit integers)",
            raw.trim(),
            i64::MAX
        )),
        _ => Ok(Value::String(raw.to_string())),
    }
}

/// `nan`, `inf` or `1e400` as a value: refused, as in a file
/// (`toml_error::non_finite`).
fn not_finite(raw: &str) -> String {
    format!(
        "{0} is not a finite number (every number here must be one; for the text, quote it: KEY='\"{0}\"')",
        raw.trim()
    )
}

/// Digits with an optional sign and TOML's `_` separators: `-12`, `1_000`.
fn is_whole_number(raw: &str) -> bool {
    let digits = raw.trim().trim_start_matches(['+', '-']);
    digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// `text` (a configuration file) with every `set` applied, in order, as
/// TOML text. An error names the key that cannot be set and why.
pub fn apply(text: &str, sets: &[Set]) -> Result<String, String> {
    if sets.is_empty() {
        return Ok(text.to_string());
    }
    let mut doc: Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("cannot apply --set: {}", e.message()))?;
    apply_to(&mut doc, sets).map_err(|(s, why)| format!("--set {}: {why}", s.path.join(".")))?;
    toml::to_string(&doc).map_err(|e| format!("cannot apply --set: {e}"))
}

/// Every `set` applied, in order, to `doc` (a parsed configuration); an
/// error is the set that cannot be applied and why. The one place a
/// field is set from outside the file: `--set` and `[[variant]]` tables
/// (`config::variant`).
pub(crate) fn apply_to<'s>(doc: &mut Table, sets: &'s [Set]) -> Result<(), (&'s Set, String)> {
    for s in sets {
        set_in(doc, &s.path, s.value.clone()).map_err(|why| (s, why))?;
    }
    Ok(())
}

fn set_in(t: &mut Table, path: &[String], value: Value) -> Result<(), String> {
    let (first, rest) = path.split_first().ok_or("empty key")?;
    if rest.is_empty() {
        t.insert(first.clone(), value);
        return Ok(());
    }
    let next = t
        .entry(first.clone())
        .or_insert_with(|| Value::Table(Table::new()));
    set_value(next, first, rest, value)
}

fn set_value(v: &mut Value, name: &str, rest: &[String], value: Value) -> Result<(), String> {
    match v {
        Value::Table(t) => set_in(t, rest, value),
        Value::Array(items) => {
            let (index, more) = rest.split_first().ok_or("empty key")?;
            let i: usize = index
                .parse()
                .map_err(|_| format!("{name} is a list: give an index, e.g. {name}.0"))?;
            let len = items.len();
            let item = items
                .get_mut(i)
                .ok_or_else(|| format!("{name} has {len} entries; there is no {name}.{i}"))?;
            if more.is_empty() {
                *item = value;
                Ok(())
            } else {
                set_value(item, &format!("{name}.{i}"), more, value)
            }
        }
        other => Err(format!("{name} is a {}, not a table", other.type_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(arg: &str) -> Set {
        Set::parse(arg).unwrap()
    }

    #[test]
    fn values_are_toml_when_they_parse_else_strings() {
        assert_eq!(set("a.b=0.9").value, Value::Float(0.9));
        assert_eq!(set("a.b=42").value, Value::Integer(42));
        assert_eq!(set("a.b=true").value, Value::Boolean(true));
        assert_eq!(set("a.b=gpt-4o").value, Value::String("gpt-4o".into()));
        assert_eq!(
            set("a.b=Be brief. Never = rude").value,
            Value::String("Be brief. Never = rude".into())
        );
        assert_eq!(set("a.b=\"quoted\"").value, Value::String("quoted".into()));
        assert_eq!(set(" system.model =x").path, vec!["system", "model"]);
        assert!(Set::parse("nokey").unwrap_err().contains("KEY=VALUE"));
        assert!(Set::parse("a..b=1").unwrap_err().contains("dotted path"));
        let e = Set::parse("experiment.outputs_per_input=99999999999999999999").unwrap_err();
        assert!(
            e.contains("99999999999999999999 is too large") && e.contains("9223372036854775807"),
            "{e}"
        );
        assert_eq!(
            set("a.b=-9223372036854775808").value,
            Value::Integer(i64::MIN)
        );
        assert_eq!(set("a.b=12abc").value, Value::String("12abc".into()));
        for bad in ["nan", "inf", "-inf", "1e400"] {
            let e = Set::parse(&format!("system.temperature={bad}")).unwrap_err();
            assert!(e.contains("not a finite number"), "{e}");
        }
    }

    #[test]
    fn tables_arrays_and_errors() {
        let text = "name = \"x\"\n[system]\nprovider = \"sim\"\n[[validator]]\nname = \"v\"\nminimum_success_percentage = 0.9\n";
        let out = apply(
            text,
            &[
                set("system.seed=7"),
                set("prompt.system=Be brief."),
                set("validator.0.minimum_success_percentage=0.5"),
            ],
        )
        .unwrap();
        let t: Table = out.parse().unwrap();
        assert_eq!(t["system"]["seed"].as_integer(), Some(7));
        assert_eq!(t["system"]["provider"].as_str(), Some("sim"));
        assert_eq!(t["prompt"]["system"].as_str(), Some("Be brief."));
        assert_eq!(
            t["validator"][0]["minimum_success_percentage"].as_float(),
            Some(0.5)
        );
        let e = apply(text, &[set("validator.3.name=x")]).unwrap_err();
        assert!(
            e.contains("validator has 1 entries; there is no validator.3"),
            "{e}"
        );
        let e = apply(text, &[set("validator.name=x")]).unwrap_err();
        assert!(e.contains("give an index"), "{e}");
        let e = apply(text, &[set("name.first=x")]).unwrap_err();
        assert!(e.contains("name is a string, not a table"), "{e}");
        assert_eq!(apply(text, &[]).unwrap(), text);
    }
}
