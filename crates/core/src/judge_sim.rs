//! A simulated judged run with known truth, for the tests and figures of
//! the judge-corrected rate (`stats::calibration`, paper §4): inputs differ
//! in difficulty (p_i ~ Beta with mean θ and ICC ρ, as in
//! [`crate::simulate`]), each output truly passes with probability p_i,
//! and a judge with sensitivity Se and specificity Sp reports PASS with
//! probability Se for a true pass and 1 − Sp for a true fail; a labelled
//! set of `pass_labels` true passes and `fail_labels` true fails is judged
//! by the same judge. Pure: every draw comes from the `StdRng` passed in.

use crate::simulate::input_rate;
use crate::stats::{ClusterSum, LabelCounts};
use rand::rngs::StdRng;
use rand::Rng;

/// A judge with known error rates and a labelled set to measure them on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatedJudge {
    /// P(PASS | truly passes).
    pub sensitivity: f64,
    /// P(FAIL | truly fails).
    pub specificity: f64,
    pub pass_labels: u64,
    pub fail_labels: u64,
}

/// One simulated judged run: the judge's per-input counts and its answers
/// on the labelled set.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedRun {
    /// Per input: the judge's PASS verdicts over its outputs.
    pub judged: Vec<ClusterSum>,
    /// Per input: the outputs that truly pass (the truth the judge sees
    /// through its errors).
    pub truly: Vec<ClusterSum>,
    pub labels: LabelCounts,
}

fn binomial(rng: &mut StdRng, n: u64, p: f64) -> u64 {
    (0..n).filter(|_| rng.gen::<f64>() < p).count() as u64
}

impl SimulatedJudge {
    /// A run of `inputs` × `outputs` with true mean rate `theta` and ICC
    /// `rho`, judged by this judge, and the labelled set judged.
    pub fn run(
        &self,
        rng: &mut StdRng,
        theta: f64,
        rho: f64,
        inputs: usize,
        outputs: u64,
    ) -> JudgedRun {
        let mut judged = Vec::with_capacity(inputs);
        let mut truly = Vec::with_capacity(inputs);
        for _ in 0..inputs {
            let p_i = input_rate(rng, theta, rho);
            let (mut pass, mut said_pass) = (0, 0);
            for _ in 0..outputs {
                let t = rng.gen::<f64>() < p_i;
                let u = rng.gen::<f64>();
                pass += u64::from(t);
                said_pass += u64::from(if t {
                    u < self.sensitivity
                } else {
                    u >= self.specificity
                });
            }
            judged.push(ClusterSum {
                sum: said_pass as f64,
                sum_sq: said_pass as f64,
                count: outputs,
            });
            truly.push(ClusterSum {
                sum: pass as f64,
                sum_sq: pass as f64,
                count: outputs,
            });
        }
        let labels = LabelCounts {
            pass_labels: self.pass_labels,
            judged_pass: binomial(rng, self.pass_labels, self.sensitivity),
            fail_labels: self.fail_labels,
            judged_fail: binomial(rng, self.fail_labels, self.specificity),
            errors: 0,
            reused: 0,
        };
        JudgedRun {
            judged,
            truly,
            labels,
        }
    }
}
