//! Prompt templates: a dataset row ([`Input`]) rendered into chat messages.
//!
//! Templates use [minijinja](https://docs.rs/minijinja) (Jinja2 syntax) with
//! **strict undefined**: a reference to a field the input does not have is an
//! error naming the expression and the input id, never an empty string.
//!
//! In scope while rendering:
//!
//! * `input` — the row. Every field is reachable directly (`input.question`),
//!   plus `input.id`, `input.fields` (the raw map) and `input.text` (the
//!   `text` field, or when the row has none, all fields joined as
//!   [`Input::as_text`] does). A field named `id`, `fields` or `text` wins
//!   over the built-in of the same name. `{{ input }}` alone renders as
//!   the text, as a user writing it means (not as the map).
//!
//! Feedback templates (for retries that feed validator reasons back, paper
//! §4.1) additionally see `previous_output` and `reasons` (a list of strings).
//!
//! An input with a `messages` field (a conversation in OpenAI's chat
//! shape: system, developer, user, assistant with `tool_calls`, tool
//! results) is sent as that conversation, whole and in order; the
//! templates only add to it as [`ConversationPrompt`] says (by default:
//! the `system` template when the conversation has no system or developer
//! message of its own). A message that cannot be read is an error naming
//! the input, the message and the field — never a dropped message.

use crate::provider::types::{Message, Role};
use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use probity_core::conversation::{self, ConversationError};
use probity_core::Input;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use thiserror::Error;

/// Why a template could not be compiled or rendered.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TemplateError {
    /// The template source does not parse.
    #[error("syntax error in the {template} template, line {line}: {message}")]
    Syntax {
        /// Which template: `system_prompt`, `prompt`, `feedback`, or a body path.
        template: String,
        line: usize,
        message: String,
    },
    /// Rendering failed for one input (most often: a field it does not have).
    #[error(
        "cannot render the {template} template (line {line}) for input {input_id:?}: {message}"
    )]
    Render {
        template: String,
        line: usize,
        input_id: String,
        message: String,
    },
    /// An input's `messages` cannot be sent as they are: which input,
    /// which message (from 0), what is wrong with it.
    #[error("input {input_id:?}: `messages`: message {index}: {problem}")]
    Conversation {
        input_id: String,
        index: usize,
        problem: String,
    },
}

/// When the `[prompt] system` template is added to an input's own
/// conversation (`[prompt] conversation_system`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConversationSystem {
    /// Only when the conversation has no system or developer message.
    #[default]
    IfNone,
    /// Always, as the first message (before the conversation's own).
    First,
    /// Never: the conversation is sent as it is.
    Never,
}

/// What the `[prompt] user` template does to an input's own conversation
/// (`[prompt] conversation_user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConversationUser {
    /// Nothing: every message is sent as it is.
    #[default]
    AsSent,
    /// The last message, which must be the user's, is replaced by the
    /// rendered `user` template (where `input.messages` is the
    /// conversation); every message before it is sent as it is.
    Template,
}

/// How the templates meet an input that carries its own conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConversationPrompt {
    pub system: ConversationSystem,
    pub user: ConversationUser,
}

/// The conversation input `input` carries in its `messages` field (a list
/// of messages in OpenAI's chat shape, or that list as JSON text), `None`
/// without one. Every message is read whole; the first that cannot be is
/// the error.
pub fn input_conversation(input: &Input) -> Result<Option<Vec<Message>>, ConversationError> {
    let Some(value) = input.fields.get("messages") else {
        return Ok(None);
    };
    let value = match value {
        serde_json::Value::String(text) => {
            serde_json::from_str(&text).map_err(|e| ConversationError {
                index: 0,
                problem: format!("`messages` is a text that is not a JSON list of messages ({e})"),
            })?
        }
        other => other,
    };
    let messages = conversation::from_openai(&value)?;
    if messages.is_empty() {
        return Err(ConversationError {
            index: 0,
            problem: "`messages` is empty: a conversation needs at least one message".into(),
        });
    }
    Ok(Some(messages))
}

