//! Sentences about a run's checks, its aggregate and its retry plan,
//! shared by the formats so they say the same thing the same way.

use crate::document::info::RunInfo;
use crate::document::run::RunReport;
use crate::numbers::{interval, name, pct, plural, threshold_pct, trim_number};
use probity_core::stats::{
    ClusterMethod, Consistency, Decision, ErrorPolicy, NotEstablished, Scope, MIN_INPUTS,
};
use probity_core::{CheckSummary, Geometric, RateEstimate};
use serde_json::{Map, Value};

/// The settings every rate of the report was computed with, as one line:
/// confidence and method, how outputs are clustered, the verdict mode, the
/// error policy and the strategy. A serve run's rates are its live
/// sequences' (`Summary::with_live`), and the line says so.
pub fn statistics_line(r: &RunReport) -> String {
    let s = &r.summary;
    let o = &s.options;
    let errors = match o.errors {
        ErrorPolicy::AsFailure => "count as failures",
        ErrorPolicy::Exclude => "excluded",
    };
    if let Some(l) = &r.live {
        return format!(
            "{} anytime-valid confidence sequences over all traffic (the first attempts'; valid however often this is read) · verdict: {} · errors {errors}",
            threshold_pct(l.settings.confidence),
            name(o.verdict),
        );
    }
    let clustering = if s.shape.0 <= 1 {
        "one input: no clustering"
    } else if s.shape.1 == 1 {
        "one output per input"
    } else {
        "clustered by input"
    };
    // The beta-binomial methods do not use `interval` (fewer than
    // MIN_INPUTS inputs fall back to it, over all outputs); the default's
    // interval with one output per input is Clopper–Pearson's.
    let method = match o.cluster {
        _ if (s.shape.0 as u64) < MIN_INPUTS => name(o.interval),
        ClusterMethod::Profile if s.shape.1 == 1 => "clopper-pearson",
        ClusterMethod::Profile => "profile likelihood",
        ClusterMethod::BetaBinomial => "beta-binomial score",
        ClusterMethod::IccBound => "icc bound",
        ClusterMethod::DesignEffect | ClusterMethod::Binomial => name(o.interval),
    };
    format!(
        "{} intervals ({method}, {clustering}) · verdict: {} · errors {errors} · strategy {}",
        threshold_pct(o.confidence),
        name(o.verdict),
        name(s.strategy)
    )
}

/// The interval a check's rate over all outputs has, and how its outputs
/// were clustered, as the JSON names them: (`profile-likelihood`,
/// `profile`) for the default, (`clopper-pearson`, `profile`) with one
/// output per input, (`wilson`, `none`) below `MIN_INPUTS` inputs (the
/// interval of `interval` over all outputs), (`beta-binomial-score`,
/// `beta-binomial`), (`icc-bound`, `icc-bound`), (`wilson`,
/// `design-effect`) — the beta-binomial methods do not use `interval`.
pub fn interval_names(r: &RunReport) -> (&'static str, &'static str) {
    let s = &r.summary;
    let o = &s.options;
    if (s.shape.0 as u64) < MIN_INPUTS {
        return (name(o.interval), "none");
    }
    let method = match o.cluster {
        ClusterMethod::Profile if s.shape.1 == 1 => "clopper-pearson",
        ClusterMethod::Profile => "profile-likelihood",
        ClusterMethod::BetaBinomial => "beta-binomial-score",
        ClusterMethod::IccBound => "icc-bound",
        ClusterMethod::DesignEffect | ClusterMethod::Binomial => name(o.interval),
    };
    (method, cluster_name(o.cluster))
}

/// `options.cluster` as configured (`profile`, `beta-binomial`, …).
pub fn cluster_name(c: ClusterMethod) -> &'static str {
    match c {
        ClusterMethod::Profile => "profile",
        ClusterMethod::BetaBinomial => "beta-binomial",
        ClusterMethod::IccBound => "icc-bound",
        ClusterMethod::DesignEffect => "design-effect",
        ClusterMethod::Binomial => "binomial",
    }
}

/// Design effects at or below this are not worth a mention.
pub const DEFF_SHOWN_ABOVE: f64 = 1.05;

/// Samples beyond `n` that would settle an unestablished verdict.
pub fn more_samples(c: &CheckSummary) -> Option<u64> {
    if c.verdict.established {
        return None;
    }
    c.verdict
        .samples_needed
        .map(|s| s.saturating_sub(c.rate.n))
        .filter(|&m| m > 0)
}

