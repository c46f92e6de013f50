//! Error rates of `compare_runs` over repeated simulated pairs of runs.
//!
//! Each simulated run has N = 40 inputs × M = 10 outputs of one check.
//! Inputs differ in difficulty, and the difficulty is shared by both runs
//! (same inputs): input i's failure rate is `f · E_i` with E_i ~ Exp(1)
//! drawn once per pair of runs (mean f, sd f: an intra-input correlation
//! of about 0.1, design effect about 2 at M = 10).
//!
//! * Null: both runs have f = 0.10 (true rate 0.90). The comparison must
//!   flag a change (either direction) in about α = 5 % of pairs.
//! * Alternative: baseline f = 0.10, candidate f = 0.20 (0.90 → 0.80). The
//!   comparison must flag a regression in most pairs (power ≈ 0.95 by the
//!   normal approximation: Var(d) = (0.08 + 0.12)/10 + 0.01 = 0.03).
//!
//! Run with `--nocapture` to see the measured rates.

use probity_core::compare::{
    align_by_id, compare_runs, Basis, CompareOptions, Comparison, Direction, RunData,
};
use probity_core::{Cell, CheckInfo, ReliabilityTensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const N: usize = 40;
const M: usize = 10;
const SIMS: usize = 1000;

fn check() -> Vec<CheckInfo> {
    vec![CheckInfo {
        name: "rule".into(),
        message: String::new(),
        minimum_success_percentage: 0.85,
        weight: 1.0,
        kind: Default::default(),
    }]
}

fn run(rng: &mut StdRng, difficulty: &[f64], f: f64) -> ReliabilityTensor {
    let mut t = ReliabilityTensor::new(N, M, 1).unwrap();
    for (i, e) in difficulty.iter().enumerate() {
        let fail = (f * e).min(1.0);
        for j in 0..M {
            let cell = if rng.gen::<f64>() < fail {
                Cell::Fail
            } else {
                Cell::Pass
            };
            t.set(i, j, 0, cell).unwrap();
        }
    }
    t
}

fn simulate(rng: &mut StdRng, f_a: f64, f_b: f64) -> Comparison {
    let difficulty: Vec<f64> = (0..N).map(|_| -(1.0 - rng.gen::<f64>()).ln()).collect();
    let a = run(rng, &difficulty, f_a);
    let b = run(rng, &difficulty, f_b);
    let ids: Vec<String> = (0..N).map(|i| format!("q{i}")).collect();
    let checks = check();
    compare_runs(
        RunData {
            tensor: &a,
            checks: &checks,
        },
        RunData {
            tensor: &b,
            checks: &checks,
        },
        &align_by_id(&ids, &ids),
        &CompareOptions::default(),
    )
}

struct Tally {
    flagged: usize,
    regressed: usize,
    unpaired_flagged: usize,
    paired_width: f64,
    unpaired_width: f64,
    mde: f64,
}

fn tally(seed: u64, f_a: f64, f_b: f64) -> Tally {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = Tally {
        flagged: 0,
        regressed: 0,
        unpaired_flagged: 0,
        paired_width: 0.0,
        unpaired_width: 0.0,
        mde: 0.0,
    };
    for _ in 0..SIMS {
        let cmp = simulate(&mut rng, f_a, f_b);
        let c = &cmp.checks[0];
        assert_eq!(c.basis, Basis::Paired);
        assert_eq!(c.paired_inputs, N);
        let p = c.paired.unwrap();
        t.flagged += usize::from(p.is_significant());
        t.regressed += usize::from(c.direction == Direction::Regressed);
        t.unpaired_flagged += usize::from(c.unpaired.is_significant());
        t.paired_width += p.interval.width() / SIMS as f64;
        t.unpaired_width += c.unpaired.interval.width() / SIMS as f64;
        t.mde += c.mde / SIMS as f64;
    }
    t
}

#[test]
fn false_positive_rate_is_near_alpha_when_nothing_changed() {
    let t = tally(0xC0FFEE, 0.10, 0.10);
    let fpr = t.flagged as f64 / SIMS as f64;
    let fpr_regress = t.regressed as f64 / SIMS as f64;
    eprintln!(
        "null 0.90 vs 0.90, {SIMS} pairs of {N}x{M}: flagged {fpr:.3} (regressed {fpr_regress:.3}), \
         unpaired flagged {:.3}; mean width paired {:.4}, unpaired {:.4}; mean MDE {:.4}",
        t.unpaired_flagged as f64 / SIMS as f64,
        t.paired_width,
        t.unpaired_width,
        t.mde
    );
    // α = 0.05; binomial sd at 1000 sims is 0.007: 0.085 is 5 sd above.
    assert!(fpr <= 0.085, "false-positive rate {fpr}");
    assert!(fpr >= 0.02, "suspiciously conservative: {fpr}");
    assert!(fpr_regress <= 0.05, "false regressions {fpr_regress}");
    // Pairing by input is markedly tighter than the unpaired comparison.
    assert!(t.paired_width < 0.85 * t.unpaired_width);
}

#[test]
fn power_is_high_for_a_drop_from_90_to_80_percent() {
    let t = tally(0xBEEF, 0.10, 0.20);
    let power = t.regressed as f64 / SIMS as f64;
    eprintln!(
        "alternative 0.90 -> 0.80, {SIMS} pairs of {N}x{M}: regressed {power:.3}, \
         unpaired flagged {:.3}; mean width paired {:.4}, unpaired {:.4}; mean MDE {:.4}",
        t.unpaired_flagged as f64 / SIMS as f64,
        t.paired_width,
        t.unpaired_width,
        t.mde
    );
    assert!(power >= 0.85, "power {power}");
    // Never the wrong direction.
    assert_eq!(t.flagged, t.regressed);
    // The MDE at 80 % power is below the true change, as the power says.
    assert!(t.mde < 0.10, "mean MDE {}", t.mde);
}
