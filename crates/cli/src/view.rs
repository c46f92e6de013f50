//! `probity view`: a local web viewer over the run store (promptfoo's
//! `view`, Inspect's `inspect view`). The HTTP side (routes, token,
//! headers) is `probity_engine::view`; this file reads the store for each
//! page and renders it with `probity_report::html::view`. Read-only: no
//! page writes to the store.

mod query;

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::stats::Decision;
use probity_engine::run::stored;
use probity_engine::store::{RunRecord, RunStatus, Store, StoreLocation};
use probity_engine::system::label::system_label;
use probity_engine::view::{Page, Pages, Params};
use probity_report::html::view as pages;
use probity_report::{FailingSample, RunReport};
use query::{param, BadQuery};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The longest `--refresh`, in seconds: a day. A page reloading less
/// often than that is no longer live.
const REFRESH_MAX: i64 = 86_400;

#[derive(Args)]
pub struct ViewArgs {
    /// Address to listen on (port 8091: `probity serve` takes 8090, so
    /// both run side by side). Anything but a loopback address needs a
    /// token (given, or made up and printed).
    #[arg(long, default_value = "127.0.0.1:8091")]
    listen: String,
    /// The token a request must carry when the viewer is not bound to a
    /// loopback address (`?token=`, a cookie, or `Authorization: Bearer`).
    #[arg(long, env = "PROBITY_VIEW_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Seconds between reloads of a live run's page: 1 to 86400 (a day).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=REFRESH_MAX))]
    refresh: u32,
    #[command(flatten)]
    store: StoreArg,
}

pub async fn run(args: ViewArgs) -> Result<u8, Failure> {
    // Open once now, so a bad path fails here and not on every page.
    drop(args.store.open()?);
    let listener = crate::listen::bind(&args.listen).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    let token = match (is_loopback(addr), args.token) {
        (_, Some(t)) if t.len() < 16 => {
            return Err(Failure::usage(
                "--token must be at least 16 characters (it guards the run store)",
            ))
        }
        (_, Some(t)) => Some(t),
        (true, None) => None,
        (false, None) => Some(probity_engine::view::new_token()),
    };
    let viewer = Viewer {
        store: args.store.location(None)?,
        refresh: args.refresh,
    };
    let shutdown = crate::signals::stop_signal();
    // On stdout, alone on its line, so scripts (and tests) can read it.
    match &token {
        Some(t) => crate::stdout::line(&format!("probity view on http://{addr}/?token={t}")),
        None => crate::stdout::line(&format!("probity view on http://{addr}/")),
    }
    probity_engine::view::serve(listener, Arc::new(viewer), token, shutdown)
        .await
        .map_err(|e| Failure::incomplete(format!("viewer: {e}")))?;
    Ok(0)
}

