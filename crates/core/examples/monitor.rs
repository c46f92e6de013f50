//! The live monitor's figures (docs/serve.md, Monitoring; STATISTICS.md,
//! Monitoring), by simulation where the truth is known:
//!
//! 1. false alarms: the share of streams of 100,000 requests that ever
//!    alarm while their rate sits at the minimum (0.95) or above it (0.97);
//!    the guarantee is ≤ α = 0.05;
//! 2. detection: 10,000 requests at 97%, then 90% against a 95% minimum:
//!    requests from the drop to the alarm, median and 90th percentile.
//!
//! `cargo run --release -p probity-core --example monitor [STREAMS]`

use probity_core::monitor::{RateWatch, WatchSettings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn main() {
    let streams: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let settings = WatchSettings::default();
    println!(
        "confidence {}, epoch {} requests, {streams} streams each",
        settings.confidence, settings.epoch
    );
    for p in [0.95, 0.97] {
        let mut alarmed = 0;
        for s in 0..streams {
            let mut rng = StdRng::seed_from_u64(s);
            let mut w = RateWatch::new(settings, Some(0.95), None).expect("settings");
            for _ in 0..100_000 {
                if !w.observe(rng.gen::<f64>() < p).expect("observe").is_empty() {
                    alarmed += 1;
                    break;
                }
            }
        }
        println!(
            "rate {p} (minimum 0.95), 100,000 requests: {alarmed} of {streams} streams ever alarmed ({:.1}%; guarantee ≤ 5%)",
            100.0 * alarmed as f64 / streams as f64
        );
    }
    let mut delays = Vec::new();
    for s in 0..streams {
        let mut rng = StdRng::seed_from_u64(1_000_000 + s);
        let mut w = RateWatch::new(settings, Some(0.95), None).expect("settings");
        for _ in 0..10_000 {
            let _ = w.observe(rng.gen::<f64>() < 0.97);
        }
        let mut delay = None;
        for i in 1..=100_000u64 {
            if !w
                .observe(rng.gen::<f64>() < 0.90)
                .expect("observe")
                .is_empty()
            {
                delay = Some(i);
                break;
            }
        }
        delays.push(delay.unwrap_or(u64::MAX));
    }
    delays.sort_unstable();
    let at = |q: f64| delays[((delays.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "97% → 90% after 10,000 requests (minimum 95%): alarm after a median of {} requests, 90th percentile {}, worst {}",
        at(0.5),
        at(0.9),
        at(1.0)
    );
}
