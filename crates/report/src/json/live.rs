//! The `live` field of the JSON report of a serve run (`SCHEMA.md`, Live):
//! per check, the first and the published attempts' watches as read when
//! the report was made. Dedicated structs, so the core's types may change
//! without changing the wire format.

use crate::numbers::finite as num;
use probity_core::monitor::{Alarm, AlarmState, LiveCorrection, LiveSnapshot, WatchSnapshot};
use probity_core::stats::Interval;
use serde::Serialize;

/// The value of the `schema` field of `probity monitor --json`.
pub const MONITOR_SCHEMA: &str = "probity.monitor.v1";

/// One page of `probity monitor --json` (`SCHEMA.md`, Monitor): the runs
/// pooled and their pooled live rates.
#[derive(Debug, Serialize)]
pub struct WireMonitor<'a> {
    pub schema: &'static str,
    /// The served configuration's name.
    pub name: &'a str,
    /// `--since`, as stored times are written; null without it.
    pub since: Option<&'a str>,
    /// Runs pooled, by id.
    pub runs: &'a [i64],
    /// Of `runs`, those being written.
    pub running: &'a [i64],
    /// Runs of the name left out (other checks than the first pooled, or
    /// checks defined otherwise).
    pub left_out: &'a [i64],
    /// The pooled rates; null before a run was found.
    pub live: Option<WireLive>,
}

/// A serve run's live rates.
#[derive(Debug, Serialize)]
pub struct WireLive {
    pub requests: u64,
    /// The sequences' joint confidence: P(any alarm is ever false) ≤ 1 − it.
    pub confidence: Option<f64>,
    /// Requests per epoch.
    pub epoch: u64,
    /// Requests in the display window.
    pub window: usize,
    pub checks: Vec<WireLiveCheck>,
}

#[derive(Debug, Serialize)]
pub struct WireLiveCheck {
    pub index: usize,
    pub name: String,
    pub threshold: Option<f64>,
    pub first: WireWatch,
    pub published: WireWatch,
}

/// One watch.
#[derive(Debug, Serialize)]
pub struct WireWatch {
    pub requests: u64,
    pub rate: Option<f64>,
    /// The all-traffic confidence sequence.
    pub all: WireSpan,
    /// The current epoch's sequence.
    pub recent: WireRecent,
    /// The display window (Wilson; a snapshot).
    pub window: WireWindow,
    pub alarms: Vec<WireAlarm>,
    /// A calibrated verifier's all-traffic rate corrected for its judge's
    /// errors (`rate`, `all`, `recent` and `window` are then the judge's
    /// own; `recent.corrected` the epoch's corrected); null for other
    /// checks.
    pub corrected: Option<WireCorrected>,
}

/// A calibrated verifier's corrected live rate, or why there is none.
#[derive(Debug, Serialize)]
pub struct WireCorrected {
    /// `corrected` or `unusable`.
    pub state: &'static str,
    pub rate: Option<f64>,
    /// Valid however often it is read.
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    /// Why there is no corrected rate (`unusable`).
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct WireSpan {
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct WireRecent {
    pub epoch: u64,
    pub requests: u64,
    pub rate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    /// A calibrated verifier's epoch rate corrected for its judge's
    /// errors; omitted for other checks and before the epoch's first
    /// request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected: Option<WireCorrected>,
}

#[derive(Debug, Serialize)]
pub struct WireWindow {
    pub requests: u64,
    pub rate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct WireAlarm {
    /// `below_minimum`, `differs_from_baseline` or `rate_changed`.
    pub kind: &'static str,
    /// `raised` or `resolved`.
    pub state: &'static str,
    /// The how-manyth time its kind was raised for the watch (from 1).
    pub incident: u64,
    pub rate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    /// Requests in the sequence that raised it.
    pub requests: u64,
    /// Requests in all when it was raised.
    pub at: u64,
    /// True: raised by an epoch's sequence (recent traffic).
    pub recent: bool,
    /// True: `rate`, `lower` and `upper` are corrected for a calibrated
    /// verifier's judge errors.
    pub corrected: bool,
}

fn span(i: &Interval) -> WireSpan {
    WireSpan {
        lower: num(i.lower),
        upper: num(i.upper),
    }
}

fn alarm(a: &Alarm) -> WireAlarm {
    WireAlarm {
        kind: a.kind.name(),
        state: match a.state {
            AlarmState::Raised => "raised",
            AlarmState::Resolved => "resolved",
        },
        incident: a.incident,
        rate: num(a.rate),
        lower: num(a.interval.lower),
        upper: num(a.interval.upper),
        requests: a.requests,
        at: a.at,
        recent: a.recent,
        corrected: a.corrected,
    }
}

fn corrected(c: &LiveCorrection) -> WireCorrected {
    match c {
        LiveCorrection::Corrected(c) => WireCorrected {
            state: "corrected",
            rate: num(c.estimate),
            lower: num(c.interval.lower),
            upper: num(c.interval.upper),
            problem: None,
        },
        LiveCorrection::Unusable { problem } => WireCorrected {
            state: "unusable",
            rate: None,
            lower: None,
            upper: None,
            problem: Some(problem.to_string()),
        },
    }
}

fn watch(w: &WatchSnapshot) -> WireWatch {
    WireWatch {
        requests: w.requests,
        rate: (w.requests > 0).then(|| num(w.rate)).flatten(),
        all: span(&w.all),
        recent: WireRecent {
            epoch: w.epoch_number,
            requests: w.epoch_requests,
            rate: (w.epoch_requests > 0).then(|| num(w.epoch_rate)).flatten(),
            lower: num(w.epoch.lower),
            upper: num(w.epoch.upper),
            corrected: w.epoch_corrected.as_ref().map(corrected),
        },
        window: WireWindow {
            requests: w.window_requests,
            rate: (w.window_requests > 0)
                .then(|| num(w.window_rate))
                .flatten(),
            lower: num(w.window.lower),
            upper: num(w.window.upper),
        },
        alarms: w.alarms.iter().map(alarm).collect(),
        corrected: w.corrected.as_ref().map(corrected),
    }
}

impl WireLive {
    pub fn new(l: &LiveSnapshot) -> WireLive {
        WireLive {
            requests: l.requests(),
            confidence: num(l.settings.confidence),
            epoch: l.settings.epoch,
            window: l.settings.window,
            checks: l
                .checks
                .iter()
                .enumerate()
                .map(|(index, c)| WireLiveCheck {
                    index,
                    name: c.name.clone(),
                    threshold: num(c.minimum),
                    first: watch(&c.first),
                    published: watch(&c.published),
                })
                .collect(),
        }
    }
}
