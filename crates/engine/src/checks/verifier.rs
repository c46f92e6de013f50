//! Verifiers (paper §4): an LLM judge that sees an input and an output and
//! answers PASS or FAIL with a list of reasons.
//!
//! A verifier is one more column `k` of the reliability tensor, after the
//! validators, with the same settings (minimum success percentage, weight,
//! message), so every statistic, profile and report covers it.
//!
//! The judge is shown the input — its conversation whole when it carries
//! one — and the output, escaped between tags ([`judge_prompt`]).
//!
//! The judge is asked for a JSON object `{"verdict": "PASS" | "FAIL",
//! "reasons": [...]}` — with the provider's structured output where it has
//! one (`openai`: a JSON schema, else JSON mode, else the prompt, as the
//! upstream takes them: [`crate::provider::negotiate`]), by the prompt
//! alone otherwise — and its answer is parsed robustly
//! ([`parse_judgement`]). An answer that cannot be read, or a judge call
//! that fails, is an Error cell with the raw text kept as its reason: never
//! a silent pass or fail. A verdict copied from the prompt's example is
//! counted as given and flagged ([`copies_the_example`]).
//!
//! ```toml
//! [[verifier]]
//! name = "helpful"
//! message = "The answer is not helpful"
//! instructions = "PASS when the answer addresses the question politely."
//! minimum_success_percentage = 0.9
//! weight = 1
//! structured = "json-schema"     # json-schema | json-object | none (openai only): the strongest tried
//! [verifier.system]              # the judge; the [system] provider when absent
//! provider = "openai"
//! model = "gpt-4o"
//! ```
//!
//! The simulator can be the judge (`provider = "sim"` under
//! `[verifier.system]`, see [`SimJudgeConfig`]): it computes the truth of
//! the simulator's rules from the output text itself and then errs with
//! known probabilities, so tests can check the whole path against known
//! truth.

use crate::checks::cache_key::{judgement_key, JudgeQuestion};
use crate::checks::judge_prompt::{self, quoted_output};
use crate::checks::labels::LabelledSet;
use crate::provider::call::UsageCounter;
use crate::provider::error::ConfigError;
use crate::provider::negotiate::Negotiated;
pub use crate::provider::negotiate::Structured;
use crate::provider::openai::OpenAiConfig;
use crate::provider::template::{is_template, render_check_text};
use crate::provider::types::{Completion, Message, Provider, ProviderError, Request, Role};
use crate::sim::rng::{Fnv, SplitMix64};
use crate::system::config::ProviderConfig;
use crate::system::Priced;
use probity_core::cost::Price;
use probity_core::{CheckInfo, CheckKind, Input};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

fn one() -> f64 {
    1.0
}

/// A `[[verifier]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifierSpec {
    pub name: String,
    /// Shown with a failing verdict (and fed back when no reason is given).
    #[serde(default)]
    pub message: String,
    /// What the judge checks: the rubric, in plain words.
    pub instructions: String,
    #[serde(default = "one")]
    pub minimum_success_percentage: f64,
    #[serde(default = "one")]
    pub weight: f64,
    #[serde(default)]
    pub structured: Structured,
    /// The judge's provider; the system's when absent (a sim system gets an
    /// error-free sim judge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Priced<JudgeConfig>>,
    /// A labelled set (JSON lines: `input`, `output`, `label`; see
    /// [`crate::checks::labels`]) on which the judge's sensitivity and
    /// specificity are measured; the check is then judged on its rate
    /// corrected for the judge's errors. Relative to the configuration
    /// file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<std::path::PathBuf>,
    /// The inputs it judges: an expression over the input's fields; every
    /// input when absent. On the others its cells are not applicable and
    /// no judge call is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// The judge's provider: any provider, or the simulated judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JudgeConfig {
    Sim(SimJudgeConfig),
    Provider(ProviderConfig),
}

impl<'de> Deserialize<'de> for JudgeConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = Value::deserialize(d)?;
        let Some(map) = v.as_object_mut() else {
            return Err(D::Error::custom("a judge configuration must be a table"));
        };
        let kind = map
            .get("provider")
            .and_then(Value::as_str)
            .unwrap_or("sim")
            .to_string();
        if kind == "sim" {
            map.remove("provider");
            SimJudgeConfig::deserialize(v)
                .map(JudgeConfig::Sim)
                .map_err(D::Error::custom)
        } else {
            ProviderConfig::deserialize(v)
                .map(JudgeConfig::Provider)
                .map_err(D::Error::custom)
        }
    }
}

