//! Every check of a served configuration watched at once: per check, a
//! [`RateWatch`] of the first attempt's outcomes (the system's own
//! reliability) and one of the published attempt's (after retries, §4.2).
//! What `probity monitor` pools from the store, and what the report of a
//! serve run shows ([`LiveSnapshot`]); a serve run's verdicts come from the
//! first attempts' all-traffic sequences ([`Summary::with_live`]).

use super::watch::{Alarm, Baseline, RateWatch, WatchSettings, WatchSnapshot};
use crate::stats::sequential::projected_observations;
use crate::stats::{Decision, NotEstablished, StatsError, VerdictMode};
use crate::summary::{CheckInfo, Summary};
use crate::tensor::Cell;
use serde::{Deserialize, Serialize};

/// Which attempt of a request an outcome is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// The first attempt: the system's own reliability.
    First,
    /// The attempt published (after retries): what users received.
    Published,
}

impl AttemptKind {
    pub const ALL: [AttemptKind; 2] = [AttemptKind::First, AttemptKind::Published];

    /// `first` or `published`, as logs, metrics and reports name it.
    pub fn name(self) -> &'static str {
        match self {
            AttemptKind::First => "first",
            AttemptKind::Published => "published",
        }
    }
}

/// The watches of every check, both attempt kinds.
#[derive(Debug, Clone)]
pub struct LiveRates {
    settings: WatchSettings,
    checks: Vec<CheckInfo>,
    /// Per check: the first-attempt and the published watch.
    watches: Vec<[RateWatch; 2]>,
}

impl LiveRates {
    /// Watches of `checks` (each against its minimum), compared with
    /// `baselines` by column where one is given.
    pub fn new(
        checks: &[CheckInfo],
        settings: WatchSettings,
        baselines: &[Option<Baseline>],
    ) -> Result<LiveRates, StatsError> {
        let watches = checks
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let watch = || {
                    RateWatch::new(
                        settings,
                        Some(c.minimum_success_percentage),
                        baselines.get(k).copied().flatten(),
                    )
                };
                Ok([watch()?, watch()?])
            })
            .collect::<Result<_, StatsError>>()?;
        Ok(LiveRates {
            settings,
            checks: checks.to_vec(),
            watches,
        })
    }

    pub fn checks(&self) -> &[CheckInfo] {
        &self.checks
    }

    /// Count one attempt's `cells` (by column) as `kind`; pass and fail
    /// are outcomes, errors and missing cells are not. The alarms raised,
    /// with their check's column.
    pub fn observe(&mut self, kind: AttemptKind, cells: &[Cell]) -> Vec<(usize, Alarm)> {
        let mut raised = Vec::new();
        for (k, (pair, cell)) in self.watches.iter_mut().zip(cells).enumerate() {
            let pass = match cell {
                Cell::Pass => true,
                Cell::Fail => false,
                Cell::Error | Cell::Missing => continue,
            };
            // `observe` errs only on a value outside [0, 1]; a pass or a
            // fail is 1 or 0.
            for a in pair[kind as usize].observe(pass).unwrap_or_default() {
                raised.push((k, a));
            }
        }
        raised
    }

    /// Every watch as read now.
    pub fn snapshot(&self) -> LiveSnapshot {
        LiveSnapshot {
            settings: self.settings,
            checks: self
                .checks
                .iter()
                .zip(&self.watches)
                .map(|(c, [first, published])| LiveCheck {
                    name: c.name.clone(),
                    minimum: c.minimum_success_percentage,
                    first: first.snapshot(),
                    published: published.snapshot(),
                })
                .collect(),
        }
    }
}

/// Every check's watches as read at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSnapshot {
    pub settings: WatchSettings,
    /// In column order.
    pub checks: Vec<LiveCheck>,
}

/// One check's watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveCheck {
    pub name: String,
    pub minimum: f64,
    pub first: WatchSnapshot,
    pub published: WatchSnapshot,
}

impl LiveCheck {
    pub fn of(&self, kind: AttemptKind) -> &WatchSnapshot {
        match kind {
            AttemptKind::First => &self.first,
            AttemptKind::Published => &self.published,
        }
    }
}

impl LiveSnapshot {
    /// Requests counted: the most outcomes any watch holds.
    pub fn requests(&self) -> u64 {
        self.checks
            .iter()
            .flat_map(|c| [c.first.requests, c.published.requests])
            .max()
            .unwrap_or(0)
    }
}

/// Requests beyond which no projection is made.
const PROJECTION_LIMIT: u64 = 100_000_000;

