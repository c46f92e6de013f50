//! The HTTP side of `probity view`: a local, read-only web viewer over the
//! run store. This module routes requests, checks the access token and
//! sets the security headers; what each page shows is a [`Pages`]
//! implementation's (the CLI's, which reads the store and renders with the
//! report crate), so the engine does not depend on the renderer.
//!
//! | path | page |
//! | --- | --- |
//! | `/` | the runs list (`?name=&since=&verdict=`) |
//! | `/runs/{id}` | a run's report |
//! | `/runs/{id}/outputs` | all of its outputs, each beside its input's text (`?check=&input=&verdict=`; `input` is an input's id, as every page shows it) |
//! | `/runs/{id}/live` | its rates, reloading while the run is written |
//! | `/compare?a=&b=` | two runs compared, outputs side by side (`&only=differ`) |
//! | `/trend/{name}` | a name's trend |
//! | `/variants/{run}` | the variants of run's group side by side: the matrix, costs, differences, outputs; `?reference=VARIANT` against another reference, `?pairs=all` every pair |
//!
//! A query value a page cannot mean (an unknown parameter, a check or
//! input out of range, a choice none of its form's) is the pages' to
//! refuse, with [`Page::Problem`] 400 and a message naming it.
//!
//! Access: bound to a loopback address the viewer needs no token; bound
//! anywhere else every request must carry the token — `?token=T` once
//! (which sets an HttpOnly, SameSite=Strict cookie, so links keep
//! working), the cookie, or `Authorization: Bearer T` — compared in
//! constant time. A request without it gets 401 and nothing of the store.
//!
//! Names: a request must name the viewer in its `Host` header ([`Hosts`]):
//! the address it is bound to, `localhost` when that is a loopback (or
//! every) address, or a name listed in `PROBITY_VIEW_HOSTS`
//! (comma-separated) — with the port it serves. Anything else gets 421 and
//! nothing of the store: a web page on another site that points a name of
//! its own at 127.0.0.1 (DNS rebinding) cannot read the runs through the
//! visitor's browser.
//! Pages are built on blocking threads (the store is SQLite), one at a
//! time per request.

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

/// The query of a request, by name (`?verdict=fail` → `verdict`).
pub type Params = HashMap<String, String>;

/// What a page handler answers: the page, or a status with a message
/// shown in the viewer's frame.
pub enum Page {
    Html(String),
    /// Not found, or a bad request: the HTTP status and a page saying why.
    Problem(u16, String),
}

/// The pages of the viewer. Each is called on a blocking thread.
pub trait Pages: Send + Sync + 'static {
    fn runs(&self, q: &Params) -> Page;
    fn run(&self, id: i64) -> Page;
    fn outputs(&self, id: i64, q: &Params) -> Page;
    fn live(&self, id: i64) -> Page;
    fn compare(&self, q: &Params) -> Page;
    fn trend(&self, name: &str) -> Page;
    /// The variants run (`[[variant]]`) that run `id` is a variant of;
    /// `reference` and `pairs=all` in `q` choose what each is compared with.
    fn variants(&self, id: i64, q: &Params) -> Page;
}

/// A token for a viewer bound beyond loopback: 32 hexadecimal characters
/// from the operating system's random source (`rand`'s thread generator,
/// seeded by it).
pub fn new_token() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Name of the cookie that carries the token.
pub(crate) const COOKIE: &str = "probity_view";

struct ViewState {
    pages: Arc<dyn Pages>,
    token: Option<String>,
    hosts: Option<Hosts>,
}

/// The names a request may give in its `Host` header: the viewer's own
/// address (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Hosts {
    bound: std::net::SocketAddr,
    /// Names allowed besides the address, lower-case.
    names: Vec<String>,
}

impl Hosts {
    /// The names of a viewer bound to `bound`, plus `names` (a proxy's or
    /// a machine's name it is reached by).
    pub fn new(bound: std::net::SocketAddr, names: &[String]) -> Hosts {
        Hosts {
            bound,
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// [`Hosts::new`] with the names of `PROBITY_VIEW_HOSTS`
    /// (comma-separated).
    pub(crate) fn from_env(bound: std::net::SocketAddr) -> Hosts {
        let names: Vec<String> = std::env::var("PROBITY_VIEW_HOSTS")
            .unwrap_or_default()
            .split(',')
            .map(str::to_string)
            .collect();
        Hosts::new(bound, &names)
    }

    /// Whether `host` (a `Host` header: `name[:port]`, `[v6]:port`) names
    /// this viewer: with its port (a configured name may leave it out),
    /// as its IP address (any, when bound to every address), `localhost`
    /// (bound to loopback or every address) or a configured name.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = match host.rsplit_once(':') {
            Some((n, p)) if !n.is_empty() && (n.ends_with(']') || !n.contains(':')) => {
                (n.to_string(), Some(p))
            }
            _ => (host.clone(), None),
        };
        let port_ok = port.and_then(|p| p.parse::<u16>().ok()) == Some(self.bound.port());
        if self.names.contains(&name) {
            return port.is_none() || port_ok;
        }
        if !port_ok {
            return false;
        }
        let ip = self.bound.ip();
        let literal = name.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<std::net::IpAddr>() {
            Ok(asked) => ip.is_unspecified() || asked == ip,
            Err(_) => name == "localhost" && (ip.is_loopback() || ip.is_unspecified()),
        }
    }
}

/// Serve `pages` on `listener` until `shutdown` completes. With `token`,
/// every request must carry it (see the module's documentation).
pub async fn serve(
    listener: TcpListener,
    pages: Arc<dyn Pages>,
    token: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hosts = Hosts::from_env(listener.local_addr()?);
    let app = router_with_hosts(pages, token, Some(hosts));
    crate::http_server::serve(listener, app, shutdown).await
}