/// `established`, or `not established: ` with why and what would settle
/// it (core's [`NotEstablished`]): `the interval contains the minimum; ~N
/// more samples would settle it`, `2 inputs are too few to speak about
/// inputs in general; at least 5 inputs would (3 more), not more outputs
/// of these`, ….
pub fn established(c: &CheckSummary) -> String {
    if c.verdict.established {
        return "established".to_string();
    }
    if let Some(why) = c.verdict.why_not {
        return format!("not established: {}", why_not(&why, c));
    }
    if let Some(m) = more_samples(c) {
        format!(
            "not established: ~{m} more {} would settle it",
            if m == 1 { "sample" } else { "samples" }
        )
    } else {
        "not established".to_string()
    }
}

/// Why a verdict is not established and what would settle it, as one
/// clause (see [`established`]).
pub fn why_not(why: &NotEstablished, c: &CheckSummary) -> String {
    let samples = |m: u64| if m == 1 { "sample" } else { "samples" };
    let inputs_in_all = |n: Option<u64>, outputs: Option<u64>, done: u64| match (n, outputs) {
        (Some(n), _) => format!(
            "~{n} inputs in all ({} more) would settle it",
            n.saturating_sub(done)
        ),
        (None, Some(k)) => format!("~{k} outputs per input of these inputs would settle it"),
        (None, None) => "not within ten times the budget at this estimate".to_string(),
    };
    match *why {
        NotEstablished::NothingObserved => format!(
            "nothing was judged (no output, or every judgement erred: the errors say why); judged outputs of at least {MIN_INPUTS} inputs would settle it"
        ),
        NotEstablished::TooFewInputs {
            inputs,
            inputs_needed,
        } => format!(
            "{} too few to speak about inputs in general; at least {inputs_needed} inputs would ({} more), not more outputs of these",
            match inputs {
                1 => "1 input is".to_string(),
                g => format!("{g} inputs are"),
            },
            inputs_needed.saturating_sub(inputs)
        ),
        NotEstablished::Unclustered { inputs } => format!(
            "the interval is about these {inputs} inputs only (outputs not clustered by input); the clustered analysis would speak about inputs in general"
        ),
        NotEstablished::Straddles { samples_needed, .. } => {
            match samples_needed.map(|s| s.saturating_sub(c.rate.n)) {
                Some(m) if m > 0 => format!(
                    "the interval contains the minimum; ~{m} more {} would settle it",
                    samples(m)
                ),
                _ if c.rate.estimate == c.verdict.threshold => {
                    "the estimate is on the minimum; no sample size settles it".to_string()
                }
                _ => "the interval contains the minimum; no feasible sample size settles it at this estimate".to_string(),
            }
        }
        NotEstablished::Unsettled {
            inputs_needed,
            samples_needed,
            outputs_settle,
            ..
        } => {
            let outputs = if outputs_settle {
                "so would more outputs of these inputs"
            } else {
                "more outputs of these inputs would not"
            };
            match (inputs_needed, samples_needed) {
                (Some(g), Some(n)) => format!(
                    "the interval contains the minimum; if the estimate stays, ~{g} inputs in all ({} more; ~{n} samples at {} outputs each) would settle it; {outputs}",
                    g.saturating_sub(c.rate.inputs),
                    trim_number(c.rate.n as f64 / c.rate.inputs.max(1) as f64, 1)
                ),
                _ if c.rate.estimate == c.verdict.threshold => {
                    "the estimate is on the minimum; no sample size settles it".to_string()
                }
                _ => format!(
                    "the interval contains the minimum; no feasible number of inputs settles it at this estimate; {outputs}"
                ),
            }
        }
        NotEstablished::BudgetSpent {
            inputs_needed,
            outputs_needed,
        } => format!(
            "the budget is spent and the interval contains the minimum; {}",
            inputs_in_all(inputs_needed, outputs_needed, c.rate.inputs)
        ),
        NotEstablished::Futile {
            inputs_needed,
            outputs_needed,
        } => format!(
            "stopped as futile (it would not settle within the budget); {}",
            inputs_in_all(inputs_needed, outputs_needed, c.rate.inputs)
        ),
        NotEstablished::InvalidThreshold => format!(
            "the minimum {} is not a fraction between 0 and 1 (write 0.95 for 95%)",
            c.verdict.threshold
        ),
        NotEstablished::UnseenMinority {
            inputs,
            share,
            failing,
            inputs_needed,
            these_inputs,
        } => format!(
            "with {inputs} inputs, a minority of up to {} of inputs that {} every output could be unseen; {}, not more outputs of these. About these {inputs} inputs alone (no model of how inputs differ): {} {}, {} {}",
            pct(share),
            if failing { "fail" } else { "pass" },
            match inputs_needed {
                Some(n) => format!(
                    "{n} inputs in all ({} more) would rule it out",
                    n.saturating_sub(inputs)
                ),
                None => "no feasible number of inputs rules it out at this estimate".to_string(),
            },
            if failing { "pass" } else { "fail" },
            if these_inputs.established {
                "established"
            } else {
                "not established"
            },
            pct(c.rate.estimate),
            interval(these_inputs.lower, these_inputs.upper)
        ),
    }
}

