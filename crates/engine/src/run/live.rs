//! A serve run's traffic read back from the store into [`LiveRates`]:
//! one run's, for its report ([`replay`]), or every run of a configuration's
//! name being written — one per replica — read as it grows and pooled
//! (`probity monitor`, [`LiveFollow`]). Reading from the store is what
//! pools replicas: each server watches only its own traffic.

use super::definitions::{definitions, differing};
use crate::store::{RunRecord, RunStatus, Store, StoreError};
use probity_core::monitor::{Alarm, AttemptKind, LiveRates, LiveSnapshot, WatchSettings};
use probity_core::CheckInfo;
use std::collections::BTreeMap;

/// Requests read per query.
const SLICE: usize = 4096;

/// Run `run`'s watches as its server had them: its stored traffic
/// replayed, in request order, through watches made with the settings,
/// baselines and judges' labelled counts (a calibrated verifier's rate is
/// corrected) it was served with. `None` for a run not of `probity
/// serve`.
pub fn replay(store: &Store, run: &RunRecord) -> Result<Option<LiveSnapshot>, StoreError> {
    let Some(live) = &run.settings.live else {
        return Ok(None);
    };
    let mut rates = LiveRates::calibrated(
        &run.checks,
        live.watch,
        &live.baselines,
        &run.settings.calibration,
    )
    .map_err(|e| damaged(store, run.id, e))?;
    read(store, run.id, 0, &mut rates, &mut |_, _, _| {})?;
    Ok(Some(rates.snapshot()))
}

/// Feed `rates` run `run`'s requests from `from` on; the next request to
/// read. `alarm` hears each alarm raised, with its column and kind.
fn read(
    store: &Store,
    run: i64,
    mut from: usize,
    rates: &mut LiveRates,
    alarm: &mut dyn FnMut(usize, AttemptKind, Alarm),
) -> Result<usize, StoreError> {
    loop {
        let slice = store.live_cells(run, from, SLICE)?;
        for (i, first, published) in &slice {
            for (k, a) in rates.observe(AttemptKind::First, first) {
                alarm(k, AttemptKind::First, a);
            }
            if let Some(p) = published {
                for (k, a) in rates.observe(AttemptKind::Published, p) {
                    alarm(k, AttemptKind::Published, a);
                }
            }
            from = i + 1;
        }
        if slice.len() < SLICE {
            return Ok(from);
        }
    }
}

fn damaged(store: &Store, run: i64, e: impl std::fmt::Display) -> StoreError {
    StoreError::Damaged {
        store: store.location().clone(),
        run,
        what: e.to_string(),
    }
}

/// The watch settings `probity monitor` was given; each one not given is
/// the first pooled run's (its server's `confidence` and `[monitor]`
/// settings), so the monitor shows what the server and `probity report`
/// of that run show.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WatchChoice {
    pub confidence: Option<f64>,
    pub epoch: Option<u64>,
    pub window: Option<usize>,
}

impl WatchChoice {
    /// The settings: those given, the rest `stored`'s.
    pub fn over(self, stored: WatchSettings) -> WatchSettings {
        WatchSettings {
            confidence: self.confidence.unwrap_or(stored.confidence),
            epoch: self.epoch.unwrap_or(stored.epoch),
            window: self.window.unwrap_or(stored.window),
        }
    }
}

/// A run left out of the pool because a check of the same name and column
/// is defined otherwise than in the first run pooled
/// ([`super::definitions`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Redefined {
    pub run: i64,
    /// The checks it defines otherwise.
    pub checks: Vec<String>,
    /// The run whose definitions are pooled.
    pub first: i64,
}

/// The pooled live rates of every run named `name` being written, and with
/// [`LiveFollow::since`], of every run of it created since a time, finished
/// or not (a pooled report of every replica's traffic over a day). Runs
/// are pooled when their checks have the first run's names, columns and
/// definitions; the others are left out (and said so).
pub struct LiveFollow {
    name: String,
    choice: WatchChoice,
    /// The settings the watches were made with (at the first run found).
    settings: Option<WatchSettings>,
    /// The first run pooled and its checks' definitions.
    first: Option<(i64, Option<BTreeMap<String, toml::Value>>)>,
    /// Of `skipped`, the runs left out for a check defined otherwise.
    redefined: Vec<Redefined>,
    /// Runs created at or after this stored timestamp
    /// (`YYYY-MM-DDTHH:MM:SSZ`) are pooled whatever their status.
    since: Option<String>,
    /// Followed runs and the next input to read of each.
    runs: BTreeMap<i64, usize>,
    /// Of `runs`, those being written at the last poll.
    running: Vec<i64>,
    /// The watches, made with the first run followed's checks.
    rates: Option<LiveRates>,
    /// Runs not pooled: their checks differ from the first run's.
    skipped: Vec<i64>,
}