/// Instructions one render may execute (minijinja's fuel): loops over
/// `range(100000)` nested twice run out of it in milliseconds.
pub(crate) const MAX_TEMPLATE_FUEL: u64 = 1_000_000;
/// Deepest nesting of includes, macros and blocks in one render.
pub(crate) const MAX_TEMPLATE_RECURSION: usize = 64;
/// Largest text one render may produce, in bytes.
pub const MAX_RENDERED_BYTES: usize = 16 << 20;

const SYSTEM: &str = "system_prompt";
const USER: &str = "prompt";
const FEEDBACK: &str = "feedback";

/// The default feedback text appended to the last user message on a retry.
pub const DEFAULT_FEEDBACK_TEMPLATE: &str = "\n\nYour previous answer was:\n{{ previous_output }}\n\nIt was rejected for these reasons:\n{% for r in reasons %}- {{ r }}\n{% endfor %}Please answer again and fix these problems.";

/// A compiled pair of prompt templates (optional system prompt, user prompt)
/// plus the feedback template used on retries.
///
/// Compiling happens once in [`PromptTemplate::new`]; rendering is cheap and
/// thread-safe (`PromptTemplate` is `Send + Sync`).
#[derive(Debug)]
pub struct PromptTemplate {
    env: Environment<'static>,
    has_system: bool,
    conversation: ConversationPrompt,
}

impl PromptTemplate {
    /// Compiles the templates. A syntax error names the template
    /// (`system_prompt` or `prompt`) and the line.
    pub fn new(system: Option<&str>, user: &str) -> Result<Self, TemplateError> {
        let mut env = new_env();
        if let Some(system) = system {
            add(&mut env, SYSTEM, system)?;
        }
        add(&mut env, USER, user)?;
        add(&mut env, FEEDBACK, DEFAULT_FEEDBACK_TEMPLATE)?;
        Ok(PromptTemplate {
            env,
            has_system: system.is_some(),
            conversation: ConversationPrompt::default(),
        })
    }

    /// Sets how the templates meet an input's own conversation.
    pub fn with_conversation(mut self, conversation: ConversationPrompt) -> Self {
        self.conversation = conversation;
        self
    }

    /// Replaces the feedback template (see [`PromptTemplate::render_feedback`]).
    pub fn with_feedback(mut self, feedback: &str) -> Result<Self, TemplateError> {
        add(&mut self.env, FEEDBACK, feedback)?;
        Ok(self)
    }

    /// Renders the messages for one input: a system message when a system
    /// template was given, then one user message; for an input with its
    /// own conversation (`messages`), that conversation whole and in
    /// order, with the templates applied as [`ConversationPrompt`] says.
    pub fn render(&self, input: &Input) -> Result<Vec<Message>, TemplateError> {
        self.render_with(&template_scope(input), input)
    }

    /// Renders the messages for a retry after `previous_output` failed for
    /// `reasons`: the normal messages, with the feedback template's text
    /// appended to the last message when it is the user's, else (a
    /// conversation ending with a tool's result) as one more user message.
    /// The default feedback template quotes the previous output and lists
    /// the reasons.
    pub fn render_feedback(
        &self,
        input: &Input,
        previous_output: &str,
        reasons: &[String],
    ) -> Result<Vec<Message>, TemplateError> {
        let ctx = feedback_context(input, previous_output, reasons);
        let mut messages = self.render_with(&ctx, input)?;
        let feedback = render_one(&self.env, FEEDBACK, &ctx, input)?;
        append_feedback(&mut messages, &feedback);
        Ok(messages)
    }

