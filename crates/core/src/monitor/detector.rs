//! A change detector for a pass rate against a boundary that keeps
//! watching: the Shiryaev–Roberts e-detector (Shin, Ramdas & Rinaldo,
//! *E-detectors: a nonparametric framework for sequential change
//! detection*, 2023, §3), with a false-alarm rate controlled per request,
//! however long the stream (`crates/core/STATISTICS.md`, *Monitoring*).
//!
//! Outcomes X_t ∈ {0, 1} (fail, pass). Watching for a drop below the
//! boundary m (the null: every request passes with chance p_t ≥ m), each
//! alternative q_j < m gives the likelihood ratio of one outcome
//!
//! ```text
//! L_j(x) = (q_j/m)^x · ((1 − q_j)/(1 − m))^(1−x),
//! E_p[L_j] = p·q_j/m + (1 − p)(1 − q_j)/(1 − m) ≤ 1  for every p ≥ m
//! ```
//!
//! (it is decreasing in p), and the Shiryaev–Roberts statistic
//! `R_j,t = (R_j,t−1 + 1) · L_j(X_t)`, R_j,0 = 0 — the sum over every
//! start s ≤ t of the likelihood ratio of "the rate changed to q_j at s".
//! Under the null E[R_j,t | past] ≤ R_j,t−1 + 1, so the mixture
//! `M_t = (1/J) Σ_j R_j,t` makes M_t − t a supermartingale, and the first
//! t with M_t ≥ A has E[τ] ≥ A (optional stopping). After an alarm every
//! R restarts at 0: at a rate that stays at or above m, alarms come at
//! most once per A requests on average — false alarms per million
//! requests ≤ 10⁶/A — however long the stream and however many incidents
//! came before. Watching for a rise above m (a recovery; the null p ≤ m)
//! is the mirror image, with alternatives q_j > m.
//!
//! The alternatives: failure rates k times the boundary's (a drop) or
//! 1/k of it (a rise), k ∈ [`MULTIPLES`]: at pass rates near 1 a change
//! is a multiple of the failure rate, and the mixture pays ln J nats for
//! not knowing which.

use serde::{Deserialize, Serialize};

/// k: the failure rates the alternatives have, as multiples of the
/// boundary's (a drop) or fractions 1/k of it (a rise).
pub const MULTIPLES: [f64; 6] = [1.2, 1.5, 2.0, 3.0, 5.0, 10.0];

/// The boundary is kept this far inside (0, 1), so every ratio is finite.
const EDGE: f64 = 1e-6;

/// Which way a change is watched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The rate falls below the boundary (the null: it is at or above).
    Down,
    /// The rate rises above the boundary (the null: it is at or below).
    Up,
}

/// One alternative's likelihood ratios (of a pass, of a failure) and its
/// statistic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Alternative {
    pass: f64,
    fail: f64,
    r: f64,
}

/// The Shiryaev–Roberts e-detector of a change across a boundary (module
/// docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeDetector {
    direction: Direction,
    boundary: f64,
    /// A: the statistic at which the change is detected.
    threshold: f64,
    alternatives: Vec<Alternative>,
    /// Outcomes since the detector (re)started.
    since: u64,
}

impl ChangeDetector {
    /// A detector of a change `direction` across `boundary` (in [0, 1])
    /// alarming when its statistic reaches `threshold` (A ≥ 1: at a rate
    /// on the null's side, one false alarm per A outcomes at most, on
    /// average).
    pub fn new(direction: Direction, boundary: f64, threshold: f64) -> ChangeDetector {
        let m = boundary.clamp(EDGE, 1.0 - EDGE);
        let fail = 1.0 - m;
        let alternatives = MULTIPLES
            .iter()
            .map(|&k| {
                let q_fail = match direction {
                    // At most one failure in two beyond the boundary's
                    // side: q stays in (0, 1).
                    Direction::Down => (fail * k).min(fail + (1.0 - fail) / 2.0),
                    Direction::Up => fail / k,
                };
                let q = 1.0 - q_fail;
                Alternative {
                    pass: q / m,
                    fail: q_fail / fail,
                    r: 0.0,
                }
            })
            .collect();
        ChangeDetector {
            direction,
            boundary,
            threshold: threshold.max(1.0),
            alternatives,
            since: 0,
        }
    }

