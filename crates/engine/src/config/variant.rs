//! `[[variant]]` tables: versions of one system tested side by side, on
//! the same inputs and repetitions, in one `probity run` (docs/config.md,
//! Variants).
//!
//! ```toml
//! [[variant]]
//! name = "baseline"            # the reference: the first, unless another says reference = true
//!
//! [[variant]]
//! name = "terse"
//! prompt.system = "Answer in one sentence. Never use contractions."
//! system.temperature = 0.2
//! ```
//!
//! A variant sets `name`, optionally `reference = true`, and fields of
//! `[system]` and `[prompt]` — written as dotted keys or as
//! `[variant.system]` tables. Each field is applied to the file (after
//! `--set`) by the machinery of `--set` ([`crate::config::set`]); a
//! variant whose `system.provider` differs from the file's replaces the
//! whole `[system]` table. The result is an ordinary configuration, checked
//! like a file: a misspelt field is an error naming the file, the line of
//! the field and the variant. Each variant is stored as a run of its own,
//! named `NAME/VARIANT`, whose configuration hash covers the variant's name
//! (two variants that ask the same questions are still two runs).

use crate::config::key_lines::{line_of, walk};
use crate::config::matrix;
use crate::config::set::{self, Set};
use crate::config::{Config, ConfigError, Overrides};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

/// The keys a `[[variant]]` table may hold.
pub(crate) const VARIANT_KEYS: &[&str] = &["name", "reference", "system", "prompt"];

/// Longest variant name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// One `[[variant]]` table as written.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSpec {
    pub name: String,
    /// Its place among the file's variants (0-based): the matrix's order.
    pub index: usize,
    /// The line (1-based) of its `[[variant]]` table in the file.
    pub line: usize,
    /// `reference = true`: the variant the others are compared with.
    pub reference: bool,
    /// Its fields, as `--set`s, each with the line it is written on.
    pub sets: Vec<(Set, usize)>,
    /// A combination of `[matrix]` rather than a `[[variant]]` table.
    pub from_matrix: bool,
}

/// A file's variants, and the file without them.
#[derive(Debug, Clone)]
pub struct Variants {
    /// The configuration without its `[[variant]]` tables.
    pub base: Table,
    /// Every variant, in the file's order.
    pub specs: Vec<VariantSpec>,
    /// The configuration's name (`name`, else the file's stem).
    pub name: String,
}

fn invalid(path: &Path, line: usize, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    }
}

/// Where each variant table and each of its fields is written: per
/// `[[variant]]` table, its line and `dotted.key → line`.
fn lines(text: &str) -> Vec<(usize, HashMap<String, usize>)> {
    let Ok(doc) = DeTable::parse(text) else {
        return Vec::new();
    };
    let Some(array) = doc
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "variant")
        .map(|(_, v)| v)
    else {
        return Vec::new();
    };
    let DeValue::Array(items) = array.get_ref() else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| {
            let mut keys = HashMap::new();
            let mut first = usize::MAX;
            if let DeValue::Table(t) = item.get_ref() {
                walk(t, "", &mut keys, &mut first);
                keys.values_mut().for_each(|at| *at = line_of(text, *at));
            }
            let table = line_of(text, item.span().start.min(first));
            // An `[[variant]]` header is on the line before its first key
            // when the span starts at the key.
            let header = text
                .lines()
                .take(table)
                .enumerate()
                .filter(|(_, l)| l.trim_start().starts_with("[[variant]]"))
                .last()
                .map_or(table, |(n, _)| n + 1);
            (header, keys)
        })
        .collect()
}

/// The leaves of `value` under `path` as `--set`s (tables are walked,
/// anything else, arrays included, is one value).
fn leaves(path: Vec<String>, value: &Value, out: &mut Vec<Set>) {
    match value {
        Value::Table(t) => {
            for (k, v) in t {
                let mut p = path.clone();
                p.push(k.clone());
                leaves(p, v, out);
            }
        }
        other => out.push(Set {
            path,
            value: other.clone(),
        }),
    }
}

