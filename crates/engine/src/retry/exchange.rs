//! The answer in its conversation, as conversation checks read it
//! ([`crate::checks::check::ConversationCheck`]; issue 34 item 9c): built
//! from what a `probity serve` client sent and what the upstream answered,
//! as structure — never parsed back out of the checked text.

use crate::provider::types::{AnswerMeta, Api, WireRequest};
use probity_core::agent::{AgentCheck, Transcript};
use probity_core::conversation::{from_openai, Message};
use serde_json::{json, Value};

/// The answer `meta` to the request `wire` as a one-turn
/// [`Transcript::answer`]: the request's messages as context, the answer's
/// content and tool calls (OpenAI's shape, as the upstream sent them) as
/// the turn. The request's messages are read only when a check reads the
/// whole conversation (`needs_history`: a `transcript` check), so a
/// request whose messages hold what a conversation cannot (an image part)
/// still has its answer's tool calls checked.
///
/// A Responses API answer's function calls are checked like a Chat
/// answer's; its request's input items are not read as a conversation.
///
/// Errors say why there is nothing to read — the cell is then an Error,
/// never a verdict about the model: a `transcript` check on a Responses
/// API request, an answer whose structure was not kept (served from the
/// store), a message that cannot be read.
pub fn exchange(
    wire: Option<(&WireRequest, Api)>,
    meta: Option<&AnswerMeta>,
    needs_history: bool,
) -> Result<Transcript, String> {
    let Some((request, api)) = wire else {
        return Err(crate::checks::check::NO_EXCHANGE.to_string());
    };
    // A Responses API answer's function calls are read in the Chat shape
    // (`openai_responses`); its input items are not a Chat conversation.
    if needs_history && !api.is_chat() {
        return Err("not evaluated: a `transcript` check reads a Chat Completions conversation; this request came through the Responses API, whose input items it does not read".into());
    }
    let meta = meta.ok_or(
        "not evaluated: this answer was served from the store, which keeps its text, not its tool calls",
    )?;
    let history = if needs_history {
        from_openai(&Value::Array(request.messages.clone())).map_err(|e| {
            format!(
                "not evaluated: the request's messages[{}] cannot be read as a conversation: {}",
                e.index, e.problem
            )
        })?
    } else {
        Vec::new()
    };
    let answer = json!({
        "role": "assistant",
        "content": meta.content,
        "tool_calls": meta.tool_calls,
    });
    let answer = Message::from_openai(0, &answer).map_err(|e| {
        format!(
            "not evaluated: the upstream's answer cannot be read as a message: {}",
            e.problem
        )
    })?;
    Ok(Transcript::answer(history, answer))
}

/// Whether any of `checks` reads the whole conversation (not only the
/// answer's turn).
pub fn needs_history<'a>(mut checks: impl Iterator<Item = &'a AgentCheck>) -> bool {
    checks.any(|c| matches!(c, AgentCheck::Transcript(_)))
}
