//! The user of an episode: scripted (the scenario's turns, in order) or
//! simulated by a model with its own provider and prompt, as τ²-bench
//! does. The simulated user sees the conversation from its side: its own
//! messages as the assistant's, the agent's text as the user's, tool
//! traffic left out.

use crate::agent::config::Scenario;
use crate::provider::types::{Message as WireMessage, Provider, Request, Role as WireRole};
use probity_core::conversation::{Message, Role};
use probity_core::Input;
use std::sync::Arc;

/// Who plays the user.
#[derive(Clone)]
pub enum User {
    /// The scenario's `user_turns`, one per agent reply without a tool
    /// call; when they run out the episode ends ([`probity_core::agent::Ending::UserDone`]).
    Scripted,
    /// A model: `prompt` (its instructions; the scenario's instructions,
    /// known information and the stop signal are appended) through
    /// `provider`.
    Simulated {
        provider: Arc<dyn Provider>,
        prompt: String,
    },
}

/// What the user said, or why it could not.
pub enum UserTurn {
    Says(String),
    /// A scripted user has nothing left to say.
    Done,
}

/// The simulated user's system message for `scenario`.
pub(crate) fn user_system_prompt(prompt: &str, scenario: &Scenario) -> String {
    let mut s = prompt.trim().to_string();
    if let Some(i) = &scenario.instructions {
        s.push_str("\n\nYour task:\n");
        s.push_str(i);
    }
    if let Some(k) = &scenario.known_info {
        s.push_str("\n\nWhat you know:\n");
        s.push_str(k);
    }
    s.push_str(&format!(
        "\n\nWhen your task is done, or cannot be done, reply with `{}` alone.",
        scenario.stop
    ));
    s
}

/// The conversation as the simulated user sees it.
pub fn flipped(system: &str, messages: &[Message]) -> Vec<WireMessage> {
    let mut out = vec![WireMessage::text(WireRole::System, system)];
    for m in messages {
        let role = match m.role {
            Role::User => WireRole::Assistant,
            Role::Assistant if !m.content.is_empty() => WireRole::User,
            _ => continue,
        };
        out.push(WireMessage::text(role, m.content.clone()));
    }
    out
}

impl User {
    /// The user's next message after `messages`; `said` is how many user
    /// messages it has spoken already in this episode (scripted turns are
    /// taken in order).
    pub async fn next(
        &self,
        task: &Input,
        repetition: u32,
        scenario: &Scenario,
        messages: &[Message],
        said: usize,
        caller: Option<&crate::provider::call::Caller>,
    ) -> Result<UserTurn, String> {
        match self {
            User::Scripted => Ok(match scenario.user_turns.get(said) {
                Some(t) => UserTurn::Says(t.clone()),
                None => UserTurn::Done,
            }),
            User::Simulated { provider, prompt } => {
                let system = user_system_prompt(prompt, scenario);
                let request = Request {
                    messages: flipped(&system, messages),
                    repetition,
                    attempt: 0,
                    input: task.clone(),
                };
                // Through the run's caller when there is one: counted,
                // rate-limited and retried on transient errors as any call.
                let said = match caller {
                    Some(c) => c
                        .call(provider.as_ref(), &request)
                        .await
                        .map(|a| a.text)
                        .map_err(|(e, _)| e),
                    None => provider.complete(&request).await.map(|c| c.text),
                };
                said.map(UserTurn::Says)
                    .map_err(|e| format!("the user simulator failed: {e}"))
            }
        }
    }
}