/// The `[[variant]]` tables of `text` (a configuration file, `--set`s
/// applied); `None` when it has none. Each table's keys are checked here
/// (name, reference, and tables of `[system]` and `[prompt]` fields);
/// the fields themselves are checked when a variant's configuration is
/// built ([`Variants::config`]).
pub fn parse(text: &str, path: &Path) -> Result<Option<Variants>, ConfigError> {
    let mut doc: Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: crate::toml_error::describe(&e, text),
    })?;
    let matrix = doc.remove("matrix");
    let raw = doc.remove("variant");
    if raw.is_none() && matrix.is_none() {
        return Ok(None);
    }
    // A variant's fields reach its configuration through a TOML text made
    // here, where a `nan` would lose its line; named now, as a file's are.
    if let Some(message) = crate::toml_error::non_finite(text) {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        });
    }
    let raw = match (raw, matrix) {
        (None, Some(m)) => return from_matrix(doc, &m, text, path).map(Some),
        (Some(_), Some(_)) => {
            return Err(invalid(
                path,
                matrix::table_line(text),
                "[matrix] and [[variant]] tables in one file: write the versions either as a matrix or as variants",
            ))
        }
        (Some(raw), None) => raw,
        (None, None) => return Ok(None),
    };
    let at = Lines(lines(text));
    let Value::Array(tables) = raw else {
        // `[variant]` (one table) or `variant = …`: the line it is on.
        let written = text
            .lines()
            .position(|l| {
                let t = l.trim_start();
                t.starts_with("[variant")
                    || t.strip_prefix("variant")
                        .is_some_and(|rest| rest.trim_start().starts_with(['=', '.']))
            })
            .map_or(1, |i| i + 1);
        return Err(invalid(
            path,
            written,
            "`variant` must be [[variant]] tables (a name and the fields of [system] and [prompt] it changes)",
        ));
    };
    if tables.is_empty() {
        return Ok(None);
    }
    let mut specs: Vec<VariantSpec> = Vec::with_capacity(tables.len());
    for (i, table) in tables.into_iter().enumerate() {
        let spec = variant_spec(i, table, path, &at, &specs)?;
        specs.push(spec);
    }
    one_reference(&specs, path)?;
    Ok(Some(Variants {
        name: run_name(&doc, path)?,
        base: doc,
        specs,
    }))
}

/// The variants of a `[matrix]` (`doc`: the file without it), each a
/// combination of its fields' values ([`matrix::expand`]).
fn from_matrix(doc: Table, m: &Value, text: &str, path: &Path) -> Result<Variants, ConfigError> {
    let specs = matrix::expand(m, text, path, MAX_NAME_CHARS)?
        .into_iter()
        .enumerate()
        .map(|(index, c)| VariantSpec {
            name: c.name,
            index,
            line: c.line,
            reference: false,
            sets: c.sets,
            from_matrix: true,
        })
        .collect();
    Ok(Variants {
        name: run_name(&doc, path)?,
        base: doc,
        specs,
    })
}

/// The configuration's name (`name`, else the file's stem); one with a
/// '/' is an error.
fn run_name(doc: &Table, path: &Path) -> Result<String, ConfigError> {
    let name = match doc.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "probity".into()),
    };
    if name.contains('/') {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: slash_in_name(&name),
        });
    }
    Ok(name)
}

/// Where each `[[variant]]` table is in the file: its line, and its keys'.
struct Lines(Vec<(usize, HashMap<String, usize>)>);

impl Lines {
    /// The line of table `i` (1 when unknown).
    fn line(&self, i: usize) -> usize {
        self.0.get(i).map_or(1, |(l, _)| *l)
    }

    /// The line of `key` in table `i` (the table's when unknown).
    fn key(&self, i: usize, key: &str) -> usize {
        self.0
            .get(i)
            .and_then(|(_, keys)| keys.get(key).copied())
            .unwrap_or_else(|| self.line(i))
    }
}

