//! Structured output negotiated, not assumed (issue 39, item 2).
//!
//! A judge asks for its verdict as JSON: with `response_format =
//! {type = "json_schema", …}` where the upstream takes it, `{type =
//! "json_object"}` (JSON mode) where it takes only that, and by the prompt
//! alone where it takes neither. Many OpenAI-compatible servers take less
//! than OpenAI does (llama.cpp's and llama-cpp-python's servers answer
//! `json_schema` with HTTP 500 "Input should be 'text' or 'json_object'";
//! older vLLM and some Ollama builds likewise). [`Negotiated`] tries the
//! asked mode and steps down, in that order, when an answer says the mode is
//! not supported ([`refuses`]); what it learnt is kept per upstream (its
//! base URL) for the life of the process — a run, or a server — so every
//! later call goes straight to the mode that works, and the step is said
//! once on standard error. Such an answer is never retried as a server
//! error ([`says_format_unsupported`], read by the `Caller`).

use crate::provider::types::{Completion, Provider, ProviderError, Request};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How a judge is asked for structured output, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Structured {
    /// `response_format = {type = "json_schema", …}` (openai providers).
    #[default]
    JsonSchema,
    /// `response_format = {type = "json_object"}` (JSON mode).
    JsonObject,
    /// Ask in the prompt only.
    None,
}

impl Structured {
    /// Every mode, strongest first: the order of the fallback.
    pub const ORDER: [Structured; 3] = [
        Structured::JsonSchema,
        Structured::JsonObject,
        Structured::None,
    ];

    /// The configuration's spelling (`json-schema`, `json-object`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            Structured::JsonSchema => "json-schema",
            Structured::JsonObject => "json-object",
            Structured::None => "none",
        }
    }

    /// `response_format.type` on the wire (`None` for no response_format).
    pub(crate) fn wire_type(self) -> Option<&'static str> {
        match self {
            Structured::JsonSchema => Some("json_schema"),
            Structured::JsonObject => Some("json_object"),
            Structured::None => None,
        }
    }

    fn level(self) -> u8 {
        Structured::ORDER
            .iter()
            .position(|m| *m == self)
            .unwrap_or(0) as u8
    }

    fn at(level: u8) -> Structured {
        Structured::ORDER[usize::from(level).min(Structured::ORDER.len() - 1)]
    }
}

/// Whether `e` is an HTTP 4xx or 5xx (429 aside) whose message says a
/// structured-output request is not supported: it names `response_format`,
/// `json_schema`, `json_object` or "structured output". Such an answer
/// will not change on a retry.
pub fn says_format_unsupported(e: &ProviderError) -> bool {
    let body = match e {
        ProviderError::Server { body, .. } | ProviderError::Rejected { body, .. } => body,
        _ => return false,
    };
    let body = body.to_ascii_lowercase();
    [
        "response_format",
        "json_schema",
        "json_object",
        "structured output",
    ]
    .iter()
    .any(|needle| body.contains(needle))
}

/// Whether `e` refuses `mode`: [`says_format_unsupported`] for a mode that
/// sends a `response_format` (a call without one cannot be refused for it).
pub fn refuses(e: &ProviderError, mode: Structured) -> bool {
    mode.wire_type().is_some() && says_format_unsupported(e)
}

/// What each upstream (by base URL) was found to refuse: the level of the
/// strongest mode not known refused, in [`Structured::ORDER`]. Kept for
/// the process: the life of a run, or of a server.
fn memory(upstream: &str) -> Arc<AtomicU8> {
    static KNOWN: OnceLock<Mutex<HashMap<String, Arc<AtomicU8>>>> = OnceLock::new();
    let mut known = KNOWN
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    known.entry(upstream.to_string()).or_default().clone()
}

/// One provider per mode from the asked one down to `none`, asking the
/// strongest the upstream was not found to refuse.
pub struct Negotiated {
    /// Who asks (a verifier's name), for the notice.
    who: String,
    upstream: String,
    /// The provider asking for the asked mode: the fingerprint's.
    first: Arc<dyn Provider>,
    /// The weaker modes' providers, strongest first.
    weaker: Vec<(Structured, Arc<dyn Provider>)>,
    asked: Structured,
    known: Arc<AtomicU8>,
}

impl Negotiated {
    /// `build(mode)` makes the provider asking for `mode`, for every mode
    /// from `asked` down; `upstream` names the server whose refusals are
    /// remembered.
    pub fn new<E>(
        who: &str,
        upstream: &str,
        asked: Structured,
        mut build: impl FnMut(Structured) -> Result<Arc<dyn Provider>, E>,
    ) -> Result<Negotiated, E> {
        let mut weaker = Vec::new();
        for mode in Structured::ORDER {
            if mode.level() > asked.level() {
                weaker.push((mode, build(mode)?));
            }
        }
        Ok(Negotiated {
            who: who.to_string(),
            upstream: upstream.to_string(),
            first: build(asked)?,
            weaker,
            asked,
            known: memory(upstream),
        })
    }

    /// The mode the next call asks for: the asked one, or the strongest
    /// below it the upstream was not found to refuse.
    pub fn mode(&self) -> Structured {
        self.current().0
    }

    fn current(&self) -> (Structured, &Arc<dyn Provider>) {
        let known = self.known.load(Ordering::Relaxed);
        if self.asked.level() >= known {
            return (self.asked, &self.first);
        }
        // The weakest (prompt only) is never refused for its format.
        self.weaker
            .iter()
            .find(|(m, _)| m.level() >= known)
            .or(self.weaker.last())
            .map_or((self.asked, &self.first), |(m, p)| (*m, p))
    }
}