    fn render_with(
        &self,
        ctx: &minijinja::Value,
        input: &Input,
    ) -> Result<Vec<Message>, TemplateError> {
        let own = input_conversation(input).map_err(|e| TemplateError::Conversation {
            input_id: input.id.clone(),
            index: e.index,
            problem: e.problem,
        })?;
        let Some(mut messages) = own else {
            let mut messages = Vec::with_capacity(2);
            if self.has_system {
                let system = render_one(&self.env, SYSTEM, ctx, input)?;
                messages.push(Message::text(Role::System, system));
            }
            messages.push(Message::text(
                Role::User,
                render_one(&self.env, USER, ctx, input)?,
            ));
            return Ok(messages);
        };
        if self.conversation.user == ConversationUser::Template {
            let last = messages.len() - 1;
            if messages[last].role != Role::User {
                return Err(TemplateError::Conversation {
                    input_id: input.id.clone(),
                    index: last,
                    problem: format!(
                        "conversation_user = \"template\" renders the last message, which must be the user's (it is the {}'s)",
                        messages[last].role.as_str()
                    ),
                });
            }
            messages[last].content = render_one(&self.env, USER, ctx, input)?;
        }
        let has_own = messages
            .iter()
            .any(|m| matches!(m.role, Role::System | Role::Developer));
        let add = self.has_system
            && match self.conversation.system {
                ConversationSystem::IfNone => !has_own,
                ConversationSystem::First => true,
                ConversationSystem::Never => false,
            };
        if add {
            let system = render_one(&self.env, SYSTEM, ctx, input)?;
            messages.insert(0, Message::text(Role::System, system));
        }
        Ok(messages)
    }
}

/// `feedback` added to `messages` for a retry: appended to the last
/// message when it is the user's (the paper's "input + reasons"), else —
/// a conversation ending with a tool's result or an assistant turn — as
/// one more user message, so no earlier turn is changed.
pub fn append_feedback(messages: &mut Vec<Message>, feedback: &str) {
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push_str(feedback),
        _ => messages.push(Message::text(Role::User, feedback.trim_start())),
    }
}

/// The value `input` has in templates: fields flattened, plus `id`,
/// `fields` and `text` unless a field of that name exists.
pub fn input_value(input: &Input) -> Value {
    Value::Object(input_map(input))
}

fn input_map(input: &Input) -> Map<String, Value> {
    let fields = input.fields.to_map();
    let mut map = fields.clone();
    map.entry("id")
        .or_insert_with(|| Value::String(input.id.clone()));
    if !map.contains_key("fields") {
        map.insert("fields".into(), Value::Object(fields));
    }
    if !map.contains_key("text") {
        map.insert("text".into(), Value::String(input.as_text()));
    }
    map
}

/// The context of a feedback template (paper §4.1): `input`,
/// `previous_output` and `reasons`.
pub(crate) fn feedback_context(
    input: &Input,
    previous_output: &str,
    reasons: &[String],
) -> minijinja::Value {
    minijinja::context! {
        input => input_object(input),
        previous_output => previous_output,
        reasons => reasons,
    }
}

/// `input` in a prompt or feedback template: [`input_value`]'s map, which
/// renders as [`Input::as_text`] when written whole (`{{ input }}`).
fn input_object(input: &Input) -> minijinja::Value {
    minijinja::Value::from_object(InputObject {
        map: input_map(input),
        text: input.as_text(),
    })
}

#[derive(Debug)]
struct InputObject {
    map: Map<String, Value>,
    text: String,
}

impl Object for InputObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    /// A key the row lacks is undefined (an error under strict undefined).
    fn get_value(self: &Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        self.map
            .get(key.as_str()?)
            .map(minijinja::Value::from_serialize)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.map
                .keys()
                .map(|k| minijinja::Value::from(k.as_str()))
                .collect(),
        )
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `source` is a template (has `{{`, `{%` or `{#`) rather than
/// plain text: only then is it rendered per input.
pub fn is_template(source: &str) -> bool {
    ["{{", "{%", "{#"].iter().any(|t| source.contains(t))
}

/// What a prompt or a check's text sees of `input` (one rule for both):
/// every field by name (`{{ country }}`, as promptfoo's `vars` are) and
/// `input` itself ([`input_object`]: `{{ input.country }}`, `{{ input }}`
/// as its text); `input` always means the row, so a field named `input` is
/// `{{ input.input }}`.
fn template_scope(input: &Input) -> minijinja::Value {
    let mut scope: std::collections::BTreeMap<String, minijinja::Value> = input
        .fields
        .to_map()
        .into_iter()
        .map(|(k, v)| (k, minijinja::Value::from_serialize(&v)))
        .collect();
    scope.insert("input".into(), input_object(input));
    minijinja::Value::from(scope)
}