/// `[[variant]]` table `i`: its name (unique among `before`), whether it is
/// the reference, and the `[system]`/`[prompt]` fields it sets, each with
/// its line. An error names the table, the key and its line.
fn variant_spec(
    i: usize,
    table: Value,
    path: &Path,
    at: &Lines,
    before: &[VariantSpec],
) -> Result<VariantSpec, ConfigError> {
    let Value::Table(t) = table else {
        return Err(invalid(
            path,
            at.line(i),
            format!("[[variant]] #{}: must be a table", i + 1),
        ));
    };
    let name = variant_name(i, &t, path, at, before)?;
    let label = format!("[[variant]] #{} ({name:?})", i + 1);
    let reference = match t.get("reference") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(invalid(
                path,
                at.key(i, "reference"),
                format!(
                    "{label}: reference must be true or false, not a {}",
                    other.type_str()
                ),
            ))
        }
    };
    let mut sets = Vec::new();
    for (k, v) in &t {
        match k.as_str() {
            "name" | "reference" => {}
            "system" | "prompt" => {
                if !v.is_table() {
                    return Err(invalid(
                        path,
                        at.key(i, k),
                        format!("{label}: `{k}` must hold fields of [{k}] (`{k}.field = …`), not a {}", v.type_str()),
                    ));
                }
                let mut found = Vec::new();
                leaves(vec![k.clone()], v, &mut found);
                for s in found {
                    let line = at.key(i, &s.path.join("."));
                    sets.push((s, line));
                }
            }
            other => {
                return Err(invalid(
                    path,
                    at.key(i, other),
                    format!(
                        "{label}: unknown key `{other}`; a variant holds {} (fields of [system] and [prompt], e.g. system.model, prompt.system)",
                        VARIANT_KEYS.join(", ")
                    ),
                ))
            }
        }
    }
    Ok(VariantSpec {
        name,
        index: i,
        line: at.line(i),
        reference,
        sets,
        from_matrix: false,
    })
}

/// The name of `[[variant]]` table `i`: a string, at most
/// [`MAX_NAME_CHARS`] characters, no '/' nor control character, unique
/// among `before`.
fn variant_name(
    i: usize,
    t: &Table,
    path: &Path,
    at: &Lines,
    before: &[VariantSpec],
) -> Result<String, ConfigError> {
    let name = match t.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) | None => {
            return Err(invalid(
                path,
                at.line(i),
                format!(
                    "[[variant]] #{}: has no name (name = \"…\" is required)",
                    i + 1
                ),
            ))
        }
        Some(other) => {
            return Err(invalid(
                path,
                at.key(i, "name"),
                format!(
                    "[[variant]] #{}: name must be a string, not a {}",
                    i + 1,
                    other.type_str()
                ),
            ))
        }
    };
    let label = format!("[[variant]] #{} ({name:?})", i + 1);
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(|c| c.is_control() || c == '/') {
        return Err(invalid(
            path,
            at.key(i, "name"),
            format!("{label}: a variant's name has at most {MAX_NAME_CHARS} characters, no '/' and no control character"),
        ));
    }
    if let Some(first) = before.iter().find(|s| s.name == name) {
        return Err(invalid(
            path,
            at.key(i, "name"),
            format!(
                "{label}: the name is already that of [[variant]] #{} (line {}); names must be unique",
                first.index + 1,
                first.line
            ),
        ));
    }
    Ok(name)
}

/// At most one variant says `reference = true`.
fn one_reference(specs: &[VariantSpec], path: &Path) -> Result<(), ConfigError> {
    if let [first, second, ..] = specs
        .iter()
        .filter(|s| s.reference)
        .collect::<Vec<_>>()
        .as_slice()
    {
        return Err(invalid(
            path,
            second.line,
            format!(
                "[[variant]] {:?} and {:?} both say reference = true; one variant is the reference",
                first.name, second.name
            ),
        ));
    }
    Ok(())
}

/// Why a run's name may not hold '/': it separates a name from its variant
/// (`probity revalidate NAME/VARIANT`, the runs of a variants file).
pub fn slash_in_name(name: &str) -> String {
    format!("name = {name:?}: '/' separates a run's name from its variant's (NAME/VARIANT); choose a name without it")
}

/// The first backquoted word of a serde message (`unknown field `modle``).
fn quoted_field(message: &str) -> Option<&str> {
    let rest = message.split_once("field `")?.1;
    rest.split('`').next()
}

