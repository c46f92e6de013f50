//! Generic HTTP provider: a JSON request template and a JSON pointer to the
//! output text.

use super::error::ConfigError;
use super::types::{unsendable, Completion, Provider, ProviderError, Request, Role};
use super::util::{self, Secret};
use crate::provider::template::{self, TemplateError};
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

fn default_method() -> String {
    "POST".to_string()
}
fn default_body() -> Value {
    json!({ "prompt": "{{ prompt }}" })
}
fn default_pointer() -> String {
    "/choices/0/message/content".to_string()
}
fn default_timeout() -> f64 {
    60.0
}

/// Settings of the `http` provider.
///
/// The request body is the JSON value `body` in which every **string leaf**
/// is a minijinja template (strict undefined). In scope: `prompt` (the last
/// user message), `system` (the system and developer messages joined, or
/// `""`), `messages` (the conversation whole, in OpenAI's chat shape:
/// `role`, `content`, and `tool_calls`, `tool_call_id`, `name` where a
/// message has them), `input` (the row, as in prompt templates),
/// `repetition` and `attempt`. A body that uses neither `messages` nor
/// `input` sends a plain prompt: a request with more than system messages
/// and one user turn, or with a system message but no `system` in the
/// body, is refused naming the message ([`ProviderError::Unsendable`]),
/// never cut to its last turn. A leaf that is exactly one
/// expression, like `"{{ messages }}"` or `"{{ repetition }}"`, is replaced
/// by the expression's value with its JSON type (a list, a number…); any
/// other leaf renders to a string. Object keys are not templated.
///
/// `url` and header values may reference environment variables as
/// `${ENV:NAME}` (read once, when the provider is built; never shown in
/// errors, `Debug` or the fingerprint).
///
/// The output is the value at the RFC 6901 JSON pointer `output_pointer`
/// (strings as they are, other values as JSON text); the empty pointer `""`
/// takes the whole response body as text, JSON or not.
///
/// ```toml
/// provider = "http"
/// url = "http://127.0.0.1:8080/v1/chat/completions"
/// method = "POST"                                   # POST | PUT | PATCH
/// headers = { Authorization = "Bearer ${ENV:MY_KEY}" }
/// body = { model = "m", messages = "{{ messages }}", seed = "{{ repetition }}" }
/// output_pointer = "/choices/0/message/content"     # default
/// timeout_s = 60                         # per call
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub url: String,
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "default_body")]
    pub body: Value,
    #[serde(default = "default_pointer")]
    pub output_pointer: String,
    /// Per-call timeout in seconds (`timeout_secs`, the older name, is
    /// still accepted).
    #[serde(default = "default_timeout", alias = "timeout_secs")]
    pub timeout_s: f64,
}

impl HttpConfig {
    /// A POST to `url` with the default body `{"prompt": "{{ prompt }}"}` and
    /// the OpenAI-shaped output pointer.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            method: default_method(),
            headers: BTreeMap::new(),
            body: default_body(),
            output_pointer: default_pointer(),
            timeout_s: default_timeout(),
        }
    }
}

#[derive(Debug)]
enum Leaf {
    Literal,
    /// A whole-leaf expression (its source, compiled at each call).
    Expr(String),
    /// A template registered in the environment under this name.
    Template(String),
}

/// The `http` provider (see [`HttpConfig`]).
#[derive(Debug)]
pub struct HttpProvider {
    config: HttpConfig,
    method: reqwest::Method,
    url: Secret,
    headers: Vec<(String, Secret)>,
    env: Environment<'static>,
    leaves: Vec<Leaf>,
    /// What of a request the body sends: the conversation whole, or
    /// only the system text and the last user turn (and which of them).
    carries: Carries,
    timeout: Duration,
    client: reqwest::Client,
}

/// What of a request an http body sends, read from the variables its
/// templates use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Carries {
    /// `messages` (or the row, `input`, which holds an input's own).
    conversation: bool,
    /// `system`.
    system: bool,
}

impl Carries {
    fn of<'a>(variables: impl IntoIterator<Item = &'a String>) -> Self {
        let mut carries = Carries {
            conversation: false,
            system: false,
        };
        for v in variables {
            let root = v.split(['.', '[']).next().unwrap_or("");
            carries.conversation |= matches!(root, "messages" | "input");
            carries.system |= root == "system";
        }
        carries
    }
}

