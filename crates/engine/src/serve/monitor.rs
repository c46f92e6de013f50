//! Live monitoring of a guard's traffic (issue 20, paper §4.2.6): every
//! check's first-attempt rate (the system's own reliability) and published
//! rate (after retries), each followed by a [`RateWatch`] — a confidence
//! sequence over all traffic and one per epoch, valid however often they
//! are read, a window for display, and a change detector against the
//! minimum that re-arms after each incident — with alarms that do not cry
//! wolf: at a rate at or above the minimum, at most one false alarm per
//! million requests per watch on average (`probity_core::monitor`).
//!
//! Every alarm event — raised, and resolved when the rate recovers — is
//! one warning on stderr naming the check, the incident, the rate and its
//! interval; the gauge `probity_alarm` is 1 while it holds and 0 after,
//! `probity_alarms_raised` counts the incidents; and, when `[monitor]
//! webhook` is set, a JSON event (`state`: raised or resolved) is POSTed
//! to it from a task of its own (retried three times, never in a
//! request's way).
//!
//! A calibrated verifier's watches correct its rate for the judge's errors
//! (`RateWatch::calibrated`): its alarm below the minimum is the corrected
//! rate's (marked `corrected`), never the judge's own rate's.

use probity_core::monitor::{
    Alarm, AlarmKind, AlarmState, Baseline, LiveJudge, RateWatch, WatchSettings,
};
use probity_core::stats::LabelCounts;
use probity_core::{Cell, CheckInfo};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// `[monitor]` in a guard's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MonitorConfig {
    /// Requests per epoch: a drop is seen within about an epoch of it.
    pub epoch: u64,
    /// Requests in the display window (`probity_check_pass_rate_window`).
    pub window: usize,
    /// A URL to POST each alarm to, as JSON.
    pub webhook: Option<String>,
    /// A tested run (id, or a name: its latest complete run) to compare
    /// live traffic with: an alarm when a check's live rate is established
    /// to differ from the run's.
    pub baseline: Option<String>,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig {
            epoch: 1000,
            window: 500,
            webhook: None,
            baseline: None,
        }
    }
}

impl MonitorConfig {
    /// The watches' settings at `confidence`.
    pub(crate) fn watch_settings(&self, confidence: f64) -> WatchSettings {
        WatchSettings {
            confidence,
            epoch: self.epoch,
            window: self.window,
        }
    }

    /// What is wrong with the table, if anything.
    pub fn problem(&self) -> Option<String> {
        if self.epoch == 0 {
            return Some("[monitor] epoch must be at least 1 request".into());
        }
        if self.window == 0 || self.window > 1_000_000 {
            return Some("[monitor] window must be 1 to 1,000,000 requests".into());
        }
        if let Some(url) = &self.webhook {
            let ok = reqwest::Url::parse(url)
                .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                .unwrap_or(false);
            if !ok {
                return Some(format!("[monitor] webhook = {url:?}: not an http(s) URL"));
            }
        }
        None
    }
}

/// The kinds of attempt watched, in their order in [`Monitor`].
pub const KINDS: [&str; 2] = ["first", "published"];

/// Every check's watches and where alarms go.
#[derive(Debug)]
pub struct Monitor {
    names: Vec<String>,
    /// Per check, one watch per kind of [`KINDS`].
    watches: Vec<[Mutex<RateWatch>; 2]>,
    webhook: Option<String>,
    run_id: i64,
}

/// An alarm with what it is about, as logged and POSTed.
#[derive(Debug, Clone, Serialize)]
pub struct AlarmEvent {
    pub event: &'static str,
    pub run: i64,
    pub check: String,
    /// `first` (the system's own) or `published`.
    pub attempt: &'static str,
    #[serde(flatten)]
    pub alarm: Alarm,
}

impl AlarmEvent {
    /// One line for the log.
    pub fn line(&self) -> String {
        let what = match (self.alarm.kind, self.alarm.state) {
            (AlarmKind::BelowMinimum, AlarmState::Raised) => "is detected below its minimum",
            (AlarmKind::BelowMinimum, AlarmState::Resolved) => {
                "is detected back at or above its minimum (resolved)"
            }
            (AlarmKind::DiffersFromBaseline, AlarmState::Raised) => {
                "is established to differ from the baseline"
            }
            (AlarmKind::DiffersFromBaseline, AlarmState::Resolved) => {
                "no longer differs from the baseline (resolved)"
            }
            (AlarmKind::RateChanged, _) => {
                "changed: no constant rate explains its traffic (its confidence sequence emptied and starts again)"
            }
        };
        format!(
            "alarm: check {} ({} attempts) {what}, incident {}: {}{:.1}% [{:.1}, {:.1}] over {} {}requests (run {}, after {} requests)",
            self.check,
            self.attempt,
            self.alarm.incident,
            if self.alarm.corrected {
                "corrected for the judge's errors "
            } else {
                ""
            },
            100.0 * self.alarm.rate,
            100.0 * self.alarm.interval.lower,
            100.0 * self.alarm.interval.upper,
            self.alarm.requests,
            if self.alarm.recent { "recent " } else { "" },
            self.run,
            self.alarm.at,
        )
    }
}

