//! A calibrated verifier's live rate corrected for its judge's errors
//! (paper §4; [`crate::stats::calibration`]; `crates/core/STATISTICS.md`,
//! *Judges with known error rates*, "Live traffic").
//!
//! A calibrated verifier's watch's sequences — all traffic at α/4, the
//! epochs at α/4 together ([`Budget`]) — each cover the judge's apparent
//! rate π over their requests at every request at once; call one C_t. The
//! judge's sensitivity and specificity are measured once, on the labelled
//! set, with Wilson intervals [Se₋, Se₊] and [Sp₋, Sp₊] at 1 − α/4 each. With probability ≥ 1 − α the sequences and both
//! intervals all cover (union bound), and then the true rate θ lies in
//!
//! ```text
//! C*_t = { θ ∈ [0, 1] : L(θ) ≤ sup C_t  and  U(θ) ≥ inf C_t }
//! L(θ) = Se₋·θ + (1 − Sp₊)·(1 − θ)
//! U(θ) = Se₊·θ + (1 − Sp₋)·(1 − θ)
//! ```
//!
//! since π = Se·θ + (1 − Sp)·(1 − θ) rises with Se and falls with Sp, so
//! L(θ) ≤ π ≤ U(θ) when Se and Sp are in their intervals. C*_t therefore
//! covers θ at every request at once with probability ≥ 1 − α: it is valid
//! however often it is read, as the sequence it is made from (a fixed-sample
//! corrected interval, [`crate::stats::corrected_rate`], is not). L and U are
//! linear in θ, so C*_t is an interval in closed form. For a stream whose
//! rate changes, θ is the mean true rate over the requests (π's mean is
//! Se·θ̄ + (1 − Sp)·(1 − θ̄) when Se and Sp stay the judge's).
//!
//! The box over (Se, Sp) with a union bound is conservative: it spends α/2
//! on a judge measured once, where the fixed-sample interval combines the
//! variances; it serves the all-traffic and every epoch's sequence alike. The estimate is the Rogan–Gladen point (p̂ + Ŝp − 1)/(Ŝe +
//! Ŝp − 1) clipped to [0, 1] and to C*_t.

use super::budget::Budget;
use crate::stats::{CalibrationError, Interval, JudgeAccuracy, LabelCounts};
use serde::{Deserialize, Serialize};

/// A calibrated verifier's judge as live traffic is corrected for it: its
/// accuracy on the labelled set, measured at 1 − α/4 (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveJudge {
    accuracy: JudgeAccuracy,
}

/// A live rate corrected for the judge's errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LiveCorrected {
    /// The judge's own rate over the requests (p̂).
    pub raw: f64,
    /// θ̂, Rogan–Gladen, clipped to [0, 1] and to `interval`.
    pub estimate: f64,
    /// C*_t (module docs): valid however often it is read.
    pub interval: Interval,
}

/// A calibrated check's live correction, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LiveCorrection {
    Corrected(LiveCorrected),
    Unusable { problem: CalibrationError },
}

