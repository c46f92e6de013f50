//! SVG drawing shared by the HTML pages: colours and colour scales, the
//! primitives every chart is made of (the `<svg>` element with its
//! accessible label, a bar's track, an interval, a point, a dashed
//! marker, axis ticks), and the charts built from them: interval bars of
//! a rate or a band against a scale, the difference bar of a comparison,
//! and the line chart of a trend.
//!
//! Charts are hand-written SVG rather than a plotting crate (plotters'
//! SVG backend): they are rectangles, lines and text; hand-written SVG is
//! smaller, compiles with no dependency, and lets every mark carry a
//! `<title>` with its exact figures and stay legible in print. Every label
//! taken from a run goes through [`html_escape`].

use crate::document::trend::{TrendReport, TrendRun};
use crate::facts::comparison::{points, points_interval};
use crate::numbers::{interval, pct, pct_num, threshold_pct, trim_number};
use crate::sanitize::html_escape;
use probity_core::compare::{CheckComparison, Comparison, Direction};
use probity_core::guarded::Band;
use probity_core::stats::Decision;
use probity_core::RateEstimate;
use std::fmt::Write;

// ---------------------------------------------------------------- colours

pub const PASS: &str = "#15803d";
pub const FAIL: &str = "#b91c1c";
pub const UNDECIDED: &str = "#b45309";
pub const NEUTRAL: &str = "#1d4ed8";
/// Marks that carry no verdict (a model that is not the deciding one, no
/// detectable change).
pub const GREY: &str = "#6b7280";

/// The colour of a decision.
pub fn decision_colour(d: Decision) -> &'static str {
    match d {
        Decision::Pass => PASS,
        Decision::Fail => FAIL,
        Decision::Inconclusive => UNDECIDED,
    }
}

/// The colour of a success rate: dark red at 0, red, amber at 80 %,
/// yellow at 90 %, light green at 97 %, green at 100 %. Most of the scale
/// is spent above 80 %, where reliability targets live.
pub fn rate_rgb(p: f64) -> (u8, u8, u8) {
    const STOPS: [(f64, (f64, f64, f64)); 6] = [
        (0.0, (127.0, 29.0, 29.0)),
        (0.5, (220.0, 38.0, 38.0)),
        (0.8, (245.0, 158.0, 11.0)),
        (0.9, (250.0, 204.0, 21.0)),
        (0.97, (134.0, 239.0, 172.0)),
        (1.0, (22.0, 163.0, 74.0)),
    ];
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    for w in STOPS.windows(2) {
        let (a, ca) = w[0];
        let (b, cb) = w[1];
        if p <= b {
            let t = if b > a { (p - a) / (b - a) } else { 0.0 };
            let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
            return (mix(ca.0, cb.0), mix(ca.1, cb.1), mix(ca.2, cb.2));
        }
    }
    (22, 163, 74)
}

/// Whether dark text reads better than white on `rgb`.
pub fn dark_text_on(rgb: (u8, u8, u8)) -> bool {
    let l = 0.2126 * rgb.0 as f64 + 0.7152 * rgb.1 as f64 + 0.0722 * rgb.2 as f64;
    l > 140.0
}

/// The colour of a phi coefficient: white at 0, orange towards +1, blue
/// towards −1.
pub fn phi_rgb(v: f64) -> (u8, u8, u8) {
    let v = v.clamp(-1.0, 1.0);
    let white = (248.0, 250.0, 252.0);
    let end = if v >= 0.0 {
        (234.0, 88.0, 12.0)
    } else {
        (37.0, 99.0, 235.0)
    };
    let t = v.abs();
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    (
        mix(white.0, end.0),
        mix(white.1, end.1),
        mix(white.2, end.2),
    )
}

