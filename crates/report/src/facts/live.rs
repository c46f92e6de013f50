//! Sentences and table cells about a serve run's live rates
//! ([`LiveSnapshot`], `probity_core::monitor`): the guarantee of the
//! sequences, and per check and attempt kind the rate over all traffic,
//! over the current epoch and over the display window, and the alarms
//! raised — said the same way by `probity monitor` and every format of
//! the report of a serve run. Check names are left raw (each format
//! escapes them).

use crate::numbers::{interval, pct, threshold_pct};
use probity_core::monitor::{
    Alarm, AlarmKind, AlarmState, AttemptKind, LiveCorrection, LiveSnapshot, WatchSnapshot,
};
use probity_core::stats::Interval;

/// `live traffic: 1204 requests; sequences at 95%, valid however often
/// they are read: the chance that any alarm is ever false is at most 5%`.
pub fn headline(l: &LiveSnapshot) -> String {
    let c = l.settings.confidence;
    format!(
        "live traffic: {} requests; confidence sequences at {}, valid however often they are read: the chance that any alarm is ever false is at most {}",
        l.requests(),
        threshold_pct(c),
        threshold_pct(1.0 - c)
    )
}

/// What each column is.
pub fn method_line(l: &LiveSnapshot) -> String {
    let mut s = format!(
        "all traffic: a betting confidence sequence; recent: one per epoch of {} requests (a drop shows within about an epoch); window: the last {} requests, a snapshot (Wilson), not valid however often it is read and never used for alarms. The checks' verdicts above are the first attempts' all-traffic sequences.",
        l.settings.epoch, l.settings.window
    );
    if l.checks.iter().any(|c| c.first.corrected.is_some()) {
        s.push_str(" A calibrated verifier's all-traffic and recent rates are corrected for its judge's errors (valid however often they are read; the all-traffic one is its verdict's), the judge's own beside them; its window rate is the judge's own.");
    }
    s
}

/// One line of the live table, every cell in words.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow {
    /// The check's name, raw.
    pub check: String,
    /// `first` (the system's own) or `published` (after retries).
    pub attempt: &'static str,
    pub requests: u64,
    /// `96.2% [93.0, 98.1]` or `–`.
    pub all: String,
    /// `95.0% [90.1, 98.0] of 212 (epoch 3)` or `–`.
    pub recent: String,
    /// `97.0% [93.6, 98.6] of 200` or `–`.
    pub window: String,
    /// `BELOW 95%`, `DIFFERS FROM BASELINE`, both, or `–`.
    pub alarm: String,
    /// Whether an alarm was raised.
    pub alarmed: bool,
}

/// Every check's rows: first, then published attempts.
pub fn rows(l: &LiveSnapshot) -> Vec<LiveRow> {
    l.checks
        .iter()
        .flat_map(|c| {
            AttemptKind::ALL
                .iter()
                .map(move |&kind| row(&c.name, c.minimum, kind, c.of(kind)))
        })
        .collect()
}