/// The viewer's routes, with the token check and security headers, any
/// `Host` accepted (a router served by [`serve`] checks it).
pub fn router(pages: Arc<dyn Pages>, token: Option<String>) -> Router {
    router_with_hosts(pages, token, None)
}

/// [`router`] refusing requests whose `Host` is not one of `hosts`.
pub(crate) fn router_with_hosts(
    pages: Arc<dyn Pages>,
    token: Option<String>,
    hosts: Option<Hosts>,
) -> Router {
    let state = Arc::new(ViewState {
        pages,
        token,
        hosts,
    });
    Router::new()
        .route("/", get(runs))
        .route("/runs/{id}", get(run))
        .route("/runs/{id}/outputs", get(outputs))
        .route("/runs/{id}/live", get(live))
        .route("/compare", get(compare))
        .route("/trend/{name}", get(trend))
        .route("/variants/{id}", get(variants))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

type St = State<Arc<ViewState>>;

/// The token from `?token=`, the cookie or `Authorization: Bearer`.
fn presented(headers: &HeaderMap, query: Option<&str>) -> (Option<String>, bool) {
    let from_query = query.and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_string())
    });
    if let Some(t) = from_query {
        return (Some(t), true);
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string());
    if cookie.is_some() {
        return (cookie, false);
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    (bearer, false)
}

/// The token check, then the security headers of every answer.
async fn guard(State(st): St, req: Request, next: Next) -> Response {
    if let Some(hosts) = &st.hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !hosts.allows(host) {
            let mut r = (
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "probity view: this viewer answers at http://{}/ only; a request naming another host is refused (a page of another site may be asking). To reach it by another name, list it in PROBITY_VIEW_HOSTS.\n",
                    hosts.bound
                ),
            )
                .into_response();
            secure(r.headers_mut());
            return r;
        }
    }
    let mut set_cookie = None;
    if let Some(want) = &st.token {
        let (got, in_query) = presented(req.headers(), req.uri().query());
        let ok = got.as_deref().is_some_and(|g| {
            g.len() == want.len() && bool::from(g.as_bytes().ct_eq(want.as_bytes()))
        });
        if !ok {
            let mut r = (
                StatusCode::UNAUTHORIZED,
                "probity view: this viewer needs its token (open the address it printed, with ?token=…)\n",
            )
                .into_response();
            secure(r.headers_mut());
            return r;
        }
        if in_query {
            set_cookie = Some(format!(
                "{COOKIE}={want}; HttpOnly; SameSite=Strict; Path=/"
            ));
        }
    }
    let mut r = next.run(req).await;
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    secure(r.headers_mut());
    r
}

fn secure(h: &mut HeaderMap) {
    for (k, v) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
}

/// Run `f` on a blocking thread and answer with its page.
async fn answer(
    st: &Arc<ViewState>,
    f: impl FnOnce(&dyn Pages) -> Page + Send + 'static,
) -> Response {
    let pages = st.pages.clone();
    let page = tokio::task::spawn_blocking(move || f(pages.as_ref()))
        .await
        .unwrap_or_else(|e| Page::Problem(500, format!("the page could not be made: {e}")));
    let (status, body) = match page {
        Page::Html(h) => (StatusCode::OK, h),
        Page::Problem(s, h) => (
            StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            h,
        ),
    };
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn runs(State(st): St, Query(q): Query<Params>) -> Response {
    answer(&st, move |p| p.runs(&q)).await
}

async fn run(State(st): St, Path(id): Path<i64>) -> Response {
    answer(&st, move |p| p.run(id)).await
}

async fn outputs(State(st): St, Path(id): Path<i64>, Query(q): Query<Params>) -> Response {
    answer(&st, move |p| p.outputs(id, &q)).await
}

async fn live(State(st): St, Path(id): Path<i64>) -> Response {
    answer(&st, move |p| p.live(id)).await
}

async fn compare(State(st): St, Query(q): Query<Params>) -> Response {
    answer(&st, move |p| p.compare(&q)).await
}

async fn trend(State(st): St, Path(name): Path<String>) -> Response {
    answer(&st, move |p| p.trend(&name)).await
}

async fn variants(State(st): St, Path(id): Path<i64>, Query(q): Query<Params>) -> Response {
    answer(&st, move |p| p.variants(id, &q)).await
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "probity view: no such page\n").into_response()
}

#[cfg(test)]
mod tests {
    use super::Hosts;

    fn hosts(bound: &str, names: &[&str]) -> Hosts {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        Hosts::new(bound.parse().unwrap(), &names)
    }

    #[test]
    fn a_loopback_viewer_answers_its_address_and_localhost_only() {
        let h = hosts("127.0.0.1:8790", &[]);
        for ok in ["127.0.0.1:8790", "localhost:8790", "LOCALHOST:8790"] {
            assert!(h.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example:8790",
            "127.0.0.1:8791",
            "localhost",
            "127.0.0.2:8790",
            "",
            "127.0.0.1.evil.example:8790",
            "[::1]:8790",
        ] {
            assert!(!h.allows(refused), "{refused}");
        }
        let v6 = hosts("[::1]:9000", &[]);
        assert!(v6.allows("[::1]:9000") && v6.allows("localhost:9000"));
        assert!(!v6.allows("[::2]:9000"));
    }

    #[test]
    fn configured_names_and_every_address_binds() {
        let h = hosts("0.0.0.0:80", &["Runs.Internal"]);
        for ok in [
            "runs.internal",
            "runs.internal:80",
            "10.1.2.3:80",
            "localhost:80",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for refused in ["runs.internal:81", "attacker.example:80", "10.1.2.3:81"] {
            assert!(!h.allows(refused), "{refused}");
        }
    }
}