/// `3 errors counted as failures`, `3 errors excluded`, `2 missing`, joined.
pub fn errors(rate: &RateEstimate, policy: ErrorPolicy) -> Option<String> {
    let mut parts = Vec::new();
    let e = rate.counts.error;
    if e > 0 {
        let noun = if e == 1 { "error" } else { "errors" };
        parts.push(match policy {
            ErrorPolicy::AsFailure => format!("{e} {noun} counted as failures"),
            ErrorPolicy::Exclude => format!("{e} {noun} excluded"),
        });
    }
    if rate.counts.missing > 0 {
        parts.push(format!("{} missing (not judged)", rate.counts.missing));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `design effect 2.31, effective n 432 of 1000` when the design effect
/// exceeds [`DEFF_SHOWN_ABOVE`].
pub fn design_effect(rate: &RateEstimate) -> Option<String> {
    (rate.design_effect.is_finite() && rate.design_effect > DEFF_SHOWN_ABOVE).then(|| {
        format!(
            "design effect {:.2}, effective n {} of {}",
            rate.design_effect,
            trim_number(rate.effective_n.round(), 0),
            rate.n
        )
    })
}

/// `96.2% [94.1, 97.6]`, or `no outputs judged` when `n == 0`.
pub fn rate_with_interval(rate: &RateEstimate) -> String {
    if rate.n == 0 {
        "no outputs judged".to_string()
    } else {
        format!(
            "{} {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper)
        )
    }
}

/// The figures behind a verdict, on one line:
/// `rate 85.0% [80.1, 88.9] at 95% confidence, minimum 90%, n = 200`
/// (the corrected rate for a calibrated verifier, [`super::calibration::shown_rate`]).
pub fn figures(c: &CheckSummary, sequential: bool) -> String {
    let shown = super::calibration::shown_rate(c, sequential);
    let corrected = match shown {
        std::borrow::Cow::Owned(_) => " corrected for the judge's errors",
        std::borrow::Cow::Borrowed(_) => "",
    };
    let mut s = format!(
        "rate {}{corrected} at {} confidence, minimum {}, n = {}",
        rate_with_interval(&shown),
        threshold_pct(c.rate.confidence),
        threshold_pct(c.verdict.threshold),
        c.rate.n
    );
    if let Some(d) = design_effect(&c.rate) {
        s.push_str(&format!(" ({d})"));
    }
    s
}

/// `≥ 95%`.
pub fn threshold(c: &CheckSummary) -> String {
    format!("≥ {}", threshold_pct(c.verdict.threshold))
}

/// Whether a check needs attention (its message, example are shown).
pub fn not_passing(c: &CheckSummary) -> bool {
    c.verdict.decision != Decision::Pass
}

/// Attempts and retries, e.g. `4 attempts (3 retries)`; `never` when the
/// pass rate is 0.
pub fn attempts(g: Option<Geometric>, target: f64) -> String {
    match g.and_then(|g| g.attempts_for(target)) {
        Some(m) => format!(
            "{m} {} ({} {})",
            if m == 1 { "attempt" } else { "attempts" },
            m - 1,
            if m == 2 { "retry" } else { "retries" }
        ),
        None => "no number of attempts (pass rate 0)".to_string(),
    }
}

/// The retry plan as lines of text (no markup), or empty when there is
/// nothing to plan (no checks).
pub fn retry_lines(r: &RunReport) -> Vec<String> {
    let plan = &r.summary.retry;
    if r.summary.checks.is_empty() && plan.rates.is_empty() {
        return Vec::new();
    }
    let target = r.retry_target;
    let tp = threshold_pct(target);
    let mut out = vec![format!(
        "P(pass all) under independence: {}",
        pct(plan.p_independent)
    )];
    if let Some(e) = &plan.empirical {
        let mut line = format!(
            "measured joint pass rate: {}",
            rate_with_interval(&e.overall)
        );
        if let Some(ratio) = plan.dependence_ratio() {
            line.push_str(&format!("; ratio to independence {ratio:.2}"));
            if ratio > 1.05 {
                line.push_str(" (checks tend to fail on the same outputs)");
            } else if ratio < 0.95 {
                line.push_str(" (checks tend to fail on different outputs)");
            }
        }
        out.push(line);
        out.push(format!(
            "attempts for {tp} of calls to publish: {} at the measured rate, {} at its lower bound",
            attempts(plan.measured(), target),
            attempts(plan.conservative(), target)
        ));
        // Inputs differ: the share published is the mean over inputs of
        // each one's 1 − (1 − p_i)^m, below the joint rate's (issue 35
        // item 3). This is the figure to size m by.
        let confidence = r.summary.options.confidence;
        match plan.attempts_over_inputs(target, confidence) {
            Some(m) => {
                let within = plan
                    .success_over_inputs(m, confidence)
                    .map(|s| format!("{} {}", pct(s.estimate), crate::numbers::interval(s.lower, s.upper)))
                    .unwrap_or_default();
                out.push(format!(
                    "attempts for {tp} of calls to publish, each input at its own rate: {m} (published within {m}: {within})"
                ));
            }
            None => out.push(format!(
                "attempts for {tp} of calls to publish, each input at its own rate: none up to {} (inputs that never passed)",
                probity_core::retry::MAX_PLANNED_ATTEMPTS
            )),
        }
        if let Some(a) = plan.measured().and_then(|g| g.expected_attempts()) {
            out.push(format!(
                "expected attempts per call: {a:.2} ({:.2} retries)",
                a - 1.0
            ));
        }
    } else {
        out.push(format!(
            "attempts for {tp} of calls to publish: {}",
            attempts(Some(plan.independent()), target)
        ));
        if let Some(a) = plan.independent().expected_attempts() {
            out.push(format!(
                "expected attempts per call: {a:.2} ({:.2} retries)",
                a - 1.0
            ));
        }
    }
    out
}

/// The aggregate on one line: `min 85.0% [78.0, 90.1], worst check
/// politeness_validator (each at 97.5% confidence)`. `check` renders a
/// check name for the medium.
pub fn aggregate_line(r: &RunReport, check: &dyn Fn(&str) -> String) -> String {
    let a = &r.summary.aggregate;
    let mut s = format!("{} {}", name(a.method), rate_with_interval(&a.rate));
    if a.method == probity_core::Aggregate::Min {
        if let Some(w) = a.worst_validator {
            s.push_str(&format!(", worst check {}", check(&r.check_name(w))));
        }
        if let Some(c) = a.per_validator.first().map(|p| p.confidence) {
            if r.summary.checks.len() > 1 {
                // Bonferroni levels like 98.333…%: two decimals.
                s.push_str(&format!(
                    " (bounds at {}% confidence each)",
                    trim_number(c * 100.0, 2)
                ));
            }
        }
    }
    if let Some(d) = design_effect(&a.rate) {
        s.push_str(&format!("; {d}"));
    }
    s
}

/// The `count` inputs with the lowest success rate in the Input
/// Reliability Profile (inputs with nothing judged left out).
pub fn worst_inputs(r: &RunReport, count: usize) -> Vec<probity_core::ProfileEntry> {
    // Unjudged inputs sort last: the first `count` hold every judged one
    // that is shown.
    probity_core::profile::worst_n(&r.summary.input_profile, count)
        .into_iter()
        .filter(|e| e.rate.n > 0)
        .collect()
}

/// The calls and tokens of a run (and their cost when priced,
/// [`crate::facts::cost::cost_phrase`]), and whether its outputs were
/// sampled afresh: `400 calls (0 to judges), 51200 tokens; every sample called
/// afresh`, `800 calls (400 to judges: helpful 400), …`, or `…; 186
/// outputs reused from run #11`. Calls paid by workers that died with
/// them in flight are said: `612 calls (0 to judges; 12 by workers that
/// died before recording an answer), …`. Not escaped: escape for the
/// medium.
pub fn calls_line(r: &RunInfo) -> String {
    let by_check: Vec<String> = r
        .judge_calls_by_check
        .iter()
        .map(|(name, calls)| format!("{name} {calls}"))
        .collect();
    let lost = match r.calls.as_ref().map_or(0, |c| c.lost_in_flight) {
        0 => String::new(),
        n => format!(
            "; {n} by workers that died before recording {}",
            if n == 1 { "an answer" } else { "answers" }
        ),
    };
    let mut s = format!(
        "{} {} ({} to judges{}{lost}), ",
        r.model_calls,
        plural(r.model_calls as usize, "call"),
        r.judge_calls,
        if by_check.is_empty() {
            String::new()
        } else {
            format!(": {}", by_check.join(", "))
        }
    );
    if r.tokens == 0 {
        s.push_str("no tokens reported");
    } else {
        s.push_str(&format!(
            "{} {}",
            r.tokens,
            plural(r.tokens as usize, "token")
        ));
    }
    if let Some(cost) = crate::facts::cost::cost_phrase(&r.cost) {
        s.push_str(&format!(", {cost}"));
    }
    s.push_str("; ");
    s.push_str(&reuse_phrase(r));
    s
}

/// `every sample called afresh`, `186 outputs reused from run #11`,
/// `186 outputs reused (no call)` when the run they came from is unknown,
/// or, when reuse was asked and nothing matched, `no output of run #11
/// matched these requests: every sample called afresh`.
pub fn reuse_phrase(r: &RunInfo) -> String {
    match (r.cached, r.reused_from) {
        (0, Some(x)) => format!(
            "no output of run #{x} matched these requests (another system, prompt or inputs?): every sample called afresh"
        ),
        (0, None) => "every sample called afresh".to_string(),
        (m, Some(x)) => format!("{m} {} reused from run #{x}", plural(m as usize, "output")),
        (m, None) => format!("{m} {} reused (no call)", plural(m as usize, "output")),
    }
}

/// `over 20 inputs`, for a rate with something judged.
pub fn inputs_note(rate: &RateEstimate) -> Option<String> {
    (rate.n > 0).then(|| {
        format!(
            "over {} {}",
            rate.inputs,
            plural(rate.inputs as usize, "input")
        )
    })
}

/// [`inputs_note`] of a check's rate, with the inputs it applies to when
/// not all: `over 2 inputs · applies to 2 of 5 inputs (3 not applicable)`.
pub fn check_inputs_note(c: &probity_core::CheckSummary) -> Option<String> {
    let over = inputs_note(&c.rate);
    let Some(a) = c.applies_to else {
        return over;
    };
    let applies = format!(
        "applies to {} of {} inputs ({} not applicable)",
        a.inputs,
        a.of,
        a.of - a.inputs
    );
    Some(match over {
        Some(o) => format!("{o} · {applies}"),
        None => applies,
    })
}

/// What a rate's interval is about, when it is not the population of
/// inputs (`Scope::TheseInputs`): `interval about these 3 inputs only
/// (fewer than 5): no verdict about the system is established`.
pub fn scope_note(rate: &RateEstimate) -> Option<String> {
    if rate.scope != Scope::TheseInputs || rate.n == 0 {
        return None;
    }
    let about = match rate.inputs {
        1 => "interval about this one input only".to_string(),
        g if g < MIN_INPUTS => {
            format!("interval about these {g} inputs only (fewer than {MIN_INPUTS})")
        }
        g => {
            return Some(format!(
                "interval about these {g} inputs only (outputs not clustered by input, or a sequential run's output rounds): a claim about these inputs, not inputs in general"
            ))
        }
    };
    Some(format!(
        "{about}: no verdict about the system is established"
    ))
}

/// A scope's name as JSON writes it: `population` or `these_inputs`.
pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Population => "population",
        Scope::TheseInputs => "these_inputs",
    }
}