/// The simulated judge (`provider = "sim"` under `[verifier.system]`).
///
/// The truth is the simulator's three rules, read from the output: at most
/// three apostrophes; "You're welcome" when the input says "Thank you"; a
/// parseable JSON object when the input asks for "JSON". The judge then
/// flips a true FAIL to PASS with probability `false_pass` and a true PASS
/// to FAIL with probability `false_fail`, answers unreadable text with
/// probability `malformed`, and fails the call (HTTP 500) with probability
/// `error_rate` — all drawn deterministically from the seed, the judged
/// messages, the repetition and the attempt.
///
/// ```toml
/// [verifier.system]
/// provider = "sim"
/// seed = 0
/// false_pass = 0.05     # P(PASS | the output truly fails)
/// false_fail = 0.02     # P(FAIL | the output truly passes)
/// malformed = 0.0       # P(an unreadable answer)
/// error_rate = 0.0      # P(the judge call fails)
/// latency_ms = 0
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimJudgeConfig {
    pub seed: u64,
    pub false_pass: f64,
    pub false_fail: f64,
    pub malformed: f64,
    pub error_rate: f64,
    pub latency_ms: u64,
}

impl SimJudgeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, p) in [
            ("false_pass", self.false_pass),
            ("false_fail", self.false_fail),
            ("malformed", self.malformed),
            ("error_rate", self.error_rate),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ConfigError::Invalid(format!(
                    "sim judge {name} must be a probability in [0, 1], got {p}"
                )));
            }
        }
        Ok(())
    }
}

/// The truth of the simulator's rules for one (input, output): the reasons
/// it fails, empty when it passes.
pub fn sim_truth(input: &str, output: &str) -> Vec<String> {
    let mut reasons = Vec::new();
    let apostrophes = output.matches('\'').count();
    if apostrophes > 3 {
        reasons.push(format!(
            "The answer uses contractions ({apostrophes} apostrophes); write words out in full."
        ));
    }
    if input.contains("Thank you") && !output.contains("You're welcome") {
        reasons.push(
            "The user said thank you, but the answer does not say \"You're welcome\".".into(),
        );
    }
    if input.contains("JSON")
        && !matches!(
            serde_json::from_str::<Value>(output.trim()),
            Ok(Value::Object(_))
        )
    {
        reasons.push("JSON was requested, but the answer is not a valid JSON object.".into());
    }
    reasons
}

/// The simulated judge as a provider (see [`SimJudgeConfig`]).
#[derive(Debug, Clone)]
pub struct SimJudge {
    config: SimJudgeConfig,
}

impl SimJudge {
    pub fn new(config: SimJudgeConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(SimJudge { config })
    }
}

#[async_trait::async_trait]
impl Provider for SimJudge {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        let c = &self.config;
        if c.latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(c.latency_ms)).await;
        }
        let user = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let output = quoted_output(user).ok_or_else(|| {
            ProviderError::BadResponse("sim judge: the request quotes no output".into())
        })?;
        let mut h = Fnv::new();
        h.u64(c.seed).bytes(user.as_bytes());
        h.u64(u64::from(request.repetition))
            .u64(u64::from(request.attempt));
        let mut rng = SplitMix64::new(h.finish());
        let (u_error, u_malformed, u_flip) = (rng.next_f64(), rng.next_f64(), rng.next_f64());
        if u_error < c.error_rate {
            return Err(ProviderError::Server {
                status: 500,
                body: "simulated judge error".into(),
            });
        }
        let tokens = |text: &str| Some((text.len() as u64 / 4).max(1));
        if u_malformed < c.malformed {
            let text = "I think it is mostly fine, but".to_string();
            return Ok(Completion {
                output_tokens: tokens(&text),
                input_tokens: tokens(user),
                text,
            });
        }
        let mut reasons = sim_truth(&request.input.as_text(), &output);
        let truly_passes = reasons.is_empty();
        let pass = if truly_passes {
            u_flip >= c.false_fail
        } else {
            u_flip < c.false_pass
        };
        if pass {
            reasons.clear();
        } else if reasons.is_empty() {
            reasons.push("The answer does not seem right to me.".into());
        }
        let text =
            json!({"verdict": if pass {"PASS"} else {"FAIL"}, "reasons": reasons}).to_string();
        Ok(Completion {
            output_tokens: tokens(&text),
            input_tokens: tokens(user),
            text,
        })
    }

    fn fingerprint(&self) -> String {
        format!(
            "sim-judge|v1|{}",
            serde_json::to_string(&self.config).unwrap_or_default()
        )
    }
}

