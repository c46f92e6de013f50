//! A simulated judged run with known truth, for the tests and figures of
//! the judge-corrected rate (`stats::calibration`, paper §4): inputs differ
//! in difficulty ([`Difficulty`]: p_i ~ Beta with mean θ and ICC ρ, as in
//! [`crate::simulate`], or a two-point mixture of easy and hard inputs,
//! which the clustered interval does not assume), each output truly passes
//! with probability p_i, and a judge with sensitivity Se and specificity Sp
//! reports PASS with probability Se for a true pass and 1 − Sp for a true
//! fail; a labelled set of `pass_labels` true passes and `fail_labels` true
//! fails is judged by the same judge ([`SimulatedJudge::run`]), or a
//! labelled set is drawn from judged outputs with a known fraction per
//! judged class ([`SimulatedJudge::sampled_labels`]). Pure: every draw
//! comes from the `StdRng` passed in.

use crate::simulate::input_rate;
use crate::stats::{ClusterSum, LabelCounts, Sampling};
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

/// How the inputs' true pass rates p_i are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Difficulty {
    /// p_i ~ Beta with mean `mean` and ICC `rho` (`mean` itself at ρ = 0).
    Beta { mean: f64, rho: f64 },
    /// A share `hard_share` of inputs pass at `hard_rate`, the rest at
    /// `easy_rate`: a few hard inputs among easy ones.
    Mixture {
        hard_share: f64,
        hard_rate: f64,
        easy_rate: f64,
    },
}

impl Difficulty {
    /// The mixture whose mean is `mean`, with `hard_share` of the inputs at
    /// `hard_rate` (the easy rate solves the mean; `None` when it would
    /// exceed 1 or fall below the hard rate).
    pub fn mixture(mean: f64, hard_share: f64, hard_rate: f64) -> Option<Difficulty> {
        let easy_rate = (mean - hard_share * hard_rate) / (1.0 - hard_share);
        (easy_rate <= 1.0 && easy_rate >= hard_rate).then_some(Difficulty::Mixture {
            hard_share,
            hard_rate,
            easy_rate,
        })
    }

    /// The population's true mean rate θ.
    pub fn mean(&self) -> f64 {
        match *self {
            Difficulty::Beta { mean, .. } => mean,
            Difficulty::Mixture {
                hard_share,
                hard_rate,
                easy_rate,
            } => hard_share * hard_rate + (1.0 - hard_share) * easy_rate,
        }
    }

    /// One input's rate p_i.
    pub fn draw(&self, rng: &mut StdRng) -> f64 {
        match *self {
            Difficulty::Beta { mean, rho } => input_rate(rng, mean, rho),
            Difficulty::Mixture {
                hard_share,
                hard_rate,
                easy_rate,
            } => {
                if rng.gen::<f64>() < hard_share {
                    hard_rate
                } else {
                    easy_rate
                }
            }
        }
    }
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

fn sum(x: u64, n: u64) -> ClusterSum {
    ClusterSum {
        sum: x as f64,
        sum_sq: x as f64,
        count: n,
    }
}

impl SimulatedJudge {
    /// The judge's verdict on one output that truly passes (`truly`).
    fn says_pass(&self, rng: &mut StdRng, truly: bool) -> bool {
        let u = rng.gen::<f64>();
        if truly {
            u < self.sensitivity
        } else {
            u >= self.specificity
        }
    }

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
        self.run_with(rng, Difficulty::Beta { mean: theta, rho }, inputs, outputs)
    }

    /// A run of `inputs` × `outputs` whose inputs' rates are drawn by
    /// `difficulty`, judged by this judge, and the labelled set judged.
    pub fn run_with(
        &self,
        rng: &mut StdRng,
        difficulty: Difficulty,
        inputs: usize,
        outputs: u64,
    ) -> JudgedRun {
        let mut judged = Vec::with_capacity(inputs);
        let mut truly = Vec::with_capacity(inputs);
        for _ in 0..inputs {
            let p_i = difficulty.draw(rng);
            let (mut pass, mut said_pass) = (0, 0);
            for _ in 0..outputs {
                let t = rng.gen::<f64>() < p_i;
                pass += u64::from(t);
                said_pass += u64::from(self.says_pass(rng, t));
            }
            judged.push(sum(said_pass, outputs));
            truly.push(sum(pass, outputs));
        }
        let labels = LabelCounts {
            pass_labels: self.pass_labels,
            judged_pass: binomial(rng, self.pass_labels, self.sensitivity),
            fail_labels: self.fail_labels,
            judged_fail: binomial(rng, self.fail_labels, self.specificity),
            ..LabelCounts::default()
        };
        JudgedRun {
            judged,
            truly,
            labels,
        }
    }

    /// A labelled set drawn from `pool` outputs that truly pass with
    /// probability `theta`, each judged by this judge and then labelled by
    /// a human with probability `sampling.judged_pass` when the judge
    /// passed it and `sampling.judged_fail` when it failed it (e.g. every
    /// judged failure and 10 % of judged passes). The counts carry the
    /// fractions, so `JudgeAccuracy::measure` weights them.
    pub fn sampled_labels(
        &self,
        rng: &mut StdRng,
        theta: f64,
        pool: u64,
        sampling: Sampling,
    ) -> LabelCounts {
        let mut c = LabelCounts {
            sampling: Some(sampling),
            ..LabelCounts::default()
        };
        for _ in 0..pool {
            let truly = rng.gen::<f64>() < theta;
            let said = self.says_pass(rng, truly);
            let f = if said {
                sampling.judged_pass
            } else {
                sampling.judged_fail
            };
            if rng.gen::<f64>() >= f {
                continue;
            }
            if truly {
                c.pass_labels += 1;
                c.judged_pass += u64::from(said);
            } else {
                c.fail_labels += 1;
                c.judged_fail += u64::from(!said);
            }
        }
        c
    }
}
