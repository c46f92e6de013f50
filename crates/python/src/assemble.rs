//! An experiment's tables, as the Python package hands them over (one JSON
//! document), into the engine's [`Config`]: every table is read by the
//! same types as `probity.toml`'s (unknown keys are errors listing the
//! accepted ones) and checked by [`Config::from_parts`], so Python and TOML
//! accept exactly the same things.
//!
//! ```json
//! {"name": "…", "text": "…stored with the run…",
//!  "system": {"provider": "sim"} | null, "prompt": {…} | null,
//!  "experiment": {…}, "validators": [{…}], "verifiers": [{…}],
//!  "retry": {…} | null, "inputs": [{…}]}
//! ```

use probity_core::Validator;
use probity_engine::config::{Config, ConfigError, ConfigFile};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// `value` read as a `T`; the error names `what`.
fn section<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("{what}: {e}"))
}

fn field(spec: &mut serde_json::Map<String, Value>, key: &str) -> Option<Value> {
    spec.remove(key).filter(|v| !v.is_null())
}

/// The configuration: `spec` as described above, relative paths against
/// `cwd`, `code` the Python validators with their columns. The error is a
/// sentence naming the argument or table at fault.
pub fn config(spec: &str, cwd: &Path, code: Vec<(usize, Validator)>) -> Result<Config, String> {
    let Value::Object(mut spec) =
        serde_json::from_str(spec).map_err(|e| format!("the experiment's tables: {e}"))?
    else {
        return Err("the experiment's tables must be an object".into());
    };
    let text = field(&mut spec, "text")
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut file = ConfigFile {
        name: field(&mut spec, "name")
            .map(|n| section("name", n))
            .transpose()?,
        system: Default::default(),
        prompt: Default::default(),
        experiment: Default::default(),
        validators: Vec::new(),
        verifiers: Vec::new(),
        retry: None,
        inputs: Vec::new(),
        store: None,
        agent: None,
        user: None,
        environment: None,
        tools: Vec::new(),
        agent_checks: Vec::new(),
        user_checks: Vec::new(),
    };
    if let Some(v) = field(&mut spec, "system") {
        file.system = section("system", v)?;
    }
    if let Some(v) = field(&mut spec, "prompt") {
        file.prompt = section("prompt", v)?;
    }
    if let Some(v) = field(&mut spec, "experiment") {
        file.experiment = section("experiment", v)?;
    }
    if let Some(v) = field(&mut spec, "retry") {
        file.retry = Some(section("retry", v)?);
    }
    let list = |v: Option<Value>| match v {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for (k, table) in list(field(&mut spec, "validators")).into_iter().enumerate() {
        file.validators
            .push(section(&format!("validators[{k}]"), table)?);
    }
    for (k, table) in list(field(&mut spec, "verifiers")).into_iter().enumerate() {
        file.verifiers
            .push(section(&format!("verifiers[{k}]"), table)?);
    }
    for (k, row) in list(field(&mut spec, "inputs")).into_iter().enumerate() {
        file.inputs.push(section(&format!("inputs[{k}]"), row)?);
    }
    if let Some(key) = spec.keys().next() {
        return Err(format!("unknown table `{key}`"));
    }
    Config::from_parts(file, &text, &cwd.join("probity.py"), code).map_err(message)
}

/// A configuration error's message without the path the engine names (for
/// Python, a `probity.py` in the working directory that does not exist).
pub fn message(e: ConfigError) -> String {
    match e {
        ConfigError::Invalid { message, .. } | ConfigError::Parse { message, .. } => message,
        ConfigError::System { message, .. } => format!("system: {message}"),
        other => other.to_string(),
    }
}
