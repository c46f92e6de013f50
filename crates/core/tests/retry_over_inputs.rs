//! The retry plan's prediction over inputs (issue 35 item 3) against
//! simulation where the truth is known: inputs mostly easy with a few hard
//! ones (a two-point mixture, not a Beta), M outputs each, m attempts.

use probity_core::options::AnalysisOptions;
use probity_core::retry::{InputAttempts, RetryPlan};
use probity_core::tensor::{Cell, ReliabilityTensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What R simulated measurements of one mixture gave.
struct Measured {
    truth: f64,
    /// Mean of the prediction's estimate, and its Monte Carlo standard error.
    mean: f64,
    mcse: f64,
    /// Mean of the plug-in mean of 1 − (1 − p̂_i)^m (computed here).
    plug_in: f64,
    /// Share of runs whose interval held the true mean over these inputs.
    covers_truth: f64,
    /// Share of runs whose interval held a fresh guarded run's measured
    /// share (M calls per input, each up to m attempts).
    covers_guarded: f64,
}

fn measure(rates: &[f64], outputs: usize, m: u32, runs: usize, seed: u64) -> Measured {
    let mut rng = StdRng::seed_from_u64(seed);
    let truth = rates
        .iter()
        .map(|p| 1.0 - (1.0 - p).powi(m as i32))
        .sum::<f64>()
        / rates.len() as f64;
    let (mut sum, mut sum2, mut plug, mut covers, mut covers_g) = (0.0, 0.0, 0.0, 0, 0);
    for _ in 0..runs {
        let mut t = ReliabilityTensor::new(rates.len(), outputs, 1).unwrap();
        let mut plug_run = 0.0;
        for (i, &p) in rates.iter().enumerate() {
            let mut passes = 0;
            for j in 0..outputs {
                let pass = rng.gen::<f64>() < p;
                passes += usize::from(pass);
                let cell = if pass { Cell::Pass } else { Cell::Fail };
                t.set(i, j, 0, cell).unwrap();
            }
            plug_run += 1.0 - (1.0 - passes as f64 / outputs as f64).powi(m as i32);
        }
        plug += plug_run / rates.len() as f64;
        let plan = RetryPlan::from_tensor(&t, &AnalysisOptions::default()).unwrap();
        let s = plan.success_over_inputs(m, 0.95).unwrap();
        sum += s.estimate;
        sum2 += s.estimate * s.estimate;
        covers += usize::from(s.lower <= truth && truth <= s.upper);
        // A guarded run over the same inputs: M calls each, a call
        // publishing when one of its m attempts passes.
        let published = rates
            .iter()
            .map(|&p| {
                (0..outputs)
                    .filter(|_| (0..m).any(|_| rng.gen::<f64>() < p))
                    .count()
            })
            .sum::<usize>();
        let share = published as f64 / (rates.len() * outputs) as f64;
        covers_g += usize::from(s.lower <= share && share <= s.upper);
    }
    let r = runs as f64;
    let mean = sum / r;
    Measured {
        truth,
        mean,
        mcse: ((sum2 / r - mean * mean) / r).sqrt(),
        plug_in: plug / r,
        covers_truth: covers as f64 / r,
        covers_guarded: covers_g as f64 / r,
    }
}

/// `easy` inputs at `p_easy`, `hard` at `p_hard`.
fn mixture(easy: usize, p_easy: f64, hard: usize, p_hard: f64) -> Vec<f64> {
    let mut v = vec![p_easy; easy];
    v.extend(std::iter::repeat_n(p_hard, hard));
    v
}

/// Unbiased where the plug-in is not, and its interval holds both the
/// truth and what a guarded run then measures, at the shapes users meet:
/// 20 and 50 inputs, a few hard among easy, p from 0.5 to 0.99.
#[test]
fn the_prediction_over_inputs_is_unbiased_and_covers_under_mixtures() {
    for (name, rates, outputs, m) in [
        (
            "17 at 0.97, 3 at 0.6; M = 20, m = 3",
            mixture(17, 0.97, 3, 0.6),
            20,
            3,
        ),
        (
            "45 at 0.99, 5 at 0.5; M = 10, m = 2",
            mixture(45, 0.99, 5, 0.5),
            10,
            2,
        ),
        (
            "18 at 0.95, 2 at 0.2; M = 30, m = 4",
            mixture(18, 0.95, 2, 0.2),
            30,
            4,
        ),
    ] {
        let r = measure(&rates, outputs, m, 300, 0x7E57_0035);
        println!(
            "{name}: truth {:.4}, mean prediction {:.4} (mcse {:.4}), plug-in {:.4}; covers truth {:.3}, a guarded run {:.3}",
            r.truth, r.mean, r.mcse, r.plug_in, r.covers_truth, r.covers_guarded
        );
        assert!(
            (r.mean - r.truth).abs() <= 4.0 * r.mcse,
            "{name}: biased: {:.4} against {:.4}",
            r.mean,
            r.truth
        );
        assert!(
            r.plug_in < r.truth - 3.0 * r.mcse,
            "{name}: the plug-in should err low here"
        );
        assert!(r.covers_truth >= 0.93, "{name}: covers {}", r.covers_truth);
        assert!(
            r.covers_guarded >= 0.90,
            "{name}: guarded {}",
            r.covers_guarded
        );
    }
}

/// C(f, j)/C(n, j) by hand: 3 fails of 5, j = 2 → (3·2)/(5·4) = 0.3; the
/// expected attempts with at most 3, 1 + 3/5 + 0.3 = 1.9; past n the value
/// at n (0 unless every output failed).
#[test]
fn one_inputs_record_matches_counts_by_hand() {
    let x = InputAttempts { n: 5, fails: 3 };
    assert!((x.all_fail(2) - 0.3).abs() < 1e-12);
    assert!((x.success_within(2) - 0.7).abs() < 1e-12);
    assert!((x.expected_calls(3) - 1.9).abs() < 1e-12);
    assert_eq!(x.all_fail(4), 0.0);
    assert_eq!(x.all_fail(40), 0.0);
    let dead = InputAttempts { n: 4, fails: 4 };
    assert_eq!(dead.all_fail(9), 1.0);
    assert!((dead.expected_calls(9) - 9.0).abs() < 1e-12);
    let clean = InputAttempts { n: 4, fails: 0 };
    assert_eq!(clean.success_within(1), 1.0);
    assert!((clean.expected_calls(7) - 1.0).abs() < 1e-12);
}
