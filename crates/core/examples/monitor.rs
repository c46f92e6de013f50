//! The live monitor's figures (docs/serve.md, Monitoring; STATISTICS.md,
//! Monitoring), by simulation where the truth is known:
//!
//! 1. false alarms per million requests at a constant rate at the minimum
//!    (0.95) and above it (0.97): below-minimum alarms raised, and rate
//!    changes reported (a sequence that emptied), over STREAMS streams of
//!    MILLIONS million requests each; the detector's bound is ≤ 1 per
//!    million per watch;
//! 2. detection delay, one stream changing three times: 99% for 5,000
//!    requests, a drop of 5 or 10 points (to 94% or 89%, minimum 95%)
//!    until the alarm, back to 99% until it resolves and 5,000 more; the
//!    requests from each drop to its alarm, for the first and the third
//!    incident (median, 90th percentile, worst over STREAMS streams).
//!
//! `cargo run --release -p probity-core --example monitor [STREAMS [MILLIONS]]`

use probity_core::monitor::{AlarmKind, AlarmState, RateWatch, WatchSettings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let streams = arg(1, 20);
    let millions = arg(2, 1);
    let settings = WatchSettings::default();
    println!(
        "confidence {}, epoch {} requests, window {}, {streams} streams each",
        settings.confidence, settings.epoch, settings.window
    );
    for p in [0.95, 0.97] {
        let (mut below, mut changed) = (0u64, 0u64);
        for s in 0..streams {
            let mut rng = StdRng::seed_from_u64(s);
            let mut w = RateWatch::new(settings, Some(0.95), None).expect("settings");
            for _ in 0..millions * 1_000_000 {
                for a in w.observe(rng.gen::<f64>() < p).expect("observe") {
                    match (a.kind, a.state) {
                        (AlarmKind::BelowMinimum, AlarmState::Raised) => below += 1,
                        (AlarmKind::RateChanged, _) => changed += 1,
                        _ => {}
                    }
                }
            }
        }
        let per_million = |n: u64| n as f64 / (streams * millions) as f64;
        println!(
            "rate {p} (minimum 0.95), {} million requests in all: {below} below-minimum alarms ({:.2} per million; bound ≤ 1), {changed} rate changes reported ({:.2} per million)",
            streams * millions,
            per_million(below),
            per_million(changed),
        );
    }
    for drop in [0.05, 0.10] {
        let low = 0.99 - drop;
        let (mut first, mut third) = (Vec::new(), Vec::new());
        for s in 0..streams {
            let mut rng = StdRng::seed_from_u64(1_000_000 + s);
            let mut w = RateWatch::new(settings, Some(0.95), None).expect("settings");
            for incident in 1..=3 {
                for _ in 0..5_000 {
                    let _ = w.observe(rng.gen::<f64>() < 0.99);
                }
                let delay = (1..=1_000_000u64).find(|_| {
                    w.observe(rng.gen::<f64>() < low)
                        .expect("observe")
                        .iter()
                        .any(|a| a.kind == AlarmKind::BelowMinimum && a.state == AlarmState::Raised)
                });
                let delay = delay.unwrap_or(u64::MAX);
                match incident {
                    1 => first.push(delay),
                    3 => third.push(delay),
                    _ => {}
                }
                // Back to 99% until the alarm resolves.
                while !w.active().is_empty() {
                    let _ = w.observe(rng.gen::<f64>() < 0.99);
                }
            }
        }
        for (name, mut d) in [("first", first), ("third", third)] {
            d.sort_unstable();
            let at = |q: f64| d[((d.len() as f64 - 1.0) * q).round() as usize];
            println!(
                "99% → {:.0}% (minimum 95%), {name} incident: alarm after a median of {} requests, 90th percentile {}, worst {}",
                100.0 * low,
                at(0.5),
                at(0.9),
                at(1.0)
            );
        }
    }
}
