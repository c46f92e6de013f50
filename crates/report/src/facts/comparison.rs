//! A comparison's figures as every format says them: changes in
//! percentage points (`B − A`, positive is better), the settings and
//! inputs it was made with, and each check's figures.

use crate::document::info::RunInfo;
use crate::numbers::{interval, pct, plural, threshold_pct, trim_number};
use probity_core::compare::{Basis, CheckComparison, Comparison, Direction};
use probity_core::stats::{Difference, MultipleTesting};

/// A change in percentage points, signed: `+1.2`, `-14.7`, `0.0`.
pub fn points(d: f64) -> String {
    if !d.is_finite() {
        return "–".to_string();
    }
    let v = d * 100.0;
    let s = format!("{v:+.1}");
    if s == "+0.0" || s == "-0.0" {
        "0.0".to_string()
    } else {
        s
    }
}

/// `[-18.0, -11.4]` in points.
pub fn points_interval(d: &Difference) -> String {
    format!(
        "[{}, {}]",
        points(d.interval.lower),
        points(d.interval.upper)
    )
}

/// The verdict on a check, as the terminal shows it: `IMPROVED`,
/// `REGRESSED`, `no detectable change`, `no data`.
pub fn word(d: Direction) -> &'static str {
    match d {
        Direction::Improved => "IMPROVED",
        Direction::Regressed => "REGRESSED",
        Direction::NoDetectableChange => "no detectable change",
        Direction::NoData => "no data",
    }
}

/// `baseline (A)  run 3 name (created, system)`; `clean` escapes the run's
/// text for the medium.
pub fn run_line(label: &str, r: &RunInfo, clean: &dyn Fn(&str) -> String) -> String {
    let sys = r.system_label.clone();
    format!(
        "{label} run {} {} ({}{}{})",
        r.id,
        clean(&r.name),
        clean(&r.created_at),
        if sys.is_empty() { "" } else { ", " },
        clean(&sys)
    )
}

/// How the inputs of the two runs pair up, as one sentence.
pub fn inputs_line(c: &Comparison) -> String {
    format!(
        "{} shared {} paired by id; {} only in baseline, {} only in candidate (left out of the paired part)",
        c.shared_inputs,
        plural(c.shared_inputs, "input"),
        c.only_baseline_inputs,
        c.only_candidate_inputs
    )
}

/// What a change is and the settings of its intervals, as one sentence,
/// ending with the correction across checks ([`correction_line`]).
pub fn settings_line(c: &Comparison) -> String {
    format!(
        "change = candidate − baseline in percentage points; {} intervals; smallest detectable change at α = {} and {} power; {}",
        threshold_pct(c.options.confidence),
        trim_number(1.0 - c.options.confidence, 4),
        threshold_pct(c.options.power),
        correction_line(c)
    )
}

/// The correction applied across the checks compared: `p-values
/// Holm-adjusted across 3 checks (the chance that any check is flagged
/// when nothing changed is at most α)`, or `no correction across 3 checks:
/// control of the false-regression rate across K checks is off`.
pub fn correction_line(c: &Comparison) -> String {
    let k = c.checks.len();
    match c.options.multiple {
        MultipleTesting::Holm => format!(
            "p-values Holm-adjusted across {k} {} (the chance that any check is flagged when nothing changed is at most α)",
            plural(k, "check")
        ),
        MultipleTesting::None => format!(
            "no correction across {k} {}: control of the false-regression rate across K checks is off",
            plural(k, "check")
        ),
    }
}

/// The correction's name as JSON writes it: `holm` or `none`.
pub fn correction_name(m: MultipleTesting) -> &'static str {
    match m {
        MultipleTesting::Holm => "holm",
        MultipleTesting::None => "none",
    }
}

/// A p-value: `0.012`, `<0.0001`, `1`.
pub fn p_value(p: f64) -> String {
    if !p.is_finite() {
        "–".to_string()
    } else if p < 0.0001 {
        "<0.0001".to_string()
    } else {
        trim_number(p, 4)
    }
}

/// `p = 0.012, Holm-adjusted 0.036` (or `uncorrected` under
/// `MultipleTesting::None`).
pub fn p_line(c: &CheckComparison, m: MultipleTesting) -> String {
    match m {
        MultipleTesting::Holm => format!(
            "p = {}, Holm-adjusted {}",
            p_value(c.p_value),
            p_value(c.p_adjusted)
        ),
        MultipleTesting::None => format!("p = {} (uncorrected)", p_value(c.p_value)),
    }
}

/// The figures of one check, one line each (no escaping needed but the
/// name, which is not included), the last its p-values under `m`.
pub fn check_lines(c: &CheckComparison, m: MultipleTesting) -> Vec<String> {
    let mut lines = vec![format!(
        "baseline {} {} → candidate {} {}",
        pct(c.baseline.estimate),
        interval(c.baseline.interval.lower, c.baseline.interval.upper),
        pct(c.candidate.estimate),
        interval(c.candidate.interval.lower, c.candidate.interval.upper)
    )];
    let d = c.decisive();
    let mut change = format!("change {} pts", points(d.mean_diff));
    match &c.paired {
        Some(p) => change.push_str(&format!(
            "; paired over {} {} {}{}; unpaired {}",
            c.paired_inputs,
            plural(c.paired_inputs, "input"),
            points_interval(p),
            if c.basis == Basis::Paired {
                " (decides)"
            } else {
                ""
            },
            points_interval(&c.unpaired)
        )),
        None => change.push_str(&format!(
            "; unpaired {} (no shared inputs)",
            points_interval(&c.unpaired)
        )),
    }
    lines.push(change);
    let mut mde = format!("smallest detectable change {} pts", points_abs(c.mde));
    if let Some(mp) = c.mde_paired {
        mde.push_str(&format!(
            " (paired {}, unpaired {})",
            points_abs(mp),
            points_abs(c.mde_unpaired)
        ));
    }
    if c.paired_excluded > 0 {
        mde.push_str(&format!(
            "; {} shared {} without judged outputs left out",
            c.paired_excluded,
            plural(c.paired_excluded, "input")
        ));
    }
    lines.push(mde);
    lines.push(p_line(c, m));
    lines
}

/// A size in percentage points, unsigned: `4.2`.
pub fn points_abs(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    format!("{:.1}", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_signed() {
        assert_eq!(points(-0.147), "-14.7");
        assert_eq!(points(0.012), "+1.2");
        assert_eq!(points(-0.0001), "0.0");
        assert_eq!(points(f64::NAN), "–");
    }
}
