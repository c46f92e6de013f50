//! One check's live rate and its alarms.
//!
//! Anytime-valid confidence sequences (the betting sequences of
//! [`BettingSequence`]) share the error budget α = 1 − confidence:
//!
//! ```text
//! all traffic            at α_all = α/2
//! epoch k (k = 1, 2, …)  at α_k = α_ep · 6 / (π² k²),  α_ep = α/2,  Σ_k α_k = α_ep
//! ```
//!
//! (a calibrated verifier's watch: α_all = α_ep = α/4, the judge's
//! intervals taking the other α/2; [`Budget`]).
//!
//! Epoch k holds the requests `(k−1)·E + 1 ..= k·E` (E = the epoch's
//! length). By Ville's inequality each sequence covers its mean at every
//! request at once with probability ≥ 1 − its α, so, by the union bound,
//! with probability ≥ 1 − α every sequence covers at every request: an
//! alarm that needs a sequence to exclude the truth is false with
//! probability ≤ α over the whole stream, however long and however often
//! it is read. (For a stream whose rate changes, "the truth" of a sequence
//! is the mean rate over its requests.)
//!
//! Alarms ([`AlarmKind`]) keep watching: each is raised when it comes to
//! hold and resolved when it stops holding, so a second and a third
//! incident page again.
//! - **below the minimum**: a change detector ([`ChangeDetector`], the
//!   Shiryaev–Roberts e-detector) finds the rate has fallen below the
//!   check's minimum — at a rate that stays at or above it, at most one
//!   false alarm per [`DETECTOR_THRESHOLD`] requests on average, however
//!   long the stream. Once raised, a detector of the mirror change watches
//!   for the rate to rise back above the minimum, and the alarm resolves
//!   when it does; the watch re-arms. Each detected change starts a new
//!   epoch, so the epoch's sequence follows the rate since it.
//! - **the rate changed**: a confidence sequence (all traffic, or an
//!   epoch's) rejected every candidate mean — no constant rate explains
//!   the traffic it holds, the strongest evidence that the rate changed
//!   (probability ≤ its α under a rate that never changes). The sequence
//!   starts again from the next request, at the same α (it can only empty
//!   again after a change has been shown), never frozen at its last
//!   interval. An event, not a state: raised and resolved at once.
//! - **differs from the baseline**: the all-traffic sequence and the
//!   baseline's interval (a tested run's, at its own confidence) are
//!   disjoint. With the baseline's interval covering with probability
//!   ≥ 1 − α_b, a false alarm has probability ≤ α/2 + α_b. It resolves
//!   when a restarted sequence overlaps the baseline again.
//!
//! A calibrated verifier's watch ([`RateWatch::calibrated`]) follows the
//! judge's own outcomes as every watch does; its detectors watch the
//! judge's rate against the judge's-scale bounds of its minimum
//! ([`LiveJudge::apparent_bounds`]: L(min) for a drop — a true rate at or
//! above the minimum shows a judge's rate at or above it while the judge
//! is in its intervals, probability ≥ 1 − α/2 — and U(min) for a rise).
//! Its sequences' rates are corrected for the judge's errors
//! ([`super::corrected`]); the budget is α/4 for all traffic, α/4 over
//! the epochs and α/2 for the judge.
//! The baseline is compared with the judge's own rate (a tested run's
//! judged rate, the same judge's), a false alarm then ≤ α/4 + α_b.

use super::budget::Budget;
use super::corrected::{LiveCorrection, LiveJudge};
use super::detector::{ChangeDetector, Direction};
use super::window::Window;
use crate::stats::{BettingSequence, CalibrationError, Interval, StatsError};
use serde::{Deserialize, Serialize};

/// How a check is watched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WatchSettings {
    /// 1 − α: the chance that no alarm of this watch is ever false.
    pub confidence: f64,
    /// Requests per epoch (E; 0 is taken as 1).
    pub epoch: u64,
    /// Outcomes in the display window.
    pub window: usize,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            confidence: 0.95,
            epoch: 1000,
            window: 500,
        }
    }
}