/// `#rrggbb`.
pub fn rgb_hex(c: (u8, u8, u8)) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The colour scale of success rates as a legend.
pub fn legend_rates() -> String {
    let mut h = String::new();
    let stops = [0.0, 0.25, 0.5, 0.65, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99, 1.0];
    let w = 44.0;
    let _ = write!(
        &mut h,
        "<svg class=\"legend\" width=\"{}\" height=\"38\" role=\"img\" aria-label=\"colour scale of success rates, from dark red at 0% through amber at 80% and yellow at 90% to green at 100%\"><title>colour scale of success rates</title>",
        stops.len() as f64 * w + 90.0
    );
    for (n, p) in stops.iter().enumerate() {
        let x = n as f64 * w;
        let c = rate_rgb(*p);
        let _ = write!(
            &mut h,
            "<rect x=\"{x}\" y=\"0\" width=\"{w}\" height=\"18\" fill=\"{}\" stroke=\"#fff\"/><text x=\"{}\" y=\"32\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">{}%</text>",
            rgb_hex(c),
            x + w / 2.0,
            trim_number(p * 100.0, 1)
        );
    }
    let x = stops.len() as f64 * w + 8.0;
    let _ = writeln!(
        &mut h,
        "<rect x=\"{x}\" y=\"0\" width=\"{w}\" height=\"18\" fill=\"#e5e7eb\" stroke=\"#9ca3af\" stroke-dasharray=\"2 2\"/><text x=\"{}\" y=\"32\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">none judged</text></svg>",
        x + w / 2.0
    );
    h
}

// ---------------------------------------------------------------- primitives

/// The opening `<svg>` element of a chart `width` × `height` with an
/// accessible `label` (escaped here), and the label as its `<title>` when
/// `titled`.
pub fn open(class: Option<&str>, width: f64, height: f64, label: &str, titled: bool) -> String {
    let class = class.map_or(String::new(), |c| format!(" class=\"{c}\""));
    let label = html_escape(label);
    let title = if titled {
        format!("<title>{label}</title>")
    } else {
        String::new()
    };
    format!(
        "<svg{class} width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{label}\">{title}"
    )
}

/// The grey track of a bar, from `x` over `width`.
pub fn track(x: f64, width: f64) -> String {
    format!("<rect x=\"{x}\" y=\"8\" width=\"{width:.1}\" height=\"2\" fill=\"#e5e7eb\"/>")
}

/// An interval on a bar, from `x` over `width`.
pub fn interval_span(x: f64, width: f64, colour: &str) -> String {
    format!(
        "<rect x=\"{x:.1}\" y=\"4\" width=\"{width:.1}\" height=\"10\" rx=\"2\" fill=\"{colour}\" fill-opacity=\"0.35\" stroke=\"{colour}\"/>"
    )
}

/// A point estimate on a bar.
pub fn dot(x: f64, colour: &str) -> String {
    format!("<circle cx=\"{x:.1}\" cy=\"9\" r=\"3.5\" fill=\"{colour}\"/>")
}

/// A dashed vertical marker (a minimum, zero) across a bar `height` high.
pub fn marker(x: f64, height: f64, stroke_width: f64) -> String {
    format!(
        "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"0\" y2=\"{height}\" stroke=\"#111827\" stroke-width=\"{stroke_width}\" stroke-dasharray=\"3 2\"/>"
    )
}

/// A tick of an axis at `x`, its `label` at `text_x` anchored `anchor`.
pub fn tick(x: f64, text_x: f64, anchor: &str, label: &str) -> String {
    format!(
        "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"12\" y2=\"16\" stroke=\"{GREY}\"/><text x=\"{text_x:.1}\" y=\"10\" font-size=\"10\" fill=\"#374151\" text-anchor=\"{anchor}\">{label}</text>"
    )
}

/// Where the label of a tick at `x` goes on a bar's axis: inside the
/// chart at either end, centred elsewhere.
fn tick_anchor(x: f64) -> (f64, &'static str) {
    if x < 14.0 {
        (x - 2.0, "start")
    } else if x > BAR_W - 14.0 {
        (x + 2.0, "end")
    } else {
        (x, "middle")
    }
}

// ---------------------------------------------------------------- bars

/// Left end of a shared bar scale: a tenth below the lowest value shown,
/// so intervals near 100 % are not squeezed into a sliver.
pub fn domain_low(values: impl Iterator<Item = f64>) -> f64 {
    let min = values.filter(|v| v.is_finite()).fold(1.0f64, f64::min);
    (((min - 0.02) * 10.0).floor() / 10.0).clamp(0.0, 0.9)
}