impl LiveJudge {
    /// The judge that answered `counts` on its labelled set, for watches
    /// whose sequences are at `confidence` = 1 − α.
    ///
    /// Errors: a confidence outside (0, 1), or counts whose sensitivity or
    /// specificity cannot be measured ([`JudgeAccuracy::measure`]).
    pub fn new(counts: LabelCounts, confidence: f64) -> Result<LiveJudge, CalibrationError> {
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(CalibrationError::Invalid {
                message: format!("confidence must be in (0, 1), not {confidence}"),
            });
        }
        Ok(LiveJudge {
            accuracy: JudgeAccuracy::measure(counts, 1.0 - Budget::of(confidence, true).judge)?,
        })
    }

    /// The accuracy the correction uses (Wilson intervals at 1 − α/4).
    pub fn accuracy(&self) -> &JudgeAccuracy {
        &self.accuracy
    }

    /// [L(θ), U(θ)] (module docs): the judge's rates a system whose true
    /// rate is `theta` may show, Se and Sp anywhere in their intervals.
    /// The corrected interval is wholly at or above θ iff the all-traffic
    /// sequence's lower bound is ≥ U(θ), and wholly below it iff the
    /// sequence's upper bound is < L(θ): the judge's-scale thresholds a
    /// verdict against the minimum θ needs (for projections).
    pub fn apparent_bounds(&self, theta: f64) -> (f64, f64) {
        let a = &self.accuracy;
        let (se, sp) = (a.sensitivity.interval, a.specificity.interval);
        (
            se.lower * theta + (1.0 - sp.upper) * (1.0 - theta),
            se.upper * theta + (1.0 - sp.lower) * (1.0 - theta),
        )
    }

    /// The true rate given the judge's rate `raw` over some requests and
    /// their sequence `all` (all traffic or an epoch's): C*_t of the module
    /// docs.
    ///
    /// Errors: a judge no better than chance (Ŝe + Ŝp ≤ 1: no estimate),
    /// or a sequence no θ in [0, 1] explains with any Se and Sp in their
    /// intervals ([`CalibrationError::Inconsistent`]: the labelled set
    /// does not represent the traffic).
    pub fn correct(&self, raw: f64, all: Interval) -> Result<LiveCorrected, CalibrationError> {
        let a = &self.accuracy;
        let (se, sp) = (a.sensitivity.estimate, a.specificity.estimate);
        if a.youden <= 0.0 {
            return Err(CalibrationError::NoBetterThanChance {
                sensitivity: se,
                specificity: sp,
            });
        }
        let (se_lo, se_hi) = (a.sensitivity.interval.lower, a.sensitivity.interval.upper);
        let (sp_lo, sp_hi) = (a.specificity.interval.lower, a.specificity.interval.upper);
        // L(θ) = (1 − Sp₊) + (Se₋ + Sp₊ − 1)·θ ≤ sup C_t;
        // U(θ) = (1 − Sp₋) + (Se₊ + Sp₋ − 1)·θ ≥ inf C_t.
        let low = at_most(1.0 - sp_hi, se_lo + sp_hi - 1.0, all.upper);
        let high = at_most(-(1.0 - sp_lo), -(se_hi + sp_lo - 1.0), -all.lower);
        let interval = match (low, high) {
            (Some(l), Some(h)) if l.lower.max(h.lower) <= l.upper.min(h.upper) => Interval {
                lower: l.lower.max(h.lower),
                upper: l.upper.min(h.upper),
            },
            _ => {
                return Err(CalibrationError::Inconsistent {
                    raw,
                    lowest: (1.0 - sp_hi).min(se_lo),
                    highest: (1.0 - sp_lo).max(se_hi),
                })
            }
        };
        let point = ((raw + sp - 1.0) / a.youden).clamp(0.0, 1.0);
        Ok(LiveCorrected {
            raw,
            estimate: point.clamp(interval.lower, interval.upper),
            interval,
        })
    }
}

