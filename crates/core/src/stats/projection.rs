//! What would settle a verdict the default clustered interval leaves open,
//! computed from that same interval (issue 40 item 4): the inputs in all
//! at which it would exclude the minimum if every input already seen were
//! seen again in the same proportions, and whether more outputs of these
//! inputs could settle it at all.
//!
//! The interval at another size is [`profile_likelihood_scaled`] (the
//! observed per-input pattern, each input counted G′/G times) widened by
//! the allowance for a minority of the G′ inputs ([`super::unseen::widen_by`]) —
//! exactly what [`super::rate::RateEstimate::try_clustered`] reports for
//! the default. Outputs: the same inputs with 1,000 times their outputs
//! (their rates kept); when even that leaves the minimum inside, no number
//! of outputs of these inputs settles it — only inputs do (the spread
//! between inputs, and the minority they may have missed, stay).

use super::betabin::profile_likelihood_scaled;
use super::cluster::ClusterSum;
use super::error::StatsError;
use super::interval::Interval;

/// The most inputs a projection searches (beyond: `None`).
pub const MAX_INPUTS: u64 = 10_000_000;

/// What would settle a verdict, from the interval the run reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settle {
    /// Inputs in all (the G observed included) at which the interval
    /// excludes the minimum, outputs per input as observed; `None` when
    /// no number up to [`MAX_INPUTS`] does (or the estimate is on it).
    pub inputs: Option<u64>,
    /// Whether many more outputs of these same inputs would exclude it.
    pub outputs_settle: bool,
}

/// The default interval of `clusters`' pattern with `inputs` times the
/// inputs and `outputs` times the outputs per input.
fn interval_at(
    clusters: &[ClusterSum],
    confidence: f64,
    inputs: f64,
    outputs: f64,
) -> Result<Interval, StatsError> {
    let s = profile_likelihood_scaled(clusters, confidence, inputs, outputs)?;
    let means: Vec<(f64, f64)> = clusters
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| (c.sum / c.count as f64, inputs))
        .collect();
    Ok(super::unseen::widen_by(s.interval, &means, confidence))
}

/// [`Settle`] for the default interval of `clusters` (inputs with at least
/// one output; more than one output on some input) against `threshold`.
///
/// Inputs: the smallest G′ ≥ G whose interval lies wholly on the
/// estimate's side (lower ≥ threshold above it, upper < threshold below),
/// by doubling then bisection over whole numbers of inputs.
///
/// Errors: as [`profile_likelihood_scaled`]; nothing observed.
pub fn settle(
    clusters: &[ClusterSum],
    confidence: f64,
    threshold: f64,
) -> Result<Settle, StatsError> {
    let observed: Vec<ClusterSum> = clusters.iter().copied().filter(|c| c.count > 0).collect();
    let g = observed.len() as u64;
    let n: f64 = observed.iter().map(|c| c.count as f64).sum();
    if g == 0 || n == 0.0 {
        return Err(StatsError::Empty);
    }
    let p = observed.iter().map(|c| c.sum).sum::<f64>() / n;
    if p == threshold || !(0.0..=1.0).contains(&threshold) {
        return Ok(Settle {
            inputs: None,
            outputs_settle: false,
        });
    }
    let clear = |iv: Interval| {
        if p > threshold {
            iv.lower >= threshold
        } else {
            iv.upper < threshold
        }
    };
    let at = |inputs: u64| -> Result<bool, StatsError> {
        Ok(clear(interval_at(
            &observed,
            confidence,
            inputs as f64 / g as f64,
            1.0,
        )?))
    };
    let outputs_settle = clear(interval_at(&observed, confidence, 1.0, 1000.0)?);
    let mut hi = g;
    let mut lo = g - 1;
    while !at(hi)? {
        if hi >= MAX_INPUTS {
            return Ok(Settle {
                inputs: None,
                outputs_settle,
            });
        }
        lo = hi;
        hi = hi.saturating_mul(2).min(MAX_INPUTS);
    }
    // Invariant: !at(lo) (or lo = G − 1), at(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if at(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Settle {
        inputs: Some(hi),
        outputs_settle,
    })
}
