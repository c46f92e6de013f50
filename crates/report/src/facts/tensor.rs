//! The tensor's heatmaps as every format orders and counts them: inputs
//! worst first, per-cell counts and rates. The terminal heatmap
//! ([`crate::heatmap()`]) and the HTML report's draw the same picture from
//! these.

use crate::document::run::RunReport;
use probity_core::stats::{Counts, ErrorPolicy};
use probity_core::ReliabilityTensor;

/// `(successes, trials)` of `c` under `policy`, as a rate; `None` when
/// nothing was judged.
pub fn rate_of(c: &Counts, policy: ErrorPolicy) -> Option<f64> {
    let (x, n) = c.successes_of(policy);
    (n > 0).then(|| x as f64 / n as f64)
}

/// Input `i`'s counts of each check, `[k]`: computed for the rows a
/// heatmap shows, never held for every input (every input's row
/// was 64 MB of the HTML report's heap at 200,000 inputs).
pub fn check_counts_of_input(t: &ReliabilityTensor, i: usize) -> Vec<Counts> {
    (0..t.validators()).map(|k| t.input_counts(i, k)).collect()
}

/// Input indices, the worst first: by the Input Reliability Profile of
/// the summary when it covers every input, else by the rate over all of
/// an input's cells. Inputs with nothing judged come last.
pub fn inputs_worst_first(r: &RunReport, t: &ReliabilityTensor) -> Vec<usize> {
    let n = t.inputs();
    let profile = &r.summary.input_profile;
    if profile.len() == n && profile.iter().enumerate().all(|(i, e)| e.index == i) {
        return probity_core::profile::worst_first(profile)
            .iter()
            .map(|e| e.index)
            .collect();
    }
    let policy = r.summary.options.errors;
    order_by_rate(&t.marginals().by_input, policy)
}

/// Indices of `counts` by rate, lowest first; nothing judged last.
pub fn order_by_rate(counts: &[Counts], policy: ErrorPolicy) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..counts.len()).collect();
    idx.sort_by(|&a, &b| {
        let ra = rate_of(&counts[a], policy);
        let rb = rate_of(&counts[b], policy);
        ra.is_none()
            .cmp(&rb.is_none())
            .then(ra.unwrap_or(2.0).total_cmp(&rb.unwrap_or(2.0)))
            .then(a.cmp(&b))
    });
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_puts_unjudged_last() {
        let c = |pass, fail| Counts {
            pass,
            fail,
            error: 0,
            missing: 0,
        };
        let v = [c(5, 5), c(0, 0), c(1, 9), c(10, 0)];
        assert_eq!(order_by_rate(&v, ErrorPolicy::AsFailure), vec![2, 0, 3, 1]);
    }
}