fn is_loopback(addr: SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

struct Viewer {
    store: StoreLocation,
    refresh: u32,
}

/// Why a page is not shown: a run or name not in the store (404), the
/// store failing (500), or a query the page cannot mean (400).
enum Problem {
    Failed(Failure),
    Bad(BadQuery),
}

impl From<Failure> for Problem {
    fn from(f: Failure) -> Self {
        Problem::Failed(f)
    }
}

impl From<BadQuery> for Problem {
    fn from(b: BadQuery) -> Self {
        Problem::Bad(b)
    }
}

fn problem(p: Problem) -> Page {
    match p {
        // A usage failure here is a run or name that is not in the store.
        Problem::Failed(f) => {
            let status = if f.code == 2 { 404 } else { 500 };
            Page::Problem(status, pages::message_page("not available", &f.message))
        }
        Problem::Bad(b) => Page::Problem(400, pages::message_page("bad request", &b.0)),
    }
}

impl Viewer {
    fn open(&self) -> Result<Store, Failure> {
        Store::connect(&self.store).map_err(|e| Failure::incomplete(e.to_string()))
    }

    fn report(&self, store: &Store, id: i64) -> Result<RunReport, Failure> {
        crate::output::load_report(store, id)
    }

    /// Every stored sample of run `id` as a `FailingSample` (passing ones
    /// too: no failed or errored check).
    fn samples(&self, store: &Store, id: i64) -> Result<Vec<FailingSample>, Failure> {
        let rows = store
            .samples(id)
            .map_err(|e| Failure::incomplete(e.to_string()))?;
        Ok(rows.into_iter().map(crate::output::sample_shown).collect())
    }

    fn entry(&self, store: &Store, r: &RunRecord) -> pages::RunEntry {
        let passed = match &r.verdicts {
            Some(v) => Some((v.iter().filter(|d| **d == Decision::Pass).count(), v.len())),
            None => stored::load(store, r.id).ok().map(|s| {
                let c = &s.summary.checks;
                (
                    c.iter()
                        .filter(|c| c.verdict.decision == Decision::Pass)
                        .count(),
                    c.len(),
                )
            }),
        };
        pages::RunEntry {
            id: r.id,
            name: r.name.clone(),
            created: r.created_at.clone(),
            status: format!("{:?}", r.status).to_lowercase(),
            system: system_label(&r.system),
            shape: format!("{}×{}×{}", r.inputs, r.outputs_per_input, r.checks.len()),
            calls: r.model_calls,
            passed,
            live: r.status == RunStatus::Running,
            variant: r.variant.as_ref().map(|v| v.name.clone()),
        }
    }
}

fn page(r: Result<String, Problem>) -> Page {
    match r {
        Ok(h) => Page::Html(h),
        Err(p) => problem(p),
    }
}

/// `?reference=NAME` of the variants page: a variant of run `id`'s
/// group. A run of no group is left to the page (404).
fn known_variant(store: &Store, id: i64, name: &str) -> Result<(), Problem> {
    let group = probity_engine::variants::group_of(store, id)
        .map_err(|e| Failure::incomplete(e.to_string()))?;
    let Some((_, records)) = group else {
        return Ok(());
    };
    let names: Vec<&str> = records
        .iter()
        .filter_map(|r| r.variant.as_ref().map(|v| v.name.as_str()))
        .collect();
    if names.contains(&name) {
        return Ok(());
    }
    Err(BadQuery(format!(
        "reference={name:?}: the variants run of run {id} has no variant of that name (its variants: {}; or empty for the reference it was run with)",
        names.join(", ")
    ))
    .into())
}

/// The verdicts the runs list filters by (its form's choices).
const RUN_VERDICTS: [&str; 3] = ["pass", "fail", "none"];
/// The verdicts the outputs page filters by (its form's choices).
const OUTPUT_VERDICTS: [&str; 3] = ["pass", "fail", "error"];
/// Names listed in the message refusing an unknown `?name=`.
const NAMES_LISTED: usize = 20;

/// `?name=`: empty, or the name of a stored run.
fn run_name<'a>(q: &'a Params, all: &[pages::RunEntry]) -> Result<&'a str, BadQuery> {
    let v = param(q, "name");
    if v.is_empty() || all.iter().any(|r| r.name == v) {
        return Ok(v);
    }
    let mut names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let more = names.len().saturating_sub(NAMES_LISTED);
    names.truncate(NAMES_LISTED);
    let listed = match (names.is_empty(), more) {
        (true, _) => "the store holds no run".to_string(),
        (false, 0) => format!("the stored names are {}", names.join(", ")),
        (false, n) => format!("the stored names are {} and {n} more", names.join(", ")),
    };
    Err(BadQuery(format!(
        "name={v:?}: no stored run has that name; {listed} (or empty for any)"
    )))
}

impl Pages for Viewer {
    fn runs(&self, q: &Params) -> Page {
        page((|| {
            let store = self.open()?;
            let all: Vec<pages::RunEntry> = store
                .runs(None)
                .map_err(|e| Failure::incomplete(e.to_string()))?
                .iter()
                .map(|r| self.entry(&store, r))
                .collect();
            query::only(q, &["name", "since", "verdict"])?;
            let filter = pages::RunsFilter {
                name: run_name(q, &all)?.to_string(),
                since: query::date(q, "since")?.to_string(),
                verdict: query::choice(q, "verdict", &RUN_VERDICTS)?.to_string(),
            };
            Ok(pages::runs_page(&all, &filter))
        })())
    }

