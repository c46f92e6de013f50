//! The retry policy (paper §4.1, §4.2.6): how many attempts, which checks
//! decide whether an attempt passes, and what is fed back after a failure.

use crate::checks::check::Checks;
use crate::provider::template::{self, TemplateError, DEFAULT_FEEDBACK_TEMPLATE};
use crate::provider::types::Message;
use crate::store::settings::StoredRetry;
use minijinja::Environment;
use probity_core::Input;
use serde::{Deserialize, Serialize};

/// Which checks decide whether an attempt passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetryOn {
    Validators,
    Verifiers,
    #[default]
    All,
}

impl RetryOn {
    /// The deciding columns of `checks` (validators, then verifiers, then
    /// conversation checks): `validators` are the in-process checks —
    /// validators and conversation checks —, `verifiers` the judges.
    pub fn columns(self, checks: &Checks) -> Vec<usize> {
        let (v, w, c) = (
            checks.validators.len(),
            checks.verifiers.len(),
            checks.conversation.len(),
        );
        match self {
            RetryOn::Validators => (0..v).chain(v + w..v + w + c).collect(),
            RetryOn::Verifiers => (v..v + w).collect(),
            RetryOn::All => (0..v + w + c).collect(),
        }
    }
}

fn d_attempts() -> u32 {
    3
}
fn d_true() -> bool {
    true
}

/// The `[retry]` table: the retry policy (§4.1, §4.2.6).
///
/// ```toml
/// [retry]
/// attempts = 4                 # m: attempts in all (retries = m − 1)
/// on = "all"                   # validators | verifiers | all
/// feedback = true              # feed the failing checks' reasons back
/// feedback_template = "..."    # minijinja: input, previous_output, reasons
/// attempt_timeout_s = 30       # one attempt: generation and checks
/// deadline_s = 90              # all attempts of one input
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    #[serde(default = "d_attempts")]
    pub attempts: u32,
    #[serde(default)]
    pub on: RetryOn,
    #[serde(default = "d_true")]
    pub feedback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<f64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: d_attempts(),
            on: RetryOn::All,
            feedback: true,
            feedback_template: None,
            attempt_timeout_s: None,
            deadline_s: None,
        }
    }
}

impl RetryPolicy {
    /// One attempt, no feedback: the plain system.
    pub fn single() -> Self {
        RetryPolicy {
            attempts: 1,
            feedback: false,
            ..RetryPolicy::default()
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.attempts == 0 {
            return Err("attempts must be at least 1".into());
        }
        if self.attempts > crate::bounds::MAX_ATTEMPTS {
            return Err(format!(
                "attempts = {} is more than {}",
                self.attempts,
                crate::bounds::MAX_ATTEMPTS
            ));
        }
        for (name, v) in [
            ("attempt_timeout_s", self.attempt_timeout_s),
            ("deadline_s", self.deadline_s),
        ] {
            if let Some(v) = v {
                crate::bounds::seconds(name, v)?;
            }
        }
        if let Some(t) = &self.feedback_template {
            Feedback::new(Some(t)).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The compiled feedback template.
#[derive(Debug)]
pub struct Feedback {
    env: Environment<'static>,
}

impl Feedback {
    /// `template` or [`DEFAULT_FEEDBACK_TEMPLATE`].
    pub fn new(template: Option<&str>) -> Result<Self, TemplateError> {
        let mut env = template::new_env();
        template::add(
            &mut env,
            "feedback",
            template.unwrap_or(DEFAULT_FEEDBACK_TEMPLATE),
        )?;
        Ok(Feedback { env })
    }

    /// `base` with the feedback appended (the paper's "input + reasons";
    /// [`template::append_feedback`]).
    pub fn apply(
        &self,
        base: &[Message],
        input: &Input,
        previous_output: &str,
        reasons: &[String],
    ) -> Result<Vec<Message>, TemplateError> {
        let ctx = template::feedback_context(input, previous_output, reasons);
        let text = template::render_one(&self.env, "feedback", &ctx, input)?;
        let mut messages = base.to_vec();
        template::append_feedback(&mut messages, &text);
        Ok(messages)
    }
}

/// The policy as a run stores it: `m` and the deciding columns of its
/// checks.
impl RetryPolicy {
    pub fn stored(&self, checks: &Checks) -> StoredRetry {
        StoredRetry {
            attempts: self.attempts,
            columns: self.on.columns(checks),
        }
    }
}
