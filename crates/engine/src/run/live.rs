//! Following live traffic from the store (`probity monitor`): every run of
//! a `probity serve` configuration's name that is being written — one per
//! replica — read as it grows and pooled into one [`RateWatch`] per check
//! and attempt kind (first, published). Reading from the store is what
//! pools replicas: each server watches only its own traffic.

use crate::store::{RunStatus, Store, StoreError};
use probity_core::monitor::{Alarm, RateWatch, WatchSettings};
use probity_core::{Cell, CheckInfo};
use std::collections::BTreeMap;

/// Requests read per query.
const SLICE: usize = 4096;

/// The pooled live rates of every run named `name`.
pub struct LiveFollow {
    name: String,
    settings: WatchSettings,
    /// Followed runs and the next input to read of each.
    runs: BTreeMap<i64, usize>,
    checks: Vec<CheckInfo>,
    /// Per check: first-attempt and published watches.
    watches: Vec<[RateWatch; 2]>,
    /// Runs not pooled: their checks differ from the first run's.
    skipped: Vec<i64>,
}

/// One watch as displayed.
pub struct LiveRow<'a> {
    pub check: &'a CheckInfo,
    /// `first` or `published`.
    pub attempt: &'static str,
    pub watch: &'a RateWatch,
}

impl LiveFollow {
    pub fn new(name: &str, settings: WatchSettings) -> LiveFollow {
        LiveFollow {
            name: name.to_string(),
            settings,
            runs: BTreeMap::new(),
            checks: Vec::new(),
            watches: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Read what the runs being written added since the last poll (a run
    /// is followed from when it is first seen running until it ends); the
    /// alarms raised, with their check and attempt kind.
    pub fn poll(
        &mut self,
        store: &Store,
    ) -> Result<Vec<(String, &'static str, Alarm)>, StoreError> {
        for r in store.runs(Some(&self.name))? {
            if r.name != self.name || self.runs.contains_key(&r.id) || self.skipped.contains(&r.id)
            {
                continue;
            }
            if r.status != RunStatus::Running {
                continue;
            }
            if self.checks.is_empty() {
                self.watches = r
                    .checks
                    .iter()
                    .map(|c| {
                        let watch = || {
                            RateWatch::new(self.settings, Some(c.minimum_success_percentage), None)
                        };
                        Ok([watch()?, watch()?])
                    })
                    .collect::<Result<_, probity_core::stats::StatsError>>()
                    .map_err(|e| StoreError::Damaged {
                        store: store.location().clone(),
                        run: r.id,
                        what: e.to_string(),
                    })?;
                self.checks = r.checks.clone();
            }
            let same = r.checks.len() == self.checks.len()
                && r.checks
                    .iter()
                    .zip(&self.checks)
                    .all(|(a, b)| a.name == b.name);
            if same {
                self.runs.insert(r.id, 0);
            } else {
                self.skipped.push(r.id);
            }
        }
        let mut alarms = Vec::new();
        let runs: Vec<i64> = self.runs.keys().copied().collect();
        for run in runs {
            loop {
                let from = self.runs[&run];
                let slice = store.live_cells(run, from, SLICE)?;
                for (i, first, published) in &slice {
                    self.observe(0, first, &mut alarms);
                    if let Some(p) = published {
                        self.observe(1, p, &mut alarms);
                    }
                    self.runs.insert(run, i + 1);
                }
                if slice.len() < SLICE {
                    break;
                }
            }
        }
        Ok(alarms)
    }

    fn observe(
        &mut self,
        kind: usize,
        cells: &[Cell],
        alarms: &mut Vec<(String, &'static str, Alarm)>,
    ) {
        for (k, (pair, cell)) in self.watches.iter_mut().zip(cells).enumerate() {
            let pass = match cell {
                Cell::Pass => true,
                Cell::Fail => false,
                Cell::Error | Cell::Missing => continue,
            };
            for a in pair[kind].observe(pass).unwrap_or_default() {
                alarms.push((self.checks[k].name.clone(), KIND_NAMES[kind], a));
            }
        }
    }

    /// The runs pooled, and those left out (other checks).
    pub fn runs(&self) -> (Vec<i64>, &[i64]) {
        (self.runs.keys().copied().collect(), &self.skipped)
    }

    /// Every watch, check by check (first, then published).
    pub fn rows(&self) -> Vec<LiveRow<'_>> {
        self.checks
            .iter()
            .zip(&self.watches)
            .flat_map(|(check, pair)| {
                KIND_NAMES
                    .iter()
                    .zip(pair)
                    .map(move |(attempt, watch)| LiveRow {
                        check,
                        attempt,
                        watch,
                    })
            })
            .collect()
    }
}

const KIND_NAMES: [&str; 2] = ["first", "published"];
