//! What every document says about a run: [`RunInfo`], and the compact
//! label of the system it tested ([`system_label`]).

use crate::sanitize::truncate_chars;
use serde_json::Value;

/// Metadata of one run, as the run store knows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// The run's id in the run store.
    pub id: i64,
    /// The run's (experiment's) name.
    pub name: String,
    /// When the run was created, as stored (RFC 3339 preferred).
    pub created_at: String,
    /// Hash of the configuration the run was made with.
    pub config_hash: String,
    /// The system under test: provider and model, e.g. `openai/gpt-4o-mini`.
    pub system: String,
    /// Wall-clock duration of the run in seconds, when known.
    pub duration_s: Option<f64>,
    /// Calls made for this run over all its sessions: to the system and
    /// to judges, retries included.
    pub model_calls: u64,
    /// Outputs reused from run [`RunInfo::reused_from`] instead of a call
    /// (`probity run --reuse`); 0 when every sample was a fresh call.
    pub cached: u64,
    /// Of `model_calls`, those made to judges.
    pub judge_calls: u64,
    /// Tokens reported by providers (prompt + completion), all sessions; 0
    /// when no provider reports them.
    pub tokens: u64,
    /// The run whose stored outputs this run reused, when it reused some.
    pub reused_from: Option<i64>,
    /// Of `judge_calls`, each verifier's: `(check name, calls)`, in column
    /// order.
    pub judge_calls_by_check: Vec<(String, u64)>,
    /// False when the run stopped before every output was sampled and
    /// validated.
    pub complete: bool,
}

/// A compact label of a provider fingerprint (the runs' `system`):
/// `openai/gpt-4o-mini`, `anthropic/claude-…`, `sim seed 42`,
/// `http host/path`, `command prog`. Unknown forms are cut to 40
/// characters. Not escaped: escape for the medium.
pub fn system_label(system: &str) -> String {
    let mut parts = system.splitn(3, '|');
    let provider = parts.next().unwrap_or("");
    let second = parts.next().unwrap_or("");
    let third = parts.next();
    let json_of = |s: &str| serde_json::from_str::<Value>(s).ok();
    let field = |v: &Option<Value>, k: &str| -> Option<String> {
        v.as_ref().and_then(|v| v.get(k)).and_then(|x| match x {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let label = match provider {
        "openai" | "anthropic" => {
            let v = third.and_then(json_of);
            match field(&v, "model") {
                Some(m) => format!("{provider}/{m}"),
                None => provider.to_string(),
            }
        }
        "sim" => {
            let v = third.and_then(json_of);
            let mut s = "sim".to_string();
            if let Some(seed) = field(&v, "seed") {
                s.push_str(&format!(" seed {seed}"));
            }
            s
        }
        "http" => {
            let v = json_of(second);
            match field(&v, "url") {
                Some(u) => {
                    let u = u.split("://").nth(1).unwrap_or(&u).to_string();
                    format!("http {}", u.split('?').next().unwrap_or(""))
                }
                None => "http".to_string(),
            }
        }
        "command" => {
            let v = json_of(second);
            let cmd = v
                .as_ref()
                .and_then(|v| v.get("command"))
                .and_then(|c| match c {
                    Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
                    Value::String(s) => s.split_whitespace().next().map(str::to_string),
                    _ => None,
                });
            match cmd {
                Some(c) => format!("command {}", c.rsplit('/').next().unwrap_or(&c)),
                None => "command".to_string(),
            }
        }
        _ => system.to_string(),
    };
    truncate_chars(&label, 40).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_labels() {
        assert_eq!(
            system_label(
                r#"openai|https://api.openai.com/v1|{"model":"gpt-4o-mini","temperature":null}"#
            ),
            "openai/gpt-4o-mini"
        );
        assert_eq!(
            system_label(r#"sim|v1|{"seed":42,"contractions":0.1}"#),
            "sim seed 42"
        );
        assert_eq!(
            system_label(r#"http|{"url":"https://x.example/api?k=1","method":"POST"}"#),
            "http x.example/api"
        );
        assert_eq!(
            system_label(r#"command|{"command":["/usr/bin/python3","m.py"]}"#),
            "command python3"
        );
        assert_eq!(system_label("weird"), "weird");
        assert_eq!(system_label(""), "");
    }
}