const BAR_W: f64 = 240.0;
const BAR_H: f64 = 18.0;
const BAR_PAD: f64 = 6.0;

/// Position of `v` on a bar scale `[lo, hi]`.
fn scale_x(v: f64, lo: f64, hi: f64) -> f64 {
    let v = if v.is_finite() { v.clamp(lo, hi) } else { lo };
    BAR_PAD + (v - lo) / (hi - lo) * (BAR_W - 2.0 * BAR_PAD)
}

/// A rate's interval as a bar on `[lo, 100 %]`, the point estimate as a
/// dot, the threshold (when given) as a dashed line.
pub fn bar(rate: &RateEstimate, threshold: Option<f64>, lo: f64, colour: &str) -> String {
    let mut label = if rate.n == 0 {
        "no outputs judged".to_string()
    } else {
        format!(
            "{} {} at {} confidence, n = {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper),
            threshold_pct(rate.confidence),
            rate.n
        )
    };
    if let Some(t) = threshold {
        label.push_str(&format!("; minimum {}", threshold_pct(t)));
    }
    let mut s = open(Some("bar"), BAR_W, BAR_H, &label, true);
    s.push_str(&track(BAR_PAD, BAR_W - 2.0 * BAR_PAD));
    if rate.n > 0 {
        let x0 = scale_x(rate.interval.lower, lo, 1.0);
        let x1 = scale_x(rate.interval.upper, lo, 1.0);
        s.push_str(&interval_span(x0, (x1 - x0).max(1.5), colour));
        s.push_str(&dot(scale_x(rate.estimate, lo, 1.0), colour));
    }
    if let Some(t) = threshold {
        s.push_str(&marker(scale_x(t, lo, 1.0), BAR_H, 1.5));
    }
    s.push_str("</svg>");
    s
}

/// A band as a bar on `[lo, hi]` (a point as a dot), drawn like [`bar`];
/// `behind`, when given, is shaded grey underneath (the measured interval
/// a prediction is compared with).
pub fn band_bar(
    b: &Band,
    lo: f64,
    hi: f64,
    colour: &str,
    behind: Option<&Band>,
    label: &str,
) -> String {
    let mut s = open(Some("bar"), BAR_W, BAR_H, label, true);
    s.push_str(&track(BAR_PAD, BAR_W - 2.0 * BAR_PAD));
    if let Some(m) = behind {
        let x0 = scale_x(m.lower, lo, hi);
        let x1 = scale_x(m.upper, lo, hi);
        let _ = write!(
            s,
            "<rect class=\"measured-band\" x=\"{x0:.1}\" y=\"1\" width=\"{:.1}\" height=\"16\" fill=\"#9ca3af\" fill-opacity=\"0.3\"/>",
            (x1 - x0).max(1.5)
        );
    }
    if b.estimate.is_finite() {
        let x0 = scale_x(b.lower, lo, hi);
        let x1 = scale_x(b.upper, lo, hi);
        if x1 - x0 >= 0.5 {
            s.push_str(&interval_span(x0, x1 - x0, colour));
        }
        s.push_str(&dot(scale_x(b.estimate, lo, hi), colour));
    }
    s.push_str("</svg>");
    s
}

/// The scale of a bar column of rates, for its header.
pub fn bar_axis(lo: f64) -> String {
    let mut s = open(
        Some("bar"),
        BAR_W,
        16.0,
        &format!("scale {} to 100%", pct_num(lo)),
        false,
    );
    // Round ticks counted down from 100 %, so the top is always labelled.
    let range = 1.0 - lo;
    let step = if range <= 0.1 {
        0.02
    } else if range <= 0.25 {
        0.05
    } else if range <= 0.5 {
        0.1
    } else {
        0.2
    };
    let mut ticks = Vec::new();
    let mut n = 0.0;
    while 1.0 - n * step >= lo - 1e-9 {
        ticks.push(1.0 - n * step);
        n += 1.0;
    }
    for p in ticks.into_iter().rev() {
        let x = scale_x(p, lo, 1.0);
        let (tx, anchor) = tick_anchor(x);
        s.push_str(&tick(
            x,
            tx,
            anchor,
            &format!("{}%", trim_number(p * 100.0, 1)),
        ));
    }
    s.push_str("</svg>");
    s
}