/// `pass^3 72.1% [60.2, 81.5] · pass@3 99.0% [95.1, 99.8] (means over 20
/// inputs)`: a check's consistency over k outputs of one input.
pub fn consistency_line(c: &Consistency) -> String {
    let (all, any) = (&c.mean_pass_all_k, &c.mean_pass_any_k);
    if all.n == 0 {
        return format!(
            "pass^{k}, pass@{k}: no input has {k} judged outputs",
            k = c.k
        );
    }
    let mut s = format!(
        "pass^{k} {} · pass@{k} {} (means over {} {} with ≥ {k} judged outputs)",
        rate_with_interval(all),
        rate_with_interval(any),
        all.inputs,
        plural(all.inputs as usize, "input"),
        k = c.k
    );
    if let Some(scope) = scope_note(all) {
        s.push_str(&format!("; {scope}"));
    }
    s
}

/// An input field's value as text: a string as it is, anything else in
/// its JSON form.
pub fn field_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An input's fields on one line: `text: Thank you! · lang: en`, each
/// name and value through `clean` (the medium's escaping, with a length
/// limit).
pub fn fields_line(fields: &Map<String, Value>, clean: &dyn Fn(&str) -> String) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}: {}", clean(k), clean(&field_value(v))))
        .collect::<Vec<_>>()
        .join(" · ")
}