    /// Count one outcome; `true` when the change is detected — the
    /// detector then starts again from nothing.
    pub fn observe(&mut self, pass: bool) -> bool {
        self.since += 1;
        let mut sum = 0.0;
        for a in &mut self.alternatives {
            a.r = (a.r + 1.0) * if pass { a.pass } else { a.fail };
            sum += a.r;
        }
        let detected = sum / self.alternatives.len() as f64 >= self.threshold;
        if detected {
            self.restart();
        }
        detected
    }

    /// Start again from nothing.
    pub fn restart(&mut self) {
        for a in &mut self.alternatives {
            a.r = 0.0;
        }
        self.since = 0;
    }

    /// M_t: the mixture statistic (module docs).
    pub fn statistic(&self) -> f64 {
        self.alternatives.iter().map(|a| a.r).sum::<f64>() / self.alternatives.len() as f64
    }

    /// A.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    pub fn direction(&self) -> Direction {
        self.direction
    }

    pub fn boundary(&self) -> f64 {
        self.boundary
    }

    /// Outcomes since it (re)started.
    pub fn since(&self) -> u64 {
        self.since
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// E_p[L_j] ≤ 1 on the null's side of the boundary, = 1 at it, > 1
    /// beyond it for some j: the detector's statistic is a
    /// Shiryaev–Roberts e-process, derived by hand from its ratios.
    #[test]
    fn each_ratio_has_mean_at_most_one_under_the_null() {
        for m in [0.5, 0.9, 0.95, 0.99] {
            for dir in [Direction::Down, Direction::Up] {
                let d = ChangeDetector::new(dir, m, 100.0);
                let mean = |p: f64, a: &Alternative| p * a.pass + (1.0 - p) * a.fail;
                for a in &d.alternatives {
                    assert!((mean(m, a) - 1.0).abs() < 1e-12, "{m} {dir:?}");
                    let null_side = match dir {
                        Direction::Down => (m + 1.0) / 2.0,
                        Direction::Up => m / 2.0,
                    };
                    assert!(mean(null_side, a) < 1.0, "{m} {dir:?}");
                }
            }
        }
    }

    /// At the boundary itself (the hardest null), the average run to a
    /// false alarm is at least A: with A = 200 over 400,000 outcomes,
    /// at most 2,000 alarms are expected; the count is well under it.
    #[test]
    fn false_alarms_at_the_boundary_come_at_most_once_per_threshold() {
        let mut rng = StdRng::seed_from_u64(17);
        for (dir, m) in [
            (Direction::Down, 0.95),
            (Direction::Up, 0.95),
            (Direction::Down, 0.7),
        ] {
            let mut d = ChangeDetector::new(dir, m, 200.0);
            let n = 400_000;
            let alarms = (0..n).filter(|_| d.observe(rng.gen::<f64>() < m)).count();
            println!(
                "{dir:?} at {m}: {alarms} false alarms in {n} (bound {})",
                n / 200
            );
            assert!(alarms <= n / 200, "{alarms}");
        }
    }

    /// A drop detected, then the detector restarts and detects the next
    /// drop as fast: the third incident's delay is the first's.
    #[test]
    fn it_detects_each_drop_after_restarting() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut d = ChangeDetector::new(Direction::Down, 0.95, 1e6);
        let mut delays = Vec::new();
        for _ in 0..3 {
            for _ in 0..5000 {
                assert!(!d.observe(rng.gen::<f64>() < 0.99));
            }
            let delay = (1..=20_000).find(|_| d.observe(rng.gen::<f64>() < 0.85));
            delays.push(delay.expect("the drop was never detected"));
            d.restart();
        }
        println!("delays {delays:?}");
        assert!(delays.iter().all(|&t| t < 1000), "{delays:?}");
    }
}
