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