/// A tested run's rate for a check, to compare live traffic with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub rate: f64,
    /// Its interval (at the tested run's confidence).
    pub interval: Interval,
}

/// A below-minimum detector's threshold A: at a rate at or above the
/// minimum, at most one false alarm per this many requests, per watch, on
/// average (`ChangeDetector`; `crates/core/STATISTICS.md` has the
/// simulated figures).
pub const DETECTOR_THRESHOLD: f64 = 1e6;

/// Alarms kept in a watch's history (the most recent).
pub const HISTORY: usize = 100;

/// What an alarm says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmKind {
    /// The rate is detected below the check's minimum.
    BelowMinimum,
    /// The rate is established to differ from the baseline's.
    DiffersFromBaseline,
    /// A confidence sequence emptied: no constant rate explains the
    /// traffic it held (module docs).
    RateChanged,
}

impl AlarmKind {
    /// `below_minimum`, `differs_from_baseline`, `rate_changed`: as
    /// metrics and JSON name it.
    pub fn name(self) -> &'static str {
        match self {
            AlarmKind::BelowMinimum => "below_minimum",
            AlarmKind::DiffersFromBaseline => "differs_from_baseline",
            AlarmKind::RateChanged => "rate_changed",
        }
    }
}

/// Whether an alarm event starts or ends an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlarmState {
    /// It came to hold.
    #[default]
    Raised,
    /// It stopped holding (the rate recovered; the watch re-armed).
    Resolved,
}

/// An alarm, as raised: the rate and interval that established it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    pub kind: AlarmKind,
    /// The rate of the sequence that established it.
    pub rate: f64,
    pub interval: Interval,
    /// Requests that sequence holds (all traffic, or the epoch's).
    pub requests: u64,
    /// Requests seen in all when it was raised.
    pub at: u64,
    /// `true`: over an epoch (recent traffic); `false`: over all traffic.
    pub recent: bool,
    /// `true`: `rate` and `interval` are corrected for a calibrated
    /// verifier's judge errors ([`super::corrected`]); `false`: the
    /// check's own outcomes (a judge's verdicts as it gave them).
    #[serde(default)]
    pub corrected: bool,
    /// Raised, or resolved.
    #[serde(default)]
    pub state: AlarmState,
    /// The how-manyth time this kind was raised for the watch (from 1).
    #[serde(default)]
    pub incident: u64,
}

/// One check's live rate: sequences, window, alarms (module docs).
#[derive(Debug, Clone)]
pub struct RateWatch {
    settings: WatchSettings,
    minimum: Option<f64>,
    baseline: Option<Baseline>,
    all: BettingSequence,
    epoch: BettingSequence,
    /// The current epoch's number, from 1.
    epoch_number: u64,
    /// Outcomes observed in all.
    seen: u64,
    window: Window,
    /// The last [`HISTORY`] alarm events, raised and resolved, in order.
    raised: Vec<Alarm>,
    /// The alarms that hold now (raised, not yet resolved).
    active: Vec<Alarm>,
    /// Events raised so far, per kind (in [`AlarmKind`] order).
    incidents: [u64; 3],
    /// Detects a drop below the minimum (armed) and, once it has, a rise
    /// back above it (module docs); `None` without a minimum, or for a
    /// calibrated verifier whose judge could not be measured.
    detectors: Option<[ChangeDetector; 2]>,
    /// A calibrated verifier's judge (its rate is corrected for it), or
    /// why it could not be measured; `None` for other checks.
    judge: Option<Result<LiveJudge, CalibrationError>>,
}

impl RateWatch {
    /// A watch of a check whose minimum is `minimum` (none: no alarm below
    /// it), compared with `baseline` (none: no comparison).
    pub fn new(
        settings: WatchSettings,
        minimum: Option<f64>,
        baseline: Option<Baseline>,
    ) -> Result<RateWatch, StatsError> {
        RateWatch::build(settings, minimum, baseline, None)
    }

