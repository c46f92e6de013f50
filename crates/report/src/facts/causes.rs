//! Errors apart from failures, as every format says them: calls to the
//! system that failed after their retries (not measured), and outputs a
//! check could not judge, each group with its most common causes, a count
//! and the first sample it struck (`input ID · output #j`).
//!
//! The messages and input ids are untrusted text: every function takes
//! `clean`, which escapes a piece of it for the medium.

use crate::document::run::RunReport;
use crate::numbers::plural;
use probity_core::agent::is_spoiled_cause;
use probity_core::causes::{Cause, CauseGroup};

/// Causes listed by the text and Markdown reports (JSON and HTML list
/// every cause kept).
pub const CAUSES_SHOWN: usize = 3;

/// `12 calls to the system failed after their retries (not measured)`;
/// for an agent run, the episodes the simulated user spoiled are said
/// apart (they are no failed call, and not the agent's failure: issue 34
/// item 7): `4 episodes the simulated user spoiled (not measured: not the
/// agent's failure)`. Spoiled episodes among the causes not kept
/// ([`CauseGroup::other`]) are counted as calls.
pub fn system_head(g: &CauseGroup) -> String {
    let spoiled: u64 = g
        .causes
        .iter()
        .filter(|c| is_spoiled_cause(&c.message))
        .map(|c| c.count)
        .sum();
    let calls = g.total.saturating_sub(spoiled);
    let failed = format!(
        "{calls} {} to the system failed after their retries",
        plural(calls as usize, "call")
    );
    let by_user = format!(
        "{spoiled} {} the simulated user spoiled",
        plural(spoiled as usize, "episode")
    );
    match (calls, spoiled) {
        (_, 0) => format!("{failed} (not measured)"),
        (0, _) => format!("{by_user} (not measured: not the agent's failure)"),
        _ => format!("{failed}, {by_user} (not measured)"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use probity_core::agent::Spoiled;

    fn group(causes: &[(&str, u64)]) -> CauseGroup {
        CauseGroup {
            causes: causes
                .iter()
                .map(|&(m, count)| Cause {
                    message: m.to_string(),
                    count,
                    first: (0, 0),
                })
                .collect(),
            other: 0,
            total: causes.iter().map(|c| c.1).sum(),
        }
    }

    #[test]
    fn spoiled_episodes_are_said_apart_from_failed_calls() {
        let spoiled = Spoiled {
            check: "user_stays".into(),
            turn: 0,
            reason: "the user stopped".into(),
        }
        .cause();
        assert_eq!(
            system_head(&group(&[("HTTP 503", 2)])),
            "2 calls to the system failed after their retries (not measured)"
        );
        assert_eq!(
            system_head(&group(&[(&spoiled, 4)])),
            "4 episodes the simulated user spoiled (not measured: not the agent's failure)"
        );
        assert_eq!(
            system_head(&group(&[(&spoiled, 1), ("HTTP 503", 3)])),
            "3 calls to the system failed after their retries, 1 episode the simulated user spoiled (not measured)"
        );
    }
}