impl Variants {
    /// The variants named in `names` (`--variant`, in the file's order),
    /// or every one when `names` is empty. An unknown name is an error
    /// listing the known ones.
    pub fn select(&self, names: &[String], path: &Path) -> Result<Vec<&VariantSpec>, ConfigError> {
        for n in names {
            if !self.specs.iter().any(|s| &s.name == n) {
                let known: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                return Err(ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message: format!(
                        "--variant {n:?}: no [[variant]] of that name (the file's variants: {})",
                        known.join(", ")
                    ),
                });
            }
        }
        Ok(self
            .specs
            .iter()
            .filter(|s| names.is_empty() || names.contains(&s.name))
            .collect())
    }

    /// The reference among `chosen`: the one that says `reference = true`,
    /// else the first.
    pub fn reference(chosen: &[&VariantSpec]) -> usize {
        chosen.iter().position(|s| s.reference).unwrap_or(0)
    }

    /// The name a variant's runs are stored under: `NAME/VARIANT`.
    pub fn run_name(&self, spec: &VariantSpec) -> String {
        format!("{}/{}", self.name, spec.name)
    }

    /// Variant `spec`'s configuration: the file with its fields applied,
    /// checked like a file, named [`Variants::run_name`], its hash
    /// covering the variant's name. An error names the file, the line of
    /// the field (or of the variant's table) and the variant.
    pub fn config(
        &self,
        spec: &VariantSpec,
        path: &Path,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        let label = spec.label();
        let mut doc = self.base.clone();
        let provider = |t: &Table| {
            t.get("system")
                .and_then(|s| s.get("provider"))
                .and_then(Value::as_str)
                .unwrap_or("sim")
                .to_string()
        };
        let own_provider = spec
            .sets
            .iter()
            .find(|(s, _)| s.path == ["system", "provider"])
            .and_then(|(s, _)| s.value.as_str());
        if own_provider.is_some_and(|p| p != provider(&doc)) {
            // Another provider: its fields replace the file's.
            doc.insert("system".into(), Value::Table(Table::new()));
        }
        let sets: Vec<Set> = spec.sets.iter().map(|(s, _)| s.clone()).collect();
        set::apply_to(&mut doc, &sets).map_err(|(s, why)| {
            let at = spec
                .sets
                .iter()
                .find(|(x, _)| x == s)
                .map_or(spec.line, |(_, l)| *l);
            invalid(path, at, format!("{label}: {}: {why}", s.path.join(".")))
        })?;
        doc.insert("name".into(), Value::String(self.run_name(spec)));
        let body = toml::to_string(&doc).map_err(|e| invalid(path, spec.line, e))?;
        let text = format!(
            "# variant {:?} of {}: the file with its [[variant]] table applied\n{body}",
            spec.name,
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        // The fields first, so an error names the variant's line rather
        // than one of the text made here.
        if let Err(e) = toml::from_str::<crate::config::ConfigFile>(&text) {
            let message = e.message().trim_end().to_string();
            let at = quoted_field(&message)
                .and_then(|f| {
                    spec.sets
                        .iter()
                        .find(|(s, _)| s.path.last().is_some_and(|l| l == f))
                })
                .map(|(s, l)| (s.path.join("."), *l));
            return Err(match at {
                Some((key, line)) => invalid(path, line, format!("{label}: {key}: {message}")),
                None => invalid(path, spec.line, format!("{label}: {message}")),
            });
        }
        let mut config =
            Config::from_str_with(&text, path, overrides).map_err(|e| spec.named_in(e, path))?;
        config.hash = hex::encode(Sha256::digest(format!(
            "{}\nvariant {}",
            config.hash, spec.name
        )));
        Ok(config)
    }
}

impl VariantSpec {
    /// How errors name it: `[[variant]] "NAME"`, or `[matrix] variant
    /// "NAME"` for a combination of a matrix.
    pub fn label(&self) -> String {
        match self.from_matrix {
            true => format!("[matrix] variant {:?}", self.name),
            false => format!("[[variant]] {:?}", self.name),
        }
    }

    /// `e`, raised while this variant's configuration or system was built,
    /// named as this variant's: the file, the line of its table, its name.
    pub(crate) fn named_in(&self, e: ConfigError, path: &Path) -> ConfigError {
        let label = self.label();
        match e {
            ConfigError::Invalid { message, .. } | ConfigError::Parse { message, .. } => {
                invalid(path, self.line, format!("{label}: {message}"))
            }
            ConfigError::System { message, .. } => {
                invalid(path, self.line, format!("{label}: [system] {message}"))
            }
            other => other,
        }
    }
}

