//! Every check of a served configuration watched at once: per check, a
//! [`RateWatch`] of the first attempt's outcomes (the system's own
//! reliability) and one of the published attempt's (after retries, §4.2).
//! What `probity monitor` pools from the store, and what the report of a
//! serve run shows ([`LiveSnapshot`]); a serve run's verdicts come from the
//! first attempts' all-traffic sequences ([`Summary::with_live`]).

use super::budget::Budget;
use super::corrected::LiveJudge;
use super::watch::{Alarm, Baseline, RateWatch, WatchSettings, WatchSnapshot};
use crate::stats::sequential::projected_requests;
use crate::stats::{
    Calibrated, CalibrationError, CorrectedRate, Decision, Interval, JudgeAccuracy, LabelCounts,
    NotEstablished, StatsError, VerdictMode, Weakness,
};
use crate::summary::{CheckInfo, CheckSummary, Summary};
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
        LiveRates::calibrated(checks, settings, baselines, &[])
    }

    /// [`LiveRates::new`] where `labels[k]`, when given, is what check k's
    /// judge answered on its labelled set: its watches correct the rate
    /// for the judge's errors ([`RateWatch::calibrated`]).
    pub fn calibrated(
        checks: &[CheckInfo],
        settings: WatchSettings,
        baselines: &[Option<Baseline>],
        labels: &[Option<LabelCounts>],
    ) -> Result<LiveRates, StatsError> {
        let watches = checks
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let minimum = Some(c.minimum_success_percentage);
                let baseline = baselines.get(k).copied().flatten();
                let judge = labels
                    .get(k)
                    .copied()
                    .flatten()
                    .map(|counts| LiveJudge::new(counts, settings.confidence));
                let watch = || match &judge {
                    Some(j) => RateWatch::calibrated(settings, minimum, baseline, j.clone()),
                    None => RateWatch::new(settings, minimum, baseline),
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
                Cell::Error | Cell::Missing | Cell::NotApplicable => continue,
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
    /// (`projected_requests`, from the start). A calibrated verifier's
    /// (one with `calibration`, from [`Summary::with_calibration`]) is its
    /// rate corrected for the judge's errors, with the anytime-valid
    /// interval of [`LiveJudge::correct`] (`live_corrected_verdict`).
    /// Checks are matched by column.
    pub fn with_live(mut self, live: &LiveSnapshot) -> Summary {
        let mode = self.options.verdict;
        for (c, l) in self.checks.iter_mut().zip(&live.checks) {
            let w = &l.first;
            let threshold = c.info.minimum_success_percentage;
            c.rate.interval = w.all;
            if c.calibration.is_some() {
                live_corrected_verdict(c, w, live.settings.confidence, mode);
                continue;
            }
            let (decision, established) =
                decide(w.requests, c.rate.estimate, w.all, threshold, mode);
            c.verdict.decision = decision;
            c.verdict.established = established;
            // Requests in all at which the sequence is projected to settle
            // at this rate (from the start: a projection, no guarantee).
            let alpha_all = Budget::of(live.settings.confidence, false).all;
            let needed = (!established)
                .then(|| requests_to_clear(w, threshold, alpha_all))
                .flatten();
            c.verdict.samples_needed = needed;
            c.verdict.why_not = why_not(established, w.requests, w.all, needed);
        }
        self
    }
}

/// A verdict from an anytime-valid interval: established pass iff lower ≥
/// `threshold`, fail iff upper < it; otherwise open, by the verdict `mode`
/// at `estimate`. Before any request: inconclusive in every mode (no
/// traffic is not a failure).
fn decide(
    requests: u64,
    estimate: f64,
    interval: Interval,
    threshold: f64,
    mode: VerdictMode,
) -> (Decision, bool) {
    if requests == 0 {
        return (Decision::Inconclusive, false);
    }
    if interval.lower >= threshold {
        (Decision::Pass, true)
    } else if interval.upper < threshold {
        (Decision::Fail, true)
    } else {
        let open = match mode {
            VerdictMode::Point if estimate >= threshold => Decision::Pass,
            VerdictMode::Point | VerdictMode::LowerBound => Decision::Fail,
            VerdictMode::ThreeWay => Decision::Inconclusive,
        };
        (open, false)
    }
}

/// Requests in all (from the start, more than `w` has) at which `w`'s
/// all-traffic sequence, at error `alpha_all` ([`Budget::all`]), is
/// projected to clear `target` if its rate stays `w.rate` (a projection,
/// no guarantee); `None` before any request, or past [`PROJECTION_LIMIT`].
fn requests_to_clear(w: &WatchSnapshot, target: f64, alpha_all: f64) -> Option<u64> {
    (w.requests > 0)
        .then(|| {
            projected_requests(
                alpha_all,
                crate::stats::sequential::BET_CAP,
                w.rate,
                target,
                PROJECTION_LIMIT,
            )
        })
        .flatten()
        .map(|n| n.max(w.requests + 1))
}

fn why_not(
    established: bool,
    requests: u64,
    interval: Interval,
    samples_needed: Option<u64>,
) -> Option<NotEstablished> {
    (!established).then_some(if requests == 0 {
        NotEstablished::NothingObserved
    } else {
        NotEstablished::Straddles {
            lower: interval.lower,
            upper: interval.upper,
            samples_needed,
        }
    })
}

/// A calibrated verifier's verdict in a serve run: its first attempts'
/// rate corrected for the judge's errors, with the anytime-valid interval
/// of [`LiveJudge::correct`] (its judge measured on the labels the check's
/// calibration was made from, `c.calibration`); the corrected figures
/// replace the fixed-sample ones in `c.calibration`, so every report shows
/// the interval its verdict came from. The requests needed are projected
/// for the all-traffic sequence to clear the judge's-scale threshold the
/// corrected verdict needs ([`LiveJudge::apparent_bounds`]): none when the
/// judge's rate is on the wrong side of it (only more labels, or a better
/// judge, could settle it). Without a corrected rate (a judge whose accuracy could
/// not be measured, no better than chance, or traffic its errors do not
/// explain) the verdict is not established and `c.calibration` says why.
fn live_corrected_verdict(
    c: &mut CheckSummary,
    w: &WatchSnapshot,
    confidence: f64,
    mode: VerdictMode,
) {
    let threshold = c.info.minimum_success_percentage;
    let shown: Option<JudgeAccuracy> = c.calibration.as_ref().and_then(|cal| cal.judge()).copied();
    let corrected = shown
        .ok_or_else(|| match &c.calibration {
            Some(Calibrated::Unusable { problem, .. }) => problem.clone(),
            _ => CalibrationError::NoPassLabels,
        })
        .and_then(|a| {
            let judge = LiveJudge::new(a.counts, confidence)?;
            let (l_min, u_min) = judge.apparent_bounds(threshold);
            let rate = judge.correct(w.rate, w.all)?;
            let exact = Interval {
                lower: w.rate,
                upper: w.rate,
            };
            let labels_only = judge
                .correct(w.rate, exact)
                .map_or(rate.interval, |r| r.interval);
            let weak = if a.youden_interval.lower <= 0.0 {
                Some(Weakness::Chance {
                    youden_lower: a.youden_interval.lower,
                })
            } else {
                // A system that always passes, with unlimited requests: the
                // judge's rate is its sensitivity exactly.
                let se = a.sensitivity.estimate;
                let best = judge
                    .correct(
                        se,
                        Interval {
                            lower: se,
                            upper: se,
                        },
                    )
                    .map_or(0.0, |r| r.interval.lower);
                (best < threshold).then_some(Weakness::Threshold {
                    best_lower: best,
                    minimum: threshold,
                })
            };
            // The judge's rate the sequence must clear, from the side of
            // the corrected estimate.
            let (target, reachable) = if rate.estimate >= threshold {
                (u_min, w.rate > u_min)
            } else {
                (l_min, w.rate < l_min)
            };
            let alpha_all = Budget::of(confidence, true).all;
            let needed = reachable
                .then(|| requests_to_clear(w, target, alpha_all))
                .flatten();
            Ok((
                CorrectedRate {
                    raw: w.rate,
                    estimate: rate.estimate,
                    interval: rate.interval,
                    labels_only,
                    judge: a,
                    weak,
                    // The fixed-sample label needs do not apply to the
                    // live (anytime-valid) correction.
                    labels_needed: Default::default(),
                },
                needed,
            ))
        });
    let v = &mut c.verdict;
    match corrected {
        Ok((r, needed)) => {
            let (decision, established) =
                decide(w.requests, r.estimate, r.interval, threshold, mode);
            let needed = needed.filter(|_| !established);
            v.decision = decision;
            v.established = established;
            v.samples_needed = needed;
            v.why_not = why_not(established, w.requests, r.interval, needed);
            c.calibration = Some(Calibrated::Corrected(r));
        }
        Err(problem) => {
            v.decision = match mode {
                VerdictMode::ThreeWay => Decision::Inconclusive,
                VerdictMode::Point | VerdictMode::LowerBound => Decision::Fail,
            };
            v.established = false;
            v.samples_needed = None;
            v.why_not = Some(if w.requests == 0 {
                NotEstablished::NothingObserved
            } else {
                NotEstablished::Straddles {
                    lower: 0.0,
                    upper: 1.0,
                    samples_needed: None,
                }
            });
            c.calibration = Some(Calibrated::Unusable {
                judge: shown,
                problem,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::corrected::LiveCorrection;
    use crate::monitor::watch::AlarmKind;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The fixed-sample summary of `tensor` with three-way verdicts.
    fn three_way(tensor: &crate::ReliabilityTensor, checks: &[CheckInfo]) -> Summary {
        let opts = crate::AnalysisOptions {
            verdict: VerdictMode::ThreeWay,
            ..Default::default()
        };
        Summary::build(
            tensor,
            checks,
            crate::Strategy::All,
            crate::Aggregate::Min,
            &opts,
        )
    }

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
        let summary = three_way(&tensor, &checks).with_live(&live.snapshot());
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

    /// A calibrated verifier whose judge fails 20% of passing outputs
    /// (Se 0.8) and passes 10% of failing ones (Sp 0.9), on traffic whose
    /// true rate is 0.95 under a 0.85 minimum: the judge's own rate,
    /// 0.8·0.95 + 0.1·0.05 = 0.765, is far below the minimum and alarms an
    /// uncalibrated watch; the calibrated watch raises no alarm, and the
    /// serve run's verdict and shown interval are the corrected rate's,
    /// which covers 0.95. On traffic whose true rate is 0.5 (judged
    /// 0.45) the corrected alarm is raised, marked corrected.
    #[test]
    fn a_calibrated_verifier_is_judged_and_alarmed_on_its_corrected_rate() {
        let labels = LabelCounts {
            pass_labels: 300,
            judged_pass: 240,
            fail_labels: 300,
            judged_fail: 270,
            errors: 0,
            reused: 0,
            sampling: None,
        };
        let checks = [check("judged", 0.85), check("same, uncalibrated", 0.85)];
        let settings = WatchSettings::default();
        let stream = |theta: f64, n: usize| {
            let mut rng = StdRng::seed_from_u64(9);
            let mut live =
                LiveRates::calibrated(&checks, settings, &[], &[Some(labels), None]).unwrap();
            let mut tensor = crate::ReliabilityTensor::new(n, 1, 2).unwrap();
            let mut alarms = Vec::new();
            for i in 0..n {
                let truly = rng.gen::<f64>() < theta;
                let judged = if truly {
                    rng.gen::<f64>() < 0.8
                } else {
                    rng.gen::<f64>() >= 0.9
                };
                let cell = if judged { Cell::Pass } else { Cell::Fail };
                alarms.extend(live.observe(AttemptKind::First, &[cell, cell]));
                tensor.set(i, 0, 0, cell).unwrap();
                tensor.set(i, 0, 1, cell).unwrap();
            }
            (live, tensor, alarms)
        };
        let (live, tensor, alarms) = stream(0.95, 3000);
        assert!(alarms.iter().all(|(k, _)| *k == 1), "{alarms:?}");
        assert!(alarms
            .iter()
            .any(|(_, a)| a.kind == AlarmKind::BelowMinimum && !a.corrected));
        let snap = live.snapshot();
        let Some(LiveCorrection::Corrected(c)) = &snap.checks[0].first.corrected else {
            panic!("{:?}", snap.checks[0].first.corrected);
        };
        assert!(c.interval.contains(0.95), "{c:?}");
        assert!(!snap.checks[0].first.all.contains(0.95));
        assert!(snap.checks[1].first.corrected.is_none());
        let summary = three_way(&tensor, &checks)
            .with_calibration(&tensor, &[Some(labels), None])
            .with_live(&snap);
        let (judged, plain) = (&summary.checks[0], &summary.checks[1]);
        assert_eq!(
            (plain.verdict.decision, plain.verdict.established),
            (Decision::Fail, true)
        );
        assert_ne!(judged.verdict.decision, Decision::Fail);
        let Some(Calibrated::Corrected(r)) = &judged.calibration else {
            panic!("{:?}", judged.calibration);
        };
        assert_eq!((r.estimate, r.interval), (c.estimate, c.interval));
        assert_eq!(r.raw, snap.checks[0].first.rate);
        assert_eq!(judged.rate.interval, snap.checks[0].first.all);
        // The verdict is the corrected interval's.
        let decided = if r.interval.lower >= 0.85 {
            Decision::Pass
        } else {
            Decision::Inconclusive
        };
        assert_eq!(judged.verdict.decision, decided);
        // Not established at 3,000 requests: the judge's rate (0.765) is
        // above the threshold the corrected lower bound needs (U(0.85) on
        // the judge's scale, 0.745), so more traffic is projected to
        // settle it, and more does. The projection is the one the raw
        // sequences use (expected log capital of 0/1 outcomes, no
        // guarantee), from the rate at 3,000 requests (0.762): here 40,432
        // requests, and this stream clears between 1.5 and 2 times that —
        // single streams scatter about the projection, which is near their
        // median (`the_request_projection_is_near_the_median_stream`).
        // The second-order projection said 23,241, and the stream cleared
        // between 2 and 4 times that.
        assert!(!judged.verdict.established, "{:?}", judged.verdict);
        let needed = judged.verdict.samples_needed.expect("a projection");
        assert!(needed > 3000, "{needed}");
        let (more, _, _) = stream(0.95, 2 * needed as usize);
        let settled = three_way(&crate::ReliabilityTensor::new(1, 1, 2).unwrap(), &checks)
            .with_calibration(&tensor, &[Some(labels), None])
            .with_live(&more.snapshot());
        assert_eq!(
            (
                settled.checks[0].verdict.decision,
                settled.checks[0].verdict.established
            ),
            (Decision::Pass, true),
            "{:?} after {} requests",
            settled.checks[0].calibration,
            2 * needed
        );

        let (_, _, alarms) = stream(0.5, 3000);
        let corrected: Vec<_> = alarms.iter().filter(|(k, _)| *k == 0).collect();
        assert_eq!(corrected.len(), 1, "{alarms:?}");
        let a = corrected[0].1;
        assert!(a.corrected && a.recent && a.interval.upper < 0.85, "{a:?}");
    }
}