/// A compiled verifier: its settings and its judge.
#[derive(Clone)]
pub struct Verifier {
    pub name: String,
    pub message: String,
    pub instructions: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    /// How the judge is asked for structured output (part of the
    /// judgement's cache key).
    pub structured: Structured,
    pub judge: Arc<dyn Provider>,
    /// Calls made to this verifier's judge (retries included), shared by
    /// its clones: the check's own count in a run's totals.
    pub calls: Arc<AtomicU64>,
    /// Its judge's answered calls' tokens, shared by its clones (cost).
    pub usage: Arc<UsageCounter>,
    /// What its judge's tokens cost.
    pub price: JudgePrice,
    /// The labelled set the judge is measured on (`calibration = …`).
    pub calibration: Option<Arc<LabelledSet>>,
    /// Whether the judge was seen copying the prompt's example (said once).
    pub copied: Arc<AtomicBool>,
    /// The inputs it judges (`when`): all when `None`.
    pub when: Option<probity_core::validator::Condition>,
    /// Each input's own rubric, by input id, when the rubric is carried by
    /// the inputs (an input's `checks`, a promptfoo `llm-rubric`): it then
    /// judges only those inputs, and `instructions` is unused.
    pub per_input: Option<Arc<std::collections::HashMap<String, String>>>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("name", &self.name)
            .field("judge", &self.judge.fingerprint())
            .finish()
    }
}

pub use crate::checks::judge_prompt::JUDGE_PREAMBLE;

/// The price of a verifier's judge calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum JudgePrice {
    /// Its `[verifier.system]` table's `price` (`None`: not priced).
    Own(Option<Price>),
    /// It names no judge of its own: the system's provider judges, at the
    /// system's price.
    #[default]
    System,
}

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
            "reasons": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["verdict", "reasons"],
        "additionalProperties": false
    })
}