    /// The watch of a calibrated verifier whose judge is `judge` (or could
    /// not be measured, `Err`: then no rate is corrected and no alarm is
    /// raised below the minimum); module docs.
    pub fn calibrated(
        settings: WatchSettings,
        minimum: Option<f64>,
        baseline: Option<Baseline>,
        judge: Result<LiveJudge, CalibrationError>,
    ) -> Result<RateWatch, StatsError> {
        RateWatch::build(settings, minimum, baseline, Some(judge))
    }

    fn build(
        settings: WatchSettings,
        minimum: Option<f64>,
        baseline: Option<Baseline>,
        judge: Option<Result<LiveJudge, CalibrationError>>,
    ) -> Result<RateWatch, StatsError> {
        // The minimum is a grid point of the sequences, so the verdict's
        // boundary is tested exactly; a judge's own rate is not compared
        // with it.
        let extra: Vec<f64> = minimum.filter(|_| judge.is_none()).into_iter().collect();
        let budget = Budget::of(settings.confidence, judge.is_some());
        let settings = WatchSettings {
            epoch: settings.epoch.max(1),
            ..settings
        };
        let detectors = match (&judge, minimum) {
            (_, None) | (Some(Err(_)), _) => None,
            (Some(Ok(j)), Some(min)) => Some(j.apparent_bounds(min)),
            (None, Some(min)) => Some((min, min)),
        }
        .filter(|_| minimum.is_some_and(|m| m > 0.0))
        .map(|(low, high)| {
            [
                ChangeDetector::new(Direction::Down, low, DETECTOR_THRESHOLD),
                ChangeDetector::new(Direction::Up, high, DETECTOR_THRESHOLD),
            ]
        });
        Ok(RateWatch {
            settings,
            minimum,
            baseline,
            all: BettingSequence::at_alpha(budget.all, &extra)?,
            epoch: BettingSequence::at_alpha(budget.epoch(1), &extra)?,
            epoch_number: 1,
            seen: 0,
            window: Window::new(settings.window),
            raised: Vec::new(),
            active: Vec::new(),
            incidents: [0; 3],
            detectors,
            judge,
        })
    }

    /// Count one request's outcome; the alarm events it makes, raised
    /// and resolved (module docs).
    pub fn observe(&mut self, pass: bool) -> Result<Vec<Alarm>, StatsError> {
        let x = pass as u8 as f64;
        if self.epoch.observations() >= self.settings.epoch {
            self.next_epoch()?;
        }
        self.all.observe(x)?;
        self.epoch.observe(x)?;
        self.seen += 1;
        self.window.push(pass);
        let mut events = Vec::new();
        // An emptied sequence: the rate changed. Reported with the last
        // interval it had, then started again.
        if self.all.is_empty() {
            let alarm = self.alarm_of_sequence(AlarmKind::RateChanged, &self.all, false);
            events.extend(self.event(alarm, true));
            let budget = Budget::of(self.settings.confidence, self.judge.is_some());
            self.all = BettingSequence::at_alpha(budget.all, &self.extra())?;
        }
        if self.epoch.is_empty() {
            let alarm = self.alarm_of_sequence(AlarmKind::RateChanged, &self.epoch, true);
            events.extend(self.event(alarm, true));
            self.next_epoch()?;
        }
        if self.detect(pass) {
            // The rate crossed the minimum: a new epoch follows it.
            let below = !self.holds(AlarmKind::BelowMinimum);
            let alarm = self.alarm_of_window(AlarmKind::BelowMinimum);
            events.extend(self.event(alarm, below));
            self.next_epoch()?;
        }
        if let Some(b) = self.baseline {
            let live = self.all.interval();
            let differs = self.all.observations() > 0
                && (live.upper < b.interval.lower || live.lower > b.interval.upper);
            if differs != self.holds(AlarmKind::DiffersFromBaseline) {
                let alarm =
                    self.alarm_of_sequence(AlarmKind::DiffersFromBaseline, &self.all, false);
                events.extend(self.event(alarm, differs));
            }
        }
        Ok(events)
    }