    fn run(&self, id: i64) -> Page {
        page((|| {
            let store = self.open()?;
            Ok(pages::run_page(&self.report(&store, id)?))
        })())
    }

    fn outputs(&self, id: i64, q: &Params) -> Page {
        page((|| {
            let store = self.open()?;
            let mut r = self.report(&store, id)?;
            query::only(q, &["check", "input", "verdict"])?;
            let of = format!("run {id}");
            let filter = pages::OutputsFilter {
                check: query::position(
                    q,
                    "check",
                    r.summary.checks.len(),
                    ("check", "checks"),
                    &of,
                )?,
                input: query::input(q, "input", &r, &of)?,
                verdict: query::choice(q, "verdict", &OUTPUT_VERDICTS)?.to_string(),
            };
            let samples = self.samples(&store, id)?;
            // Each shown output beside its input's text: the fields of
            // the inputs of the outputs shown (at most OUTPUTS_SHOWN).
            let mut shown: Vec<usize> = samples
                .iter()
                .filter(|s| filter.keeps(s))
                .take(pages::OUTPUTS_SHOWN)
                .map(|s| s.input)
                .collect();
            shown.sort_unstable();
            shown.dedup();
            let fields = store
                .inputs_at(id, &shown)
                .map_err(|e| Failure::incomplete(e.to_string()))?;
            for (i, input) in fields {
                r.input_fields.insert(i, input.fields.to_map());
            }
            Ok(pages::outputs_page(&r, &samples, &filter))
        })())
    }

    fn live(&self, id: i64) -> Page {
        page((|| {
            let store = self.open()?;
            let record = store.run(id).map_err(|e| Failure::usage(e.to_string()))?;
            let r = self.report(&store, id)?;
            let live = record.status == RunStatus::Running;
            let status = format!("{:?}", record.status).to_lowercase();
            let updated = httpdate::fmt_http_date(std::time::SystemTime::now());
            Ok(pages::live_page(&r, &status, live, self.refresh, &updated))
        })())
    }

    fn compare(&self, q: &Params) -> Page {
        page((|| {
            query::only(q, &["a", "b", "only"])?;
            let (a, b) = (query::run_id(q, "a")?, query::run_id(q, "b")?);
            let only = query::choice(q, "only", &["differ"])?;
            let store = self.open()?;
            let cmp = probity_engine::run::compare::compare_stored(&store, a, b, None)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let c = crate::compare::comparison_report(cmp);
            let (ra, rb) = (self.report(&store, a)?, self.report(&store, b)?);
            let (sa, sb) = (self.samples(&store, a)?, self.samples(&store, b)?);
            Ok(pages::compare_page(
                &c,
                (&ra, &sa),
                (&rb, &sb),
                only == "differ",
            ))
        })())
    }

    fn variants(&self, id: i64, q: &Params) -> Page {
        page((|| {
            query::only(q, &["reference", "pairs"])?;
            let pairs = query::choice(q, "pairs", &["all"])?;
            let against = match (param(q, "reference"), pairs) {
                ("", "all") => crate::variants::Against::EveryPair,
                ("", _) => crate::variants::Against::Stored,
                (name, "all") => {
                    return Err(BadQuery(format!(
                        "reference={name:?} and pairs=all cannot be combined: every pair has no reference (give one or the other)"
                    ))
                    .into())
                }
                (name, _) => crate::variants::Against::Variant(name),
            };
            let store = self.open()?;
            if let crate::variants::Against::Variant(name) = against {
                known_variant(&store, id, name)?;
            }
            let r = crate::variants::stored_report(&store, id, against, false)?;
            Ok(pages::variants_page(&r))
        })())
    }

    fn trend(&self, name: &str) -> Page {
        page((|| {
            let store = self.open()?;
            let t = crate::trend::trend_report(&store, name, None)?;
            Ok(pages::trend_page(&t))
        })())
    }
}