impl VerifierSpec {
    /// Resolves the judge's relative paths against `dir`, the directory of
    /// the configuration file (see [`ProviderConfig::resolve_paths`]).
    pub fn resolve_paths(&mut self, dir: &std::path::Path) {
        if let Some(JudgeConfig::Provider(p)) = self.system.as_deref_mut() {
            p.resolve_paths(dir);
        }
        if let Some(path) = &mut self.calibration {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }

    /// Build the verifier; `system` is the system under test's provider,
    /// the judge's default.
    pub fn compile(&self, system: &ProviderConfig) -> Result<Verifier, String> {
        if self.name.trim().is_empty() {
            return Err("name must not be empty".into());
        }
        if self.instructions.trim().is_empty() {
            return Err("instructions must not be empty".into());
        }
        if !(0.0..=1.0).contains(&self.minimum_success_percentage) {
            return Err(format!(
                "minimum_success_percentage = {} must be in [0, 1]",
                self.minimum_success_percentage
            ));
        }
        if !(self.weight.is_finite() && self.weight >= 0.0) {
            return Err(format!("weight = {} must be non-negative", self.weight));
        }
        let judge: Arc<dyn Provider> = match self.system.as_deref() {
            Some(JudgeConfig::Sim(c)) => {
                Arc::new(SimJudge::new(c.clone()).map_err(|e| e.to_string())?)
            }
            Some(JudgeConfig::Provider(p)) => self.structured_judge(p)?,
            None => match system {
                ProviderConfig::Sim(_) => {
                    Arc::new(SimJudge::new(SimJudgeConfig::default()).map_err(|e| e.to_string())?)
                }
                other => self.structured_judge(other)?,
            },
        };
        let calibration = match &self.calibration {
            Some(path) => Some(Arc::new(LabelledSet::load(path)?)),
            None => None,
        };
        let when = match &self.when {
            Some(src) => Some(
                probity_core::validator::spec::compile_condition(&self.name, src)
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        Ok(Verifier {
            when,
            calibration,
            name: self.name.clone(),
            message: self.message.clone(),
            instructions: self.instructions.clone(),
            minimum_success_percentage: self.minimum_success_percentage,
            weight: self.weight,
            structured: self.structured,
            judge,
            calls: Arc::default(),
            usage: Arc::default(),
            price: match &self.system {
                Some(own) => JudgePrice::Own(own.price.clone()),
                None => JudgePrice::System,
            },
            copied: Arc::default(),
            per_input: None,
        })
    }

    /// The judge on `p`. An openai provider whose `extra` sets no
    /// `response_format` of its own negotiates one ([`Negotiated`]): the
    /// verifier's `structured` mode first, then the weaker ones the
    /// upstream takes, remembered per upstream. Any other provider is
    /// asked by the prompt alone.
    fn structured_judge(&self, p: &ProviderConfig) -> Result<Arc<dyn Provider>, String> {
        match p {
            ProviderConfig::Openai(c) if !c.extra.contains_key("response_format") => {
                let negotiated =
                    Negotiated::new(&self.name, &c.base_url, self.structured, |mode| {
                        Self::with_format(c, mode)
                            .build()
                            .map_err(|e| e.to_string())
                    })?;
                Ok(Arc::new(negotiated))
            }
            other => other.build().map_err(|e| e.to_string()),
        }
    }

    /// `c` asking for `mode`'s `response_format` (none for
    /// [`Structured::None`]).
    fn with_format(c: &OpenAiConfig, mode: Structured) -> ProviderConfig {
        let format = match mode {
            Structured::JsonSchema => json!({
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": true, "schema": verdict_schema()}
            }),
            Structured::JsonObject => json!({"type": "json_object"}),
            Structured::None => return ProviderConfig::Openai(c.clone()),
        };
        let mut c: OpenAiConfig = c.clone();
        c.extra.insert("response_format".into(), format);
        ProviderConfig::Openai(c)
    }
}

/// PASS or FAIL, or no verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeVerdict {
    Pass,
    Fail,
    /// The call failed or the answer could not be read; the reason keeps the raw text.
    Error,
}

/// One judgement: the verdict and its reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: JudgeVerdict,
    pub reasons: Vec<String>,
}

impl Verifier {
    /// The rubric for `input`: `instructions` as written, or — when it is
    /// a template (`{{ country }}`) — rendered with the input's fields
    /// ([`render_check_text`]); `Err` names the field and the input.
    pub fn instructions_for(&self, input: &Input) -> Result<String, String> {
        if let Some(by_id) = &self.per_input {
            return by_id
                .get(&input.id)
                .cloned()
                .ok_or_else(|| format!("this judge has no rubric for input {:?}", input.id));
        }
        if !is_template(&self.instructions) {
            return Ok(self.instructions.clone());
        }
        render_check_text("instructions", &self.instructions, input).map_err(|e| e.to_string())
    }

    /// Whether this verifier judges `input`: its `when` holds (always,
    /// without one) and, with rubrics carried by the inputs, the input
    /// carries one; `Err` with the cause when its condition cannot be
    /// decided.
    pub fn applies(
        &self,
        input: &probity_core::validator::PreparedInput<'_>,
    ) -> Result<bool, String> {
        if let Some(by_id) = &self.per_input {
            if !by_id.contains_key(&input.input().id) {
                return Ok(false);
            }
        }
        self.when.as_ref().map_or(Ok(true), |c| c.applies(input))
    }

    /// The cache key of this verifier's judgement of `(input, output)`,
    /// asked with `instructions` ([`Verifier::instructions_for`]).
    pub fn cache_key(
        &self,
        instructions: &str,
        input: &Input,
        output: &str,
        repetition: u32,
        attempt: u32,
    ) -> String {
        let structured = serde_json::to_string(&self.structured).unwrap_or_default();
        let question = JudgeQuestion {
            fingerprint: &self.judge.fingerprint(),
            preamble: JUDGE_PREAMBLE,
            instructions,
            structured: &structured,
        };
        judgement_key(&question, input, output, repetition, attempt)
    }

    /// The check's settings, as a column of the tensor.
    pub fn info(&self) -> CheckInfo {
        CheckInfo {
            name: self.name.clone(),
            message: self.message.clone(),
            minimum_success_percentage: self.minimum_success_percentage,
            weight: self.weight,
            kind: CheckKind::Verifier,
        }
    }

