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
//!  "retry": {…} | null, "inputs": [{…}],
//!  "agent": {"agent": {…}, "user": {…}, "environment": {…}, "tool": [{…}],
//!            "agent_check": [{…}], "user_check": [{…}]} | null}
//! ```
//!
//! The agent tables are read by the engine's agent reader, which takes
//! TOML ([`probity_engine::config::agent::AgentConfig::from_toml`]): they
//! are written as TOML, and the run's stored text is that TOML followed
//! by the experiment's description as comment lines.

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
    let mut text = field(&mut spec, "text")
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_default();
    let agent = field(&mut spec, "agent");
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
    if let Some(tables) = agent {
        text = agent_tables(&mut file, tables, &text)?;
    }
    Config::from_parts(file, &text, &cwd.join("probity.py"), code).map_err(message)
}

/// The agent tables `tables` into `file` (kept as written, as a
/// probity.toml's are), and the text the engine reads them from: TOML,
/// then `description` as comment lines.
fn agent_tables(file: &mut ConfigFile, tables: Value, description: &str) -> Result<String, String> {
    let Value::Object(mut t) = tables else {
        return Err("the agent's tables must be an object".into());
    };
    let toml_text = toml::Value::try_from(&t)
        .and_then(|v| toml::to_string(&v))
        .map_err(|e| format!("the agent's tables cannot be written as TOML: {e}"))?;
    let list = |v: Option<Value>| match v {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    file.agent = field(&mut t, "agent");
    file.user = field(&mut t, "user");
    file.environment = field(&mut t, "environment");
    file.tools = list(field(&mut t, "tool"));
    file.agent_checks = list(field(&mut t, "agent_check"));
    file.user_checks = list(field(&mut t, "user_check"));
    if let Some(key) = t.keys().next() {
        return Err(format!("unknown agent table `{key}`"));
    }
    let mut text = toml_text;
    text.push_str("\n# The experiment, as the Python package describes it:\n");
    for line in description.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    Ok(text)
}

/// A configuration error's message without the path the engine names (for
/// Python, a `probity.py` in the working directory that does not exist).
pub fn message(e: ConfigError) -> String {
    match e {
        ConfigError::Invalid { message, .. } | ConfigError::Parse { message, .. } => {
            without_line(message)
        }
        ConfigError::System { message, .. } => format!("system: {message}"),
        other => other.to_string(),
    }
}

/// `message` without a leading "line N: ": the agent tables' errors name
/// a line of the TOML written from them, which the Python user never sees
/// (the table and field they name remain).
fn without_line(message: String) -> String {
    let Some(rest) = message.strip_prefix("line ") else {
        return message;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    match rest[digits..].strip_prefix(": ") {
        Some(tail) if digits > 0 => tail.to_string(),
        _ => message,
    }
}
