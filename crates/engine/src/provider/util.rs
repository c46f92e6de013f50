//! Helpers shared by the HTTP-based providers.

use super::error::ConfigError;
use super::types::{Message, ProviderError, Role};
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// Longest response body quoted in an error message.
const MAX_BODY_IN_ERROR: usize = 500;

/// A secret string (an API key). `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(s: String) -> Secret {
        Secret(s)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret replaced by `***`.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "***")
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Reads the environment variable `var`; a missing or non-Unicode variable is
/// a [`ConfigError::MissingEnv`] naming it.
pub(crate) fn read_env(var: &str, needed_for: &str) -> Result<Secret, ConfigError> {
    std::env::var(var)
        .map(|v| {
            // Masked wherever a provider's or server's text repeats it.
            crate::provider::redact::register(&v);
            Secret(v)
        })
        .map_err(|_| ConfigError::MissingEnv {
            var: var.to_string(),
            needed_for: needed_for.to_string(),
        })
}

/// Replaces every `${ENV:NAME}` in `text` by the value of the environment
/// variable `NAME`. A missing variable is an error naming it.
pub(crate) fn substitute_env(text: &str, needed_for: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${ENV:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 6..];
        let Some(end) = after.find('}') else {
            return Err(ConfigError::Invalid(format!(
                "{needed_for}: unterminated `${{ENV:` in {text:?}"
            )));
        };
        let name = &after[..end];
        out.push_str(read_env(name, needed_for)?.expose());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks that `url` (the config field `field`) is an http(s) URL. The
/// error quotes `as_written`, the field before `${ENV:…}` substitution, so a
/// secret in the URL never reaches a message.
pub(crate) fn check_http_url(url: &str, field: &str, as_written: &str) -> Result<(), ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "{field} must start with http:// or https://, got {as_written:?}"
        )))
    }
}

/// `base` (a provider's `base_url`) with `path` appended to its path, its
/// query kept after it: `http://h/v1?api-version=1` and `/chat/completions`
/// make `http://h/v1/chat/completions?api-version=1` (Azure OpenAI's form),
/// not a path glued after the query. The URL's password and the values of
/// its secret-looking query keys ([`secret_key`]) are registered as
/// secrets (`redact`): errors that quote the URL never show them.
pub(crate) fn endpoint(base: &str, path: &str, field: &str) -> Result<reqwest::Url, ConfigError> {
    let mut url = reqwest::Url::parse(base)
        .map_err(|e| ConfigError::Invalid(format!("{field} is not a valid URL ({e})")))?;
    if let Some(pw) = url.password() {
        super::redact::register(pw);
    }
    for (key, value) in url.query_pairs() {
        if secret_key(&key) {
            super::redact::register(&value);
        }
    }
    let joined = format!("{}{path}", url.path().trim_end_matches('/'));
    url.set_path(&joined);
    Ok(url)
}

/// Whether a header carries a credential by its name (`Authorization`,
/// `x-api-key`, `Cookie`, a `…-Token`): its value must come from the
/// environment.
fn credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "password"]
        .iter()
        .any(|s| name.contains(s))
}

/// Whether a URL query key names a credential (`key`, `api_key`, `token`,
/// `sig`, `password`, …), whose value is then never shown; others
/// (`api-version`) are.
fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "sig",
        "auth",
        "credential",
        "code",
    ]
    .iter()
    .any(|s| key.contains(s))
}

/// `url` as it may be shown and stored (a system's description, its
/// fingerprint): a password in it `***`, the values of its secret-looking
/// query keys `***`. Unparsable text is shown as written (it never reaches
/// a request).
pub(crate) fn shown_url(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return url.to_string();
    };
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret_key(&k) {
                    "***".into()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string().trim_end_matches('/').to_string()
}

