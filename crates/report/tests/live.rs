//! A serve run's live rates in every format: the guarantee, each check's
//! first and published sequences, epoch, window and alarms — with hostile
//! check names escaped — and in JSON the same figures as the watches.

use crate::common;

use probity_core::monitor::{AttemptKind, LiveRates, WatchSettings};
use probity_core::{Cell, CheckInfo};
use probity_report::{render, Format, RunReport};

const HOSTILE: &str = "<script>alert(1)</script> | *x* \u{1b}[31m";

/// 300 requests: the first check's first attempts pass 1 in 2 (below its
/// 95% minimum: an alarm), the published ones always; the second check
/// always passes.
fn report() -> RunReport {
    let checks: Vec<CheckInfo> = [(HOSTILE, 0.95), ("polite", 0.5)]
        .iter()
        .map(|(name, minimum)| CheckInfo {
            name: name.to_string(),
            message: String::new(),
            minimum_success_percentage: *minimum,
            weight: 1.0,
            kind: Default::default(),
        })
        .collect();
    let settings = WatchSettings {
        confidence: 0.95,
        epoch: 100,
        window: 50,
    };
    let mut live = LiveRates::new(&checks, settings, &[]).unwrap();
    for i in 0..300 {
        let first = if i % 2 == 0 { Cell::Pass } else { Cell::Fail };
        live.observe(AttemptKind::First, &[first, Cell::Pass]);
        live.observe(AttemptKind::Published, &[Cell::Pass, Cell::Pass]);
    }
    let mut r = common::report();
    r.live = Some(live.snapshot());
    r
}

#[test]
fn every_format_shows_the_live_rates_and_the_alarm() {
    let r = report();
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render(&r, format, false);
        assert!(out.contains("Live rates"), "{format:?}:\n{out}");
        assert!(
            out.contains("live traffic: 300 requests; confidence sequences at 95%"),
            "{format:?}:\n{out}"
        );
        assert!(out.contains("BELOW 95%"), "{format:?}:\n{out}");
        // The window: the last 50 of 300 requests.
        assert!(
            out.contains("50.0% [36.6, 63.4] of 50"),
            "{format:?}:\n{out}"
        );
        // The current epoch: the third, all 100 requests.
        assert!(out.contains("of 100 (epoch 3)"), "{format:?}:\n{out}");
        if format != Format::Text {
            assert!(!out.contains("<script>alert"), "{format:?}");
        }
        assert!(!out.contains('\u{1b}'), "{format:?}");
    }
}

#[test]
fn the_json_report_carries_the_watches() {
    let r = report();
    let v: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let l = &v["live"];
    assert_eq!(l["requests"], 300);
    assert_eq!(
        (l["epoch"].as_u64(), l["window"].as_u64()),
        (Some(100), Some(50))
    );
    let c = &l["checks"][0];
    assert_eq!(c["name"], HOSTILE);
    let snap = &r.live.as_ref().unwrap().checks[0];
    assert_eq!(c["first"]["rate"], 0.5);
    assert_eq!(c["first"]["all"]["upper"], snap.first.all.upper);
    assert!(snap.first.all.upper < 0.95);
    assert_eq!(c["first"]["alarms"][0]["kind"], "below_minimum");
    assert_eq!(c["published"]["rate"], 1.0);
    assert_eq!(c["published"]["alarms"].as_array().unwrap().len(), 0);
    // 300 requests in epochs of 100, and one more at the detected drop.
    assert_eq!(c["first"]["recent"]["epoch"], snap.first.epoch_number);
    assert_eq!(snap.first.epoch_number, 4);
    assert_eq!(c["first"]["window"]["requests"], 50);
    // Another run: null.
    let other = render(&common::report(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&other).unwrap();
    assert!(v["live"].is_null());
}
