//! Sentences about a sequential run (`[experiment] sequential`): why and
//! when it stopped, the samples saved against its budget, and each check's
//! confidence sequence at the stop — said the same way by every format.
//! Check names are passed through `name` (each format escapes them).

use crate::numbers::{interval, pct, threshold_pct};
use probity_core::sequential::{
    CheckSequence, RoundDesign, SequenceState, SequentialOutcome, StopReason,
};

/// Why it stopped, in words.
pub fn stop_words(stop: Option<StopReason>) -> &'static str {
    match stop {
        Some(StopReason::Settled) => "every verdict is established",
        Some(StopReason::BudgetSpent) => "the budget is spent",
        Some(StopReason::Futile) => "no open check can settle within the budget",
        None => "interrupted before a stop rule applied",
    }
}

/// `sequential: stopped after 40 of 200 inputs (400 of 2000 samples, 1600
/// saved = 80.0% of the budget): every verdict is established`.
pub fn headline(o: &SequentialOutcome) -> String {
    let share = if o.reference_samples() == 0 {
        0.0
    } else {
        o.samples_saved() as f64 / o.reference_samples() as f64
    };
    if let (RoundDesign::Outputs, Some(fixed)) = (o.design, o.fixed_samples) {
        let n = o.budget_inputs.max(1);
        let extra = o.budget_samples.saturating_sub(fixed);
        let past = if o.samples > fixed {
            format!("{} more than the fixed run", o.samples - fixed)
        } else {
            format!("{} saved = {}", o.samples_saved(), pct(share))
        };
        return format!(
            "sequential: stopped after {} outputs per input of these {} inputs ({} samples; the fixed run of {} × {} takes {}: {past}; the design may take up to {} per input, {} samples, {} more, so that it reaches a verdict at least as often as the fixed run): {}",
            o.samples / n,
            o.budget_inputs,
            o.samples,
            o.budget_inputs,
            fixed / n,
            fixed,
            o.budget_samples / n,
            o.budget_samples,
            extra,
            stop_words(o.stop)
        );
    }
    if o.design == RoundDesign::Outputs {
        let per = o.budget_samples / o.budget_inputs.max(1);
        return format!(
            "sequential: stopped after {} of {per} outputs per input of these {} inputs ({} of {} samples, {} saved = {} of the budget): {}",
            o.samples / o.budget_inputs.max(1),
            o.budget_inputs,
            o.samples,
            o.budget_samples,
            o.samples_saved(),
            pct(share),
            stop_words(o.stop)
        );
    }
    format!(
        "sequential: stopped after {} of {} inputs ({} of {} samples, {} saved = {} of the budget, {} {}): {}",
        o.inputs,
        o.budget_inputs,
        o.samples,
        o.budget_samples,
        o.samples_saved(),
        pct(share),
        o.rounds,
        if o.rounds == 1 { "round" } else { "rounds" },
        stop_words(o.stop)
    )
}

/// How the confidence sequences were made, as one line.
pub fn method_line(o: &SequentialOutcome) -> String {
    if o.design == RoundDesign::Outputs && o.fixed_samples.is_some() {
        return format!(
            "verdicts from {} group-sequential tests (exact binomial boundaries, linear alpha spending), a look after each round of one more output of every input; intervals are repeated confidence intervals, valid after an early stop: about these {} inputs, not inputs in general",
            threshold_pct(o.confidence),
            o.budget_inputs
        );
    }
    if o.design == RoundDesign::Outputs {
        return format!(
            "verdicts from {} anytime-valid confidence sequences (betting), rounds of one more output of every input: about these {} inputs, not inputs in general",
            threshold_pct(o.confidence),
            o.budget_inputs
        );
    }
    format!(
        "verdicts from {} anytime-valid confidence sequences (betting), inputs in random order (seed {})",
        threshold_pct(o.confidence),
        o.seed
    )
}

/// Where check `c` stands: `established fail`, `not settled: ~N more
/// inputs (S samples) would settle it`, ….
pub fn state_words(c: &CheckSequence, m: u64) -> String {
    let need = |n: u64| {
        let more = n.saturating_sub(c.inputs);
        format!("~{n} inputs in all ({} samples; {more} more)", n * m)
    };
    if let Some(k) = c
        .needed_outputs
        .filter(|_| matches!(c.state, SequenceState::Open | SequenceState::Futile))
    {
        let what = format!(
            "~{k} outputs per input ({} samples)",
            k.saturating_mul(c.inputs)
        );
        return match c.state {
            SequenceState::Open => format!("not settled: {what} would settle it"),
            _ => format!("cannot settle within the budget: it would need {what}"),
        };
    }
    match c.state {
        SequenceState::Pass => "established pass".to_string(),
        SequenceState::Fail => "established fail".to_string(),
        SequenceState::Open => match c.needed_inputs {
            Some(n) => format!("not settled: {} would settle it", need(n)),
            None => "not settled".to_string(),
        },
        SequenceState::Futile => match c.needed_inputs {
            Some(n) => format!("cannot settle within the budget: it would need {}", need(n)),
            None => "cannot settle within ten times the budget".to_string(),
        },
    }
}

/// `NAME: 48.2% [35.0, 61.3] over 40 inputs against 95%: established fail`.
pub fn check_line(c: &CheckSequence, m: u64, name: &dyn Fn(&str) -> String) -> String {
    format!(
        "{}: {} {} over {} inputs against {}: {}",
        name(&c.name),
        pct(c.estimate),
        interval(c.lower, c.upper),
        c.inputs,
        threshold_pct(c.threshold),
        state_words(c, m)
    )
}