fn row(check: &str, minimum: f64, kind: AttemptKind, w: &WatchSnapshot) -> LiveRow {
    let span = |rate: f64, i: &Interval| format!("{} {}", pct(rate), interval(i.lower, i.upper));
    let none = "–".to_string();
    // The alarms that hold now, and how many incidents came before.
    let mut alarms: Vec<String> = w.active.iter().map(|a| alarm_word(a, minimum)).collect();
    let past = w
        .alarms
        .iter()
        .filter(|a| a.state == AlarmState::Raised)
        .count()
        .saturating_sub(w.active.len());
    if past > 0 {
        alarms.push(format!(
            "{past} earlier incident{}",
            if past == 1 { "" } else { "s" }
        ));
    }
    // A calibrated verifier's figures other than the corrected ones are its
    // judge's own, and say so.
    let judge = if w.corrected.is_some() { "judge " } else { "" };
    let corrected = |c: &Option<LiveCorrection>, rate: f64, i: &Interval| match c {
        None => span(rate, i),
        Some(LiveCorrection::Corrected(c)) => format!(
            "corrected {} (judge {})",
            span(c.estimate, &c.interval),
            span(rate, i)
        ),
        Some(LiveCorrection::Unusable { .. }) => {
            format!("judge {} (no corrected rate)", span(rate, i))
        }
    };
    LiveRow {
        check: check.to_string(),
        attempt: kind.name(),
        requests: w.requests,
        all: if w.requests == 0 {
            none.clone()
        } else {
            corrected(&w.corrected, w.rate, &w.all)
        },
        recent: if w.epoch_requests > 0 {
            format!(
                "{} of {} (epoch {})",
                corrected(&w.epoch_corrected, w.epoch_rate, &w.epoch),
                w.epoch_requests,
                w.epoch_number
            )
        } else {
            none.clone()
        },
        window: if w.window_requests > 0 {
            format!(
                "{judge}{} of {}",
                span(w.window_rate, &w.window),
                w.window_requests
            )
        } else {
            none.clone()
        },
        alarmed: !w.active.is_empty(),
        alarm: if alarms.is_empty() {
            none
        } else {
            alarms.join(", ")
        },
    }
}

/// `BELOW 95%` (`BELOW 95% (CORRECTED)` for a calibrated verifier's
/// corrected rate) or `DIFFERS FROM BASELINE`.
pub fn alarm_word(a: &Alarm, minimum: f64) -> String {
    match a.kind {
        AlarmKind::BelowMinimum if a.corrected => {
            format!("BELOW {} (CORRECTED)", threshold_pct(minimum))
        }
        AlarmKind::BelowMinimum => format!("BELOW {}", threshold_pct(minimum)),
        AlarmKind::DiffersFromBaseline => "DIFFERS FROM BASELINE".to_string(),
        AlarmKind::RateChanged => "RATE CHANGED".to_string(),
    }
}

/// An alarm as one sentence: `check X (first attempts) is established
/// below its minimum: 88.1% [84.0, 91.5] over 512 recent requests (after
/// 3,512 requests)`.
pub fn alarm_sentence(check: &str, kind: AttemptKind, a: &Alarm) -> String {
    let what = match (a.kind, a.state) {
        (AlarmKind::BelowMinimum, AlarmState::Raised) => "is detected below its minimum",
        (AlarmKind::BelowMinimum, AlarmState::Resolved) => {
            "is back at or above its minimum (resolved)"
        }
        (AlarmKind::DiffersFromBaseline, AlarmState::Raised) => {
            "is established to differ from the baseline"
        }
        (AlarmKind::DiffersFromBaseline, AlarmState::Resolved) => {
            "no longer differs from the baseline (resolved)"
        }
        (AlarmKind::RateChanged, _) => "changed (its confidence sequence emptied)",
    };
    format!(
        "check {check} ({} attempts) {what}: {}{} {} over {} {}requests (after {} requests)",
        kind.name(),
        if a.corrected {
            "corrected for the judge's errors "
        } else {
            ""
        },
        pct(a.rate),
        interval(a.interval.lower, a.interval.upper),
        a.requests,
        if a.recent { "recent " } else { "" },
        a.at
    )
}

/// Column heads, in row order.
pub const HEADS: [&str; 7] = [
    "check",
    "attempt",
    "requests",
    "all traffic",
    "recent (epoch)",
    "window",
    "alarm",
];

impl LiveRow {
    /// The cells in [`HEADS`] order, the check's name through `name`.
    pub fn cells(&self, name: &dyn Fn(&str) -> String) -> [String; 7] {
        [
            name(&self.check),
            self.attempt.to_string(),
            self.requests.to_string(),
            self.all.clone(),
            self.recent.clone(),
            self.window.clone(),
            self.alarm.clone(),
        ]
    }
}