/// Configured headers with their `${ENV:NAME}` references substituted,
/// kept as secrets (they often carry credentials). A credential header
/// ([`credential_header`]) written as a literal value is refused: the
/// configuration is stored with every run, so the key would be too.
pub(crate) fn headers(
    configured: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(String, Secret)>, ConfigError> {
    if let Some((k, _)) = configured
        .iter()
        .find(|(k, v)| credential_header(k) && !v.contains("${ENV:"))
    {
        return Err(ConfigError::Invalid(format!(
            "header {k:?} holds a literal value, and the configuration is stored with every run: write it as \"${{ENV:NAME}}\" (\"Bearer ${{ENV:MY_KEY}}\") and set NAME in the environment"
        )));
    }
    configured
        .iter()
        .map(|(k, v)| {
            substitute_env(v, &format!("header {k}")).map(|v| (k.clone(), Secret::new(v)))
        })
        .collect()
}

/// The contents of a request's system and developer messages, in order.
pub(crate) fn system_texts(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| matches!(m.role, Role::System | Role::Developer))
        .map(|m| m.content.as_str())
        .collect()
}

/// The first message a plain prompt cannot carry, with what it is: a
/// plain prompt (the command provider's `stdin = "prompt"`, an http body
/// without `messages`) has room for the system and developer messages'
/// text, then one user message's text — no assistant turn, tool call or
/// result, second user turn, later system message, or speaker `name`.
pub(crate) fn beyond_prompt(messages: &[Message]) -> Option<(usize, String)> {
    let mut user_seen = false;
    for (i, m) in messages.iter().enumerate() {
        let what = match m.role {
            _ if m.name.is_some() => "its field `name`",
            Role::System | Role::Developer if !user_seen => continue,
            Role::User if !user_seen => {
                user_seen = true;
                continue;
            }
            Role::User => "a second user turn",
            Role::System | Role::Developer => "an instruction after the user's turn",
            Role::Assistant if !m.tool_calls.is_empty() => "an assistant turn with tool calls",
            Role::Assistant => "an assistant turn",
            Role::Tool => "a tool's result",
        };
        return Some((i, what.to_string()));
    }
    None
}

/// The shared HTTP client settings: connection pooling with many idle
/// connections per host, `TCP_NODELAY`.
pub(crate) fn client() -> Result<reqwest::Client, ConfigError> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| ConfigError::Invalid(format!("cannot build the HTTP client: {e}")))
}

/// A positive, finite timeout in seconds as a `Duration`.
pub(crate) fn timeout(secs: f64, field: &str) -> Result<Duration, ConfigError> {
    if secs.is_finite() && secs > 0.0 && secs < 1e9 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(ConfigError::Invalid(format!(
            "{field} must be a positive number of seconds, got {secs}"
        )))
    }
}

/// The wait a 429 response asks for: `retry-after-ms` (milliseconds, as
/// OpenAI sends it) wins over `retry-after` (seconds, possibly fractional, or
/// an HTTP-date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if (0.0..1e12).contains(&ms) {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (0.0..1e9)
            .contains(&secs)
            .then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// An upstream's answer body read as JSON; otherwise a
/// [`ProviderError::BadResponse`] quoting an excerpt of it.
pub(crate) fn json_body(body: &str) -> Result<serde_json::Value, ProviderError> {
    serde_json::from_str(body).map_err(|e| {
        ProviderError::BadResponse(format!(
            "response is not JSON ({e}): {}",
            body_excerpt(body)
        ))
    })
}

/// The body, cut to a readable length for an error message.
pub(crate) fn body_excerpt(body: &str) -> String {
    let body = body.trim();
    if body.len() <= MAX_BODY_IN_ERROR {
        return body.to_string();
    }
    let mut end = MAX_BODY_IN_ERROR;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &body[..end])
}

/// Maps a non-success HTTP status to the error kind: 429 → `RateLimited`
/// (with its wait and the headers a client is given),
/// 5xx → `Server`, other → `Rejected`.
pub(crate) fn status_error(status: u16, headers: &HeaderMap, body: &str) -> ProviderError {
    match status {
        429 => ProviderError::RateLimited {
            retry_after: retry_after(headers),
            headers: super::types::passed_headers(headers),
        },
        500..=599 => ProviderError::Server {
            status,
            body: body_excerpt(body),
        },
        _ => ProviderError::Rejected {
            status,
            body: body_excerpt(body),
        },
    }
}

