//! A calibrated verifier's judge (paper §4; `probity_core::stats::calibration`):
//! its sensitivity and specificity on the labelled set, the rate corrected
//! for its errors beside the raw one, and a warning when the judge is too
//! weak — said the same way by every format.

use crate::numbers::{interval, pct, threshold_pct};
use probity_core::stats::{Calibrated, JudgeAccuracy, LabelNeeds, Weakness};
use probity_core::{CheckSummary, RateEstimate};
use std::borrow::Cow;

/// The rate a check's row shows: the rate corrected for the judge's
/// errors when the verdict is the corrected rate's (a calibrated verifier
/// in a fixed-size run), so the row's figure and its verdict agree; else
/// the measured rate. A sequential run's verdicts are its sequences', so
/// its rows keep the measured rate.
pub fn shown_rate(c: &CheckSummary, sequential: bool) -> Cow<'_, RateEstimate> {
    match &c.calibration {
        Some(Calibrated::Corrected(r)) if !sequential && c.rate.n > 0 => Cow::Owned(RateEstimate {
            estimate: r.estimate,
            interval: r.interval,
            ..c.rate
        }),
        _ => Cow::Borrowed(&c.rate),
    }
}

/// `judge on 300 labelled pairs: sensitivity 92.7% [88.1, 95.6] (139/150),
/// specificity 66.7% [58.8, 73.8] (100/150)` (and how many it could not
/// judge). When verdicts were read from the store instead of asked, how
/// many: `judge on 300 labelled pairs (280 reused, 20 asked): …`.
pub fn judge_line(a: &JudgeAccuracy) -> String {
    let (se, sp) = (&a.sensitivity, &a.specificity);
    let pairs = se.of + sp.of + a.counts.errors;
    let reused = match a.counts.reused {
        0 => String::new(),
        r => format!(" ({r} reused, {} asked)", pairs.saturating_sub(r)),
    };
    let mut s = format!(
        "judge on {pairs} labelled pairs{reused}: sensitivity {} {} ({}/{}), specificity {} {} ({}/{})",
        pct(se.estimate),
        interval(se.interval.lower, se.interval.upper),
        se.agreed,
        se.of,
        pct(sp.estimate),
        interval(sp.interval.lower, sp.interval.upper),
        sp.agreed,
        sp.of,
    );
    if a.counts.errors > 0 {
        s.push_str(&format!(", {} not judged (errors)", a.counts.errors));
    }
    s
}

/// The calibration's lines for check `c`, in order: the judge's accuracy,
/// the corrected rate and the judge's own (in a fixed-size run the row
/// shows the corrected one, [`shown_rate`]: `the row is corrected for the
/// judge's errors; the judge's own rate: 75.7% [66.1, 83.2]`; in a
/// sequential run the row is the sequence's: `corrected for the judge's
/// errors: 71.5% [58.9, 81.8] (not the verdict's: …)`), and — when more
/// outputs cannot settle the verdict — what the judge's errors alone
/// leave. Empty for a check that is not calibrated. The warning is apart:
/// [`warning`].
pub fn lines(c: &CheckSummary, sequential: bool) -> Vec<String> {
    let Some(cal) = &c.calibration else {
        return Vec::new();
    };
    let mut out: Vec<String> = cal.judge().map(judge_line).into_iter().collect();
    if let Calibrated::Corrected(r) = cal {
        out.push(if sequential {
            format!(
                "corrected for the judge's errors: {} {} (raw {}); not the verdict's: a sequential run's verdicts are its sequences'",
                pct(r.estimate),
                interval(r.interval.lower, r.interval.upper),
                pct(r.raw)
            )
        } else {
            format!(
                "the row is corrected for the judge's errors, and so is the verdict; the judge's own rate: {} {}",
                pct(c.rate.estimate),
                interval(c.rate.interval.lower, c.rate.interval.upper)
            )
        });
        out.extend(needs_line(&r.labels_needed));
        let m = c.verdict.threshold;
        if !c.verdict.established && r.labels_only.contains(m) && r.weak.is_none() {
            out.push(format!(
                "more outputs cannot settle it: the judge's measured errors alone leave {}; more labels would",
                interval(r.labels_only.lower, r.labels_only.upper)
            ));
        }
    }
    out
}

/// How many labels of each kind the judge needs against the minimum
/// (`LabelNeeds`): `labels for a pass at 95%: reachable at all from 68 PASS
/// and 42 FAIL labels; most of the run's power kept from 1920 PASS and 42
/// FAIL (this set: 50 PASS, 50 FAIL)`. `None` when not computed (a live
/// correction).
pub fn needs_line(n: &LabelNeeds) -> Option<String> {
    let have = n.have?;
    let set = format!("this set: {} PASS, {} FAIL", have.pass, have.fail);
    let m = threshold_pct(n.minimum);
    Some(match (n.reach, n.power) {
        (None, _) => format!(
            "labels for a pass at {m}: no number of labels makes it reachable with this judge ({set})"
        ),
        (Some(r), p) => {
            let power = p.map_or(String::new(), |p| {
                format!(
                    "; most of the run's power kept from {} PASS and {} FAIL",
                    p.pass, p.fail
                )
            });
            format!(
                "labels for a pass at {m}: reachable at all from {} PASS and {} FAIL labels{power} ({set})",
                r.pass, r.fail
            )
        }
    })
}

/// What `probity run` says before its first output when a calibrated
/// judge's labels cannot make a pass at its check's minimum reachable
/// (`LabelNeeds::unreachable_with_set`): `check tone: labels for a pass at
/// 95%: reachable at all from 177 PASS and 45 FAIL labels; … (this set: 30
/// PASS, 50 FAIL): with this set no pass can be established, whatever the
/// outputs`. `None` when the set can reach it. The check name is shown as
/// a terminal line (control characters stripped).
pub fn labels_before_run(check: &str, needs: &LabelNeeds) -> Option<String> {
    if !needs.unreachable_with_set() {
        return None;
    }
    Some(format!(
        "check {}: {}: with this set no pass can be established, whatever the outputs",
        crate::sanitize::terminal_line(check, 80),
        needs_line(needs)?
    ))
}

/// The warning for a judge too weak for its check (or whose rate could not
/// be corrected), or `None`.
pub fn warning(c: &CheckSummary) -> Option<String> {
    match c.calibration.as_ref()? {
        Calibrated::Unusable { problem, .. } => Some(format!("no corrected rate: {problem}")),
        Calibrated::Corrected(r) => r.weak.map(|w| match w {
            Weakness::Chance { youden_lower } => format!(
                "the judge is not shown better than chance on its labels (Se + Sp − 1 may be as low as {:.2}): more labels or a better judge",
                youden_lower
            ),
            Weakness::Threshold { best_lower, minimum } => format!(
                "the judge is too weak for the minimum {}: with these labels even a system that always passes could not be shown above {}; more labels or a better judge, not more outputs",
                threshold_pct(minimum),
                pct(best_lower)
            ),
        }),
    }
}