/// `source` (a check's text: a judge's rubric, a validator's value)
/// rendered for `input` in [`template_scope`]. Strict undefined, fuel and
/// size caps as every template here; no escaping, as prompt templates (the
/// fields are the test's own data). `template` names the text in errors.
pub fn render_check_text(
    template: &str,
    source: &str,
    input: &Input,
) -> Result<String, TemplateError> {
    let mut env = new_env();
    add(&mut env, template, source)?;
    render_one(&env, template, &template_scope(input), input)
}

/// A minijinja environment configured the way probity uses it: strict
/// undefined, debug info on, trailing newlines kept.
pub(crate) fn new_env() -> Environment<'static> {
    let mut env = Environment::new();
    // Work caps: a render that loops too long or recurses too deep is an
    // error, not a hang or a stack overflow.
    env.set_fuel(Some(MAX_TEMPLATE_FUEL));
    env.set_recursion_limit(MAX_TEMPLATE_RECURSION);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_debug(true);
    env.set_keep_trailing_newline(true);
    env
}

/// Adds a named template, turning a syntax error into [`TemplateError::Syntax`].
pub(crate) fn add(
    env: &mut Environment<'static>,
    name: &str,
    source: &str,
) -> Result<(), TemplateError> {
    env.add_template_owned(name.to_string(), source.to_string())
        .map_err(|e| TemplateError::Syntax {
            template: name.to_string(),
            line: e.line().unwrap_or(1),
            message: describe(&e),
        })
}

/// Renders the named template with `ctx`; errors name the template, line,
/// input id and (for undefined values) the failing expression.
pub(crate) fn render_one(
    env: &Environment<'static>,
    name: &str,
    ctx: &impl serde::Serialize,
    input: &Input,
) -> Result<String, TemplateError> {
    let tmpl = env.get_template(name).map_err(|e| TemplateError::Render {
        template: name.to_string(),
        line: 0,
        input_id: input.id.clone(),
        message: describe(&e),
    })?;
    let mut out = Capped::default();
    match tmpl.render_captured_to(ctx, &mut out) {
        Ok(_) => Ok(String::from_utf8_lossy(&out.bytes).into_owned()),
        Err(e) => Err(TemplateError::Render {
            template: name.to_string(),
            line: e.line().unwrap_or(0),
            input_id: input.id.clone(),
            message: if out.over {
                format!(
                    "the rendered text is longer than {} MiB",
                    MAX_RENDERED_BYTES >> 20
                )
            } else {
                describe(&e)
            },
        }),
    }
}

/// A buffer that refuses to grow past [`MAX_RENDERED_BYTES`].
#[derive(Default)]
struct Capped {
    bytes: Vec<u8>,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > MAX_RENDERED_BYTES {
            self.over = true;
            return Err(std::io::Error::other("rendered text too long"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A one-line description of a minijinja error; for undefined values it
/// quotes the expression (e.g. `input.question`) so the missing field is named.
pub(crate) fn describe(e: &minijinja::Error) -> String {
    let expr = e
        .range()
        .and_then(|r| e.template_source().and_then(|s| s.get(r)))
        .map(|s| s.trim().to_string());
    match (e.kind(), expr) {
        (ErrorKind::UndefinedError, Some(expr)) => {
            let field = expr.rsplit('.').next().unwrap_or(&expr).trim();
            format!("`{expr}` is undefined (no field `{field}`)")
        }
        (_, expr) => {
            let mut msg = e.kind().to_string();
            if let Some(d) = e.detail() {
                msg.push_str(": ");
                msg.push_str(d);
            }
            if let Some(expr) = expr {
                msg.push_str(&format!(" (at `{expr}`)"));
            }
            msg
        }
    }
}
