//! A retry plan in the terminal (`probity plan`, paper §4.2).
//!
//! From assumed rates: the rates, `P_pass`, the expected attempts, the
//! attempts for the target with the formula, and a table of attempts
//! against P(success within m), P(no output) and expected calls.
//!
//! From a stored run: the deciding checks, their rates, `P_pass` under
//! independence, the measured joint rate and its ratio to independence,
//! the attempts for the target at the joint rate and at its lower bound,
//! then per input (§4.2.3) the joint rate, its interval and the attempts,
//! flagging inputs that need a different number; and for a run with a
//! retry policy the guarded system ([`crate::text::guarded`]). Run names and
//! input ids go through [`terminal_line`].

use crate::document::plan::{JudgedSizing, PlanReport, PlanRun, SampleSizePlan};
use crate::numbers::{count, interval, pct, product, threshold_pct, trim_number};
use crate::sanitize::terminal_line;
use probity_core::number::{significant, written};
use probity_core::retry::Attempts;
use probity_core::{Geometric, RetryPlan};
use std::fmt::Write;

/// Rows of the attempts table: 1..=max(m, 3) up to this many, then m.
const TABLE_ROWS: u32 = 10;

/// Render the plan as terminal text.
pub(crate) fn render(p: &PlanReport) -> String {
    let mut s = match &p.run {
        Some(run) => measured(&p.plan, p.target, run),
        None => assumed(&p.plan, p.target),
    };
    if let Some(size) = &p.sample_size {
        s.push('\n');
        s.push_str(&sample_size(size));
    }
    s
}

/// The sample-size plan: per check the fixed-size run's inputs for the
/// power; the fixed N × M; the sequential run's cost distribution.
fn sample_size(p: &SampleSizePlan) -> String {
    let mut s = String::new();
    let m = p.outputs_per_input;
    let _ = writeln!(
        s,
        "Sample size: {} confidence, power {}, M = {m} outputs per input, intra-class correlation {}",
        threshold_pct(p.confidence),
        threshold_pct(p.power),
        trim_number(p.icc, 3)
    );
    for c in &p.checks {
        let judged = c.judged.as_ref();
        let fixed = match c.fixed_inputs {
            Some(n) if judged.is_some_and(|j| matches!(j, JudgedSizing::Corrected { .. })) => {
                format!(
                    "fixed run: at least {} inputs ({} samples)",
                    count(n),
                    product(n, m)
                )
            }
            Some(n) => format!("fixed run: {} inputs ({} samples)", count(n), product(n, m)),
            None if judged.is_some_and(|j| j.labels_hold(c.threshold)) => {
                "fixed run: no size suffices (the judge's labels alone leave the minimum possible)"
                    .to_string()
            }
            None => "fixed run: no size suffices (the rate equals the minimum)".to_string(),
        };
        let _ = writeln!(
            s,
            "  {}  rate {}  minimum {}  {fixed}",
            terminal_line(&c.name, 40),
            pct(c.rate),
            threshold_pct(c.threshold)
        );
        if let Some(j) = judged {
            let _ = writeln!(s, "    {}", judged_line(j));
        }
    }
    match p.fixed_inputs {
        Some(n) => {
            let _ = writeln!(
                s,
                "  fixed-size run for the power: N × M = {} × {m} = {} samples",
                count(n),
                product(n, m)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "  fixed-size run for the power: none (a check above has no size that suffices)"
            );
        }
    }
    let c = &p.cost;
    let saved = if c.budget_samples == 0 {
        0.0
    } else {
        1.0 - c.mean_samples / c.budget_samples as f64
    };
    let how = match p.budget_found {
        Some(true) => format!(
            "the smallest budget tried that settles every verdict in ≥ {} of runs",
            threshold_pct(p.power)
        ),
        Some(false) => format!(
            "no budget tried (up to 6 × the fixed N) settles every verdict in {} of runs",
            threshold_pct(p.power)
        ),
        None => "the budget given".to_string(),
    };
    let _ = writeln!(
        s,
        "  sequential run, budget {} × {m} = {} samples, {how} ({} simulated runs, seed {}):",
        p.budget_inputs, c.budget_samples, c.runs, p.seed
    );
    let _ = writeln!(
        s,
        "    samples: mean {:.0} ({} of the budget saved), p10 {}, median {}, p90 {}; inputs: mean {:.1}",
        c.mean_samples,
        pct(saved),
        c.p10_samples,
        c.p50_samples,
        c.p90_samples,
        c.mean_inputs
    );
    let _ = writeln!(
        s,
        "    stops: every verdict established {}, futile {}, budget spent {}",
        pct(c.settled),
        pct(c.futile),
        pct(c.budget_spent)
    );
    for (k, check) in p.checks.iter().enumerate() {
        let _ = writeln!(
            s,
            "    {}: established pass {}, established fail {}",
            terminal_line(&check.name, 40),
            pct(c.established_pass.get(k).copied().unwrap_or(0.0)),
            pct(c.established_fail.get(k).copied().unwrap_or(0.0))
        );
    }
    s
}