impl HttpProvider {
    /// Compiles the body template, reads `${ENV:…}` references and validates
    /// the method and pointer.
    pub fn new(config: HttpConfig) -> Result<Self, ConfigError> {
        let timeout = util::timeout(config.timeout_s, "timeout_s")?;
        let method = match config.method.to_ascii_uppercase().as_str() {
            "POST" => reqwest::Method::POST,
            "PUT" => reqwest::Method::PUT,
            "PATCH" => reqwest::Method::PATCH,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "http method must be POST, PUT or PATCH, got {other:?}"
                )))
            }
        };
        if !(config.output_pointer.is_empty() || config.output_pointer.starts_with('/')) {
            return Err(ConfigError::Invalid(format!(
                "output_pointer must be a JSON pointer starting with '/' (or \"\"), got {:?}",
                config.output_pointer
            )));
        }
        let url = util::substitute_env(&config.url, "the http provider's url")?;
        util::check_http_url(&url, "url", &config.url)?;
        let headers = util::headers(&config.headers)?;
        let mut env = template::new_env();
        let mut leaves = Vec::new();
        let mut variables = std::collections::HashSet::new();
        compile(&config.body, "body", &mut env, &mut leaves, &mut variables)?;
        Ok(HttpProvider {
            method,
            url: Secret::new(url),
            headers,
            env,
            leaves,
            carries: Carries::of(&variables),
            timeout,
            client: util::client()?,
            config,
        })
    }

    /// The JSON body sent for `request`. An undefined variable is a
    /// [`TemplateError`]; [`Provider::complete`] reports it as
    /// `ProviderError::Rejected { status: 0, .. }` (final, not retried).
    pub fn body(&self, request: &Request) -> Result<Value, TemplateError> {
        let prompt = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let system = util::system_texts(&request.messages);
        let ctx = json!({
            "prompt": prompt,
            "system": system.join("\n\n"),
            "messages": probity_core::conversation::to_openai(&request.messages),
            "input": template::input_value(&request.input),
            "repetition": request.repetition,
            "attempt": request.attempt,
        });
        let mut next = 0;
        self.render(&self.config.body, &ctx, request, &mut next)
    }

    fn render(
        &self,
        v: &Value,
        ctx: &Value,
        request: &Request,
        next: &mut usize,
    ) -> Result<Value, TemplateError> {
        Ok(match v {
            Value::String(s) => {
                let leaf = self.leaves.get(*next);
                *next += 1;
                match leaf {
                    Some(Leaf::Expr(src)) => {
                        let err = |e: minijinja::Error| TemplateError::Render {
                            template: "body".into(),
                            line: 1,
                            input_id: request.input.id.clone(),
                            message: template::describe(&e),
                        };
                        let value = self
                            .env
                            .compile_expression(src)
                            .map_err(err)?
                            .eval(ctx)
                            .map_err(err)?;
                        if value.is_undefined() {
                            return Err(TemplateError::Render {
                                template: "body".into(),
                                line: 1,
                                input_id: request.input.id.clone(),
                                message: format!("`{src}` is undefined"),
                            });
                        }
                        serde_json::to_value(&value).map_err(|e| TemplateError::Render {
                            template: "body".into(),
                            line: 1,
                            input_id: request.input.id.clone(),
                            message: e.to_string(),
                        })?
                    }
                    Some(Leaf::Template(name)) => {
                        Value::String(template::render_one(&self.env, name, ctx, &request.input)?)
                    }
                    Some(Leaf::Literal) | None => Value::String(s.clone()),
                }
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.render(x, ctx, request, next))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(o) => {
                let mut out = Map::new();
                for (k, x) in o {
                    out.insert(k.clone(), self.render(x, ctx, request, next)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }
}

impl HttpProvider {
    /// The first message of `request` this body has no place for, as
    /// [`ProviderError::Unsendable`]: with neither `messages` nor `input`
    /// in the body, anything beyond system text and one user turn
    /// ([`util::beyond_prompt`]), and a system message when the body has
    /// no `system` either.
    fn refuse_what_the_body_drops(&self, request: &Request) -> Result<(), ProviderError> {
        if self.carries.conversation {
            return Ok(());
        }
        let advice = "the http body sends `{{ prompt }}` and `{{ system }}` only; add `messages = \"{{ messages }}\"` to it to send the conversation whole";
        if let Some((i, what)) = util::beyond_prompt(&request.messages) {
            return Err(unsendable(
                request,
                i,
                &format!("{what} has no place in the body: {advice}"),
            ));
        }
        let system = request
            .messages
            .iter()
            .position(|m| matches!(m.role, Role::System | Role::Developer));
        match system {
            Some(i) if !self.carries.system => Err(unsendable(
                request,
                i,
                &format!("the http body has no `{{{{ system }}}}` for it: {advice}"),
            )),
            _ => Ok(()),
        }
    }
}

/// Walks the body in the same order as [`HttpProvider::render`], compiling
/// string leaves.
fn compile(
    v: &Value,
    path: &str,
    env: &mut Environment<'static>,
    leaves: &mut Vec<Leaf>,
    variables: &mut std::collections::HashSet<String>,
) -> Result<(), TemplateError> {
    match v {
        Value::String(s) => {
            let trimmed = s.trim();
            let leaf = if !s.contains("{{") && !s.contains("{%") && !s.contains("{#") {
                Leaf::Literal
            } else if let Some(expr) = single_expression(trimmed) {
                let compiled = env
                    .compile_expression(expr)
                    .map_err(|e| TemplateError::Syntax {
                        template: path.to_string(),
                        line: 1,
                        message: template::describe(&e),
                    })?;
                variables.extend(compiled.undeclared_variables(false));
                Leaf::Expr(expr.to_string())
            } else {
                template::add(env, path, s)?;
                if let Ok(t) = env.get_template(path) {
                    variables.extend(t.undeclared_variables(false));
                }
                Leaf::Template(path.to_string())
            };
            leaves.push(leaf);
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                compile(x, &format!("{path}/{i}"), env, leaves, variables)?;
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                compile(x, &format!("{path}/{k}"), env, leaves, variables)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Some(expr)` when `s` is exactly `{{ expr }}` with nothing around it.
fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.trim_start_matches('-').trim_end_matches('-').trim();
    if inner.is_empty() || inner.contains("{{") || inner.contains("}}") || inner.contains("{%") {
        None
    } else {
        Some(inner)
    }
}

#[async_trait::async_trait]
impl Provider for HttpProvider {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        self.refuse_what_the_body_drops(request)?;
        let body = self.body(request).map_err(|e| ProviderError::Rejected {
            status: 0,
            body: format!("request template: {e}"),
        })?;
        let mut builder = self
            .client
            .request(self.method.clone(), self.url.expose())
            .json(&body);
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.expose());
        }
        let (status, headers, text) = util::send(builder, self.timeout).await?;
        let mut text = self.url.redact(&text);
        for (_, v) in &self.headers {
            text = v.redact(&text);
        }
        if !(200..300).contains(&status) {
            return Err(util::status_error(status, &headers, &text));
        }
        if self.config.output_pointer.is_empty() {
            return Ok(Completion {
                text,
                ..Completion::default()
            });
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            ProviderError::BadResponse(format!(
                "response is not JSON ({e}): {}",
                util::body_excerpt(&text)
            ))
        })?;
        let out = v.pointer(&self.config.output_pointer).ok_or_else(|| {
            ProviderError::BadResponse(format!(
                "nothing at {} in response: {}",
                self.config.output_pointer,
                util::body_excerpt(&text)
            ))
        })?;
        let text = match out {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Ok(Completion {
            text,
            input_tokens: None,
            output_tokens: None,
        })
    }

    fn fingerprint(&self) -> String {
        let c = &self.config;
        let header_names: Vec<&str> = c.headers.keys().map(String::as_str).collect();
        format!(
            "http|{}",
            json!({
                "url": util::shown_url(&c.url),
                "method": self.method.as_str(),
                "headers": header_names,
                "body": c.body,
                "output_pointer": c.output_pointer,
            })
        )
    }
}
