//! The documentation is tested: every ```toml block in README.md and
//! docs/*.md loads, and every table of keys documents exactly the keys the
//! code accepts, with the code's defaults.
//!
//! The scheme (also described in docs/config.md, "About the examples"): the
//! HTML comment on the last non-blank line before a block or table says what
//! it is.
//!
//! * No comment: a whole `probity.toml`. It must load with
//!   [`Config::from_str`] as it is; the input files it names are created in
//!   a temporary directory (one row each). Its system is then built (the
//!   key variables the docs name are set to dummy values here).
//! * `<!-- fragment -->`: part of a `probity.toml`, written with its table
//!   headers. A trivial `[[validator]]` is added when it has no check, and
//!   an `[[input]]` when it names no inputs; then it loads as above. Since
//!   every table denies unknown keys, a misspelt field fails.
//! * `<!-- serve -->`: a whole `probity serve` file, loaded with
//!   [`serve::load`] (its upstream is built too).
//! * `<!-- sim-serve -->`: a `probity sim serve --config` file (`[model]`
//!   and `[faults]`).
//! * `<!-- classes -->`: a `classes` file of `probity serve` (attempts per
//!   class of request).
//! * `<!-- traces -->`: a `probity collect` / `traces import` file.
//! * `<!-- variants -->`: `[[variant]]` tables, completed as a fragment;
//!   every variant's configuration must load and build its system.
//! * `<!-- defaults: KIND -->` before a Markdown table with `key` and
//!   `default` columns: the rows must name exactly the keys that KIND's
//!   table accepts (the list serde gives for an unknown key; deprecated
//!   aliases, documented as "`x` is a deprecated alias", aside), and every
//!   default written as one TOML value in backticks must equal the code's
//!   default (setting the key to it changes nothing). Other defaults
//!   ("required", "none: …") are prose.