/// The scale of an attempts column: integer ticks on `[1, hi]`.
pub fn attempts_axis(hi: f64) -> String {
    let mut s = open(
        Some("bar"),
        BAR_W,
        16.0,
        &format!("scale 1 to {} attempts", trim_number(hi, 2)),
        false,
    );
    let top = hi.floor() as u32;
    let step = top.div_ceil(8).max(1);
    let mut a = 1;
    while a <= top {
        let x = scale_x(f64::from(a), 1.0, hi);
        let (tx, anchor) = tick_anchor(x);
        s.push_str(&tick(x, tx, anchor, &a.to_string()));
        a += step;
    }
    s.push_str("</svg>");
    s
}

/// A round step for about four gridlines up to `max`.
pub fn nice_step(max: u64) -> u64 {
    let raw = (max as f64 / 4.0).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|f| f * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    step.round().max(1.0) as u64
}

// ---------------------------------------------------------------- differences

const DIFF_W: f64 = 150.0;
const DIFF_PAD: f64 = 8.0;

/// Half-width of the difference scale of a comparison: the largest
/// |bound| of a deciding interval, rounded up to 5 points (at least 5, at
/// most 100).
pub fn diff_span(c: &Comparison) -> f64 {
    let m = c
        .checks
        .iter()
        .flat_map(|k| {
            let d = k.decisive();
            [
                d.interval.lower.abs(),
                d.interval.upper.abs(),
                d.mean_diff.abs(),
            ]
        })
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    ((m * 20.0).ceil() / 20.0).clamp(0.05, 1.0)
}

fn diff_x(d: f64, span: f64) -> f64 {
    let d = if d.is_finite() {
        d.clamp(-span, span)
    } else {
        0.0
    };
    DIFF_W / 2.0 + d / span * (DIFF_W / 2.0 - DIFF_PAD)
}

/// The scale of the difference column: −span, 0, +span in points.
pub fn diff_axis(span: f64) -> String {
    let mut s = open(
        None,
        DIFF_W,
        16.0,
        &format!("scale {} to {} points", points(-span), points(span)),
        false,
    );
    for (v, anchor) in [(-span, "start"), (0.0, "middle"), (span, "end")] {
        let x = diff_x(v, span);
        let tx = match anchor {
            "start" => x - 4.0,
            "end" => x + 4.0,
            _ => x,
        };
        s.push_str(&tick(x, tx, anchor, &points(v)));
    }
    s.push_str("</svg>");
    s
}

/// The deciding difference B − A of one check as an interval bar around
/// zero (dashed), coloured by its direction.
pub fn diff_bar(k: &CheckComparison, span: f64) -> String {
    let d = k.decisive();
    let colour = match k.direction {
        Direction::Regressed => FAIL,
        Direction::Improved => PASS,
        _ => GREY,
    };
    let label = format!(
        "{}: change {} pts {}",
        k.name,
        points(d.mean_diff),
        points_interval(d)
    );
    let mut s = open(None, DIFF_W, 18.0, &label, true);
    s.push_str(&track(DIFF_PAD, DIFF_W - 2.0 * DIFF_PAD));
    s.push_str(&marker(diff_x(0.0, span), 18.0, 1.0));
    if k.direction != Direction::NoData && d.mean_diff.is_finite() {
        let x0 = diff_x(d.interval.lower, span);
        let x1 = diff_x(d.interval.upper, span);
        s.push_str(&interval_span(x0, (x1 - x0).max(1.5), colour));
        s.push_str(&dot(diff_x(d.mean_diff, span), colour));
    }
    s.push_str("</svg>");
    s
}

// ---------------------------------------------------------------- trend

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;

