//! Providers: the system under test behind one async trait.
//!
//! Every provider turns a rendered [`Request`] (chat messages plus the
//! repetition index) into a [`Completion`] or a typed [`ProviderError`].
//! Errors become Error cells of the tensor — never failures in disguise.
//! Calls are made through a `Caller` (`call`: rate limits from `limits`,
//! timeouts, retries, redaction of secrets by `redact`); `openai_wire` is
//! the Chat Completions format the openai provider, `probity serve` and
//! the simulator's server share.

pub(crate) mod anthropic;
pub(crate) mod anthropic_wire;
pub(crate) mod call;
pub(crate) mod command;
pub(crate) mod error;
pub(crate) mod func;
pub(crate) mod http;
pub mod limits;
pub(crate) mod load;
pub(crate) mod negotiate;
pub(crate) mod openai;
pub(crate) mod openai_chunk;
pub(crate) mod openai_responses;
pub(crate) mod openai_stream;
pub mod openai_wire;
pub(crate) mod redact;
pub mod template;
pub(crate) mod types;
pub(crate) mod util;

pub use anthropic::{parse_message as parse_anthropic_message, AnthropicConfig, AnthropicProvider};
pub use command::{CommandConfig, CommandProvider, StdinMode, MAX_OUTPUT_BYTES};
pub use error::ConfigError;
pub use func::FnProvider;
pub use http::{HttpConfig, HttpProvider};
pub use openai::{parse_chat_completion, OpenAiConfig, OpenAiProvider};
pub use types::Api;
pub use types::{
    AnswerMeta, Completion, Message, Provider, ProviderError, Request, Role, ToolCall, WireAnswer,
    WireRequest,
};