/// The configuration that applies to a stored run (`probity revalidate`),
/// read from `path`: the file as [`Config::load`] reads it when it has no
/// `[[variant]]` tables; with tables, the configuration of the run's own
/// `variant` ([`Variants::config`]), or, for a run that is no variant, the
/// file without its tables (the checks are the same for every variant).
/// A run of a variant the file does not have, or a file with no variants,
/// is an error naming the variant.
pub fn load_for(path: &Path, variant: Option<&str>) -> Result<Config, ConfigError> {
    let raw = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = crate::config::inputs::strip_bom(&raw);
    let Some(variants) = parse(text, path)? else {
        if let Some(name) = variant {
            // Its re-check would be filed under the base's name and
            // configuration, and taken for the base's history.
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "the run is variant {name:?}, and this file has no [[variant]]; restore the variant or name the file that has it"
                ),
            });
        }
        return Config::from_str(text, path);
    };
    let Some(name) = variant else {
        let body = toml::to_string(&variants.base).map_err(|e| invalid(path, 1, e))?;
        return Config::from_str(&body, path);
    };
    match variants.specs.iter().find(|s| s.name == name) {
        Some(spec) => variants.config(spec, path, &Overrides::default()),
        None => {
            let known: Vec<&str> = variants.specs.iter().map(|s| s.name.as_str()).collect();
            Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "the run is variant {name:?}, and this file has no [[variant]] of that name (its variants: {}); restore the variant or name a file that has it",
                    known.join(", ")
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"name = "polite"
[system]
provider = "sim"
seed = 1
contractions = 0.1

[prompt]
system = "Be polite."

[[input]]
id = "a"
text = "Thank you!"

[[validator]]
name = "short"
check = "output.len() < 500"
"#;

    fn path() -> &'static Path {
        Path::new("dir/probity.toml")
    }

    fn err(text: &str) -> String {
        let v = match parse(text, path()) {
            Err(e) => return e.to_string(),
            Ok(v) => v.unwrap(),
        };
        for s in &v.specs {
            if let Err(e) = v.config(s, path(), &Overrides::default()) {
                return e.to_string();
            }
        }
        panic!("no error in {text}")
    }

    #[test]
    fn no_variant_tables_is_none() {
        assert!(parse(BASE, path()).unwrap().is_none());
    }

    #[test]
    fn variants_apply_their_fields_and_hash_their_names() {
        let text = format!(
            "{BASE}\n[[variant]]\nname = \"base\"\n\n[[variant]]\nname = \"same\"\n\n[[variant]]\nname = \"sloppy\"\nreference = true\nsystem.contractions = 0.6\nprompt.system = \"Be quick.\"\n\n[[variant]]\nname = \"tabled\"\n[variant.system]\nseed = 9\n"
        );
        let v = parse(&text, path()).unwrap().unwrap();
        assert_eq!(v.name, "polite");
        let names: Vec<&str> = v.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["base", "same", "sloppy", "tabled"]);
        assert_eq!(v.specs[2].line, 24);
        let all = v.select(&[], path()).unwrap();
        assert_eq!(Variants::reference(&all), 2);
        let o = Overrides::default();
        let base = v.config(&v.specs[0], path(), &o).unwrap();
        let same = v.config(&v.specs[1], path(), &o).unwrap();
        let sloppy = v.config(&v.specs[2], path(), &o).unwrap();
        let tabled = v.config(&v.specs[3], path(), &o).unwrap();
        assert_eq!(base.name, "polite/base");
        assert_eq!(base.file.system, same.file.system);
        assert_ne!(base.hash, same.hash, "the variant's name is hashed");
        let sim = |c: &Config| match &*c.file.system {
            crate::system::config::ProviderConfig::Sim(s) => s.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(sim(&sloppy).contractions, 0.6);
        assert_eq!(sim(&sloppy).seed, Some(1), "the file's other fields stay");
        assert_eq!(sloppy.file.prompt.system.as_deref(), Some("Be quick."));
        assert_eq!(sim(&tabled).seed, Some(9));
        assert!(sloppy
            .text
            .starts_with("# variant \"sloppy\" of probity.toml"));
        // A subset, in the file's order; the reference is then the first.
        let some = v.select(&["tabled".into(), "base".into()], path()).unwrap();
        assert_eq!(some.len(), 2);
        assert_eq!(some[0].name, "base");
        assert_eq!(Variants::reference(&some), 0);
    }

    #[test]
    fn bad_variants_name_the_file_line_and_field() {
        let e = err(&format!(
            "{BASE}\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"b\"\nsystem.contractoins = 0.5\n"
        ));
        assert!(
            e.starts_with("dir/probity.toml: line 23: [[variant]] \"b\": system.contractoins: unknown field `contractoins`"),
            "{e}"
        );
        let e = err(&format!(
            "{BASE}\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"a\"\n"
        ));
        assert!(
            e.contains("line 22: [[variant]] #2 (\"a\"): the name is already that of [[variant]] #1 (line 18)"),
            "{e}"
        );
        let e = err(&format!(
            "{BASE}\n[[variant]]\nname = \"a\"\nsytem.model = \"x\"\n"
        ));
        assert!(
            e.contains("line 20: [[variant]] #1 (\"a\"): unknown key `sytem`"),
            "{e}"
        );
        let e = err(&format!("{BASE}\n[[variant]]\nprompt.system = \"x\"\n"));
        assert!(e.contains("line 18: [[variant]] #1: has no name"), "{e}");
        let e = err(&format!(
            "{BASE}\n[[variant]]\nname = \"a\"\nreference = true\n[[variant]]\nname = \"b\"\nreference = true\n"
        ));
        assert!(e.contains("both say reference = true"), "{e}");
        let e = err(&format!(
            "{BASE}\n[[variant]]\nname = \"a\"\nprompt.user = \"{{{{ input.text \"\n"
        ));
        assert!(e.contains("line 18: [[variant]] \"a\": [prompt]"), "{e}");
        let v = parse(&format!("{BASE}\n[[variant]]\nname = \"a\"\n"), path())
            .unwrap()
            .unwrap();
        let e = v.select(&["b".into()], path()).unwrap_err().to_string();
        assert!(
            e.contains("--variant \"b\": no [[variant]] of that name (the file's variants: a)"),
            "{e}"
        );
        // One `[variant]` table: the line it is on, not line 1.
        let e = err(&format!(
            "{BASE}
[variant]
name = \"a\"
"
        ));
        assert!(
            e.contains("line 18: `variant` must be [[variant]] tables"),
            "{e}"
        );
        // A number that is none: its key and line, not serde's "null".
        let e = err(&format!(
            "{BASE}
[[variant]]
name = \"a\"
system.contractions = nan
"
        ));
        assert!(
            e.contains("line 20: variant.system.contractions = nan: not a finite number"),
            "{e}"
        );
        // A system the variant's fields make invalid: named as the variant's.
        let v = parse(
            &format!(
                "{BASE}
[[variant]]
name = \"a\"
system.contractions = -0.5
"
            ),
            path(),
        )
        .unwrap()
        .unwrap();
        let config = v
            .config(&v.specs[0], path(), &Overrides::default())
            .unwrap();
        let e = v.specs[0]
            .named_in(config.into_experiment().err().unwrap(), path())
            .to_string();
        assert!(
            e.starts_with("dir/probity.toml: line 18: [[variant]] \"a\": [system] ")
                && e.contains("-0.5"),
            "{e}"
        );
    }

    #[test]
    fn another_provider_replaces_the_system_table() {
        let text = format!(
            "{BASE}\n[[variant]]\nname = \"a\"\n\n[[variant]]\nname = \"cmd\"\nsystem.provider = \"command\"\nsystem.command = [\"cat\"]\n"
        );
        let v = parse(&text, path()).unwrap().unwrap();
        let c = v
            .config(&v.specs[1], path(), &Overrides::default())
            .unwrap();
        assert_eq!(c.file.system.kind(), "command");
    }

    #[test]
    fn a_matrix_expands_to_its_product_named_readably() {
        let text = format!(
            "{BASE}\n[matrix]\nprompt.system = {{ terse = \"Answer in one sentence.\", polite = \"Be very polite, always.\" }}\nsystem.contractions = [0.1, 0.6]\nsystem.seed = [1, 2, 3]\n"
        );
        let v = parse(&text, path()).unwrap().unwrap();
        let names: Vec<&str> = v.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), 12);
        assert_eq!(names[0], "prompt=terse · contractions=0.1 · seed=1");
        assert_eq!(names[1], "prompt=terse · contractions=0.1 · seed=2");
        assert_eq!(names[3], "prompt=terse · contractions=0.6 · seed=1");
        assert_eq!(names[11], "prompt=polite · contractions=0.6 · seed=3");
        let unique: std::collections::HashSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), 12);
        let all = v.select(&[], path()).unwrap();
        assert_eq!(Variants::reference(&all), 0, "the first combination");
        let c = v
            .config(&v.specs[11], path(), &Overrides::default())
            .unwrap();
        assert_eq!(c.name, "polite/prompt=polite · contractions=0.6 · seed=3");
        assert_eq!(
            c.file.prompt.system.as_deref(),
            Some("Be very polite, always.")
        );
        let crate::system::config::ProviderConfig::Sim(sim) = &*c.file.system else {
            panic!("{:?}", c.file.system)
        };
        assert_eq!((sim.contractions, sim.seed), (0.6, Some(3)));
        // Models named after their last '/'; long strings numbered.
        let text = format!(
            "{BASE}\n[matrix]\nsystem.provider = [\"sim\"]\nprompt.system = [\"a prompt far longer than twenty-four characters\", \"short\"]\n"
        );
        let v = parse(&text, path()).unwrap().unwrap();
        let names: Vec<&str> = v.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["provider=sim · prompt=#1", "provider=sim · prompt=#2"]
        );
        let m = matrix::expand(
            &toml::from_str::<Table>("[system]\nmodel = [\"meta-llama/Llama-3-8B\", \"gpt-4o\"]")
                .unwrap()
                .into(),
            "",
            path(),
            MAX_NAME_CHARS,
        )
        .unwrap();
        assert_eq!(m[0].name, "model=Llama-3-8B");
        assert_eq!(m[1].name, "model=gpt-4o");
    }

    #[test]
    fn bad_matrices_name_the_file_line_and_field() {
        let e = err(&format!("{BASE}\n[matrix]\nsystem.seed = []\n"));
        assert!(
            e.starts_with("dir/probity.toml: line 19: [matrix]: system.seed: an empty list"),
            "{e}"
        );
        let e = err(&format!(
            "{BASE}\n[matrix]\nsystem.seed = [1]\nmodel = [\"a\"]\n"
        ));
        assert!(e.contains("line 20: [matrix]: unknown key `model`"), "{e}");
        let e = err(&format!(
            "{BASE}\n[matrix]\nsystem.seed = [1, 2]\nsystem.contractoins = [0.1]\n"
        ));
        assert!(
            e.starts_with("dir/probity.toml: line 20: [matrix] variant \"seed=1 · contractoins=0.1\": system.contractoins: unknown field `contractoins`"),
            "{e}"
        );
        let e = err(&format!(
            "{BASE}\n[matrix]\nsystem.seed = [1, 2, 3, 4, 5]\nsystem.contractions = [0.1, 0.2, 0.3, 0.4]\nprompt.system = [\"a\", \"b\", \"c\", \"d\"]\n"
        ));
        assert!(
            e.contains("line 18: [matrix]: 80 combinations (system.seed 5 × system.contractions 4 × prompt.system 4), more than 64"),
            "{e}"
        );
        let e = err(&format!("{BASE}\n[matrix]\nsystem.seed = 3\n"));
        assert!(
            e.contains("line 19: [matrix]: system.seed: must be a list of values"),
            "{e}"
        );
        let e = err(&format!("{BASE}\n[matrix]\n"));
        assert!(e.contains("line 18: [matrix]: has no field"), "{e}");
        let e = err(&format!(
            "{BASE}\n[matrix]\nsystem.seed = [1]\n\n[[variant]]\nname = \"a\"\n"
        ));
        assert!(
            e.contains("line 18: [matrix] and [[variant]] tables in one file"),
            "{e}"
        );
    }
}
