//! Errors apart from failures, as every format says them: calls to the
//! system that failed after their retries (not measured), and outputs a
//! check could not judge, each group with its most common causes, a count
//! and the first sample it struck (`input ID · output #j`).
//!
//! The messages and input ids are untrusted text: every function takes
//! `clean`, which escapes a piece of it for the medium.

use crate::document::run::RunReport;
use crate::numbers::plural;
use probity_core::causes::{Cause, CauseGroup};

/// Causes listed by the text and Markdown reports (JSON and HTML list
/// every cause kept).
pub const CAUSES_SHOWN: usize = 3;

/// `12 calls to the system failed after their retries (not measured)`.
pub fn system_head(g: &CauseGroup) -> String {
    format!(
        "{} {} to the system failed after their retries (not measured)",
        g.total,
        plural(g.total as usize, "call")
    )
}

/// `could not judge 3 outputs (errors, not failures)`.
pub fn check_head(g: &CauseGroup) -> String {
    format!(
        "could not judge {} {} (errors, not failures)",
        g.total,
        plural(g.total as usize, "output")
    )
}

/// Where a cause was first seen: `input hello · output #3`.
pub fn first_seen(r: &RunReport, c: &Cause, clean: &dyn Fn(&str) -> String) -> String {
    format!(
        "input {} · output #{}",
        clean(&r.input_label(c.first.0)),
        c.first.1
    )
}

/// `10 × connection refused (first: input hello · output #3)`.
pub fn cause_line(r: &RunReport, c: &Cause, clean: &dyn Fn(&str) -> String) -> String {
    format!(
        "{} × {} (first: {})",
        c.count,
        clean(&c.message),
        first_seen(r, c, clean)
    )
}

/// What the first `shown` causes leave out: `… and 4 more errors (2 other
/// causes)`; `None` when nothing is left out.
pub fn rest(g: &CauseGroup, shown: usize) -> Option<String> {
    let listed = g.causes.iter().take(shown).map(|c| c.count).sum::<u64>();
    let left = g.total.saturating_sub(listed);
    (left > 0).then(|| {
        let causes = g.causes.len().saturating_sub(shown);
        let mut s = format!("… and {left} more {}", plural(left as usize, "error"));
        match (causes, g.other) {
            (0, _) => s.push_str(" of causes not kept"),
            (c, 0) => s.push_str(&format!(" ({c} other {})", plural(c, "cause"))),
            (c, o) => s.push_str(&format!(
                " ({c} other {}, {o} of causes not kept)",
                plural(c, "cause")
            )),
        }
        s
    })
}

/// `BROKEN: could not judge any of its 400 outputs: Function not found:
/// lenght` — a broken check's line (no verdict about the system).
pub fn broken_line(r: &RunReport, c: &Cause, clean: &dyn Fn(&str) -> String) -> String {
    format!(
        "BROKEN: could not judge any of its {} {} (first: {}), so it gives no verdict about the system: {}",
        r.causes.outputs,
        plural(r.causes.outputs as usize, "output"),
        first_seen(r, c, clean),
        clean(&c.message)
    )
}

/// The error groups to show: the system's when it has errors, then each
/// check's with errors, as `(None | Some(k), group)`.
pub fn groups(r: &RunReport) -> Vec<(Option<usize>, &CauseGroup)> {
    let mut v = Vec::new();
    if r.causes.system.total > 0 {
        v.push((None, &r.causes.system));
    }
    for (k, g) in r.causes.checks.iter().enumerate() {
        if g.total > 0 && k < r.summary.checks.len() {
            v.push((Some(k), g));
        }
    }
    v
}