    /// The judge's request for `(input, output)`: the preamble and the
    /// `instructions` ([`Verifier::instructions_for`] the input), then the
    /// input (its conversation whole when it has one) and the output,
    /// escaped between tags ([`judge_prompt::user_message`]).
    pub fn request(
        &self,
        instructions: &str,
        input: &Input,
        output: &str,
        repetition: u32,
        attempt: u32,
    ) -> Request {
        Request {
            messages: vec![
                Message::text(Role::System, format!("{JUDGE_PREAMBLE}{instructions}")),
                Message::text(Role::User, judge_prompt::user_message(input, output)),
            ],
            repetition,
            attempt,
            input: input.clone(),
        }
    }

    /// Says once on standard error that this verifier's judge copied the
    /// prompt's example ([`copies_the_example`]).
    fn flag_copy(&self, raw: &str) {
        if !self.copied.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let raw: String = raw.chars().take(120).collect();
            crate::stderr::line(format_args!(
                "warning: verifier `{}`: {COPIED} ({raw}); such verdicts are counted as given: measure the judge on a labelled set (`calibration`) before trusting it",
                self.name
            ));
        }
    }

    /// The judgement from the judge's answer (or its failure).
    pub fn judgement(&self, answer: Result<&str, &ProviderError>) -> Judgement {
        match answer {
            Err(e) => Judgement {
                verdict: JudgeVerdict::Error,
                reasons: vec![format!("judge call failed: {e}")],
            },
            Ok(raw) => match parse_judgement(raw) {
                Ok((pass, reasons)) if copies_the_example(&reasons) => {
                    self.flag_copy(raw);
                    Judgement {
                        verdict: if pass {
                            JudgeVerdict::Pass
                        } else {
                            JudgeVerdict::Fail
                        },
                        // The flag is kept with a PASS; a FAIL's reasons are
                        // fed back to the system, and the copy gave none.
                        reasons: if pass {
                            vec![format!("{COPIED}; raw answer: {raw}")]
                        } else {
                            Vec::new()
                        },
                    }
                }
                Ok((pass, reasons)) => Judgement {
                    verdict: if pass {
                        JudgeVerdict::Pass
                    } else {
                        JudgeVerdict::Fail
                    },
                    reasons,
                },
                Err(why) => Judgement {
                    verdict: JudgeVerdict::Error,
                    reasons: vec![format!("unreadable judgement ({why}); raw answer: {raw}")],
                },
            },
        }
    }
}

/// The placeholder reason of [`JUDGE_PREAMBLE`]'s example answer.
pub const EXAMPLE_REASON: &str = "...";

/// What a verdict copied from the prompt's example is flagged with.
pub const COPIED: &str = "the judge copied the example answer of its instructions (reasons [\"...\"]): a verdict that may be no judgement";

/// Whether a judge's reasons are the prompt's example copied
/// ([`EXAMPLE_REASON`], alone or among others): a model too weak to judge
/// answers the example verbatim (`{"verdict":"PASS","reasons":["..."]}`).
/// Such a verdict is counted as given — a labelled set then measures the
/// judge that gives it (`calibration`: no better than chance) — but
/// flagged: [`COPIED`] as a PASS's reason, and once per verifier on
/// standard error.
pub fn copies_the_example(reasons: &[String]) -> bool {
    reasons
        .iter()
        .any(|r| r.trim() == EXAMPLE_REASON || r.trim() == "…")
}

/// Read a judge's answer: a JSON object (anywhere in the text, fenced or
/// not) with `verdict` (or `result`, `decision`; PASS/FAIL in any case, or
/// a boolean `pass`/`passed`) and `reasons` (a list or one string); failing
/// that, a text whose first word is PASS or FAIL, the following lines being
/// the reasons. `Ok((passed, reasons))`, or why it could not be read.
pub fn parse_judgement(raw: &str) -> Result<(bool, Vec<String>), String> {
    let text = raw.trim();
    if text.is_empty() {
        return Err("empty answer".into());
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) {
        if a < b {
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text[a..=b]) {
                return from_object(&map);
            }
        }
    }
    // Plain text: the first word decides.
    let cleaned: String = text.chars().skip_while(|c| !c.is_alphanumeric()).collect();
    let first: String = cleaned
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_ascii_uppercase();
    let pass = match first.as_str() {
        "PASS" | "PASSED" => true,
        "FAIL" | "FAILED" => false,
        _ => return Err("neither a JSON verdict nor an answer starting with PASS or FAIL".into()),
    };
    let reasons = cleaned
        .lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let line = if n == 0 {
                line.trim_start_matches(|c: char| c.is_alphanumeric())
            } else {
                line
            };
            let r = line
                .trim()
                .trim_start_matches(['-', '*', '•', ':', ',', '.'])
                .trim();
            (!r.is_empty()).then(|| r.to_string())
        })
        .collect();
    Ok((pass, reasons))
}

