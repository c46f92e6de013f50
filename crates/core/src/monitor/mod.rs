//! Monitoring live traffic (paper §4.2.6, a Continuous Alignment Testing
//! setting): each check's pass rate over requests as they come, with
//! anytime-valid alarms — valid however often they are looked at.
//!
//! [`RateWatch`] follows one check's stream of outcomes (pass or fail per
//! request): a confidence sequence over all traffic, one per *epoch* (the
//! requests since the epoch began, so a drop is seen soon after it happens
//! rather than after the whole history is outweighed), a sliding window for
//! display, a change detector that re-arms after each incident
//! ([`ChangeDetector`]), and the alarm rules of [`Alarm`], sharing α as
//! [`Budget`] says;
//! a calibrated verifier's rate is corrected for its judge's errors
//! ([`LiveJudge`]). [`LiveRates`] watches every
//! check of a served configuration, first and published attempts. See
//! `crates/core/STATISTICS.md`, *Monitoring*.

mod budget;
mod corrected;
mod detector;
mod live;
mod watch;
mod window;

pub use budget::{watchable, Budget, CONFIDENCE_RANGE, MIN_ALPHA};
pub use corrected::{LiveCorrected, LiveCorrection, LiveJudge};
pub use detector::{ChangeDetector, Direction};
pub use live::{AttemptKind, LiveCheck, LiveRates, LiveSnapshot};
pub use watch::{
    Alarm, AlarmKind, AlarmState, Baseline, RateWatch, WatchSettings, WatchSnapshot,
    DETECTOR_THRESHOLD,
};
pub use window::Window;
