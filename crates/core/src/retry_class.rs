//! Attempts per input class (paper §4.2.5: adapt m to input-specific
//! data): the inputs of a tested run grouped by a field (a category, a
//! language, a tenant), each class's joint pass rate measured over its own
//! inputs (clustered by input), and the attempts that reach the target at
//! that rate and at its interval's lower bound.
//!
//! A class with few inputs has a wide interval: the lower-bound column is
//! the cautious choice; the measured one is what the rate says.

use crate::options::AnalysisOptions;
use crate::retry::{EmpiricalJoint, Geometric};
use crate::stats::{ClusterMethod, ClusterSum, Counts, RateEstimate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One class's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassPlan {
    /// The field's value (the class's name).
    pub class: String,
    /// Inputs of the class.
    pub inputs: usize,
    /// The joint pass rate over the class's outputs, clustered by input.
    pub rate: RateEstimate,
    /// Attempts for `target` at the measured rate (`None`: unreachable,
    /// the rate is 0).
    pub attempts: Option<u32>,
    /// Attempts for `target` at the interval's lower bound.
    pub attempts_at_lower: Option<u32>,
}

/// The plan of every class: `classes[i]` names input `i`'s class (the
/// order of `joint.per_input`); classes in name order.
pub fn plan_by_class(
    joint: &EmpiricalJoint,
    classes: &[String],
    target: f64,
    opts: &AnalysisOptions,
) -> Vec<ClassPlan> {
    let mut members: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in classes.iter().enumerate().take(joint.per_input.len()) {
        members.entry(c.as_str()).or_default().push(i);
    }
    members
        .into_iter()
        .map(|(class, inputs)| {
            let mut counts = Counts::default();
            let sums: Vec<ClusterSum> = inputs
                .iter()
                .filter_map(|&i| {
                    let r = &joint.per_input[i];
                    counts.pass += r.counts.pass;
                    counts.fail += r.counts.fail;
                    counts.error += r.counts.error;
                    counts.missing += r.counts.missing;
                    ClusterSum::from_passes(r.counts.pass, r.counts.pass + r.counts.fail).ok()
                })
                .collect();
            let rate = RateEstimate::clustered_or_empty(
                &sums,
                counts,
                opts.confidence,
                opts.interval,
                ClusterMethod::default(),
            );
            let attempts_at = |p: f64| Geometric::new(p).ok().and_then(|g| g.attempts_for(target));
            ClassPlan {
                class: class.to_string(),
                inputs: inputs.len(),
                attempts: attempts_at(rate.estimate),
                attempts_at_lower: attempts_at(rate.interval.lower),
                rate,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cell, ReliabilityTensor, RetryPlan};

    /// Two classes of different difficulty: the easy one needs fewer
    /// attempts, each m is the smallest with 1 − (1 − p)^m ≥ target.
    #[test]
    fn each_class_gets_the_attempts_its_own_rate_needs() {
        // 4 inputs × 10 outputs × 1 check: inputs 0, 1 pass 9 of 10 ("easy"),
        // inputs 2, 3 pass 5 of 10 ("hard").
        let mut t = ReliabilityTensor::new(4, 10, 1).unwrap();
        for i in 0..4 {
            let passes = if i < 2 { 9 } else { 5 };
            for j in 0..10 {
                let cell = if j < passes { Cell::Pass } else { Cell::Fail };
                t.set(i, j, 0, cell).unwrap();
            }
        }
        let opts = AnalysisOptions::default();
        let plan = RetryPlan::from_tensor(&t, &opts).unwrap();
        let classes: Vec<String> = ["easy", "easy", "hard", "hard"].map(String::from).to_vec();
        let by = plan_by_class(plan.empirical.as_ref().unwrap(), &classes, 0.99, &opts);
        assert_eq!(by.len(), 2);
        let (easy, hard) = (&by[0], &by[1]);
        assert_eq!((easy.class.as_str(), easy.inputs), ("easy", 2));
        assert!((easy.rate.estimate - 0.9).abs() < 1e-12);
        assert!((hard.rate.estimate - 0.5).abs() < 1e-12);
        // 1 − 0.1² = 0.99 ≥ 0.99 → 2; 1 − 0.5⁶ = 0.984, 1 − 0.5⁷ = 0.992 → 7.
        assert_eq!(easy.attempts, Some(2));
        assert_eq!(hard.attempts, Some(7));
        assert!(easy.attempts_at_lower >= easy.attempts);
        assert!(hard.attempts_at_lower >= hard.attempts);
    }
}