fn from_object(map: &serde_json::Map<String, Value>) -> Result<(bool, Vec<String>), String> {
    let get = |names: &[&str]| {
        map.iter()
            .find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n)))
            .map(|(_, v)| v)
    };
    let pass = match get(&["verdict", "result", "decision", "pass", "passed"]) {
        Some(Value::String(s)) => match s.trim().to_ascii_uppercase().as_str() {
            "PASS" | "PASSED" | "TRUE" | "YES" => true,
            "FAIL" | "FAILED" | "FALSE" | "NO" => false,
            other => return Err(format!("verdict {other:?} is neither PASS nor FAIL")),
        },
        Some(Value::Bool(b)) => *b,
        _ => return Err("the JSON answer has no verdict".into()),
    };
    let reasons = match get(&["reasons", "reason"]) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .filter(|s| !s.trim().is_empty())
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.clone()],
        _ => Vec::new(),
    };
    Ok((pass, reasons))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_json_fenced_json_and_text() {
        assert_eq!(
            parse_judgement(r#"{"verdict":"PASS","reasons":[]}"#),
            Ok((true, vec![]))
        );
        assert_eq!(
            parse_judgement(
                "Sure.\n```json\n{\"Verdict\": \"fail\", \"reasons\": \"too long\"}\n```"
            ),
            Ok((false, vec!["too long".to_string()]))
        );
        assert_eq!(
            parse_judgement("**FAIL**\n- uses slang\n- no greeting"),
            Ok((
                false,
                vec!["uses slang".to_string(), "no greeting".to_string()]
            ))
        );
        assert_eq!(parse_judgement("PASS"), Ok((true, vec![])));
        assert_eq!(parse_judgement(r#"{"pass": false}"#), Ok((false, vec![])));
        assert!(parse_judgement("I think it is mostly fine, but").is_err());
        assert!(parse_judgement(r#"{"verdict": "MAYBE"}"#).is_err());
        assert!(parse_judgement("").is_err());
    }

    #[test]
    fn unreadable_or_failed_judgement_is_an_error_with_the_raw_text() {
        let v = VerifierSpec {
            name: "v".into(),
            message: String::new(),
            instructions: "be good".into(),
            minimum_success_percentage: 0.9,
            weight: 1.0,
            structured: Structured::default(),
            system: None,
            calibration: None,
            when: None,
        }
        .compile(&ProviderConfig::default())
        .unwrap();
        let j = v.judgement(Ok("hmm, hard to say"));
        assert_eq!(j.verdict, JudgeVerdict::Error);
        assert!(j.reasons[0].contains("hmm, hard to say"));
        let e = ProviderError::Timeout(Duration::from_secs(1));
        assert_eq!(v.judgement(Err(&e)).verdict, JudgeVerdict::Error);
    }

    #[test]
    fn a_judge_copying_the_prompts_example_is_flagged() {
        // The example answer the judge is shown, with its placeholder reason.
        assert!(JUDGE_PREAMBLE.contains(&format!("[\"{EXAMPLE_REASON}\"]")));
        let v = VerifierSpec {
            name: "v".into(),
            message: String::new(),
            instructions: "be good".into(),
            minimum_success_percentage: 0.9,
            weight: 1.0,
            structured: Structured::default(),
            system: None,
            calibration: None,
            when: None,
        }
        .compile(&ProviderConfig::default())
        .unwrap();
        // SmolLM2-135M's answers to judge questions (issue 39): counted as
        // given, flagged; a FAIL's copy gives no reason to feed back.
        let j = v.judgement(Ok(r#"{"verdict":"PASS","reasons":["..."]}"#));
        assert_eq!(j.verdict, JudgeVerdict::Pass);
        assert!(j.reasons[0].starts_with(COPIED), "{:?}", j.reasons);
        assert!(j.reasons[0].contains(r#"raw answer: {"verdict""#));
        let j = v.judgement(Ok("{\n\"verdict\": \"FAIL\",\n\"reasons\": [\"...\"]}"));
        assert_eq!(j.verdict, JudgeVerdict::Fail);
        assert!(j.reasons.is_empty(), "{:?}", j.reasons);
        assert!(v.copied.load(std::sync::atomic::Ordering::Relaxed));
        // Real reasons, or none, are read as given, unflagged.
        let j = v.judgement(Ok(r#"{"verdict":"FAIL","reasons":["rude ... twice"]}"#));
        assert_eq!(j.verdict, JudgeVerdict::Fail);
        assert_eq!(j.reasons, vec!["rude ... twice".to_string()]);
        let j = v.judgement(Ok(r#"{"verdict":"PASS","reasons":[]}"#));
        assert_eq!((j.verdict, j.reasons.len()), (JudgeVerdict::Pass, 0));
    }

    #[test]
    fn a_rubric_template_is_rendered_with_the_inputs_fields() {
        let mut spec: VerifierSpec = toml::from_str(
            "name = \"capital\"\ninstructions = \"PASS when it names {{ capital }}, capital of {{ input.country }}.\"",
        )
        .unwrap();
        let v = spec.compile(&ProviderConfig::default()).unwrap();
        let mut input = Input::text("fr", "What is the capital of France?");
        input.fields.insert("capital".into(), json!("Paris"));
        input.fields.insert("country".into(), json!("France <b>"));
        let rubric = v.instructions_for(&input).unwrap();
        assert_eq!(rubric, "PASS when it names Paris, capital of France <b>.");
        let request = v.request(&rubric, &input, "Paris", 0, 0);
        assert!(request.messages[0].content.ends_with(&rubric));
        // The cache key follows the rubric each input gets.
        let mut other = input.clone();
        other.fields.insert("capital".into(), json!("Lyon"));
        let other_rubric = v.instructions_for(&other).unwrap();
        assert_ne!(
            v.cache_key(&rubric, &input, "Paris", 0, 0),
            v.cache_key(&other_rubric, &other, "Paris", 0, 0)
        );
        let err = v.instructions_for(&Input::text("x", "hi")).unwrap_err();
        assert!(
            err.contains("input \"x\"") && err.contains("no field `capital`"),
            "{err}"
        );
        // Plain text is sent as written.
        spec.instructions = "PASS when polite; write {braces} freely".into();
        let v = spec.compile(&ProviderConfig::default()).unwrap();
        assert_eq!(
            v.instructions_for(&input).unwrap(),
            "PASS when polite; write {braces} freely"
        );
    }

    #[tokio::test]
    async fn sim_judge_reads_the_truth_from_the_output() {
        let judge = SimJudge::new(SimJudgeConfig::default()).unwrap();
        let v = VerifierSpec {
            name: "v".into(),
            message: String::new(),
            instructions: "x".into(),
            minimum_success_percentage: 0.9,
            weight: 1.0,
            structured: Structured::None,
            system: None,
            calibration: None,
            when: None,
        }
        .compile(&ProviderConfig::default())
        .unwrap();
        let input = Input::text("1", "Thank you for the help");
        let good = judge
            .complete(&v.request("x", &input, "You're welcome. Glad to help.", 0, 0))
            .await
            .unwrap();
        assert_eq!(parse_judgement(&good.text), Ok((true, vec![])));
        let bad = judge
            .complete(&v.request(
                "x",
                &input,
                "I'm sure it's fine, you'll see, don't worry",
                0,
                0,
            ))
            .await
            .unwrap();
        let (pass, reasons) = parse_judgement(&bad.text).unwrap();
        assert!(!pass);
        assert_eq!(reasons.len(), 2, "{reasons:?}");
    }

    #[test]
    fn judge_config_tables() {
        let j: JudgeConfig = toml::from_str("provider = \"sim\"\nfalse_pass = 0.1").unwrap();
        assert!(
            matches!(j, JudgeConfig::Sim(SimJudgeConfig { false_pass, .. }) if false_pass == 0.1)
        );
        let j: JudgeConfig = toml::from_str("provider = \"openai\"\nmodel = \"gpt-4o\"").unwrap();
        assert!(matches!(
            j,
            JudgeConfig::Provider(ProviderConfig::Openai(_))
        ));
        assert!(toml::from_str::<JudgeConfig>("provider = \"sim\"\nbogus = 1").is_err());
    }
}