    /// The minimum's detectors see `pass`: whether the one armed detected
    /// its change (a drop while no below-minimum alarm holds, a rise while
    /// one does); the other starts again.
    fn detect(&mut self, pass: bool) -> bool {
        let below = self.holds(AlarmKind::BelowMinimum);
        let Some([drop, rise]) = self.detectors.as_mut() else {
            return false;
        };
        let (armed, other) = if below { (rise, drop) } else { (drop, rise) };
        let detected = armed.observe(pass);
        if detected {
            other.restart();
        }
        detected
    }

    /// Start the next epoch.
    fn next_epoch(&mut self) -> Result<(), StatsError> {
        self.epoch_number += 1;
        let budget = Budget::of(self.settings.confidence, self.judge.is_some());
        self.epoch = BettingSequence::at_alpha(budget.epoch(self.epoch_number), &self.extra())?;
        Ok(())
    }

    /// The sequences' extra grid point: the minimum, for a check whose
    /// own rate is compared with it.
    fn extra(&self) -> Vec<f64> {
        self.minimum
            .filter(|_| self.judge.is_none())
            .into_iter()
            .collect()
    }

    /// Whether an alarm of `kind` holds now.
    fn holds(&self, kind: AlarmKind) -> bool {
        self.active.iter().any(|a| a.kind == kind)
    }

    /// `alarm` raised (`raise`) or the active one of its kind resolved:
    /// numbered, kept in the history, returned. A rate change is an event
    /// only (never held).
    fn event(&mut self, mut alarm: Alarm, raise: bool) -> Option<Alarm> {
        let slot = match alarm.kind {
            AlarmKind::BelowMinimum => 0,
            AlarmKind::DiffersFromBaseline => 1,
            AlarmKind::RateChanged => 2,
        };
        if raise {
            self.incidents[slot] += 1;
            alarm.incident = self.incidents[slot];
            alarm.state = AlarmState::Raised;
            if alarm.kind != AlarmKind::RateChanged {
                self.active.push(alarm);
            }
        } else {
            let i = self.active.iter().position(|a| a.kind == alarm.kind)?;
            alarm.incident = self.active.remove(i).incident;
            alarm.state = AlarmState::Resolved;
        }
        if self.raised.len() >= HISTORY {
            self.raised.remove(0);
        }
        self.raised.push(alarm);
        Some(alarm)
    }

    /// An alarm of `kind` read from `seq` (corrected for a calibrated
    /// verifier's judge where it can be).
    fn alarm_of_sequence(&self, kind: AlarmKind, seq: &BettingSequence, recent: bool) -> Alarm {
        let corrected = match self.correct(seq) {
            Some(LiveCorrection::Corrected(c)) if kind != AlarmKind::DiffersFromBaseline => Some(c),
            _ => None,
        };
        Alarm {
            kind,
            rate: corrected.map_or(seq.mean(), |c| c.estimate),
            interval: corrected.map_or(seq.interval(), |c| c.interval),
            requests: seq.observations(),
            at: self.all_requests(),
            recent,
            corrected: corrected.is_some(),
            state: AlarmState::Raised,
            incident: 0,
        }
    }

    /// An alarm of `kind` read from the display window (the requests just
    /// before a detected change): its rate and Wilson interval, corrected
    /// for a calibrated verifier's judge where they can be.
    fn alarm_of_window(&self, kind: AlarmKind) -> Alarm {
        let (rate, interval) = (
            self.window.rate(),
            self.window.interval(self.settings.confidence),
        );
        let corrected = match &self.judge {
            Some(Ok(j)) => j.correct(rate, interval).ok(),
            _ => None,
        };
        Alarm {
            kind,
            rate: corrected.map_or(rate, |c| c.estimate),
            interval: corrected.map_or(interval, |c| c.interval),
            requests: self.window.len() as u64,
            at: self.all_requests(),
            recent: true,
            corrected: corrected.is_some(),
            state: AlarmState::Raised,
            incident: 0,
        }
    }

