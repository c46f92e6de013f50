//! The comparison of two runs in the terminal (`probity compare`, and the
//! end of `probity run --baseline`'s report): the runs, the settings, one
//! line per check with its change in points and interval, the figures
//! behind it, and the conclusion. Names and ids go through
//! [`terminal_line`].

use crate::document::comparison::ComparisonReport;
use crate::facts::comparison::{
    check_lines, inputs_line, points, points_interval, run_line, settings_line, word,
};
use crate::numbers::plural;
use crate::sanitize::terminal_line;
use crate::text::paint::Paint;
use probity_core::compare::Direction;

/// The comparison as terminal text.
pub(crate) fn render(r: &ComparisonReport, color: bool) -> String {
    let p = Paint { on: color };
    let paint = |code: &str, s: &str| p.wrap(code, s);
    let clean = |s: &str| terminal_line(s, 60);
    let c = &r.comparison;
    let mut t = String::new();
    t.push_str(&format!(
        "{}\n{}\n{}\n{}\n\n",
        paint("1", "probity compare"),
        run_line("baseline (A) ", &r.baseline, &clean),
        run_line("candidate (B)", &r.candidate, &clean),
        paint("2", &settings_line(c))
    ));
    t.push_str(&format!("{}\n", inputs_line(c)));
    if !r.changed_inputs.is_empty() {
        t.push_str(&format!(
            "warning: {} shared {} changed content between the runs (e.g. {})\n",
            r.changed_inputs.len(),
            plural(r.changed_inputs.len(), "input"),
            clean(&r.changed_inputs[0])
        ));
    }
    t.push('\n');
    let width = c
        .checks
        .iter()
        .map(|k| clean(&k.name).chars().count())
        .max()
        .unwrap_or(0);
    for k in &c.checks {
        let w = word(k.direction);
        let w = match k.direction {
            Direction::Regressed => paint("1;31", &format!("{w:<20}")),
            Direction::Improved => paint("1;32", &format!("{w:<20}")),
            _ => format!("{w:<20}"),
        };
        t.push_str(&format!(
            "{w}  {:<width$}  {} pts  {}\n",
            clean(&k.name),
            points(k.decisive().mean_diff),
            points_interval(k.decisive())
        ));
        for line in check_lines(k, c.options.multiple) {
            t.push_str(&format!("{:22}{}\n", "", paint("2", &line)));
        }
    }
    for (names, side) in [
        (&c.only_baseline_checks, "baseline"),
        (&c.only_candidate_checks, "candidate"),
    ] {
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| clean(n)).collect();
            t.push_str(&format!(
                "only in the {side} (not compared): {}\n",
                list.join(", ")
            ));
        }
    }
    t.push('\n');
    let concl = r.conclusion();
    t.push_str(&if r.regressed() {
        paint("1;31", &concl)
    } else {
        paint("1", &concl)
    });
    t.push('\n');
    t
}
