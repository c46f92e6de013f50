//! A compact label of a stored system fingerprint (a run's `system`, as
//! each provider's [`crate::provider::Provider::fingerprint`] writes it):
//! what reports show. Read here, beside the providers that write the
//! fingerprints, one arm per provider kind the compiler asks for.

use crate::system::config::ProviderKind;
use serde_json::Value;

/// `openai/gpt-4o-mini`, `anthropic/claude-…`, `sim seed 42`,
/// `http host/path`, `command prog`; a fingerprint of no known kind (a
/// Python system's, an older run's) as it is. At most 40 characters (a
/// longer one cut, with `…`). Not
/// escaped: the report escapes for its medium.
pub fn system_label(fingerprint: &str) -> String {
    let mut parts = fingerprint.splitn(3, '|');
    // The simulated agent and user write `kind:…`.
    let kind = parts.next().unwrap_or("").split(':').next().unwrap_or("");
    let second = parts.next().unwrap_or("");
    let third = parts.next();
    let json_of = |s: &str| serde_json::from_str::<Value>(s).ok();
    let label = match kind.parse::<ProviderKind>() {
        Ok(k @ (ProviderKind::Openai | ProviderKind::Anthropic)) => {
            let kind: &'static str = k.into();
            match field(&third.and_then(json_of), "model") {
                Some(m) => format!("{kind}/{m}"),
                None => kind.to_string(),
            }
        }
        Ok(ProviderKind::SimAgent) => "sim agent".to_string(),
        Ok(ProviderKind::SimUser) => "sim user".to_string(),
        Ok(ProviderKind::Sim) => match field(&third.and_then(json_of), "seed") {
            Some(seed) => format!("sim seed {seed}"),
            None => "sim".to_string(),
        },
        Ok(ProviderKind::Http) => match field(&json_of(second), "url") {
            Some(u) => {
                let u = u.split("://").nth(1).unwrap_or(&u).to_string();
                format!("http {}", u.split('?').next().unwrap_or(""))
            }
            None => "http".to_string(),
        },
        Ok(ProviderKind::Command) => match command_name(&json_of(second)) {
            Some(c) => format!("command {}", c.rsplit('/').next().unwrap_or(&c)),
            None => "command".to_string(),
        },
        Err(_) => fingerprint.to_string(),
    };
    match label.char_indices().nth(40) {
        None => label,
        Some(_) => format!("{}…", label.chars().take(39).collect::<String>()),
    }
}

/// Field `k` of a fingerprint's settings, as text (`null`: none).
fn field(v: &Option<Value>, k: &str) -> Option<String> {
    v.as_ref().and_then(|v| v.get(k)).and_then(|x| match x {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    })
}

/// The program a command provider's fingerprint runs.
fn command_name(v: &Option<Value>) -> Option<String> {
    match v.as_ref()?.get("command")? {
        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
        Value::String(s) => s.split_whitespace().next().map(str::to_string),
        _ => None,
    }
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
        // The simulated agent and user (named with a hyphen).
        assert_eq!(
            system_label(r#"sim-agent:7:AgentErrors { wrong_tool: 0.03 }:["refund"]:get_order"#),
            "sim agent"
        );
        assert_eq!(system_label("sim-user:7:x"), "sim user");
        assert_eq!(system_label("weird"), "weird");
        assert_eq!(system_label(""), "");
        assert_eq!(system_label(&"x".repeat(100)).chars().count(), 40);
    }
}