    /// Requests seen in all (the all-traffic sequence restarts; this
    /// does not).
    fn all_requests(&self) -> u64 {
        self.seen
    }

    /// A calibrated verifier's all-traffic rate corrected for its judge's
    /// errors ([`super::corrected`]), or why it cannot be; `None` for
    /// other checks.
    pub fn corrected(&self) -> Option<LiveCorrection> {
        self.correct(&self.all)
    }

    /// `seq`'s rate corrected for the judge's errors; `None` for a check
    /// that is not a calibrated verifier.
    fn correct(&self, seq: &BettingSequence) -> Option<LiveCorrection> {
        Some(match self.judge.as_ref()? {
            Ok(j) => match j.correct(seq.mean(), seq.interval()) {
                Ok(c) => LiveCorrection::Corrected(c),
                Err(problem) => LiveCorrection::Unusable { problem },
            },
            Err(problem) => LiveCorrection::Unusable {
                problem: problem.clone(),
            },
        })
    }

    /// Requests seen.
    pub fn requests(&self) -> u64 {
        self.seen
    }

    /// The rate over all traffic and its confidence sequence (at α/2):
    /// since the last time it emptied (module docs), if it did.
    pub fn all(&self) -> (f64, Interval) {
        (self.all.mean(), self.all.interval())
    }

    /// The current epoch's rate, its sequence, and its requests.
    pub fn epoch(&self) -> (f64, Interval, u64) {
        (
            self.epoch.mean(),
            self.epoch.interval(),
            self.epoch.observations(),
        )
    }

    /// The display window.
    pub fn window(&self) -> &Window {
        &self.window
    }

    /// Every alarm raised so far, in order.
    pub fn alarms(&self) -> &[Alarm] {
        &self.raised
    }

    /// The alarms that hold now (raised, not resolved).
    pub fn active(&self) -> &[Alarm] {
        &self.active
    }

    /// Alarms raised so far of `kind` (each incident once).
    pub fn incidents(&self, kind: AlarmKind) -> u64 {
        self.incidents[match kind {
            AlarmKind::BelowMinimum => 0,
            AlarmKind::DiffersFromBaseline => 1,
            AlarmKind::RateChanged => 2,
        }]
    }

    pub fn settings(&self) -> WatchSettings {
        self.settings
    }

    /// The watch as read now: what every display of it shows.
    pub fn snapshot(&self) -> WatchSnapshot {
        let (rate, all) = self.all();
        let (epoch_rate, epoch, epoch_requests) = self.epoch();
        WatchSnapshot {
            requests: self.requests(),
            all_requests: self.all.observations(),
            rate,
            all,
            epoch_number: self.epoch_number,
            epoch_requests,
            epoch_rate,
            epoch,
            window_requests: self.window.len() as u64,
            window_rate: self.window.rate(),
            window: self.window.interval(self.settings.confidence),
            alarms: self.raised.clone(),
            active: self.active.clone(),
            corrected: self.corrected(),
            epoch_corrected: self
                .correct(&self.epoch)
                .filter(|_| self.epoch.observations() > 0),
        }
    }
}