#[async_trait::async_trait]
impl Provider for Negotiated {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        loop {
            let (mode, provider) = self.current();
            match provider.complete(request).await {
                Err(e) if refuses(&e, mode) => {
                    let next = mode.level() + 1;
                    let before = self.known.fetch_max(next, Ordering::Relaxed);
                    if before < next {
                        let why = crate::provider::redact::error(e).to_string();
                        crate::stderr::line(format_args!(
                            "note: `{}`: {} refused structured output `{}` ({}); asking with `{}` from now on",
                            self.who,
                            self.upstream,
                            mode.name(),
                            why.chars().take(200).collect::<String>(),
                            Structured::at(next).name(),
                        ));
                    }
                }
                other => return other,
            }
        }
    }

    /// The asked mode's provider's: a judgement's cache key does not change
    /// with what the upstream turned out to take.
    fn fingerprint(&self) -> String {
        self.first.fingerprint()
    }

    fn structured_output(&self) -> Option<(&'static str, &'static str)> {
        Some((self.asked.name(), self.mode().name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::types::{Message, Role};
    use std::sync::atomic::AtomicUsize;

    /// An upstream taking only the modes in `takes`; counts calls per mode.
    struct Upstream {
        mode: Structured,
        takes: &'static [Structured],
        calls: Arc<[AtomicUsize; 3]>,
    }

    #[async_trait::async_trait]
    impl Provider for Upstream {
        async fn complete(&self, _: &Request) -> Result<Completion, ProviderError> {
            self.calls[usize::from(self.mode.level())].fetch_add(1, Ordering::Relaxed);
            if self.takes.contains(&self.mode) {
                Ok(Completion {
                    text: format!("{{\"verdict\":\"PASS\",\"mode\":\"{}\"}}", self.mode.name()),
                    ..Completion::default()
                })
            } else {
                // llama-cpp-python's own answer to json_schema.
                Err(ProviderError::Server {
                    status: 500,
                    body: "{'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}".into(),
                })
            }
        }
        fn fingerprint(&self) -> String {
            format!("up|{}", self.mode.name())
        }
    }

    fn request() -> Request {
        Request {
            messages: vec![Message::text(Role::User, "judge")],
            repetition: 0,
            attempt: 0,
            input: probity_core::Input::text("1", "x"),
        }
    }

    fn negotiated(
        upstream: &str,
        asked: Structured,
        takes: &'static [Structured],
    ) -> (Negotiated, Arc<[AtomicUsize; 3]>) {
        let calls: Arc<[AtomicUsize; 3]> = Arc::default();
        let n = Negotiated::new::<()>("judge", upstream, asked, |mode| {
            Ok(Arc::new(Upstream {
                mode,
                takes,
                calls: calls.clone(),
            }))
        })
        .unwrap();
        (n, calls)
    }

    fn counts(calls: &[AtomicUsize; 3]) -> [usize; 3] {
        [0, 1, 2].map(|i| calls[i].load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn each_server_gets_the_strongest_mode_it_takes_refused_once_then_remembered() {
        use Structured::*;
        for (url, takes, used, calls) in [
            (
                "http://all.test",
                &[JsonSchema, JsonObject, None][..],
                JsonSchema,
                [5, 0, 0],
            ),
            (
                "http://object.test",
                &[JsonObject, None][..],
                JsonObject,
                [1, 5, 0],
            ),
            ("http://neither.test", &[None][..], None, [1, 1, 5]),
        ] {
            let takes: &'static [Structured] = Box::leak(takes.to_vec().into_boxed_slice());
            let (n, c) = negotiated(url, JsonSchema, takes);
            for _ in 0..5 {
                let answer = n.complete(&request()).await.unwrap();
                assert!(answer.text.contains(used.name()), "{url}: {}", answer.text);
            }
            assert_eq!(n.mode(), used, "{url}");
            assert_eq!(n.structured_output(), Some(("json-schema", used.name())));
            assert_eq!(counts(&c), calls, "{url}: one refusal per mode, then none");
            // A second judge of the same upstream starts where the first ended.
            let (again, c2) = negotiated(url, JsonSchema, takes);
            assert_eq!(again.mode(), used);
            again.complete(&request()).await.unwrap();
            assert_eq!(
                counts(&c2).iter().sum::<usize>(),
                1,
                "{url}: no refusal again"
            );
        }
    }

    #[tokio::test]
    async fn an_asked_weaker_mode_is_never_raised_and_other_errors_pass_through() {
        use Structured::*;
        let (n, c) = negotiated(
            "http://weak.test",
            JsonObject,
            &[JsonSchema, JsonObject, None],
        );
        n.complete(&request()).await.unwrap();
        assert_eq!(counts(&c), [0, 1, 0]);
        // Refused even by the prompt-only rung: not a format refusal, returned as is.
        let (n, c) = negotiated("http://nothing.test", None, &[]);
        assert!(matches!(
            n.complete(&request()).await,
            Err(ProviderError::Server { status: 500, .. })
        ));
        assert_eq!(counts(&c), [0, 0, 1]);
    }

    #[test]
    fn format_refusals_are_told_from_other_errors() {
        let server = |body: &str| ProviderError::Server {
            status: 500,
            body: body.into(),
        };
        assert!(says_format_unsupported(&server(
            "Input should be 'text' or 'json_object'"
        )));
        assert!(says_format_unsupported(&ProviderError::Rejected {
            status: 400,
            body: "response_format type json_schema is not supported".into()
        }));
        assert!(!says_format_unsupported(&server("out of memory")));
        assert!(!says_format_unsupported(&ProviderError::RateLimited {
            retry_after: None,
            headers: Vec::new(),
        }));
        assert!(!refuses(&server("bad response_format"), Structured::None));
    }
}