use probity_engine::config::example;
use probity_engine::config::{Config, ConfigFile};
use probity_engine::serve::{self, ServeConfig};
use probity_engine::sim::server::FaultConfig;
use probity_engine::sim::SimConfig;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// Key variables the documentation names, set to dummy values so that
/// providers build. Every test calls this first, before anything reads the
/// environment.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for var in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "HTTP_API_KEY",
            "OPENAI_ORG",
            "PROBITY_TOKEN",
        ] {
            std::env::set_var(var, "doc-test-dummy");
        }
    });
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and docs/*.md, by name.
fn documents() -> Vec<(String, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The marker before line `index`: the last non-blank line, when it is an
/// HTML comment.
fn marker(lines: &[&str], index: usize) -> Option<String> {
    let prev = lines[..index].iter().rev().find(|l| !l.trim().is_empty())?;
    let inner = prev.trim().strip_prefix("<!--")?.strip_suffix("-->")?;
    Some(inner.trim().to_string())
}

struct Block {
    at: String,
    marker: Option<String>,
    text: String,
}

fn toml_blocks(name: &str, doc: &str) -> Vec<Block> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "```toml" {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                body.push(lines[i]);
                i += 1;
            }
            assert!(i < lines.len(), "{name}:{}: unclosed ```toml", start + 1);
            out.push(Block {
                at: format!("{name}:{}", start + 1),
                marker: marker(&lines, start),
                text: body.join("\n") + "\n",
            });
        }
        i += 1;
    }
    out
}

/// One Markdown table cell split, honouring `\|`.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

struct KeyTable {
    at: String,
    kind: String,
    /// (key, default cell, the whole row).
    rows: Vec<(String, String, String)>,
}

fn key_tables(name: &str, doc: &str) -> Vec<KeyTable> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim().starts_with('|') || (i > 0 && lines[i - 1].trim().starts_with('|')) {
            continue;
        }
        let Some(kind) = marker(&lines, i)
            .and_then(|m| m.strip_prefix("defaults:").map(|k| k.trim().to_string()))
        else {
            continue;
        };
        let at = format!("{name}:{}", i + 1);
        let header = cells(line);
        let col = |h: &str| {
            header
                .iter()
                .position(|c| c == h)
                .unwrap_or_else(|| panic!("{at}: no {h:?} column in {header:?}"))
        };
        let (key_col, default_col) = (col("key"), col("default"));
        let rows = lines[i + 2..]
            .iter()
            .take_while(|l| l.trim().starts_with('|'))
            .map(|l| {
                let c = cells(l);
                let key = c[key_col].trim_matches('`').to_string();
                (key, c[default_col].clone(), l.to_string())
            })
            .collect();
        out.push(KeyTable { at, kind, rows });
    }
    out
}

/// The names a row documents as "`x` is a deprecated alias".
fn deprecated_aliases(row: &str) -> Vec<String> {
    row.match_indices("` is a deprecated alias")
        .filter_map(|(i, _)| row[..i].rsplit('`').next().map(str::to_string))
        .collect()
}

fn to_json<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap()
}

/// `line` (a `key = value` line, or nothing) in the table of `kind`,
/// deserialized with the code's types, as JSON.
fn probe(kind: &str, line: &str) -> Result<Value, String> {
    let file = |prefix: &str| {
        toml::from_str::<ConfigFile>(&format!("{prefix}\n{line}\n"))
            .map(to_json)
            .map_err(|e| e.to_string())
    };
    match kind {
        "top" => file(""),
        "experiment" => file("[experiment]"),
        "prompt" => file("[prompt]"),
        "retry" => file("[retry]"),
        "openai" => file("[system]\nprovider = \"openai\"\nmodel = \"m\""),
        "anthropic" => file("[system]\nprovider = \"anthropic\"\nmodel = \"m\""),
        "http" => file("[system]\nprovider = \"http\"\nurl = \"http://x\""),
        "command" => file("[system]\nprovider = \"command\"\ncommand = [\"x\"]"),
        "sim" => file("[system]\nprovider = \"sim\""),
        "validator" => file("[[validator]]\nname = \"v\""),
        "program" => file("[[validator]]\nname = \"v\"\nkind = \"program\"\ncommand = [\"x\"]"),
        "verifier" => file("[[verifier]]\nname = \"v\"\ninstructions = \"x\""),
        "sim-judge" => file(
            "[[verifier]]\nname = \"v\"\ninstructions = \"x\"\n[verifier.system]\nprovider = \"sim\"",
        ),
        "serve" => toml::from_str::<ServeConfig>(line)
            .map(to_json)
            .map_err(|e| e.to_string()),
        "faults" => toml::from_str::<FaultConfig>(line)
            .map(to_json)
            .map_err(|e| e.to_string()),
        other => panic!("unknown defaults kind {other:?}"),
    }
}

/// The keys serde lists when it meets an unknown one.
fn accepted_keys(kind: &str) -> BTreeSet<String> {
    let err = probe(kind, "zzz_not_a_key = 1").expect_err("an unknown key is an error");
    let after = err
        .split_once("expected")
        .unwrap_or_else(|| panic!("{kind}: no list of keys in {err:?}"))
        .1;
    after
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Writes the input files a configuration names into `dir`.
fn write_named_inputs(text: &str, dir: &Path) {
    let table: toml::Table = toml::from_str(text).unwrap();
    let named = table
        .get("experiment")
        .and_then(|e| e.get("inputs"))
        .and_then(|p| p.as_str());
    if let Some(p) = named {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let row = if p.ends_with(".csv") {
            "id,text\nq1,Thank you for the JSON answer\n"
        } else {
            "{\"id\": \"q1\", \"text\": \"Thank you for the JSON answer\"}\n"
        };
        std::fs::write(path, row).unwrap();
    }
}

/// Loads `text` as `probity.toml` in a fresh directory and builds its system.
fn load_config(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    write_named_inputs(text, dir.path());
    let path = dir.path().join("probity.toml");
    let config = Config::from_str(text, &path).map_err(|e| e.to_string())?;
    config.experiment().map_err(|e| e.to_string())?;
    Ok(())
}

/// A fragment completed with a check and an input when it has none.
fn complete_fragment(text: &str) -> Result<String, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut text = text.to_string();
    if !table.contains_key("validator") && !table.contains_key("verifier") {
        text.push_str("\n[[validator]]\nname = \"doc_example_check\"\ncheck = \"true\"\n");
    }
    let names_inputs = table
        .get("experiment")
        .is_some_and(|e| e.get("inputs").is_some());
    if !names_inputs && !table.contains_key("input") {
        text.push_str("\n[[input]]\ntext = \"Thank you for the JSON answer\"\n");
    }
    Ok(text)
}

/// `[[variant]]` tables in a file: each variant's configuration loads and
/// builds its system.
fn load_variants(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    write_named_inputs(text, dir.path());
    let path = dir.path().join("probity.toml");
    let variants = probity_engine::config::variant::parse(text, &path)
        .map_err(|e| e.to_string())?
        .ok_or("no [[variant]] tables")?;
    for spec in &variants.specs {
        let config = variants
            .config(spec, &path, &Default::default())
            .map_err(|e| e.to_string())?;
        config.experiment().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn load_serve(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.toml");
    std::fs::write(&path, text).unwrap();
    let loaded = serve::load(&path)?;
    loaded
        .config
        .upstream
        .build()
        .map_err(|e| format!("[upstream] {e}"))?;
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimServeFile {
    #[serde(default)]
    model: SimConfig,
    #[serde(default)]
    faults: FaultConfig,
}

/// A `classes` file of `probity serve` (attempts per class of request).
fn load_classes(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("classes.toml");
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    serve::classes::Classes::load(&path).map(|_| ())
}

fn load_traces(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("traces.toml");
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    probity_engine::traces::config::load(&path).map(|_| ())
}

fn load_sim_serve(text: &str) -> Result<(), String> {
    let f: SimServeFile = toml::from_str(text).map_err(|e| e.to_string())?;
    f.model.validate().map_err(|e| e.to_string())?;
    f.faults.validate().map_err(|e| e.to_string())?;
    Ok(())
}

fn check_block(b: &Block) -> Result<(), String> {
    match b.marker.as_deref() {
        None => {
            let table: toml::Table = toml::from_str(&b.text).map_err(|e| e.to_string())?;
            if !table.contains_key("validator") && !table.contains_key("verifier") {
                return Err(
                    "no [[validator]] or [[verifier]]: mark it <!-- fragment --> if it is part of a file"
                        .into(),
                );
            }
            load_config(&b.text)
        }
        Some("fragment") => load_config(&complete_fragment(&b.text)?),
        Some("serve") => load_serve(&b.text),
        Some("sim-serve") => load_sim_serve(&b.text),
        Some("classes") => load_classes(&b.text),
        Some("traces") => load_traces(&b.text),
        Some("variants") => load_variants(&complete_fragment(&b.text)?),
        Some(other) => Err(format!(
            "unknown marker <!-- {other} --> before a toml block"
        )),
    }
}

#[test]
fn every_toml_block_in_the_docs_loads() {
    setup();
    let mut failures = Vec::new();
    let mut count = 0;
    let mut files = BTreeSet::new();
    for (name, doc) in documents() {
        for b in toml_blocks(&name, &doc) {
            count += 1;
            files.insert(name.clone());
            if let Err(e) = check_block(&b) {
                failures.push(format!("{} ({:?}): {e}\n{}", b.at, b.marker, b.text));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n---\n"));
    for f in [
        "README.md",
        "docs/config.md",
        "docs/providers.md",
        "docs/validators.md",
        "docs/serve.md",
    ] {
        assert!(files.contains(f), "no toml block found in {f}: {files:?}");
    }
    assert!(count >= 20, "only {count} toml blocks found");
}

#[test]
fn key_tables_document_exactly_the_accepted_keys_and_their_defaults() {
    setup();
    let mut failures = Vec::new();
    let mut kinds = BTreeSet::new();
    for (name, doc) in documents() {
        for t in key_tables(&name, &doc) {
            kinds.insert(t.kind.clone());
            let documented: BTreeSet<String> = t.rows.iter().map(|r| r.0.clone()).collect();
            let aliases: BTreeSet<String> = t
                .rows
                .iter()
                .flat_map(|r| deprecated_aliases(&r.2))
                .collect();
            let accepted: BTreeSet<String> = accepted_keys(&t.kind)
                .difference(&aliases)
                .cloned()
                .collect();
            if documented != accepted {
                failures.push(format!(
                    "{} [{}]: documented but not accepted {:?}; accepted but not documented {:?}",
                    t.at,
                    t.kind,
                    documented.difference(&accepted).collect::<Vec<_>>(),
                    accepted.difference(&documented).collect::<Vec<_>>(),
                ));
            }
            let base = probe(&t.kind, "").unwrap_or_else(|e| panic!("{} [{}]: {e}", t.at, t.kind));
            for (key, default, _) in &t.rows {
                // A default is checked when it is one TOML value in backticks.
                let Some(value) = default
                    .strip_prefix('`')
                    .and_then(|d| d.strip_suffix('`'))
                    .filter(|d| !d.contains('`'))
                else {
                    continue;
                };
                match probe(&t.kind, &format!("{key} = {value}")) {
                    Ok(v) if v == base => {}
                    Ok(v) => failures.push(format!(
                        "{} [{}]: {key} = {value} is not the default:\n  default {base}\n  with it {v}",
                        t.at, t.kind
                    )),
                    Err(e) => failures.push(format!(
                        "{} [{}]: {key} = {value} does not parse: {e}",
                        t.at, t.kind
                    )),
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    let expected: BTreeSet<String> = [
        "top",
        "experiment",
        "prompt",
        "retry",
        "openai",
        "anthropic",
        "http",
        "command",
        "sim",
        "validator",
        "program",
        "verifier",
        "sim-judge",
        "serve",
        "faults",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(kinds, expected, "every table of keys is documented once");
}

#[test]
fn a_wrong_field_name_in_a_doc_block_would_fail() {
    setup();
    // The checks above catch misspelt keys at every level.
    let good = "[system]\nprovider = \"command\"\ncommand = [\"x\"]\ntimeout_s = 5\n";
    assert!(load_config(&complete_fragment(good).unwrap()).is_ok());
    for bad in [
        "[system]\nprovider = \"command\"\ncommand = [\"x\"]\ntimeout = 5\n",
        "[experiment]\noutput_per_input = 5\n",
        "[[validator]]\nname = \"v\"\nkind = \"contains\"\nvalues = \"x\"\n",
        "[retry]\nattempt = 2\n",
        "[[verifier]]\nname = \"j\"\ninstructions = \"x\"\n[verifier.system]\nprovider = \"sim\"\nfalse_passes = 0.1\n",
    ] {
        let err = load_config(&complete_fragment(bad).unwrap()).unwrap_err();
        assert!(err.contains("unknown field"), "{bad}: {err}");
    }
    assert!(load_serve(
        "listen = \"127.0.0.1:0\"\nport = 1\n[[validator]]\nname = \"v\"\ncheck = \"true\"\n"
    )
    .is_err());
}

#[test]
fn every_init_example_loads_and_builds() {
    setup();
    for provider in example::PROVIDERS {
        let ex = example::example(provider).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for f in ex.files {
            std::fs::write(dir.path().join(f.name), f.text).unwrap();
        }
        let config = Config::load(&dir.path().join("probity.toml"))
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        // The agent example's system under test is its [agent].
        match provider {
            "agent" => assert!(config.agent.is_some(), "{provider}"),
            _ => assert_eq!(config.file.system.kind(), provider),
        }
        config
            .experiment()
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        if provider != "sim" {
            assert_commented(provider, ex.files[0].text);
        }
    }
}

/// The first occurrence of every key has a comment: on its line, or on the
/// line above. (The simulator's example is left as it always was.) The keys
/// of `[system.body]` are the request body's own, described above it.
fn assert_commented(provider: &str, text: &str) {
    let mut seen = BTreeSet::new();
    let mut table = String::new();
    let mut previous = "";
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            table = l.to_string();
        } else if !l.is_empty() && !l.starts_with('#') && table != "[system.body]" {
            let key = l.split('=').next().unwrap().trim().to_string();
            if seen.insert(key.clone()) {
                assert!(
                    l.contains('#') || previous.starts_with('#'),
                    "{provider}: `{key}` has no comment: {l:?}"
                );
            }
        }
        if !l.is_empty() {
            previous = l;
        }
    }
}