/// A [`RateWatch`] as read at one moment (rates are 0 with their
/// interval [0, 1] when nothing was observed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchSnapshot {
    /// Outcomes observed (errors and missing cells are not outcomes).
    pub requests: u64,
    /// Of them, those the all-traffic sequence holds: since it last
    /// emptied (a detected change), else all of them.
    #[serde(default)]
    pub all_requests: u64,
    /// The pass share over the all-traffic sequence's requests.
    pub rate: f64,
    /// The all-traffic confidence sequence (at α/2), valid at every read.
    pub all: Interval,
    /// The current epoch's number, from 1.
    pub epoch_number: u64,
    /// Outcomes in the current epoch.
    pub epoch_requests: u64,
    pub epoch_rate: f64,
    /// The current epoch's sequence (at α_k, module docs).
    pub epoch: Interval,
    /// Outcomes in the display window (≤ its size).
    pub window_requests: u64,
    pub window_rate: f64,
    /// The window's Wilson interval at the watch's confidence: a snapshot,
    /// not valid however often it is read.
    pub window: Interval,
    /// The last alarm events (raised and resolved), in order.
    pub alarms: Vec<Alarm>,
    /// The alarms that hold now.
    #[serde(default)]
    pub active: Vec<Alarm>,
    /// A calibrated verifier's all-traffic rate corrected for its judge's
    /// errors (or why it cannot be); `None` for other checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<LiveCorrection>,
    /// The current epoch's rate corrected likewise; `None` for other
    /// checks and before the epoch's first request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_corrected: Option<LiveCorrection>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Of 200 streams of `requests` outcomes each (`outcome`), each watched
    /// by a new `watch`, how many ever raised an alarm.
    fn streams_that_alarm(
        seed: u64,
        requests: usize,
        mut watch: impl FnMut(&mut StdRng) -> RateWatch,
        mut outcome: impl FnMut(&mut StdRng) -> bool,
    ) -> u32 {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..200)
            .map(|_| {
                let mut w = watch(&mut rng);
                let mut any = false;
                for _ in 0..requests {
                    let pass = outcome(&mut rng);
                    any |= !w.observe(pass).unwrap().is_empty();
                }
                u32::from(any)
            })
            .sum()
    }

    /// Epoch k's share α·6/(π²k²) is below f64's resolution next to 1
    /// after some 10⁷ epochs (k = 2·10⁷ at α = 0.05: 3.8·10⁻¹⁷, and
    /// 1 − 3.8·10⁻¹⁷ == 1.0): its sequence is made at the share itself, so
    /// the watch goes on counting.
    #[test]
    fn an_epoch_whose_share_is_below_f64_resolution_next_to_one_still_counts() {
        let settings = WatchSettings {
            confidence: 0.95,
            epoch: 1,
            window: 10,
        };
        let mut w = RateWatch::new(settings, Some(0.9), None).unwrap();
        w.observe(true).unwrap();
        w.epoch_number = 20_000_000;
        let share = Budget::of(0.95, false).epoch(w.epoch_number + 1);
        assert_eq!(1.0 - share, 1.0, "the share's complement rounds to 1");
        for _ in 0..3 {
            w.observe(true).expect("a new epoch's sequence");
        }
        assert_eq!(w.epoch_number, 20_000_003);
        assert_eq!(w.all.observations(), 4);
        assert!((w.epoch.alpha() - Budget::of(0.95, false).epoch(20_000_003)).abs() < 1e-30);
    }

    /// A stream that stays at its minimum (the hardest case for false
    /// alarms) never alarms in ≥ 1 − α of simulated streams.
    #[test]
    fn a_stream_at_its_minimum_rarely_ever_alarms() {
        let min = 0.95;
        let settings = WatchSettings {
            confidence: 0.9,
            epoch: 1000,
            window: 100,
        };
        let alarmed = streams_that_alarm(
            7,
            20_000,
            |_| RateWatch::new(settings, Some(min), None).unwrap(),
            |rng| rng.gen::<f64>() < min,
        );
        // α = 0.1; 200 streams: the binomial 99.9% upper quantile of 0.1·200 is 34.
        assert!(alarmed <= 34, "{alarmed} of 200 streams alarmed");
    }

    /// A drop from 97% to 90% under a 95% minimum is detected within a
    /// few hundred requests, by the change detector (module docs).
    #[test]
    fn a_drop_below_the_minimum_is_caught_within_a_few_epochs() {
        let mut rng = StdRng::seed_from_u64(3);
        let settings = WatchSettings::default();
        for _ in 0..5 {
            let mut w = RateWatch::new(settings, Some(0.95), None).unwrap();
            for _ in 0..10_000 {
                assert!(w.observe(rng.gen::<f64>() < 0.97).unwrap().is_empty());
            }
            let mut delay = None;
            for i in 1..=20_000u64 {
                if let Some(a) = w.observe(rng.gen::<f64>() < 0.90).unwrap().first() {
                    assert_eq!(a.kind, AlarmKind::BelowMinimum);
                    assert_eq!((a.state, a.incident), (AlarmState::Raised, 1));
                    assert!(a.recent && a.rate < 0.97, "{a:?}");
                    delay = Some(i);
                    break;
                }
            }
            let delay = delay.expect("the drop was never caught");
            assert!(delay <= 1500, "caught after {delay} requests");
            assert_eq!(w.active().len(), 1);
        }
    }

    /// The issue's stream: 99%, a drop to 80%, back to 99%, a drop to 70%
    /// under a 95% minimum, epochs of 200. Each drop raises the alarm, the
    /// recovery resolves it, the second drop pages again; the all-traffic
    /// sequence, once the traffic no constant rate explains, says so and
    /// starts again rather than freezing.
    #[test]
    fn a_stream_that_changes_more_than_once_pages_each_time() {
        let settings = WatchSettings {
            confidence: 0.95,
            epoch: 200,
            window: 100,
        };
        for seed in 0..5 {
            let mut rng = StdRng::seed_from_u64(100 + seed);
            let mut w = RateWatch::new(settings, Some(0.95), None).unwrap();
            let mut events: Vec<(u64, Alarm)> = Vec::new();
            let phases = [(1000, 0.99), (1000, 0.80), (4000, 0.99), (1500, 0.70)];
            let mut at = 0;
            for (n, rate) in phases {
                for _ in 0..n {
                    at += 1;
                    for a in w.observe(rng.gen::<f64>() < rate).unwrap() {
                        events.push((at, a));
                    }
                    let (_, all) = w.all();
                    assert!(all.lower <= all.upper);
                }
            }
            let below: Vec<(u64, AlarmState)> = events
                .iter()
                .filter(|(_, a)| a.kind == AlarmKind::BelowMinimum)
                .map(|(t, a)| (*t, a.state))
                .collect();
            println!(
                "seed {seed}: {below:?}; changes {}",
                w.incidents(AlarmKind::RateChanged)
            );
            assert_eq!(below.len(), 3, "{below:?}");
            let [(t1, s1), (t2, s2), (t3, s3)] = [below[0], below[1], below[2]];
            assert_eq!(
                (s1, s2, s3),
                (AlarmState::Raised, AlarmState::Resolved, AlarmState::Raised)
            );
            assert!((1000..1300).contains(&t1), "first drop paged at {t1}");
            assert!((2000..3000).contains(&t2), "recovery seen at {t2}");
            assert!((6000..6300).contains(&t3), "second drop paged at {t3}");
            assert_eq!(w.active().len(), 1);
            assert_eq!(w.incidents(AlarmKind::BelowMinimum), 2);
            // Not frozen: the all-traffic interval, restarted after it
            // emptied, holds the last phase's rate or more of the past.
            let (_, all) = w.all();
            assert!(all.upper - all.lower > 0.0 || w.incidents(AlarmKind::RateChanged) > 0);
        }
    }

    fn judge_counts(se: f64, sp: f64, labels: u64, rng: &mut StdRng) -> crate::stats::LabelCounts {
        crate::stats::LabelCounts {
            pass_labels: labels,
            judged_pass: (0..labels).filter(|_| rng.gen::<f64>() < se).count() as u64,
            fail_labels: labels,
            judged_fail: (0..labels).filter(|_| rng.gen::<f64>() < sp).count() as u64,
            errors: 0,
            reused: 0,
            sampling: None,
        }
    }

    /// One request's verdict by a judge with sensitivity `se` and
    /// specificity `sp` on an output that truly passes with chance `theta`.
    fn judged(theta: f64, se: f64, sp: f64, rng: &mut StdRng) -> bool {
        if rng.gen::<f64>() < theta {
            rng.gen::<f64>() < se
        } else {
            rng.gen::<f64>() >= sp
        }
    }

    /// A calibrated verifier whose true rate stays at its minimum, read
    /// after every request with the epochs' corrected sequences alarming
    /// too: some alarm is ever raised in at most α of streams (the judge
    /// re-measured on fresh labels for each stream). The judge's own rate
    /// there is 0.9·0.8 + 0.15·0.2 = 0.75, under the minimum: alarms on it
    /// would fire in every stream.
    #[test]
    fn a_calibrated_stream_at_its_minimum_rarely_ever_alarms() {
        let (se, sp, min) = (0.9, 0.85, 0.8);
        let settings = WatchSettings {
            confidence: 0.9,
            epoch: 500,
            window: 100,
        };
        let alarmed = streams_that_alarm(
            11,
            4000,
            |rng| {
                let judge = LiveJudge::new(judge_counts(se, sp, 300, rng), settings.confidence);
                RateWatch::calibrated(settings, Some(min), None, judge).unwrap()
            },
            |rng| judged(min, se, sp, rng),
        );
        println!("calibrated, at its minimum: {alarmed} of 200 streams ever alarmed");
        // α = 0.1 over 200 streams: the binomial 99.9% upper quantile is 34.
        assert!(alarmed <= 34, "{alarmed} of 200 streams alarmed");
    }

    /// A calibrated verifier whose true rate drops from 95% to 40% under a
    /// 70% minimum after a long good run: the all-traffic rate stays above
    /// the minimum for thousands of requests, and the detector, watching
    /// the judge's rate against L(min), raises the alarm within a few
    /// hundred, with the window's rate corrected for the judge's errors.
    #[test]
    fn a_calibrated_drop_is_caught_by_an_epoch() {
        let (se, sp, min) = (0.9, 0.85, 0.7);
        let settings = WatchSettings {
            confidence: 0.95,
            epoch: 500,
            window: 100,
        };
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..5 {
            let judge = LiveJudge::new(judge_counts(se, sp, 400, &mut rng), settings.confidence);
            let mut w = RateWatch::calibrated(settings, Some(min), None, judge).unwrap();
            for _ in 0..20_000 {
                assert!(w
                    .observe(judged(0.95, se, sp, &mut rng))
                    .unwrap()
                    .is_empty());
            }
            let mut caught = None;
            for i in 1..=5_000u64 {
                if let Some(a) = w.observe(judged(0.4, se, sp, &mut rng)).unwrap().first() {
                    caught = Some((i, *a));
                    break;
                }
            }
            let (i, a) = caught.expect("the drop was never caught");
            println!("calibrated drop caught after {i} requests: {a:?}");
            assert_eq!(a.kind, AlarmKind::BelowMinimum);
            assert!(a.recent && a.corrected && a.interval.upper < min, "{a:?}");
            assert!(i <= 600, "caught after {i} requests");
            // All traffic is still above the minimum: only the detector saw it.
            match w.corrected() {
                Some(LiveCorrection::Corrected(c)) => assert!(c.interval.upper >= min),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_baseline_far_from_live_traffic_alarms_once() {
        let baseline = Baseline {
            rate: 0.99,
            interval: Interval {
                lower: 0.98,
                upper: 0.995,
            },
        };
        let mut w = RateWatch::new(WatchSettings::default(), None, Some(baseline)).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let mut raised = Vec::new();
        for _ in 0..5000 {
            raised.extend(w.observe(rng.gen::<f64>() < 0.9).unwrap());
        }
        assert_eq!(raised.len(), 1);
        assert_eq!(raised[0].kind, AlarmKind::DiffersFromBaseline);
        assert!(raised[0].interval.upper < 0.98);
    }

    #[test]
    fn the_window_keeps_the_last_outcomes() {
        let mut w = Window::new(3);
        for p in [true, true, false, false] {
            w.push(p);
        }
        assert_eq!((w.len(), w.rate()), (3, 1.0 / 3.0));
        let i = w.interval(0.95);
        assert!(i.lower < 1.0 / 3.0 && 1.0 / 3.0 < i.upper);
    }
}
