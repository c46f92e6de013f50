//! How a watch's error budget α = 1 − confidence is shared between its
//! anytime-valid sequences and, for a calibrated verifier, its judge's
//! intervals: the one place that says it (`crates/core/STATISTICS.md`,
//! *Monitoring live traffic*; [`super::watch`], [`super::corrected`]).
//!
//! ```text
//!                      all traffic   epochs (together)   judge: Se, Sp
//! other checks         α/2           α/2                 –
//! calibrated verifier  α/4           α/4                 α/4 each
//! ```
//!
//! Epoch k's sequence gets α_ep · 6/(π² k²) (Σ_k = α_ep). By the union
//! bound every sequence covers at every request and the judge lies in its
//! intervals, all at once, with probability ≥ 1 − α.

/// The smallest α = 1 − confidence a watch is made with: a confidence is
/// at most 1 − 10⁻¹² ([`watchable`]). A watch's shares of α are made into
/// sequences and intervals at levels such as 1 − α/4 (a calibrated
/// verifier's judge); below α ≈ 2.2·10⁻¹⁶ that rounds to 1 in f64 and the
/// interval cannot be made (a `confidence = 0.9999999999999999` used to
/// pass the file check and then fail as "confidence 1"). 10⁻¹² keeps every
/// such level several hundred units of f64's last place below 1, and is
/// far beyond any confidence a monitor is useful at (a barrier of
/// ln(2/α) ≈ 28 nats).
pub const MIN_ALPHA: f64 = 1e-12;

/// What a watch's confidence must be, for messages.
pub const CONFIDENCE_RANGE: &str =
    "a number in (0, 1) and at most 0.999999999999 (α = 1 − confidence ≥ 1e-12), such as 0.95";

/// Whether a watch can be made at `confidence`: in (0, 1), with
/// α = 1 − confidence ≥ [`MIN_ALPHA`].
pub fn watchable(confidence: f64) -> bool {
    // Compared as written (0.999999999999 is 1 − 10⁻¹² rounded the same
    // way), not as 1 − confidence, which rounds below 10⁻¹².
    confidence > 0.0 && confidence <= 1.0 - MIN_ALPHA
}

/// π²/6: Σ 1/k² over k ≥ 1.
const ZETA_2: f64 = std::f64::consts::PI * std::f64::consts::PI / 6.0;

/// A watch's shares of α (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// α_all: the all-traffic sequence's.
    pub all: f64,
    /// α_ep: all the epochs' sequences' together.
    pub epochs: f64,
    /// Each of the judge's sensitivity and specificity intervals' (0 for
    /// a check that is not a calibrated verifier).
    pub judge: f64,
}

impl Budget {
    /// The shares at `confidence` = 1 − α, for a calibrated verifier's
    /// watch when `calibrated`.
    pub fn of(confidence: f64, calibrated: bool) -> Budget {
        let alpha = 1.0 - confidence;
        if calibrated {
            Budget {
                all: alpha / 4.0,
                epochs: alpha / 4.0,
                judge: alpha / 4.0,
            }
        } else {
            Budget {
                all: alpha / 2.0,
                epochs: alpha / 2.0,
                judge: 0.0,
            }
        }
    }

    /// α_k = α_ep · 6/(π² k²): epoch k's share.
    pub fn epoch(&self, k: u64) -> f64 {
        self.epochs / (ZETA_2 * (k as f64) * (k as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watchable_confidence_leaves_every_fixed_share_below_one() {
        for c in [0.5, 0.95, 0.999999999999] {
            assert!(watchable(c), "{c}");
            for calibrated in [false, true] {
                let b = Budget::of(c, calibrated);
                assert!(1.0 - b.all < 1.0 && 1.0 - b.epochs < 1.0);
                assert!(!calibrated || 1.0 - b.judge < 1.0);
            }
        }
        // 0.9999999999999999 = 1 − 2⁻⁵³·2: α/2 rounds its complement to 1.
        let c = 0.9999999999999999;
        assert_eq!(1.0 - Budget::of(c, false).all, 1.0);
        for bad in [c, 0.9999999999991, 1.0, 0.0, -0.5, f64::NAN, 2.0] {
            assert!(!watchable(bad), "{bad}");
        }
    }

    #[test]
    fn the_budget_sums_to_alpha() {
        for calibrated in [false, true] {
            let b = Budget::of(0.95, calibrated);
            let epochs: f64 = (1..2_000_000u64).map(|k| b.epoch(k)).sum();
            assert!((epochs - b.epochs).abs() < 1e-7, "{epochs}");
            let total = b.all + epochs + 2.0 * b.judge;
            assert!((total - 0.05).abs() < 1e-7, "{calibrated}: {total}");
        }
    }
}