/// {θ ∈ [0, 1] : c0 + c1·θ ≤ b}, an interval or nothing.
fn at_most(c0: f64, c1: f64, b: f64) -> Option<Interval> {
    const FLAT: f64 = 1e-12;
    if c1.abs() < FLAT {
        return (c0 <= b).then_some(Interval::EMPTY);
    }
    let root = (b - c0) / c1;
    let (lower, upper) = if c1 > 0.0 {
        (0.0, root.min(1.0))
    } else {
        (root.max(0.0), 1.0)
    };
    (lower <= upper).then_some(Interval { lower, upper })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::BettingSequence;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn counts(se: (u64, u64), sp: (u64, u64)) -> LabelCounts {
        LabelCounts {
            pass_labels: se.1,
            judged_pass: se.0,
            fail_labels: sp.1,
            judged_fail: sp.0,
            errors: 0,
            reused: 0,
            sampling: None,
        }
    }

    /// The closed form against a brute-force search over θ and the corners
    /// of the (Se, Sp) box: θ is accepted iff some (Se, Sp) in the box maps
    /// it into the sequence.
    #[test]
    fn the_interval_is_every_theta_some_judge_in_the_box_explains() {
        let judge = LiveJudge::new(counts((180, 200), (150, 200)), 0.95).unwrap();
        let a = *judge.accuracy();
        let (sel, seh) = (a.sensitivity.interval.lower, a.sensitivity.interval.upper);
        let (spl, sph) = (a.specificity.interval.lower, a.specificity.interval.upper);
        for (raw, all) in [
            (
                0.7,
                Interval {
                    lower: 0.65,
                    upper: 0.75,
                },
            ),
            (
                0.9,
                Interval {
                    lower: 0.86,
                    upper: 0.93,
                },
            ),
            (
                0.3,
                Interval {
                    lower: 0.2,
                    upper: 0.4,
                },
            ),
            (0.5, Interval::EMPTY),
        ] {
            let got = judge.correct(raw, all).unwrap().interval;
            let accepted: Vec<f64> = (0..=10_000)
                .map(|i| i as f64 / 10_000.0)
                .filter(|&t| {
                    // π over the box is [Se₋θ + (1−Sp₊)(1−θ), Se₊θ + (1−Sp₋)(1−θ)]:
                    // a corner each end, since π is monotone in Se and Sp.
                    let lo = sel * t + (1.0 - sph) * (1.0 - t);
                    let hi = seh * t + (1.0 - spl) * (1.0 - t);
                    lo <= all.upper && hi >= all.lower
                })
                .collect();
            let (first, last) = (accepted[0], *accepted.last().unwrap());
            assert!((got.lower - first).abs() <= 1e-4, "{got:?} vs {first}");
            assert!((got.upper - last).abs() <= 1e-4, "{got:?} vs {last}");
        }
    }

    /// A perfect judge known exactly leaves the sequence as it is.
    #[test]
    fn a_judge_known_to_be_perfect_changes_nothing() {
        let judge = LiveJudge {
            accuracy: JudgeAccuracy::measure(counts((1000, 1000), (1000, 1000)), 0.95).unwrap(),
        };
        let mut exact = judge;
        exact.accuracy.sensitivity.interval = Interval {
            lower: 1.0,
            upper: 1.0,
        };
        exact.accuracy.specificity.interval = Interval {
            lower: 1.0,
            upper: 1.0,
        };
        let all = Interval {
            lower: 0.81,
            upper: 0.88,
        };
        let c = exact.correct(0.85, all).unwrap();
        assert!((c.interval.lower - 0.81).abs() < 1e-12 && (c.interval.upper - 0.88).abs() < 1e-12);
        assert!((c.estimate - 0.85).abs() < 1e-12);
    }

    /// Hand-computed: Wilson 97.5% of 180/200 and 150/200 give the box;
    /// the bounds solve L(θ) = 0.75 and U(θ) = 0.65 (written out here).
    #[test]
    fn the_bounds_solve_the_two_linear_constraints() {
        let judge = LiveJudge::new(counts((180, 200), (150, 200)), 0.9).unwrap();
        let a = judge.accuracy();
        assert!((a.confidence - 0.975).abs() < 1e-12);
        let (sel, seh) = (a.sensitivity.interval.lower, a.sensitivity.interval.upper);
        let (spl, sph) = (a.specificity.interval.lower, a.specificity.interval.upper);
        let c = judge
            .correct(
                0.7,
                Interval {
                    lower: 0.65,
                    upper: 0.75,
                },
            )
            .unwrap();
        let upper = (0.75 - (1.0 - sph)) / (sel + sph - 1.0);
        let lower = (0.65 - (1.0 - spl)) / (seh + spl - 1.0);
        assert!((c.interval.upper - upper.min(1.0)).abs() < 1e-12);
        assert!((c.interval.lower - lower.max(0.0)).abs() < 1e-12);
        // The thresholds on the judge's scale are the bounds' inverses.
        let (l, u) = judge.apparent_bounds(c.interval.upper);
        assert!((l - 0.75).abs() < 1e-12, "{l}");
        let (_, u_low) = judge.apparent_bounds(c.interval.lower);
        assert!((u_low - 0.65).abs() < 1e-12 && u > u_low);
        // Rogan–Gladen at the point estimates: (0.7 + 0.75 − 1)/(0.9 + 0.75 − 1).
        assert!((c.estimate - 0.45 / 0.65).abs() < 1e-12);
    }

    #[test]
    fn chance_judges_and_unexplained_rates_are_refused() {
        let chance = LiveJudge::new(counts((50, 100), (50, 100)), 0.95).unwrap();
        assert!(matches!(
            chance.correct(0.5, Interval::EMPTY),
            Err(CalibrationError::NoBetterThanChance { .. })
        ));
        // A judge that passes ~5% of failing outputs and ~95% of passing
        // ones cannot report 0.99 with a tight sequence.
        let good = LiveJudge::new(counts((950, 1000), (950, 1000)), 0.95).unwrap();
        assert!(matches!(
            good.correct(
                0.995,
                Interval {
                    lower: 0.99,
                    upper: 1.0
                }
            ),
            Err(CalibrationError::Inconsistent { .. })
        ));
        assert!(LiveJudge::new(counts((9, 10), (0, 0)), 0.95).is_err());
        assert!(LiveJudge::new(counts((9, 10), (9, 10)), 1.0).is_err());
    }

    /// Coverage by simulation: a judge with Se 0.85, Sp 0.8 measured on
    /// 200 + 200 labels, traffic with θ = 0.9 read after every request of a
    /// 2,000-request stream. The corrected sequence must miss θ at any
    /// read in at most α = 10% of streams; the judge's own sequence,
    /// which follows π = 0.85·0.9 + 0.2·0.1 = 0.785, misses θ in all.
    #[test]
    fn the_corrected_sequence_covers_the_true_rate_at_every_read() {
        let (se, sp, theta, conf) = (0.85, 0.8, 0.9, 0.9);
        let mut rng = StdRng::seed_from_u64(17);
        let (streams, requests) = (100, 2000);
        let (mut corrected_missed, mut raw_missed) = (0, 0);
        for _ in 0..streams {
            let judged_pass = (0..200).filter(|_| rng.gen::<f64>() < se).count() as u64;
            let judged_fail = (0..200).filter(|_| rng.gen::<f64>() < sp).count() as u64;
            let judge =
                LiveJudge::new(counts((judged_pass, 200), (judged_fail, 200)), conf).unwrap();
            let mut seq = BettingSequence::new(1.0 - Budget::of(conf, true).all, &[]).unwrap();
            let (mut c_miss, mut r_miss) = (false, false);
            for _ in 0..requests {
                let truly = rng.gen::<f64>() < theta;
                let judged = if truly {
                    rng.gen::<f64>() < se
                } else {
                    rng.gen::<f64>() >= sp
                };
                seq.observe(judged as u8 as f64).unwrap();
                let all = seq.interval();
                r_miss |= !all.contains(theta);
                match judge.correct(seq.mean(), all) {
                    Ok(c) => c_miss |= !c.interval.contains(theta),
                    Err(_) => c_miss = true,
                }
            }
            corrected_missed += c_miss as u32;
            raw_missed += r_miss as u32;
        }
        println!("corrected sequence missed θ in {corrected_missed}/{streams} streams, the judge's own in {raw_missed}");
        // α = 0.1 over 100 streams: 10 expected at worst; the 99.9%
        // quantile of Bin(100, 0.1) is 21.
        assert!(
            corrected_missed <= 21,
            "corrected missed {corrected_missed}/{streams}"
        );
        assert_eq!(raw_missed, streams, "the judge's own sequence covered θ");
    }
}