/// The chart of check `k` of a trend over its runs: point and interval
/// per run, the line through the points, the threshold dashed.
pub fn trend_chart(t: &TrendReport, k: usize) -> String {
    let pts: Vec<(usize, &TrendRun, RateEstimate, f64)> = t
        .runs
        .iter()
        .enumerate()
        .filter_map(|(x, r)| match r.rates.get(k) {
            Some(Some((rate, th))) if rate.n > 0 => Some((x, r, *rate, *th)),
            _ => None,
        })
        .collect();
    let name = t.checks.get(k).map_or("", String::as_str);
    // Vertical domain: from below the lowest lower bound or threshold, in
    // steps of 10 %, to 100 %.
    let low = pts
        .iter()
        .flat_map(|(_, _, r, th)| [r.interval.lower, *th])
        .filter(|v| v.is_finite())
        .fold(1.0_f64, f64::min);
    let lo = ((low * 10.0).floor() / 10.0).clamp(0.0, 0.9);
    let y = |p: f64| TOP + (1.0 - (p.clamp(lo, 1.0) - lo) / (1.0 - lo)) * (H - TOP - BOTTOM);
    let n = t.runs.len().max(1);
    let step = (W - LEFT - RIGHT) / n as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let mut s = open(
        Some("trend"),
        W,
        H,
        &format!("success rate of {name} over runs"),
        true,
    );
    // Grid and axis labels: round steps counted down from 100 %, so the
    // top (where minimums usually sit) is always labelled.
    let grid_step = if 1.0 - lo > 0.5 { 0.2 } else { 0.1 };
    let grid: Vec<f64> = (0..=10)
        .map(|n| 1.0 - n as f64 * grid_step)
        .take_while(|g| *g >= lo - 1e-9)
        .collect();
    for g in grid {
        let (x2, yy, lx) = (W - RIGHT, y(g), LEFT - 6.0);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{x2:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e5e7eb\"/><text x=\"{lx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#4b5563\">{}%</text>",
            yy + 4.0,
            (g * 100.0).round()
        );
    }
    // Threshold (of the latest run that has the check).
    if let Some((_, _, _, th)) = pts.last() {
        if th.is_finite() && *th >= lo {
            let _ = write!(
                s,
                "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#b45309\" stroke-dasharray=\"5 4\"><title>minimum {2}</title></line>",
                W - RIGHT,
                y(*th),
                threshold_pct(*th)
            );
        }
    }
    // Line through the points, then interval bars and points.
    let path: Vec<String> = pts
        .iter()
        .map(|(i, _, r, _)| format!("{:.1},{:.1}", x(*i), y(r.estimate)))
        .collect();
    if path.len() > 1 {
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#93c5fd\" stroke-width=\"1.5\"/>",
            path.join(" ")
        );
    }
    for (i, r, rate, th) in &pts {
        let colour = if rate.estimate >= *th { PASS } else { FAIL };
        let tip = format!(
            "run {} ({}): {} {}, n {}",
            r.run.id,
            r.run.created_at,
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper),
            rate.n
        );
        let (cx, y1, y2, cy) = (
            x(*i),
            y(rate.interval.lower),
            y(rate.interval.upper),
            y(rate.estimate),
        );
        let _ = write!(
            s,
            "<g><title>{}</title><line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{y1:.1}\" y2=\"{y2:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"{colour}\"/></g>",
            html_escape(&tip)
        );
    }
    // Run labels on the x axis.
    let every = (t.runs.len() / 12).max(1);
    for (i, r) in t.runs.iter().enumerate() {
        if i % every == 0 || i + 1 == t.runs.len() {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">#{}</text>",
                x(i),
                H - BOTTOM + 16.0,
                r.run.id
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6b7280\">run</text></svg>",
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 6.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_scale_ends_and_is_monotone_in_green() {
        assert_eq!(rate_rgb(0.0), (127, 29, 29));
        assert_eq!(rate_rgb(1.0), (22, 163, 74));
        assert_eq!(rate_rgb(0.8), (245, 158, 11));
        assert_eq!(rate_rgb(f64::NAN), (127, 29, 29));
        assert!(dark_text_on(rate_rgb(0.9)));
        assert!(!dark_text_on(rate_rgb(0.1)));
    }

    #[test]
    fn domain_starts_below_the_lowest_value() {
        assert_eq!(domain_low([0.95, 0.97].into_iter()), 0.9);
        assert!((domain_low([0.85].into_iter()) - 0.8).abs() < 1e-9);
        assert_eq!(domain_low([0.01].into_iter()), 0.0);
        assert_eq!(domain_low(std::iter::empty()), 0.9);
    }
}
