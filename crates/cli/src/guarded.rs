//! The guarded system beside its retry plan (paper §4.2): text shown by
//! `probity run` (with a `[retry]` table) and `probity plan RUN`.

use probity_core::guarded::{Band, RetryCheck};
use std::fmt::Write;

fn band(b: &Band, digits: usize) -> String {
    if (b.upper - b.lower).abs() < 1e-12 {
        format!("{:.*}", digits, b.estimate)
    } else {
        format!(
            "{:.*}  [{:.*}, {:.*}]",
            digits, b.estimate, digits, b.lower, digits, b.upper
        )
    }
}

/// The measured guarded system and the predictions, with the verdict.
pub fn render(check: &RetryCheck) -> String {
    let g = &check.measured;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nGuarded system: at most {} attempt{} per request, {} requests",
        g.m,
        if g.m == 1 { "" } else { "s" },
        g.samples
    );
    let hist: Vec<String> = g
        .histogram
        .iter()
        .enumerate()
        .map(|(a, n)| format!("{}: {n}", a + 1))
        .collect();
    let _ = writeln!(
        s,
        "  published at attempt   {}; nothing published: {}",
        hist.join(", "),
        g.nothing_published
    );
    let si = &g.success.interval;
    let _ = writeln!(
        s,
        "  {:<18} {:>26}  {:>26}  {:>24}",
        "", "P(pass) per attempt", "P(success within m)", "attempts used"
    );
    let _ = writeln!(
        s,
        "  {:<18} {:>26}  {:>26}  {:>24}",
        "measured",
        "",
        band(
            &Band {
                estimate: g.success.estimate,
                lower: si.lower,
                upper: si.upper
            },
            4
        ),
        band(&g.attempts, 3)
    );
    for p in &check.predictions {
        let _ = writeln!(
            s,
            "  {:<18} {:>26}  {:>26}  {:>24}",
            format!("{} model", p.model),
            band(&p.p, 4),
            band(&p.success_within, 4),
            band(&p.attempts, 3)
        );
    }
    let per = if g.samples == 0 {
        0.0
    } else {
        g.calls as f64 / g.samples as f64
    };
    let _ = writeln!(
        s,
        "  spent: {} calls ({per:.2} per request, judges included), {} tokens",
        g.calls, g.tokens
    );
    let _ = writeln!(
        s,
        "  prediction {}: the joint-rate model's band {} the measured interval{}",
        if check.held { "HELD" } else { "DID NOT HOLD" },
        if check.held { "overlaps" } else { "misses" },
        if check.held {
            ""
        } else {
            " (attempts are not independent, feedback changes the pass rate, or inputs differ)"
        }
    );
    s
}

/// After a text report on stdout: the guarded system, when the run had a
/// retry policy (other formats keep their schema; `probity plan RUN` shows
/// it for any run).
pub fn after_report(
    store: &probity_engine::store::Store,
    run: i64,
    out: &crate::output::OutputArgs,
) {
    if out.format != probity_report::Format::Text || out.output.is_some() {
        return;
    }
    let Ok(loaded) = probity_engine::stored::load(store, run) else {
        return;
    };
    if let Ok(Some(check)) = probity_engine::stored::retry_check(store, &loaded) {
        print!("{}", render(&check));
    }
}