/// Maps a reqwest error (never a status error: those are handled by
/// [`status_error`]) to `Timeout` or `Transport`. Of the URL only the
/// origin (scheme, host, port) is kept, so the user sees where the call
/// went; its path, query and credentials may carry secrets substituted from
/// the environment and are left out.
pub(crate) fn transport_error(e: reqwest::Error, limit: Duration) -> ProviderError {
    if e.is_timeout() {
        ProviderError::Timeout(limit)
    } else if e.is_decode() {
        ProviderError::BadResponse(e.without_url().to_string())
    } else {
        // Where it failed, without path, query or credentials (which may
        // carry a secret): scheme, host and port.
        let origin = e.url().map(|u| {
            format!(
                "{}://{}{}",
                u.scheme(),
                u.host_str().unwrap_or(""),
                u.port().map(|p| format!(":{p}")).unwrap_or_default()
            )
        });
        let e = e.without_url();
        let mut msg = e.to_string();
        if let Some(origin) = origin {
            msg = format!("{msg} ({origin})");
        }
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            source = s.source();
        }
        ProviderError::Transport(msg)
    }
}

/// Sends a request and reads the whole body within `limit`; returns status,
/// headers and body text.
pub(crate) async fn send(
    builder: reqwest::RequestBuilder,
    limit: Duration,
) -> Result<(u16, HeaderMap, String), ProviderError> {
    let fut = async {
        let resp = builder
            .send()
            .await
            .map_err(|e| transport_error(e, limit))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.text().await.map_err(|e| transport_error(e, limit))?;
        Ok((status, headers, body))
    };
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(ProviderError::Timeout(limit)),
    }
}

/// Reads a non-negative integer token count at `pointer`, if present.
pub(crate) fn tokens(v: &serde_json::Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(serde_json::Value::as_u64)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_credential_header_must_come_from_the_environment() {
        let h =
            |k: &str, v: &str| std::collections::BTreeMap::from([(k.to_string(), v.to_string())]);
        let e = headers(&h("Authorization", "Bearer sk-LITERAL-999")).unwrap_err();
        assert!(
            e.to_string()
                .contains("\"Authorization\" holds a literal value"),
            "{e}"
        );
        assert!(!e.to_string().contains("sk-LITERAL"), "{e}");
        assert!(headers(&h("x-api-key", "abc")).is_err());
        std::env::set_var("PROBITY_TEST_HEADER_KEY", "sk-from-env-123");
        let ok = headers(&h("Authorization", "Bearer ${ENV:PROBITY_TEST_HEADER_KEY}")).unwrap();
        assert_eq!(ok.len(), 1);
        // Other headers may be literal.
        assert!(headers(&h("OpenAI-Organization", "org-1")).is_ok());
    }

    #[test]
    fn endpoints_keep_the_query_and_shown_urls_hide_credentials() {
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1", "/chat/completions", "base_url")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            endpoint("https://r.openai.azure.com/openai/deployments/d?api-version=2024-02-01", "/chat/completions", "base_url").unwrap().as_str(),
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-02-01"
        );
        assert_eq!(
            endpoint("https://api.anthropic.com", "/v1/messages", "base_url")
                .unwrap()
                .as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            shown_url("http://user:pass12345@127.0.0.1:18199/v1?key=pass45678&api-version=2"),
            "http://user:***@127.0.0.1:18199/v1?key=***&api-version=2"
        );
        assert_eq!(
            shown_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            shown_url("https://api.anthropic.com"),
            "https://api.anthropic.com"
        );
        // Registered: an error quoting the URL is redacted.
        endpoint(
            "http://u:hunter2-pw@h/v1?token=tok-998877",
            "/x",
            "base_url",
        )
        .unwrap();
        let e =
            super::super::redact::redact("GET http://u:hunter2-pw@h/v1?token=tok-998877 failed");
        assert!(
            !e.contains("hunter2-pw") && !e.contains("tok-998877"),
            "{e}"
        );
    }

    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        let future = SystemTime::now() + Duration::from_secs(120);
        let date = httpdate::fmt_http_date(future);
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(110) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn env_substitution() {
        std::env::set_var("PROBITY_UTIL_TEST_VAR", "abc");
        assert_eq!(
            substitute_env("Bearer ${ENV:PROBITY_UTIL_TEST_VAR}!", "h").unwrap(),
            "Bearer abc!"
        );
        let err = substitute_env("${ENV:PROBITY_UTIL_TEST_MISSING}", "header x").unwrap_err();
        assert!(
            err.to_string().contains("PROBITY_UTIL_TEST_MISSING"),
            "{err}"
        );
        assert!(substitute_env("${ENV:X", "h").is_err());
    }
}