impl Summary {
    /// The summary of a serve run, whose traffic may be read at any time:
    /// each check's verdict and interval are its first attempts'
    /// all-traffic confidence sequence's (the one `probity monitor` shows
    /// and alarms on), valid however often the run is read. Established
    /// pass iff lower ≥ minimum, fail iff upper < minimum; otherwise not
    /// established, the decision following the verdict mode as for a
    /// sequential run; `samples_needed` is the requests in all at which the
    /// all-traffic sequence is projected to settle at the current rate
    /// (`projected_observations` from the start). Checks are matched by
    /// column.
    pub fn with_live(mut self, live: &LiveSnapshot) -> Summary {
        for (c, l) in self.checks.iter_mut().zip(&live.checks) {
            let w = &l.first;
            let threshold = c.info.minimum_success_percentage;
            let (decision, established) = if w.requests > 0 && w.all.lower >= threshold {
                (Decision::Pass, true)
            } else if w.requests > 0 && w.all.upper < threshold {
                (Decision::Fail, true)
            } else {
                let open = match self.options.verdict {
                    VerdictMode::Point if c.rate.estimate >= threshold => Decision::Pass,
                    VerdictMode::Point | VerdictMode::LowerBound => Decision::Fail,
                    VerdictMode::ThreeWay => Decision::Inconclusive,
                };
                (open, false)
            };
            c.verdict.decision = decision;
            c.verdict.established = established;
            // Requests in all at which the sequence is projected to settle
            // at this rate (from the start: a projection, no guarantee).
            let needed = (!established && w.requests > 0)
                .then(|| {
                    projected_observations(
                        (1.0 - live.settings.confidence) / 2.0,
                        crate::stats::sequential::BET_CAP,
                        w.rate,
                        w.rate * (1.0 - w.rate),
                        threshold,
                        0,
                        0.0,
                        PROJECTION_LIMIT,
                    )
                })
                .flatten()
                .map(|n| n.max(w.requests + 1));
            c.verdict.samples_needed = needed;
            c.verdict.why_not = (!established).then_some(if w.requests == 0 {
                NotEstablished::NothingObserved
            } else {
                NotEstablished::Straddles {
                    lower: w.all.lower,
                    upper: w.all.upper,
                    samples_needed: needed,
                }
            });
            c.rate.interval = w.all;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn check(name: &str, minimum: f64) -> CheckInfo {
        CheckInfo {
            name: name.into(),
            message: String::new(),
            minimum_success_percentage: minimum,
            weight: 1.0,
            kind: Default::default(),
        }
    }

    #[test]
    fn errors_and_missing_cells_are_not_outcomes() {
        let mut live = LiveRates::new(
            &[check("a", 0.9), check("b", 0.9)],
            WatchSettings::default(),
            &[],
        )
        .unwrap();
        live.observe(AttemptKind::First, &[Cell::Pass, Cell::Error]);
        live.observe(AttemptKind::First, &[Cell::Fail, Cell::Missing]);
        live.observe(AttemptKind::Published, &[Cell::Pass, Cell::Pass]);
        let s = live.snapshot();
        assert_eq!(
            (s.checks[0].first.requests, s.checks[0].first.rate),
            (2, 0.5)
        );
        assert_eq!(s.checks[1].first.requests, 0);
        assert_eq!(s.checks[1].published.requests, 1);
        assert_eq!(s.requests(), 2);
    }

    /// The verdict is the sequence's: a rate whose sequence is wholly
    /// below the minimum fails, established; one straddling it is not
    /// established, with the sequence as its reason.
    #[test]
    fn a_serve_runs_verdicts_come_from_its_sequences() {
        let checks = [check("low", 0.95), check("near", 0.5)];
        let mut live = LiveRates::new(&checks, WatchSettings::default(), &[]).unwrap();
        let mut tensor = crate::ReliabilityTensor::new(400, 1, 2).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let mut passes = 0.0;
        for i in 0..400 {
            // "low" passes 70%, "near" 52%.
            let cell = |p: f64, rng: &mut StdRng| {
                if rng.gen::<f64>() < p {
                    Cell::Pass
                } else {
                    Cell::Fail
                }
            };
            let cells = [cell(0.7, &mut rng), cell(0.52, &mut rng)];
            passes += (cells[1] == Cell::Pass) as u8 as f64;
            live.observe(AttemptKind::First, &cells);
            for (k, c) in cells.iter().enumerate() {
                tensor.set(i, 0, k, *c).unwrap();
            }
        }
        let opts = crate::AnalysisOptions {
            verdict: VerdictMode::ThreeWay,
            ..Default::default()
        };
        let summary = Summary::build(
            &tensor,
            &checks,
            crate::Strategy::All,
            crate::Aggregate::Min,
            &opts,
        )
        .with_live(&live.snapshot());
        let low = &summary.checks[0];
        assert_eq!(
            (low.verdict.decision, low.verdict.established),
            (Decision::Fail, true)
        );
        assert_eq!(low.rate.interval, live.snapshot().checks[0].first.all);
        let near = &summary.checks[1];
        assert_eq!(near.verdict.decision, Decision::Inconclusive);
        let Some(NotEstablished::Straddles { lower, upper, .. }) = near.verdict.why_not else {
            panic!("{:?}", near.verdict.why_not);
        };
        assert!(lower < 0.5 && 0.5 < upper);
        // More traffic at this rate is projected to settle it.
        assert!(
            near.verdict.samples_needed.is_some_and(|n| n > 400),
            "{:?}",
            near.verdict
        );
        // The sequence is wider than the fixed-sample interval of the
        // same 400 outcomes: it pays for being valid at every look.
        let fixed = crate::stats::proportion_interval(
            passes,
            400.0,
            0.95,
            crate::stats::IntervalMethod::Wilson,
        );
        assert!(upper - lower > fixed.upper - fixed.lower);
    }
}
