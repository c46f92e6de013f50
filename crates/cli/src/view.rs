//! `probity view`: a local web viewer over the run store (promptfoo's
//! `view`, Inspect's `inspect view`). The HTTP side (routes, token,
//! headers) is `probity_engine::view`; this file reads the store for each
//! page and renders it with `probity_report::html::view`. Read-only: no
//! page writes to the store.

use crate::failure::Failure;
use crate::store_arg::StoreArg;
use clap::Args;
use probity_core::stats::Decision;
use probity_engine::store::{RunRecord, RunStatus, Store, StoreLocation};
use probity_engine::stored;
use probity_engine::view::{Page, Pages, Params};
use probity_report::html::view as pages;
use probity_report::{system_label, FailingSample, RunReport};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

#[derive(Args)]
pub struct ViewArgs {
    /// Address to listen on. Anything but a loopback address needs a
    /// token (given, or made up and printed).
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
    /// The token a request must carry when the viewer is not bound to a
    /// loopback address (`?token=`, a cookie, or `Authorization: Bearer`).
    #[arg(long, env = "PROBITY_VIEW_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Seconds between reloads of a live run's page.
    #[arg(long, default_value_t = 3)]
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
        refresh: args.refresh.max(1),
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

fn problem(f: Failure) -> Page {
    // A usage failure here is a run or name that is not in the store.
    let status = if f.code == 2 { 404 } else { 500 };
    Page::Problem(status, pages::message_page("not available", &f.message))
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

fn param<'a>(q: &'a Params, k: &str) -> &'a str {
    q.get(k).map(String::as_str).unwrap_or("")
}

fn index(q: &Params, k: &str) -> Result<Option<usize>, Failure> {
    match param(q, k) {
        "" => Ok(None),
        v => v
            .parse()
            .map(Some)
            .map_err(|_| Failure::usage(format!("{k} must be a number, not {v:?}"))),
    }
}

fn page(r: Result<String, Failure>) -> Page {
    match r {
        Ok(h) => Page::Html(h),
        Err(f) => problem(f),
    }
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
            let filter = pages::RunsFilter {
                name: param(q, "name").to_string(),
                since: param(q, "since").to_string(),
                verdict: param(q, "verdict").to_string(),
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
            let r = self.report(&store, id)?;
            let samples = self.samples(&store, id)?;
            let filter = pages::OutputsFilter {
                check: index(q, "check")?,
                input: index(q, "input")?,
                verdict: param(q, "verdict").to_string(),
            };
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
            let store = self.open()?;
            let run = |k: &str| -> Result<i64, Failure> {
                param(q, k)
                    .parse()
                    .map_err(|_| Failure::usage(format!("?{k}= must be a run id")))
            };
            let (a, b) = (run("a")?, run("b")?);
            let cmp = probity_engine::compare::compare_stored(&store, a, b, None)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let c = crate::compare::comparison_report(cmp);
            let (ra, rb) = (self.report(&store, a)?, self.report(&store, b)?);
            let (sa, sb) = (self.samples(&store, a)?, self.samples(&store, b)?);
            Ok(pages::compare_page(
                &c,
                (&ra, &sa),
                (&rb, &sb),
                param(q, "only") == "differ",
            ))
        })())
    }

    fn variants(&self, id: i64, q: &Params) -> Page {
        page((|| {
            let store = self.open()?;
            let against = match (param(q, "reference"), param(q, "pairs")) {
                ("", "all") => crate::variants::Against::EveryPair,
                ("", _) => crate::variants::Against::Stored,
                (name, _) => crate::variants::Against::Variant(name),
            };
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
