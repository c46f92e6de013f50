//! Which traced spans the judges see (`judge_share`,
//! `judge_budget_per_hour`; docs/traces.md "Judges on a sample").
//!
//! Validators are local and check every span; a `[[verifier]]` costs a
//! judge call, so it judges a sample. Each mapped span is drawn
//! independently with probability `share` (a Bernoulli sample, drawn from
//! the thread's random generator: independent of the span's content, its
//! ids and every check's verdict). The judged spans are then a simple
//! random sample of the spans, so a verifier's rate over them — and its
//! interval, and the live sequence — estimates its rate over all spans
//! without bias. A span not drawn keeps `Missing` verifier cells, which
//! never enter a rate, and its input records `judged = false`.
//!
//! The budget caps the spans judged per hour (fixed hours from the
//! sampler's start). A drawn span beyond it is not judged and counted as
//! `budget`: from then until the hour ends, the sample leaves out that
//! hour's later spans, so it is uniform only over the hours the budget was
//! not reached; the count says how often that happened.

use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3600);

/// Whether a span is judged, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    Judged,
    /// Not drawn into the sample (`judge_share`).
    NotSampled,
    /// Drawn, but the hour's budget was spent.
    OverBudget,
}

/// The judges' sampler of one run.
#[derive(Debug)]
pub struct JudgeSampler {
    share: f64,
    budget_per_hour: Option<u64>,
    started: Instant,
    /// (hour since `started`, spans judged in it).
    hour: Mutex<(u64, u64)>,
    pub judged: AtomicU64,
    pub not_sampled: AtomicU64,
    pub over_budget: AtomicU64,
}

impl JudgeSampler {
    pub fn new(share: f64, budget_per_hour: Option<u64>) -> JudgeSampler {
        JudgeSampler {
            share,
            budget_per_hour,
            started: Instant::now(),
            hour: Mutex::new((0, 0)),
            judged: AtomicU64::new(0),
            not_sampled: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
        }
    }

    /// Whether the judges sample at all (a share below 1 or a budget).
    pub fn samples(&self) -> bool {
        self.share < 1.0 || self.budget_per_hour.is_some()
    }

    /// Draw one span, now.
    pub fn draw(&self) -> Draw {
        self.draw_at(Instant::now())
    }

    /// Draw one span at `now`: in the sample with probability `share`,
    /// then judged if this hour's budget is not spent.
    pub(crate) fn draw_at(&self, now: Instant) -> Draw {
        let drawn = self.share >= 1.0 || rand::thread_rng().gen::<f64>() < self.share;
        let draw = if !drawn {
            Draw::NotSampled
        } else if self.within_budget(now) {
            Draw::Judged
        } else {
            Draw::OverBudget
        };
        let counter = match draw {
            Draw::Judged => &self.judged,
            Draw::NotSampled => &self.not_sampled,
            Draw::OverBudget => &self.over_budget,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        draw
    }

    /// Take one of the budget of `now`'s hour, if any is left.
    fn within_budget(&self, now: Instant) -> bool {
        let Some(budget) = self.budget_per_hour else {
            return true;
        };
        let hour = now.saturating_duration_since(self.started).as_secs() / HOUR.as_secs();
        let Ok(mut h) = self.hour.lock() else {
            return false;
        };
        if h.0 != hour {
            *h = (hour, 0);
        }
        if h.1 < budget {
            h.1 += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_a_bernoulli_draw() {
        // 20,000 draws at 0.1: the count is Binomial(20000, 0.1), sd 42.4;
        // five sd either side.
        let s = JudgeSampler::new(0.1, None);
        let n = 20_000;
        let judged = (0..n).filter(|_| s.draw() == Draw::Judged).count() as f64;
        assert!((judged - 2000.0).abs() < 5.0 * 42.43, "{judged}");
        assert_eq!(
            s.judged.load(Ordering::Relaxed) + s.not_sampled.load(Ordering::Relaxed),
            n
        );
        assert!(s.samples());
        assert!(!JudgeSampler::new(1.0, None).samples());
    }

    #[test]
    fn the_budget_caps_each_hour_and_renews() {
        let s = JudgeSampler::new(1.0, Some(3));
        let t0 = s.started;
        let draws: Vec<Draw> = (0..5).map(|_| s.draw_at(t0)).collect();
        assert_eq!(
            draws,
            [
                Draw::Judged,
                Draw::Judged,
                Draw::Judged,
                Draw::OverBudget,
                Draw::OverBudget
            ]
        );
        // The next hour has its own budget.
        assert_eq!(s.draw_at(t0 + HOUR), Draw::Judged);
        assert_eq!(s.over_budget.load(Ordering::Relaxed), 2);
        assert_eq!(s.judged.load(Ordering::Relaxed), 4);
    }
}