impl Monitor {
    /// Watches of `checks` at `confidence`, compared with `baselines` (per
    /// check, by column) when given; `labels[k]`, when given, is what
    /// check k's judge answered on its labelled set (its rate is then
    /// corrected for the judge's errors).
    pub fn new(
        checks: &[CheckInfo],
        confidence: f64,
        config: &MonitorConfig,
        baselines: &[Option<Baseline>],
        labels: &[Option<LabelCounts>],
        run_id: i64,
    ) -> Result<Monitor, String> {
        let settings = config.watch_settings(confidence);
        let watch = |k: usize, c: &CheckInfo| {
            let minimum = Some(c.minimum_success_percentage);
            let baseline = baselines.get(k).copied().flatten();
            match labels.get(k).copied().flatten() {
                Some(counts) => RateWatch::calibrated(
                    settings,
                    minimum,
                    baseline,
                    LiveJudge::new(counts, confidence),
                ),
                None => RateWatch::new(settings, minimum, baseline),
            }
            .map(Mutex::new)
            .map_err(|e| format!("[monitor] {e}"))
        };
        let watches = checks
            .iter()
            .enumerate()
            .map(|(k, c)| Ok([watch(k, c)?, watch(k, c)?]))
            .collect::<Result<_, String>>()?;
        Ok(Monitor {
            names: checks.iter().map(|c| c.name.clone()).collect(),
            watches,
            webhook: config.webhook.clone(),
            run_id,
        })
    }

    /// Count one attempt's `cells` of kind `KINDS[kind]` (errors and
    /// missing cells are not observations); the alarms it raised.
    pub fn observe(&self, kind: usize, cells: &[Cell]) -> Vec<AlarmEvent> {
        let mut raised = Vec::new();
        for (k, (pair, cell)) in self.watches.iter().zip(cells).enumerate() {
            let pass = match cell {
                Cell::Pass => true,
                Cell::Fail => false,
                Cell::Error | Cell::Missing | Cell::NotApplicable => continue,
            };
            let Some(Ok(mut watch)) = pair.get(kind).map(Mutex::lock) else {
                continue;
            };
            for alarm in watch.observe(pass).unwrap_or_default() {
                raised.push(AlarmEvent {
                    event: "probity.alarm",
                    run: self.run_id,
                    check: self.names[k].clone(),
                    attempt: KINDS[kind],
                    alarm,
                });
            }
        }
        raised
    }

    /// Each watch: `(check, kind, watch)` under its lock.
    pub fn each(&self, mut f: impl FnMut(&str, &'static str, &RateWatch)) {
        for (name, pair) in self.names.iter().zip(&self.watches) {
            for (kind, watch) in KINDS.iter().zip(pair) {
                if let Ok(w) = watch.lock() {
                    f(name, kind, &w);
                }
            }
        }
    }

    /// Send `events` where alarms go: stderr always, the webhook when set
    /// (on a task of its own; three tries, 1 s then 2 s apart).
    pub(crate) fn announce(&self, events: Vec<AlarmEvent>) {
        for e in events {
            crate::stderr::line(format_args!("warning: {}", e.line()));
            if let Some(url) = self.webhook.clone() {
                tokio::spawn(post_alarm(url, e));
            }
        }
    }
}

/// POST `event` to `url`, up to three times.
async fn post_alarm(url: String, event: AlarmEvent) {
    let client = reqwest::Client::new();
    let mut pause = std::time::Duration::from_secs(1);
    for attempt in 1..=3 {
        let sent = client
            .post(&url)
            .timeout(std::time::Duration::from_secs(10))
            .json(&event)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => return,
            Ok(r) if attempt == 3 => crate::stderr::line(format_args!(
                "warning: alarm webhook answered {} (gave up)",
                r.status()
            )),
            // Without the URL: it may hold a token.
            Err(e) if attempt == 3 => crate::stderr::line(format_args!(
                "warning: alarm webhook unreachable: {} (gave up)",
                e.without_url()
            )),
            _ => {}
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
}
