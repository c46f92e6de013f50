//! The `[[validator]]` table with `kind = "program"`: a check run by a
//! long-running process of any language ([`super::pool`]).
//!
//! ```toml
//! [[validator]]
//! name = "grammar"
//! message = "The answer has grammar errors"
//! kind = "program"
//! command = ["python3", "grammar_check.py"]   # argv; no shell
//! timeout_s = 10                              # per answer
//! processes = 2                               # run at once
//! minimum_success_percentage = 0.9
//! ```

use super::pool::{ProgramPool, ProgramSettings};
use probity_core::validator::{Validator, ValidatorError};
use probity_core::{Input, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The only kind this table has: `"program"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgramKind {
    Program,
}

fn default_msp() -> f64 {
    probity_core::validator::DEFAULT_MINIMUM_SUCCESS_PERCENTAGE
}
fn default_weight() -> f64 {
    probity_core::validator::DEFAULT_WEIGHT
}
fn default_timeout() -> f64 {
    10.0
}
fn default_processes() -> usize {
    2
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// Processes one program validator may run at most.
pub(crate) const MAX_PROCESSES: usize = 64;

/// A `[[validator]]` table with `kind = "program"`. Paths, as for the
/// `command` provider: a program written with a `/` and not absolute is
/// relative to the configuration file's directory
/// ([`base_dir`](Self::base_dir)), a bare name is looked up on `PATH`, and
/// the processes run in that directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default = "default_msp")]
    pub minimum_success_percentage: f64,
    #[serde(default = "default_weight")]
    pub weight: f64,
    pub kind: ProgramKind,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Seconds one answer may take; the process is then stopped and the
    /// cell is an Error.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Processes run at once (each answers one output at a time).
    #[serde(default = "default_processes")]
    pub processes: usize,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Invert the verdict (an error stays an error).
    #[serde(default, skip_serializing_if = "is_false")]
    pub negate: bool,
    /// The inputs it applies to (an expression over the input's fields);
    /// every input when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The configuration file's directory; never read from or written to
    /// configuration.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

impl ProgramSpec {
    /// A spec running `argv`, with defaults otherwise.
    pub fn new<S: Into<String>>(
        name: impl Into<String>,
        argv: impl IntoIterator<Item = S>,
    ) -> Self {
        ProgramSpec {
            name: name.into(),
            message: None,
            minimum_success_percentage: default_msp(),
            weight: default_weight(),
            kind: ProgramKind::Program,
            command: argv.into_iter().map(Into::into).collect(),
            timeout_s: default_timeout(),
            processes: default_processes(),
            env: BTreeMap::new(),
            negate: false,
            when: None,
            base_dir: None,
        }
    }

    /// Resolve relative paths against `dir` (absolute).
    pub fn resolve_paths(&mut self, dir: &Path) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        self.base_dir = Some(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }

    fn program(&self) -> PathBuf {
        let written = self.command.first().map(String::as_str).unwrap_or("");
        let p = Path::new(written);
        match &self.base_dir {
            Some(base) if p.is_relative() && written.contains('/') => base.join(p),
            _ => p.to_path_buf(),
        }
    }

    /// The validator: every field checked (errors name the validator and
    /// the field); no process is started until the first output.
    pub fn compile(&self) -> Result<Validator, ValidatorError> {
        let bad = |field: &str, reason: String| ValidatorError::InvalidField {
            validator: self.name.clone(),
            field: field.into(),
            reason,
        };
        if self.name.trim().is_empty() {
            return Err(bad("name", "must not be empty".into()));
        }
        if self.command.first().is_none_or(|p| p.is_empty()) {
            return Err(bad(
                "command",
                "must be a non-empty list: the program and its arguments".into(),
            ));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 86_400.0) {
            return Err(bad(
                "timeout_s",
                format!(
                    "{} must be a number of seconds in (0, 86400]",
                    self.timeout_s
                ),
            ));
        }
        if !(1..=MAX_PROCESSES).contains(&self.processes) {
            return Err(bad(
                "processes",
                format!("{} must be between 1 and {MAX_PROCESSES}", self.processes),
            ));
        }
        let mut builder = Validator::new(&self.name)
            .minimum_success_percentage(self.minimum_success_percentage)
            .weight(self.weight);
        if let Some(m) = &self.message {
            builder = builder.message(m.clone());
        }
        builder.validate()?;
        let pool = Arc::new(ProgramPool::new(ProgramSettings {
            program: self.program(),
            args: self.command[1..].to_vec(),
            env: self.env.clone(),
            dir: self.base_dir.clone(),
            timeout: Duration::from_secs_f64(self.timeout_s),
            processes: self.processes,
            label: self.command.join(" "),
        }));
        let negate = self.negate;
        // The program's reason is kept with a fail (a negated pass keeps
        // the reason it passed for).
        let v = builder.check_explained(move |input: &Input, output: &str| {
            match pool.judge(&input.id, &input.fields.to_map(), output) {
                (Verdict::Pass, reason) if negate => (Verdict::Fail, reason),
                (Verdict::Fail, reason) if negate => (Verdict::Pass, reason),
                judged => judged,
            }
        });
        match &self.when {
            None => Ok(v),
            Some(src) => Ok(v.when(probity_core::validator::spec::compile_condition(
                &self.name, src,
            )?)),
        }
    }
}
