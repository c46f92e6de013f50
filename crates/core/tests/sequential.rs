//! Sequential testing (`probity_core::sequential`, `stats::sequential`):
//! the betting confidence sequence against a direct evaluation of its
//! definition, its error under optional stopping and its cost, by
//! simulation with known truth (the full table: bench/sequential.sh).

use probity_core::sequential::{input_order, round_end, SequenceState, SequentialTest, StopReason};
use probity_core::simulate::plan::sequential_cost;
use probity_core::simulate::{fixed_verdicts, simulate_run, SimDesign};
use probity_core::stats::sequential::{
    projected_observations, projected_requests, BettingSequence, BET_CAP, GRID_STEPS,
};
use probity_core::stats::Decision;
use probity_core::CheckInfo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The confidence sequence straight from its definition (Waudby-Smith &
/// Ramdas 2023, Theorem 3 with the predictable plug-in bets): for every
/// grid point, the products over all observations so far, recomputed from
/// scratch at every step; the running intersection over steps.
fn reference(xs: &[f64], alpha: f64) -> Vec<(f64, f64)> {
    let grid: Vec<f64> = (0..=GRID_STEPS)
        .map(|g| g as f64 / GRID_STEPS as f64)
        .collect();
    let mut alive = vec![true; grid.len()];
    let mut out = Vec::new();
    for t in 1..=xs.len() {
        // The bets λ_1..λ_t from X_1..X_{i-1}.
        let mut lambdas = Vec::new();
        for i in 1..=t {
            let prev = &xs[..i - 1];
            let mut sq = 0.0;
            for (s, _) in prev.iter().enumerate() {
                let mu_s = (0.5 + prev[..=s].iter().sum::<f64>()) / (s as f64 + 2.0);
                sq += (prev[s] - mu_s).powi(2);
            }
            let var = (0.25 + sq) / i as f64;
            lambdas
                .push((2.0 * (2.0 / alpha).ln() / (var * i as f64 * (i as f64 + 1.0).ln())).sqrt());
        }
        for (g, &m) in grid.iter().enumerate() {
            let (mut up, mut down) = (1.0f64, 1.0f64);
            for i in 0..t {
                up *= 1.0 + lambdas[i].min(BET_CAP / m) * (xs[i] - m);
                down *= 1.0 - lambdas[i].min(BET_CAP / (1.0 - m)) * (xs[i] - m);
            }
            if (0.5 * up).max(0.5 * down) >= 1.0 / alpha {
                alive[g] = false;
            }
        }
        let first = alive.iter().position(|a| *a).map(|g| grid[g]);
        let last = alive.iter().rposition(|a| *a).map(|g| grid[g]);
        out.push((first.unwrap_or(f64::NAN), last.unwrap_or(f64::NAN)));
    }
    out
}

#[test]
fn the_sequence_matches_its_definition_step_by_step() {
    // Pass shares of 30 inputs of 10 outputs (a fixed, varied sequence).
    let xs: Vec<f64> = (0..30)
        .map(|i| [1.0, 0.9, 1.0, 1.0, 0.7, 1.0, 0.8, 1.0, 1.0, 0.6][i % 10])
        .collect();
    let expected = reference(&xs, 0.05);
    let mut cs = BettingSequence::new(0.95, &[]).unwrap();
    for (t, x) in xs.iter().enumerate() {
        cs.observe(*x).unwrap();
        let iv = cs.interval();
        assert!(
            (iv.lower - expected[t].0).abs() < 1e-12 && (iv.upper - expected[t].1).abs() < 1e-12,
            "step {}: [{}, {}] against [{}, {}]",
            t + 1,
            iv.lower,
            iv.upper,
            expected[t].0,
            expected[t].1
        );
    }
    // It has narrowed and holds the sample mean (0.9).
    let iv = cs.interval();
    assert!(
        iv.upper - iv.lower < 0.5 && iv.lower < 0.9 && iv.upper > 0.9,
        "{iv:?}"
    );
}

#[test]
fn bad_observations_and_settings_are_errors() {
    assert!(BettingSequence::new(1.0, &[]).is_err());
    assert!(BettingSequence::new(0.95, &[95.0]).is_err());
    let mut cs = BettingSequence::new(0.95, &[0.9]).unwrap();
    assert!(cs.observe(1.5).is_err());
    assert!(cs.observe(f64::NAN).is_err());
    assert_eq!(cs.observations(), 0);
}

#[test]
fn the_input_order_is_a_seeded_permutation() {
    let a = input_order(100, 7);
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    assert_eq!(a, input_order(100, 7));
    assert_ne!(a, input_order(100, 8));
    assert_ne!(a, (0..100).collect::<Vec<_>>());
}

#[test]
fn rounds_keep_the_workers_busy_and_grow() {
    // 16 calls in flight, 2 outputs per input: 8 inputs, at least 5.
    assert_eq!(round_end(0, 100, 2, 16), 8);
    assert_eq!(round_end(0, 100, 20, 16), 5);
    // A tenth of what was sampled, once that is more.
    assert_eq!(round_end(200, 1000, 20, 16), 220);
    // Never beyond the budget.
    assert_eq!(round_end(98, 100, 20, 16), 100);
}

fn design(n: u64, icc: f64, futility: bool) -> SimDesign {
    SimDesign {
        inputs: n,
        m: 10,
        icc,
        confidence: 0.95,
        concurrency: 16,
        futility,
    }
}

/// With the true rate exactly at the threshold, looked at after every
/// round and run to the budget, established verdicts (wrong, or on the
/// boundary) stay within α = 5 % for p in {0.9, 0.97, 0.99} and ICC 0 and
/// 0.3. bench/sequential.sh gives the same with 2,000 runs per cell.
#[test]
fn error_under_optional_stopping_stays_within_alpha() {
    let runs = 150;
    for (ci, (p, icc)) in [0.9, 0.97, 0.99]
        .into_iter()
        .flat_map(|p| [0.0, 0.3].map(|r| (p, r)))
        .enumerate()
    {
        let mut rng = StdRng::seed_from_u64(100 + ci as u64);
        let mut established = 0;
        for _ in 0..runs {
            let r = simulate_run(&mut rng, &[p], &[p], &design(200, icc, false)).unwrap();
            established += matches!(r.states[0], SequenceState::Pass | SequenceState::Fail) as u64;
            assert_ne!(r.stop, StopReason::Futile);
        }
        let share = established as f64 / runs as f64;
        assert!(share <= 0.05, "p {p}, ICC {icc}: {share}");
    }
}

/// Three or more points from the threshold: the verdict the fixed-size
/// run establishes on the whole budget, for at least 40 % fewer samples on
/// average.
#[test]
fn far_from_the_threshold_it_agrees_with_the_fixed_run_for_less() {
    let runs = 100;
    for (ci, (p, t, icc)) in [(0.97, 0.94, 0.3), (0.90, 0.95, 0.0), (0.99, 0.95, 0.3)]
        .into_iter()
        .enumerate()
    {
        let d = design(400, icc, true);
        let cost = sequential_cost(&[p], &[t], &d, runs, 7 + ci as u64).unwrap();
        let saved = 1.0 - cost.mean_samples / cost.budget_samples as f64;
        assert!(saved >= 0.4, "p {p} against {t}, ICC {icc}: saved {saved}");
        assert!(cost.p10_samples <= cost.p50_samples && cost.p50_samples <= cost.p90_samples);
        let mut rng = StdRng::seed_from_u64(7 + ci as u64);
        let mut same = 0;
        for _ in 0..runs {
            let r = simulate_run(&mut rng, &[p], &[t], &d).unwrap();
            let fixed = fixed_verdicts(&r.passes, 10, &[t], 0.95).unwrap()[0];
            let seq = match r.states[0] {
                SequenceState::Pass => Decision::Pass,
                SequenceState::Fail => Decision::Fail,
                _ => Decision::Inconclusive,
            };
            same += (fixed.established && seq == fixed.decision) as u64;
        }
        assert!(
            same as f64 >= 0.9 * runs as f64,
            "p {p} against {t}, ICC {icc}: {same} of {runs} the same"
        );
    }
}

fn check(name: &str, threshold: f64) -> CheckInfo {
    CheckInfo {
        name: name.into(),
        message: String::new(),
        minimum_success_percentage: threshold,
        weight: 1.0,
        kind: Default::default(),
    }
}

#[test]
fn a_clear_failure_settles_and_a_check_on_its_threshold_is_futile() {
    // Check 0 fails badly (shares 0.5); check 1 sits on its threshold.
    let mut test =
        SequentialTest::new(&[check("bad", 0.95), check("edge", 0.8)], 0.95, 1000, 10).unwrap();
    let mut stop = None;
    for i in 0..1000 {
        let edge = if i % 5 == 0 { 0.0 } else { 1.0 };
        test.observe(&[Some(0.5), Some(edge)]).unwrap();
        if (i + 1) % 10 == 0 {
            stop = test.decide();
            if stop.is_some() {
                break;
            }
        }
    }
    let out = test.outcome(stop, test.inputs() * 10, 1);
    assert_eq!(out.checks[0].state, SequenceState::Fail);
    assert!(out.checks[0].upper < 0.95);
    assert_eq!(out.stop, Some(StopReason::Futile));
    assert_eq!(out.checks[1].state, SequenceState::Futile);
    assert!(out.inputs < 1000, "{}", out.inputs);
    assert!(out.samples_saved() > 0);
}

#[test]
fn inputs_with_nothing_judged_contribute_nothing() {
    let mut test = SequentialTest::new(&[check("c", 0.5)], 0.95, 10, 4).unwrap();
    test.observe(&[None]).unwrap();
    test.observe(&[Some(1.0)]).unwrap();
    let out = test.outcome(None, 8, 0);
    assert_eq!(out.inputs, 2);
    assert_eq!(out.checks[0].inputs, 1);
    assert_eq!(out.checks[0].estimate, 1.0);
}

/// Output rounds (few inputs; the claim is about these inputs): looked at
/// after every round and run to the budget, the sequence establishes a
/// verdict on the wrong side of these inputs' mean rate (mean of p_i) in
/// at most α of runs — at the minimum with ICC 0 (every p_i = 0.95) and
/// with ICC 0.3 — and with 0.98 against 0.95 at 50 × 50 it settles a pass
/// for well under the budget. 200 runs a cell (bench/sequential.sh runs
/// the full grid).
#[test]
fn output_rounds_hold_alpha_and_save_samples() {
    use probity_core::sequential::{design_for, RoundDesign};
    assert_eq!(design_for(20), RoundDesign::Outputs);
    assert_eq!(design_for(400), RoundDesign::Inputs);
    for (cell, &(n, m, rho)) in [(20u64, 20u64, 0.0), (10, 50, 0.3), (50, 10, 0.1)]
        .iter()
        .enumerate()
    {
        let design = SimDesign {
            inputs: n,
            m,
            icc: rho,
            confidence: 0.95,
            concurrency: 16,
            futility: false,
        };
        let mut rng = StdRng::seed_from_u64(900 + cell as u64);
        let mut wrong = 0;
        let test = probity_core::simulate::output_rounds_test(
            &probity_core::simulate::sim_checks(&[0.95]),
            &design,
        )
        .unwrap();
        for _ in 0..200 {
            let r = probity_core::simulate::simulate_output_rounds_with(
                &mut rng,
                &[0.95],
                &test,
                &design,
                |rng, p, n| {
                    (0..n)
                        .map(|_| probity_core::simulate::input_rate(rng, p, rho))
                        .collect()
                },
            )
            .unwrap();
            let mu = r.true_means[0];
            wrong += match r.states[0] {
                SequenceState::Pass => usize::from(mu < 0.95 - 1e-12),
                SequenceState::Fail => usize::from(mu >= 0.95 - 1e-12),
                _ => 0,
            };
            if rho == 0.0 {
                assert!((mu - 0.95).abs() < 1e-12, "{mu}");
            }
        }
        // 5 % of 200 is 10; binomial(200, 0.05) exceeds 17 with
        // probability < 0.2 %.
        assert!(wrong <= 17, "{n}x{m} rho {rho}: {wrong} wrong of 200");
    }
    let design = SimDesign {
        inputs: 50,
        m: 50,
        icc: 0.1,
        confidence: 0.95,
        concurrency: 16,
        futility: true,
    };
    let cost = sequential_cost(&[0.98], &[0.95], &design, 100, 3).unwrap();
    assert!(
        cost.mean_samples < 0.5 * cost.budget_samples as f64,
        "{cost:?}"
    );
    assert!(cost.established_fail[0] == 0.0, "{cost:?}");
}

/// A round's batch bet: with one bet for the whole batch, the capital of a
/// batch is the product of its factors at that bet (checked against the
/// formula on a small batch).
#[test]
fn a_batch_is_bet_on_at_one_stake() {
    let mut a = BettingSequence::new(0.95, &[0.9]).unwrap();
    let lambda = a.next_bet().min(BET_CAP / 0.9);
    a.observe_batch(&[1.0, 1.0, 0.0, 1.0]).unwrap();
    let expected: f64 = [1.0f64, 1.0, 0.0, 1.0]
        .iter()
        .map(|x| (lambda * (x - 0.9)).ln_1p())
        .sum();
    let got = a.ln_capital_at(0.9, true).unwrap();
    assert!((got - expected).abs() < 1e-12, "{got} {expected}");
    assert_eq!(a.observations(), 4);
    assert!(a.observe_batch(&[1.5]).is_err());
}

/// `could_settle` answers what feeding the favourable outcomes does: for
/// random histories of 10-output batches against 0.95, it says a pass is
/// reachable in the remaining batches exactly when feeding them all
/// passing does establish it (and likewise a fail with all failing), and
/// one failure in a 10 × 10 budget already makes a pass unreachable.
#[test]
fn could_settle_is_what_the_favourable_outcomes_do() {
    let mut rng = StdRng::seed_from_u64(77);
    let mut compared = 0;
    for case in 0..300 {
        let cap = if case % 2 == 0 {
            BET_CAP
        } else {
            probity_core::stats::sequential::OUTPUT_ROUND_BET_CAP
        };
        let mut s = BettingSequence::new(0.95, &[0.95])
            .unwrap()
            .with_cap(cap)
            .unwrap();
        let rounds = 10usize;
        let seen = (case / 2) % rounds;
        let p = [0.9, 0.97, 1.0][case % 3];
        for _ in 0..seen {
            let batch: Vec<f64> = (0..10)
                .map(|_| f64::from(u8::from(rng.gen::<f64>() < p)))
                .collect();
            s.observe_batch(&batch).unwrap();
        }
        let rest = vec![10usize; rounds - seen];
        for (above, x) in [(true, 1.0), (false, 0.0)] {
            let mut fed = s.clone();
            for &b in &rest {
                fed.observe_batch(&vec![x; b]).unwrap();
            }
            if fed.is_empty() {
                // Every value rejected (the hull stays the last non-empty
                // one): no verdict to compare.
                continue;
            }
            let iv = fed.interval();
            let settled = if above {
                iv.lower >= 0.95
            } else {
                iv.upper < 0.95
            };
            assert_eq!(
                s.could_settle(0.95, above, 10, rest.len()),
                settled,
                "case {case}: seen {seen} rounds at {p}, above {above}"
            );
            compared += 1;
        }
    }
    // At least 400 (500 before issue 35 item 2): with a round's stake
    // sized for its batch, more histories of passes followed by nothing
    // but failures reject every value (those are skipped above).
    assert!(compared >= 400, "{compared} of 600 compared");
    let mut one_failure = BettingSequence::new(0.95, &[0.95])
        .unwrap()
        .with_cap(probity_core::stats::sequential::OUTPUT_ROUND_BET_CAP)
        .unwrap();
    assert!(one_failure.could_settle(0.95, true, 10, 10));
    let mut batch = vec![1.0; 10];
    batch[3] = 0.0;
    one_failure.observe_batch(&batch).unwrap();
    assert!(!one_failure.could_settle(0.95, true, 10, 9));
    assert!(BettingSequence::new(0.95, &[])
        .unwrap()
        .with_cap(1.0)
        .is_err());
}

/// The group-sequential design of output rounds against an independent
/// implementation (`bench/sequential_reference.py`, scipy): exact binomial
/// boundaries with linear alpha spending for 10 × 10 (10 looks), 20 × 24
/// and 50 × 11 at 0.95, the error at the minimum (both sides, every
/// output at 0.95) and the chance of a pass at 0.98 and of a fail at 0.92
/// — each at least the fixed run's on N × M (Clopper–Pearson), which is
/// why [`max_rounds`] gives 20 × 20 four more rounds.
#[test]
fn group_sequential_matches_scipy() {
    use probity_core::stats::sequential_group::{boundaries, crossing, max_rounds};
    type Case = (u64, u64, u64, [f64; 5], Vec<i64>, Vec<i64>);
    let cases: Vec<Case> = vec![
        (
            10,
            10,
            10,
            [0.038513, 0.198649, 0.132620, 0.219363, 0.175667],
            vec![11, 21, 31, 41, 51, 61, 71, 80, 90, 100],
            vec![6, 15, 24, 33, 42, 52, 61, 70, 79, 89],
        ),
        (
            20,
            20,
            24,
            [0.048062, 0.915790, 0.890267, 0.704608, 0.670065],
            vec![
                21, 41, 61, 81, 101, 120, 139, 159, 179, 198, 217, 236, 256, 275, 295, 314, 333,
                352, 371, 391, 410, 429, 448, 467,
            ],
            vec![
                14, 32, 50, 69, 87, 106, 125, 143, 162, 180, 199, 218, 237, 255, 274, 293, 312,
                330, 349, 368, 387, 406, 424, 443,
            ],
        ),
        (
            50,
            10,
            11,
            [0.048477, 0.956144, 0.953003, 0.773169, 0.767747],
            vec![51, 101, 149, 198, 246, 294, 342, 391, 438, 487, 534],
            vec![41, 87, 134, 181, 227, 274, 321, 368, 415, 463, 509],
        ),
    ];
    for (n, m, k, [error, pass, fixed_pass, fail, fixed_fail], upper, lower) in cases {
        assert_eq!(max_rounds(0.95, 0.95, n, m).unwrap(), k, "{n} x {m}");
        let b = boundaries(0.05, 0.95, &vec![n; k as usize], n * k, k as usize);
        assert_eq!(b.iter().map(|x| x.upper).collect::<Vec<_>>(), upper);
        assert_eq!(b.iter().map(|x| x.lower).collect::<Vec<_>>(), lower);
        let (u, d) = crossing(&b, 0.95);
        assert!(
            (u + d - error).abs() < 2e-6 && u + d <= 0.05,
            "{n}: {}",
            u + d
        );
        let close = |a: f64, b: f64| (a - b).abs() < 2e-6;
        assert!(close(crossing(&b, 0.98).0, pass), "{n}");
        assert!(close(crossing(&b, 0.92).1, fail), "{n}");
        assert!(pass >= fixed_pass && fail >= fixed_fail);
    }
}

/// Issue 35 item 2 on a small grid (bench/sequential.sh … few runs the
/// whole one): with output rounds, a sequential run establishes the
/// verdict the fixed run of N × M establishes on the same draws at least
/// as often (within 2 SE of the paired difference), for true rates 3
/// points from the minimum, under Beta input difficulty (ICC 0.3) and a
/// two-point mixture (90 % of inputs at 0.99, 10 % at 0.70); the mean
/// savings over the runs that reached the verdict are at least 40 %
/// overall; and at the minimum the wrong verdicts (against these inputs'
/// mean) stay within α.
#[test]
fn output_rounds_reach_the_fixed_verdict_as_often() {
    use probity_core::simulate::{
        input_rate, mixture_rates, output_rounds_test, sim_checks, simulate_output_rounds_with,
    };
    use probity_core::stats::{proportion_interval, IntervalMethod};
    let runs = 200u64;
    let (mut saved, mut verdicts) = (0.0, 0u64);
    // (N, M, mixture?, minimum, true rate)
    let cells = [
        (10u64, 20u64, false, 0.95, 0.92),
        (20, 10, false, 0.95, 0.98),
        (20, 20, true, 0.931, 0.961),
        (20, 20, true, 0.991, 0.961),
    ];
    for (cell, &(n, m, mix, minimum, p)) in cells.iter().enumerate() {
        let design = SimDesign {
            inputs: n,
            m,
            icc: 0.3,
            confidence: 0.95,
            concurrency: 16,
            futility: true,
        };
        let draw = |rng: &mut StdRng, p: f64, n: usize| {
            if mix {
                mixture_rates(rng, n, 0.1, 0.7, 0.99)
            } else {
                (0..n).map(|_| input_rate(rng, p, 0.3)).collect()
            }
        };
        let mut rng = StdRng::seed_from_u64(3500 + cell as u64);
        let right = if p > minimum {
            SequenceState::Pass
        } else {
            SequenceState::Fail
        };
        let test = output_rounds_test(&sim_checks(&[minimum]), &design).unwrap();
        let (mut seq, mut fixed, mut diff_sq) = (0i64, 0i64, 0.0);
        for _ in 0..runs {
            let r = simulate_output_rounds_with(&mut rng, &[p], &test, &design, draw).unwrap();
            let x: u64 = r.passes[0].iter().sum();
            let iv = proportion_interval(
                x as f64,
                (n * m) as f64,
                0.95,
                IntervalMethod::ClopperPearson,
            );
            let f = i64::from(if p > minimum {
                iv.lower >= minimum
            } else {
                iv.upper < minimum
            });
            let s = i64::from(r.states[0] == right);
            if s == 1 {
                saved += 1.0 - r.samples as f64 / (n * m) as f64;
                verdicts += 1;
            }
            seq += s;
            fixed += f;
            diff_sq += ((s - f) * (s - f)) as f64;
        }
        let d = (seq - fixed) as f64 / runs as f64;
        let se = ((diff_sq / runs as f64 - d * d).max(0.0) / runs as f64).sqrt();
        assert!(
            d >= -2.0 * se,
            "{n} x {m} at {p} against {minimum}: sequential {seq}, fixed {fixed} of {runs}"
        );
        // Wrong verdicts at the minimum, no futility stop.
        let at = SimDesign {
            futility: false,
            ..design
        };
        let mu = if mix { 0.961 } else { 0.95 };
        let test = output_rounds_test(&sim_checks(&[mu]), &at).unwrap();
        let mut wrong = 0;
        for _ in 0..runs {
            let r = simulate_output_rounds_with(&mut rng, &[mu], &test, &at, draw).unwrap();
            let truth = r.true_means[0];
            wrong += match r.states[0] {
                SequenceState::Pass => u32::from(truth < mu),
                SequenceState::Fail => u32::from(truth >= mu),
                _ => 0,
            };
        }
        // 5 % of 200 is 10; binomial(200, 0.05) exceeds 17 with
        // probability < 0.2 %.
        assert!(
            wrong <= 17,
            "{n} x {m} at the minimum: {wrong} wrong of {runs}"
        );
    }
    let mean = saved / verdicts.max(1) as f64;
    assert!(
        mean >= 0.4,
        "saved {mean} over {verdicts} runs with a verdict"
    );
}

/// The request at which one seeded stream of 0/1 outcomes (1 with
/// probability `p`) first puts the sequence on `p`'s side of `threshold`:
/// its lower end at or above it, or its upper end below it.
fn first_clear(p: f64, threshold: f64, confidence: f64, rng: &mut StdRng, cut: u64) -> u64 {
    let mut s = BettingSequence::new(confidence, &[threshold]).unwrap();
    for n in 1..=cut {
        s.observe(if rng.gen::<f64>() < p { 1.0 } else { 0.0 })
            .unwrap();
        let i = s.interval();
        if (p > threshold && i.lower >= threshold) || (p < threshold && i.upper < threshold) {
            return n;
        }
    }
    cut
}

#[test]
fn the_request_projection_is_near_the_median_stream() {
    // A live watch observes one 0/1 outcome a request. Against the median
    // first clearing of 41 seeded streams, the exact-Bernoulli projection
    // is 0.99, 1.00, 0.94 and 1.17 × the median here (asserted within
    // 0.75–1.5 ×: a median of 41 moves by ~15 %); the second-order one
    // (made for per-input shares) is 0.65, 0.60, 0.63 and 0.79 ×, which
    // told a serve user "~N requests" that did not settle it.
    let mut rng = StdRng::seed_from_u64(7);
    for (p, threshold, confidence) in [
        (0.765, 0.745, 0.9875),
        (0.9, 0.85, 0.975),
        (0.8, 0.7, 0.975),
        (0.05, 0.12, 0.975),
    ] {
        let alpha = 1.0 - confidence;
        let projected = projected_requests(alpha, BET_CAP, p, threshold, 100_000_000).unwrap();
        let quadratic = projected_observations(
            alpha,
            BET_CAP,
            p,
            p * (1.0 - p),
            threshold,
            0,
            0.0,
            100_000_000,
        )
        .unwrap();
        let mut firsts: Vec<u64> = (0..41)
            .map(|_| first_clear(p, threshold, confidence, &mut rng, 20 * projected))
            .collect();
        firsts.sort_unstable();
        let median = firsts[20] as f64;
        let ratio = projected as f64 / median;
        assert!(
            (0.75..=1.5).contains(&ratio),
            "p {p}, threshold {threshold}: projected {projected}, median {median}"
        );
        assert!(
            (quadratic as f64) < 0.8 * projected as f64,
            "p {p}: second order {quadratic}, exact {projected}"
        );
    }
    // Where it cannot be reached within the limit, or the rate is the
    // threshold: none.
    assert_eq!(projected_requests(0.05, BET_CAP, 0.9, 0.9, 1_000_000), None);
    assert_eq!(
        projected_requests(0.05, BET_CAP, 0.9001, 0.9, 1_000_000),
        None
    );
    assert!(projected_requests(0.05, BET_CAP, 0.9001, 0.9, 100_000_000_000).is_some());
}

/// Issue 35 item 3: `probity plan`'s fixed size for a power reaches that
/// power under the interval and verdict the run uses. The check is the
/// test's own simulation (`tests/sim`, another seed than the plan's),
/// with the run's default
/// interval (`RateEstimate::try_clustered`, `ClusterMethod::Profile`) and
/// verdict (`judge`, three-way). 300 runs: Monte Carlo SE of an 80 % power
/// 2.3 points; the test allows 2.5 SE below the target (the plan searches
/// with 100 runs here, SE 4 points, to keep the test short).
#[test]
fn plan_sizes_reach_their_power() {
    use probity_core::simulate::plan::fixed_inputs_for_power;
    use probity_core::stats::{judge, ClusterMethod, IntervalMethod, RateEstimate, VerdictMode};
    let power = 0.8;
    let runs = 300;
    let se = (power * (1.0 - power) / runs as f64).sqrt();
    for &(p, threshold, m, icc) in &[(0.85, 0.70, 5u64, 0.1), (0.60, 0.80, 5, 0.2)] {
        let n = fixed_inputs_for_power(p, threshold, m, icc, 0.95, power, 100, 1)
            .unwrap()
            .unwrap();
        assert!((5..500).contains(&n), "{p} vs {threshold}: {n}");
        let right = if p > threshold {
            Decision::Pass
        } else {
            Decision::Fail
        };
        // Runs of `inputs` × m (seeded) that establish the right verdict
        // with the run's default interval and three-way verdict.
        let established = |seed: u64, inputs: usize| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..runs)
                .filter(|_| {
                    let (clusters, counts) = crate::sim::replicate(&mut rng, p, icc, inputs, m);
                    let rate = RateEstimate::try_clustered(
                        &clusters,
                        counts,
                        0.95,
                        IntervalMethod::Wilson,
                        ClusterMethod::Profile,
                    )
                    .unwrap();
                    let v = judge(
                        &rate,
                        threshold,
                        VerdictMode::ThreeWay,
                        IntervalMethod::Wilson,
                    );
                    v.established && v.decision == right
                })
                .count()
        };
        let hit = established(4242, n as usize);
        let got = hit as f64 / runs as f64;
        assert!(
            got >= power - 2.5 * se,
            "{p} vs {threshold}, {n} x {m}, ICC {icc}: power {got:.3} < {power}"
        );
        // And not far beyond what it needs: at half the inputs the power
        // is below the target.
        let hit = established(4243, (n / 2) as usize);
        assert!(
            (hit as f64 / runs as f64) < power,
            "{p} vs {threshold}: {} inputs already reach {power}",
            n / 2
        );
    }
}
