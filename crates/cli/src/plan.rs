//! `probity plan`: the retry plan of paper §4.2 from assumed pass rates.

use crate::Failure;
use clap::Args;
use probity_core::retry::{check_target, RetryPlan};

#[derive(Args)]
pub struct PlanArgs {
    /// Per-validator pass rates p_k, comma-separated (e.g. 0.95,0.90,0.85).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_hyphen_values = true
    )]
    rates: Vec<f64>,
    /// Target probability that some attempt passes every check.
    #[arg(long, default_value_t = 0.99)]
    confidence: f64,
}

pub fn run(args: &PlanArgs) -> Result<u8, Failure> {
    let plan =
        RetryPlan::from_rates(&args.rates).map_err(|e| Failure::usage(format!("--rates: {e}")))?;
    let target =
        check_target(args.confidence).map_err(|e| Failure::usage(format!("--confidence: {e}")))?;
    print!("{}", render(&plan, target));
    Ok(0)
}

/// Rows of the attempts table: 1..=max(m, 3) up to this many, then m.
const TABLE_ROWS: u32 = 10;

fn render(plan: &RetryPlan, target: f64) -> String {
    use std::fmt::Write;
    let g = plan.independent();
    let mut s = String::new();
    let rates: Vec<String> = plan.rates.iter().map(|r| r.to_string()).collect();
    let _ = writeln!(s, "Retry plan (paper §4.2), validators assumed independent");
    let _ = writeln!(s, "  pass rates p_k         {}", rates.join(" × "));
    let _ = writeln!(s, "  P_pass = Π p_k         {:.5}", g.p);
    match (g.expected_attempts(), g.expected_retries()) {
        (Some(a), Some(r)) => {
            let _ = writeln!(s, "  E[attempts] = 1/P      {a:.3}");
            let _ = writeln!(s, "  E[retries] = 1/P − 1   {r:.3}");
        }
        _ => {
            let _ = writeln!(
                s,
                "  E[attempts]            unbounded: no attempt ever passes (P_pass = 0)"
            );
        }
    }
    let pct = target * 100.0;
    let Some((exact, m)) = g.attempts_exact(target).zip(g.attempts_for(target)) else {
        let _ = writeln!(s, "  attempts for {pct}%      none suffices: P_pass = 0");
        return s;
    };
    let retries = m - 1;
    let _ = writeln!(
        s,
        "  attempts for {pct}%      m = ln(1 − {target}) / ln(1 − P_pass) = {exact:.2} → {m} attempt{} ({retries} retr{})",
        if m == 1 { "" } else { "s" },
        if retries == 1 { "y" } else { "ies" }
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  attempts  retries  P(success within m)  P(no output)  expected calls"
    );
    let shown = (1..=m.clamp(3, TABLE_ROWS)).chain((m > TABLE_ROWS).then_some(m));
    for k in shown {
        if k == m && m > TABLE_ROWS {
            let _ = writeln!(s, "  {:>8}", "…");
        }
        let mark = if k == m { "  ← m" } else { "" };
        let _ = writeln!(
            s,
            "  {k:>8}  {:>7}  {:>19.5}  {:>12.5}  {:>14.3}{mark}",
            k - 1,
            g.success_within(k),
            g.no_output(k),
            g.expected_calls(k)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_is_printed_with_correct_figures() {
        let plan = RetryPlan::from_rates(&[0.95, 0.90, 0.85]).unwrap();
        let out = render(&plan, 0.99);
        assert!(out.contains("P_pass = Π p_k         0.72675"), "{out}");
        assert!(out.contains("E[attempts] = 1/P      1.376"), "{out}");
        assert!(out.contains("E[retries] = 1/P − 1   0.376"), "{out}");
        // The paper prints m ≈ 2.74 → 3; the quotient is 3.55, and three
        // attempts reach only 97.96% (see probity_core::retry tests).
        assert!(out.contains("= 3.55 → 4 attempts (3 retries)"), "{out}");
        assert!(
            out.contains("        3        2              0.97960"),
            "{out}"
        );
    }

    #[test]
    fn zero_rate_is_explained_not_divided() {
        let plan = RetryPlan::from_rates(&[0.0, 0.5]).unwrap();
        let out = render(&plan, 0.99);
        assert!(out.contains("unbounded"), "{out}");
        assert!(out.contains("none suffices"), "{out}");
    }
}