/// How a calibrated verifier's rate was taken, and what its sizes leave
/// out.
fn judged_line(j: &JudgedSizing) -> String {
    match j {
        JudgedSizing::Corrected { raw, labels_only } => format!(
            "the corrected rate (the judge passes {}); its labels alone leave {}, a width no number of inputs removes, and the simulation has no judge in it: the sizes are the least a run needs",
            pct(*raw),
            interval(labels_only.lower, labels_only.upper)
        ),
        JudgedSizing::Uncorrected { why } => format!(
            "the judge's own pass rate, errors and all: its labels gave no corrected rate ({})",
            terminal_line(why, 200)
        ),
    }
}

/// A probability, readable at any scale: 5 decimals in [1e-4, 1 − 1e-5],
/// else `1.000e-10` or `1 − 1.000e-10` (never 0.00000 for a positive
/// value, nor 1.00000 for one below 1).
fn prob(x: f64) -> String {
    if x > 0.0 && x < 1e-4 {
        format!("{x:.3e}")
    } else if x < 1.0 && x > 1.0 - 1e-5 {
        format!("1 − {:.3e}", 1.0 - x)
    } else {
        format!("{x:.5}")
    }
}

/// A positive quantity with `decimals` below 10⁶, in scientific notation
/// above (1/P for P = 1e-300 has 300 digits); ∞ for infinity.
fn quantity(x: f64, decimals: usize) -> String {
    if x.is_infinite() {
        "∞".into()
    } else if x.abs() >= 1e6 {
        format!("{x:.3e}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// A whole number with thousands separators (46,051,701,858).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate as given, in scientific notation when tiny (1e-300, not 300
/// zeros).
fn rate(r: f64) -> String {
    if r > 0.0 && r < 1e-4 {
        format!("{r:e}")
    } else {
        r.to_string()
    }
}

/// The plan from assumed rates, with its table of attempts.
fn assumed(plan: &RetryPlan, target: f64) -> String {
    let g = plan.independent();
    let mut s = String::new();
    let rates: Vec<String> = plan.rates.iter().map(|r| rate(*r)).collect();
    let _ = writeln!(s, "Retry plan (paper §4.2), validators assumed independent");
    let _ = writeln!(s, "  pass rates p_k         {}", rates.join(" × "));
    let _ = writeln!(s, "  P_pass = Π p_k         {}", prob(g.p));
    match (g.expected_attempts(), g.expected_retries()) {
        (Some(a), Some(r)) => {
            let _ = writeln!(s, "  E[attempts] = 1/P      {}", quantity(a, 3));
            let _ = writeln!(s, "  E[retries] = 1/P − 1   {}", quantity(r, 3));
        }
        _ => {
            let _ = writeln!(
                s,
                "  E[attempts]            unbounded: no attempt ever passes (P_pass = 0)"
            );
        }
    }
    let pct = significant(target * 100.0, 12);
    let Some(exact) = g.attempts_exact(target) else {
        let _ = writeln!(
            s,
            "  attempts for {pct}%      unbounded: none suffices, P_pass = 0"
        );
        return s;
    };
    let formula = format!(
        "m = ln(1 − {}) / ln(1 − P_pass) = {}",
        written(target),
        quantity(exact, 2)
    );
    let m = match g.attempts(target) {
        Ok(Attempts::Finite(m)) => m,
        _ => {
            let _ = writeln!(
                s,
                "  attempts for {pct}%      {formula} → unbounded: more than 2^53 attempts, no practical number suffices"
            );
            let _ = writeln!(
                s,
                "                         one attempt succeeds with probability {}",
                prob(g.success_within(1u32))
            );
            return s;
        }
    };
    let retries = m - 1;
    let _ = writeln!(
        s,
        "  attempts for {pct}%      {formula} → {} attempt{} ({} retr{})",
        grouped(m),
        if m == 1 { "" } else { "s" },
        grouped(retries),
        if retries == 1 { "y" } else { "ies" }
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  attempts  retries  P(success within m)  P(no output)  expected calls"
    );
    let rows = u64::from(TABLE_ROWS);
    let shown = (1..=m.clamp(3, rows)).chain((m > rows).then_some(m));
    for k in shown {
        if k == m && m > rows {
            let _ = writeln!(s, "  {:>8}", "…");
        }
        let mark = if k == m { "  ← m" } else { "" };
        let _ = writeln!(
            s,
            "  {:>8}  {:>7}  {:>19}  {:>12}  {:>14}{mark}",
            grouped(k),
            grouped(k - 1),
            prob(g.success_within(k)),
            prob(g.no_output(k)),
            quantity(g.expected_calls(k), 3)
        );
    }
    s
}

/// The plan of a stored run: m globally (at the joint rate and at its
/// lower bound) and per input, flagging inputs whose m differs; with the
/// guarded measurement when the run had a retry policy.
fn measured(plan: &RetryPlan, target: f64, run: &PlanRun) -> String {
    let mut s = String::new();
    let (n, m_reps) = run.shape;
    let _ = writeln!(
        s,
        "Retry plan (paper §4.2) from run {} ({}): {n} inputs × {m_reps} outputs",
        run.run.id,
        terminal_line(&run.run.name, 60)
    );
    let _ = writeln!(s, "  deciding checks        {}", run.checks.join(", "));
    let rates: Vec<String> = plan.rates.iter().map(|r| format!("{r:.4}")).collect();
    let _ = writeln!(s, "  pass rates p_k         {}", rates.join(" × "));
    let ind = plan.independent();
    let _ = writeln!(s, "  P_pass = Π p_k         {:.5}  (independence)", ind.p);
    let pct = significant(target * 100.0, 12);
    let show_m = |g: Geometric| match g.attempts_for(target) {
        Some(m) => format!("{m} attempt{}", if m == 1 { "" } else { "s" }),
        None => "none suffices (P = 0)".into(),
    };
    let _ = writeln!(
        s,
        "  attempts for {pct}%      {} (independence)",
        show_m(ind)
    );
    let Some(e) = &plan.empirical else {
        return s;
    };
    let joint = plan.measured().unwrap_or(ind);
    let _ = writeln!(
        s,
        "  joint pass rate        {:.5}  [{:.5}, {:.5}]  (measured; ratio to Π p_k {})",
        e.overall.estimate,
        e.overall.interval.lower,
        e.overall.interval.upper,
        plan.dependence_ratio()
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "–".into())
    );
    if let Some(a) = joint.expected_attempts() {
        let _ = writeln!(
            s,
            "  E[attempts] = 1/P      {a:.3}  (E[retries] {:.3})",
            a - 1.0
        );
    }
    let global = joint.attempts_for(target);
    let _ = writeln!(
        s,
        "  attempts for {pct}%      {} (joint rate)",
        show_m(joint)
    );
    if let Some(c) = plan.conservative() {
        let _ = writeln!(
            s,
            "                         {} (lower {:.0}% bound of the joint rate: the target holds with that confidence)",
            show_m(c),
            run.analysis.confidence * 100.0
        );
    }
    let per = plan.attempts_per_input(target);
    let differ = per.iter().filter(|m| **m != global).count();
    let _ = writeln!(
        s,
        "\n  Per input (§4.2.3): {differ} of {} inputs need a different m than {}",
        per.len(),
        global.map(|m| m.to_string()).unwrap_or_else(|| "–".into())
    );
    let _ = writeln!(
        s,
        "  {:<28} {:>10}  {:>22}  {:>9}",
        "input", "P_pass,i", "interval", "m"
    );
    for (i, (r, m)) in e.per_input.iter().zip(&per).enumerate() {
        let label = run
            .input_labels
            .get(i)
            .map(|x| terminal_line(x, 28))
            .unwrap_or_else(|| format!("#{}", i + 1));
        let outside =
            r.interval.lower > e.overall.estimate || r.interval.upper < e.overall.estimate;
        let mark = match (*m != global, outside) {
            (true, true) => "  ← differs (its interval excludes the joint rate)",
            (true, false) => "  ← differs",
            _ => "",
        };
        let _ = writeln!(
            s,
            "  {label:<28} {:>10.4}  [{:>8.4}, {:>8.4}]  {:>9}{mark}",
            r.estimate,
            r.interval.lower,
            r.interval.upper,
            m.map(|m| m.to_string()).unwrap_or_else(|| "none".into())
        );
    }
    if let Some(check) = &run.guarded {
        s.push('\n');
        s.push_str(&crate::text::guarded::block(check, false));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(plan: &RetryPlan, target: f64) -> String {
        super::render(&PlanReport {
            plan: plan.clone(),
            target,
            run: None,
            sample_size: None,
        })
    }

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

    /// The extreme rates: exact (1e-10: m = 46,051,701,858, the
    /// ceiling of ln(0.01)/ln(1 − 1e-10) = 46051701857.578 from Python's
    /// `decimal` at 50 digits) or unbounded (1e-16 and below), readable
    /// (no 300-digit numbers, no 0.00000 for a positive rate), never "1
    /// attempt" and never a saturated u32 (4294967295).
    #[test]
    fn extreme_rates_are_exact_or_unbounded_and_readable() {
        let out = render(&RetryPlan::from_rates(&[1e-10]).unwrap(), 0.99);
        assert!(out.contains("→ 46,051,701,858 attempts"), "{out}");
        assert!(out.contains("P_pass = Π p_k         1.000e-10"), "{out}");
        assert!(!out.contains("4294967295"), "{out}");
        for rates in [&[1e-16][..], &[1e-17], &[1e-300], &[5e-324], &[0.5, 1e-200]] {
            let out = render(&RetryPlan::from_rates(rates).unwrap(), 0.99);
            assert!(out.contains("unbounded"), "{rates:?}: {out}");
            assert!(!out.contains("1 attempt"), "{rates:?}: {out}");
            assert!(!out.contains("0.00000"), "{rates:?}: {out}");
            assert!(
                out.lines().all(|l| l.chars().count() < 160),
                "{rates:?}: {out}"
            );
        }
    }

    #[test]
    fn zero_rate_is_explained_not_divided() {
        let plan = RetryPlan::from_rates(&[0.0, 0.5]).unwrap();
        let out = render(&plan, 0.99);
        assert!(out.contains("unbounded"), "{out}");
        assert!(out.contains("none suffices"), "{out}");
    }
}
