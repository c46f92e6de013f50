//! What a run's calls cost in time and what its upstreams took, as lines
//! every format prints (issue 38 item 5, issue 39 items 2 and 3): the
//! wall time beside the calls' summed time, each judge's structured
//! output, where `concurrency = "auto"` settled. Plain text: check names
//! are run data, each renderer escapes the lines for its format.

use crate::document::info::{AutoConcurrencyInfo, CallsInfo};
use crate::numbers::duration;

/// `wall 12.3s · 3 processes 33.1s · calls 58.2s summed, 0.4s queued
/// before sending`: the wall time and the time calls took, apart.
pub fn time_line(c: &CallsInfo) -> String {
    let mut s = format!("wall {}", duration(c.wall_s));
    if c.processes > 1 {
        s.push_str(&format!(
            " · {} processes {} summed",
            c.processes,
            duration(c.process_s)
        ));
    }
    s.push_str(&format!(
        " · calls took {} summed (sent to answered)",
        duration(c.call_s)
    ));
    if c.queued_s >= 0.05 {
        s.push_str(&format!(
            ", {} queued on probity's side before sending",
            duration(c.queued_s)
        ));
    }
    s
}

/// `structured output: judge json-object (json-schema refused)`, one
/// entry per judge that negotiates it; `None` when none does.
pub fn structured_line(c: &CallsInfo) -> Option<String> {
    if c.structured.is_empty() {
        return None;
    }
    let each: Vec<String> = c
        .structured
        .iter()
        .map(|(check, asked, used)| {
            if asked == used {
                format!("{check} {used}")
            } else {
                format!("{check} {used} (the upstream refused {asked})")
            }
        })
        .collect();
    Some(format!("structured output: {}", each.join(", ")))
}

/// `concurrency auto: 1 at a time (calls answered per second: 1 → 0.70,
/// 2 → 0.71)`; `None` without `auto`.
pub fn concurrency_line(c: &CallsInfo) -> Option<String> {
    let a: &AutoConcurrencyInfo = c.auto_concurrency.as_ref()?;
    let mut s = format!("concurrency auto: {} at a time", a.chosen);
    if !a.settled {
        s.push_str(", still searching when the run ended");
    } else if a.chosen == a.most {
        s.push_str(" (the most it tries)");
    }
    if !a.tried.is_empty() {
        let tried: Vec<String> = a
            .tried
            .iter()
            .map(|(n, x)| format!("{n} → {x:.2}"))
            .collect();
        s.push_str(&format!(
            " (calls answered per second at each: {})",
            tried.join(", ")
        ));
    }
    Some(s)
}

/// Every line above that applies, in order.
pub fn lines(c: &CallsInfo) -> Vec<String> {
    std::iter::once(time_line(c))
        .chain(structured_line(c))
        .chain(concurrency_line(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_and_call_time_apart_modes_and_auto_said() {
        let c = CallsInfo {
            processes: 3,
            wall_s: 6.2,
            process_s: 17.9,
            call_s: 60.4,
            queued_s: 0.0,
            lost_in_flight: 0,
            structured: vec![("judge".into(), "json-schema".into(), "json-object".into())],
            auto_concurrency: Some(AutoConcurrencyInfo {
                chosen: 1,
                most: 32,
                tried: vec![(1, 0.7), (2, 0.71)],
                settled: true,
            }),
        };
        let l = lines(&c);
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(
            l[0].starts_with("wall 6.2s · 3 processes 17.9s summed · calls took 1m 00s summed"),
            "{}",
            l[0]
        );
        assert!(!l[0].contains("queued"), "{}", l[0]);
        assert_eq!(
            l[1],
            "structured output: judge json-object (the upstream refused json-schema)"
        );
        assert_eq!(
            l[2],
            "concurrency auto: 1 at a time (calls answered per second at each: 1 → 0.70, 2 → 0.71)"
        );
        let one = CallsInfo {
            processes: 1,
            wall_s: 2.0,
            process_s: 2.0,
            ..CallsInfo::default()
        };
        assert_eq!(
            lines(&one),
            vec!["wall 2.0s · calls took 0.0s summed (sent to answered)".to_string()]
        );
    }
}