/// An alarm raised while following, with its check and attempt kind.
pub struct LiveAlarm {
    pub check: String,
    pub kind: AttemptKind,
    pub alarm: Alarm,
}

impl LiveFollow {
    pub fn new(name: &str, choice: WatchChoice) -> LiveFollow {
        LiveFollow {
            name: name.to_string(),
            choice,
            settings: None,
            first: None,
            redefined: Vec::new(),
            since: None,
            runs: BTreeMap::new(),
            running: Vec::new(),
            rates: None,
            skipped: Vec::new(),
        }
    }

    /// Pool, besides the runs being written, every run of the name created
    /// at or after `stamp` (as the store writes times,
    /// `YYYY-MM-DDTHH:MM:SSZ`, so that text order is time order), finished
    /// or interrupted: each is read to its end once.
    pub fn since(mut self, stamp: &str) -> LiveFollow {
        self.since = Some(stamp.to_string());
        self
    }

    /// Read what the runs being written added since the last poll (a run
    /// is followed from when it is first seen running until it ends); the
    /// alarms raised.
    pub fn poll(&mut self, store: &Store) -> Result<Vec<LiveAlarm>, StoreError> {
        self.running.clear();
        for r in store.runs(Some(&self.name))? {
            let running = r.status == RunStatus::Running;
            let recent = self
                .since
                .as_ref()
                .is_some_and(|t| r.created_at.as_str() >= t.as_str());
            // Only serve runs hold traffic (a `probity run` of the same
            // name has no live settings).
            let Some(live) = r.settings.live.as_ref().filter(|_| r.name == self.name) else {
                continue;
            };
            if !(running || recent) {
                continue;
            }
            if running {
                self.running.push(r.id);
            }
            if self.runs.contains_key(&r.id) || self.skipped.contains(&r.id) {
                continue;
            }
            let rates = match &mut self.rates {
                Some(rates) => rates,
                // A calibrated verifier's rate is corrected with the judge
                // the first run followed measured at its start (replicas
                // of one configuration ask the same judge the same pairs),
                // and watched with its settings but those given.
                none => {
                    let settings = self.choice.over(live.watch);
                    self.settings = Some(settings);
                    self.first = Some((r.id, definitions(&r.config)));
                    none.insert(
                        LiveRates::calibrated(&r.checks, settings, &[], &r.settings.calibration)
                            .map_err(|e| damaged(store, r.id, e))?,
                    )
                }
            };
            if !same_checks(rates.checks(), &r.checks) {
                self.skipped.push(r.id);
                continue;
            }
            let redefined = match &self.first {
                Some((first, defs)) if *first != r.id => {
                    let names: Vec<String> = r.checks.iter().map(|c| c.name.clone()).collect();
                    let checks = differing(&names, defs.as_ref(), definitions(&r.config).as_ref());
                    (!checks.is_empty()).then_some(Redefined {
                        run: r.id,
                        checks,
                        first: *first,
                    })
                }
                _ => None,
            };
            match redefined {
                Some(why) => {
                    self.skipped.push(r.id);
                    self.redefined.push(why);
                }
                None => {
                    self.runs.insert(r.id, 0);
                }
            }
        }
        let mut alarms = Vec::new();
        let Some(rates) = &mut self.rates else {
            return Ok(alarms);
        };
        let names: Vec<String> = rates.checks().iter().map(|c| c.name.clone()).collect();
        for (run, next) in self.runs.iter_mut() {
            *next = read(store, *run, *next, rates, &mut |k, kind, alarm| {
                alarms.push(LiveAlarm {
                    check: names[k].clone(),
                    kind,
                    alarm,
                })
            })?;
        }
        Ok(alarms)
    }

    /// The runs pooled, and those left out (other checks, or checks
    /// defined otherwise: [`LiveFollow::redefined`]).
    pub fn runs(&self) -> (Vec<i64>, &[i64]) {
        (self.runs.keys().copied().collect(), &self.skipped)
    }

    /// The runs left out for a check defined otherwise than in the first
    /// run pooled, in the order they were found.
    pub fn redefined(&self) -> &[Redefined] {
        &self.redefined
    }

    /// The settings the watches were made with; `None` before a run was
    /// found.
    pub fn settings(&self) -> Option<WatchSettings> {
        self.settings
    }

    /// Of the runs pooled, those being written at the last poll.
    pub fn running(&self) -> &[i64] {
        &self.running
    }

    /// Every watch as read now; `None` before a run was found.
    pub fn snapshot(&self) -> Option<LiveSnapshot> {
        self.rates.as_ref().map(LiveRates::snapshot)
    }
}

/// Whether two runs have the same checks, by name and column.
fn same_checks(a: &[CheckInfo], b: &[CheckInfo]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.name == b.name)
}
