//! A black-box agent: a command, an HTTP endpoint or a Python function
//! ([`super::hosted`]) that runs a whole episode itself, with its own
//! tools, and hands back its transcript.
//!
//! It is sent `{"id", "input", "repetition", "scenario": {instructions,
//! known_info, messages, user_turns, max_turns, stop}}` (JSON: on stdin,
//! as the POST body, or as the function's argument) and answers `{"messages": [OpenAI-shaped
//! messages], "final_state": …, "stopped": bool}` (`final_state` and
//! `stopped` optional; `stopped: false` means it hit its turn limit).
//! A command that fails, an endpoint that answers an error, or a
//! transcript that cannot be read ends the episode as an error of the
//! agent's harness — not a failure of the agent's behaviour.

use crate::agent::config::Scenario;
use probity_core::agent::{Ending, Party, Transcript};
use probity_core::conversation::{from_openai, to_openai};
use probity_core::Input;
use serde_json::{json, Value};
use std::time::Duration;

/// Where a black-box agent runs.
#[derive(Debug, Clone, PartialEq)]
pub enum BlackBox {
    Command {
        argv: Vec<String>,
        timeout: Duration,
    },
    Http {
        url: String,
        timeout: Duration,
    },
    /// A function of the embedding program (the Python package's).
    Hosted {
        function: crate::tools::hosted::HostedFn,
        timeout: Duration,
    },
}

/// The request a black-box agent is sent.
pub(crate) fn request_body(task: &Input, scenario: &Scenario, repetition: u32) -> Value {
    json!({
        "id": task.id,
        "input": Value::Object(task.fields.to_map()),
        "repetition": repetition,
        "scenario": {
            "instructions": scenario.instructions,
            "known_info": scenario.known_info,
            "messages": to_openai(&scenario.messages),
            "user_turns": scenario.user_turns,
            "max_turns": scenario.max_turns,
            "stop": scenario.stop,
        },
    })
}

/// The transcript in a black-box agent's answer `text`.
pub(crate) fn read_answer(text: &str, max_turns: u32) -> Result<Transcript, String> {
    let v: Value = serde_json::from_str(text.trim())
        .map_err(|e| format!("the agent's answer is not JSON: {e}"))?;
    let messages = v
        .get("messages")
        .ok_or("the agent's answer has no `messages`")?;
    let messages = from_openai(messages).map_err(|e| format!("the agent's transcript: {e}"))?;
    let ending = match v.get("stopped") {
        Some(Value::Bool(false)) => Ending::TurnLimit { max_turns },
        _ => Ending::Stop { by: Party::Agent },
    };
    let mut t = Transcript::from_messages(messages, ending);
    t.final_state = v.get("final_state").filter(|s| !s.is_null()).cloned();
    Ok(t)
}

fn failed(message: String) -> Transcript {
    Transcript::from_messages(
        Vec::new(),
        Ending::Error {
            by: Party::Agent,
            message,
        },
    )
}

impl BlackBox {
    /// Run one episode.
    pub async fn run(&self, task: &Input, scenario: &Scenario, repetition: u32) -> Transcript {
        let body = request_body(task, scenario, repetition);
        let answer = match self {
            BlackBox::Command { argv, timeout } => run_command(argv, &body, *timeout).await,
            BlackBox::Hosted { function, timeout } => function
                .call(body, *timeout)
                .await
                .map_err(|e| format!("the agent `{}`: {e}", function.name)),
            BlackBox::Http { url, timeout } => {
                let client = reqwest::Client::new();
                match client.post(url).timeout(*timeout).json(&body).send().await {
                    Err(e) => {
                        return Transcript::from_messages(
                            Vec::new(),
                            Ending::Error {
                                by: Party::Upstream,
                                message: format!("the agent at {url}: {e}"),
                            },
                        )
                    }
                    Ok(r) if !r.status().is_success() => {
                        Err(format!("the agent at {url} answered HTTP {}", r.status()))
                    }
                    Ok(r) => r.text().await.map_err(|e| e.to_string()),
                }
            }
        };
        match answer.and_then(|a| read_answer(&a, scenario.max_turns)) {
            Ok(t) => t,
            Err(m) => failed(m),
        }
    }
}

async fn run_command(argv: &[String], body: &Value, timeout: Duration) -> Result<String, String> {
    use tokio::io::AsyncWriteExt;
    let (program, args) = argv.split_first().ok_or("the agent's command is empty")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the agent `{program}`: {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let text = body.to_string();
    let run = async move {
        let _ = stdin.write_all(text.as_bytes()).await;
        drop(stdin);
        child.wait_with_output().await
    };
    let out = tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| format!("the agent `{program}` did not finish within {timeout:?}"))?
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "the agent `{program}` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .chars()
                .take(500)
                .collect::<String>()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
