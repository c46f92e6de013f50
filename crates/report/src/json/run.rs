//! The JSON report of a run (`--format json`): schema `probity.report.v1`.
//!
//! The wire format is made of dedicated structs ([`Wire`] and friends) so
//! that refactoring the core's types does not change it. The schema is
//! documented field by field in `crates/report/SCHEMA.md`; in short:
//!
//! ```text
//! {
//!   "schema": "probity.report.v1",
//!   "run": {id, name, created_at, config_hash, system, duration_s, model_calls, cached, complete,
//!           judge_calls, tokens, reused_from,
//!           cost: {status, currency, total, system, judges, retries, …} (`json::cost`),
//!           calls: null | {processes, wall_s, process_s, call_s, queued_s, lost_in_flight,
//!                  structured_output: [{check, asked, used}],
//!                  auto_concurrency: null | {chosen, most, settled, tried: [[n, calls/s]]}}},
//!   "shape": {inputs, outputs_per_input, checks},
//!   "options": {confidence, interval, errors, verdict, strategy, aggregate, retry_target, cluster},
//!   "passed": bool,
//!   "summary": {pass, fail, inconclusive, conclusion, broken},
//!   "counts": {pass, fail, error, missing},
//!   "checks": [{index, name, kind, message, threshold, weight, rate, verdict,
//!               worst_input, breakdown_by, breakdown_below, breakdown,
//!               broken, errors: causes, consistency, calibration,
//!               applies_to: {inputs, of} | null}],
//!   "aggregate": {method, rate, worst_check, per_check},
//!   "profiles": {inputs: [entry], outputs: [entry]},
//!   "retry": {target, rates, p_independent, independent, measured, conservative,
//!             measured_rate, dependence_ratio, phi, per_input},
//!   "examples": [{check, check_name, input, input_label, repetition, output, reason, input_fields}],
//!   "guarded": null | {attempts, retries, held, outcome, rule,
//!               measured: {requests, histogram, nothing_published, success_within: rate,
//!                          attempts_used: band, calls, calls_per_request, tokens},
//!               predictions: [{model, p: band, success_within: band, attempts_used: band}]},
//!   "errors": {system: causes, outputs},
//!   "failures": [{input, input_label, input_fields, repetition, output, error, failed, errored,
//!                 reasons: [{check, reason}]}],
//!   "sequential": null | {seed, design, stop, stop_reason, inputs, samples, budget_inputs, budget_samples,
//!                  fixed_samples?, samples_saved, rounds, confidence,
//!                  checks: [{index, name, threshold, estimate, lower, upper, inputs, state,
//!                            needed_inputs, needed_samples}]},
//!   "live": null | {requests, confidence, epoch, window,
//!                   checks: [{index, name, threshold, first: watch, published: watch}]}
//! }
//! watch = {requests, rate, all: {lower, upper}, recent: {epoch, requests, rate, lower, upper},
//!          window: {requests, rate, lower, upper},
//!          alarms: [{kind, rate, lower, upper, requests, at, recent}]}
//! rate  = {estimate, lower, upper, confidence, method, n, pass, fail, error, missing,
//!          design_effect, effective_n, inputs, scope, cluster (a check's rate only)}
//!   (a check's rate names the interval it has: method `profile-likelihood`
//!   (the default, with the unseen-minority allowance), `clopper-pearson`
//!   (one output per input), … and cluster `profile`, …, `none`)
//! causes = {total, other, causes: [{message, count, input, input_label, repetition}]}
//! consistency = null | {k, mean_pass_all_k: rate, mean_pass_any_k: rate,
//!                       per_input: [{index, label, passes, outputs, pass_all_k: band, pass_any_k: band}]}
//! calibration = null | {state, judge: null | {labelled, errors, sensitivity, specificity, youden},
//!                       raw, corrected: band, labels_only: band, weak, problem, warning, text}
//! entry = {index, label, rate}
//! band  = {estimate, lower, upper}
//! ```
//!
//! Rates are fractions in [0, 1], not percentages. Every float that is not
//! finite (NaN, ±∞) is written as `null`, as is every value that does not
//! exist (no worst input, a pass rate of 0 for the number of attempts).
//!
//! A run compared with a baseline (`probity run --baseline`) gets one more
//! field, `comparison`: the [`crate::json::comparison`] document
//! (`probity.compare.v1`). That document's keys are written in
//! alphabetical order, as probity has always written it.
//!
//! Compatibility: within `v1`, fields are only ever added, never removed,
//! renamed or changed in meaning; consumers should ignore unknown fields.

use crate::document::run::RunReport;
use crate::facts::guarded::{calls_per_request, outcome, Outcome, RULE};
use crate::facts::run::{more_samples, scope_name};
use crate::facts::sequential::stop_words;
use crate::numbers::{finite as num, name};
use probity_core::causes::CauseGroup;
use probity_core::guarded::{Band, RetryCheck};
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::{Consistency, Interval, IntervalMethod};
use probity_core::{CheckSummary, Geometric, ProfileEntry, RateEstimate, RetryPlan, Strategy};
use serde::Serialize;
use serde_json::{Map, Value};

/// The value of the `schema` field.
pub const SCHEMA: &str = "probity.report.v1";

/// A JSON array whose entries are made while it is written
/// (`Serializer::collect_seq`), never held: the per-input arrays have an
/// entry per input and check, gigabytes at a million inputs if built whole.
/// Serialising twice makes the entries twice.
pub struct Streamed<'a, T>(Box<dyn Fn() -> Box<dyn Iterator<Item = T> + 'a> + 'a>);

impl<'a, T> Streamed<'a, T> {
    /// The array of what `make` yields each time it is called.
    pub fn new<I: Iterator<Item = T> + 'a>(make: impl Fn() -> I + 'a) -> Self {
        Streamed(Box::new(move || Box::new(make())))
    }

    /// An empty array.
    pub fn empty() -> Self
    where
        T: 'a,
    {
        Streamed::new(std::iter::empty)
    }
}

impl<T: Serialize> Serialize for Streamed<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

impl<T> std::fmt::Debug for Streamed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[…]")
    }
}

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Wire<'a> {
    pub schema: &'static str,
    pub run: WireRun,
    pub shape: WireShape,
    pub options: WireOptions,
    pub passed: bool,
    pub summary: WireTally,
    pub counts: WireCounts,
    pub checks: Vec<WireCheck<'a>>,
    pub aggregate: WireAggregate,
    pub profiles: WireProfiles<'a>,
    pub retry: WireRetry<'a>,
    pub examples: Vec<WireExample>,
    /// The guarded system beside its prediction; `null` for a run without
    /// a retry policy.
    pub guarded: Option<WireGuarded>,
    /// Calls to the system that failed after their retries (not
    /// measured), with their causes (added within v1).
    pub errors: WireErrors,
    /// Outputs that failed or errored on some check, with their inputs
    /// (added within v1).
    pub failures: Vec<WireFailure>,
    /// A sequential run's stop and confidence sequences; `null` for a
    /// fixed-size run (added within v1).
    pub sequential: Option<WireSequential>,
    /// A serve run's live rates (`SCHEMA.md`, Live); `null` for other runs
    /// (added within v1).
    pub live: Option<super::live::WireLive>,
}

/// A sequential run: why and when it stopped, each check's confidence
/// sequence at the stop.
#[derive(Debug, Serialize)]
pub struct WireSequential {
    pub seed: u64,
    /// `inputs` (rounds of whole inputs: about the population of inputs)
    /// or `outputs` (rounds of one more output of every input: about
    /// these inputs).
    pub design: &'static str,
    /// `settled`, `budget_spent`, `futile`, or `null` (interrupted).
    pub stop: Option<&'static str>,
    /// The stop in words.
    pub stop_reason: &'static str,
    pub inputs: u64,
    pub samples: u64,
    pub budget_inputs: u64,
    pub budget_samples: u64,
    /// With output rounds: the fixed run's N × M the design stands for
    /// (`budget_samples` is the design's maximum, a few more outputs per input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_samples: Option<u64>,
    pub samples_saved: u64,
    pub rounds: u64,
    pub confidence: Option<f64>,
    pub checks: Vec<WireSequence>,
}

/// One check's confidence sequence at the stop.
#[derive(Debug, Serialize)]
pub struct WireSequence {
    pub index: usize,
    pub name: String,
    pub threshold: Option<f64>,
    pub estimate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub inputs: u64,
    /// `pass`, `fail` (established), `open` or `futile`.
    pub state: &'static str,
    pub needed_inputs: Option<u64>,
    /// With output rounds: outputs per input projected to settle it.
    pub needed_outputs: Option<u64>,
    pub needed_samples: Option<u64>,
}

impl WireSequential {
    fn new(o: &SequentialOutcome, m: u64) -> Self {
        WireSequential {
            seed: o.seed,
            design: o.design.into(),
            stop: o.stop.map(<&str>::from),
            stop_reason: stop_words(o.stop),
            inputs: o.inputs,
            samples: o.samples,
            budget_inputs: o.budget_inputs,
            budget_samples: o.budget_samples,
            fixed_samples: o.fixed_samples,
            samples_saved: o.samples_saved(),
            rounds: o.rounds,
            confidence: num(o.confidence),
            checks: o
                .checks
                .iter()
                .enumerate()
                .map(|(index, c)| WireSequence {
                    index,
                    name: c.name.clone(),
                    threshold: num(c.threshold),
                    estimate: num(c.estimate),
                    lower: num(c.lower),
                    upper: num(c.upper),
                    inputs: c.inputs,
                    state: c.state.into(),
                    needed_inputs: c.needed_inputs,
                    needed_outputs: c.needed_outputs,
                    needed_samples: c
                        .needed_inputs
                        .map(|n| n.saturating_mul(m))
                        .or(c.needed_outputs.map(|k| k.saturating_mul(o.budget_inputs))),
                })
                .collect(),
        }
    }
}

/// Errors of the system, apart from failures.
#[derive(Debug, Serialize)]
pub struct WireErrors {
    pub system: WireCauses,
    /// Samples with an output (what a check could have judged).
    pub outputs: u64,
}

/// A group of errors and their most common causes.
#[derive(Debug, Serialize)]
pub struct WireCauses {
    pub total: u64,
    pub other: u64,
    pub causes: Vec<WireCause>,
}

#[derive(Debug, Serialize)]
pub struct WireCause {
    pub message: String,
    pub count: u64,
    pub input: usize,
    pub input_label: Option<String>,
    pub repetition: usize,
}

impl WireCauses {
    fn new(r: &RunReport, g: &CauseGroup) -> Self {
        WireCauses {
            total: g.total,
            other: g.other,
            causes: g
                .causes
                .iter()
                .map(|c| WireCause {
                    message: c.message.clone(),
                    count: c.count,
                    input: c.first.0,
                    input_label: label(r, c.first.0),
                    repetition: c.first.1,
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireReason {
    pub check: usize,
    pub reason: String,
}

/// One failing output with its input.
#[derive(Debug, Serialize)]
pub struct WireFailure {
    pub input: usize,
    pub input_label: Option<String>,
    pub input_fields: Option<Map<String, Value>>,
    pub repetition: usize,
    pub output: Option<String>,
    pub error: Option<String>,
    pub failed: Vec<usize>,
    pub errored: Vec<usize>,
    pub reasons: Vec<WireReason>,
}

/// pass^k and pass@k of one check.
#[derive(Debug, Serialize)]
pub struct WireConsistency<'a> {
    pub k: u32,
    pub mean_pass_all_k: WireRate,
    pub mean_pass_any_k: WireRate,
    pub per_input: Streamed<'a, WireInputConsistency>,
}

#[derive(Debug, Serialize)]
pub struct WireInputConsistency {
    pub index: usize,
    pub label: Option<String>,
    pub passes: u64,
    pub outputs: u64,
    pub pass_all_k: Option<WireBand>,
    pub pass_any_k: Option<WireBand>,
}

fn band_of(v: &Option<(f64, Interval)>) -> Option<WireBand> {
    v.as_ref().map(|(e, i)| WireBand {
        estimate: num(*e),
        lower: num(i.lower),
        upper: num(i.upper),
    })
}

impl<'a> WireConsistency<'a> {
    fn new(r: &'a RunReport, c: &'a Consistency, method: IntervalMethod) -> Self {
        WireConsistency {
            k: c.k,
            mean_pass_all_k: WireRate::new(&c.mean_pass_all_k, method),
            mean_pass_any_k: WireRate::new(&c.mean_pass_any_k, method),
            per_input: Streamed::new(move || {
                c.per_input().map(move |p| WireInputConsistency {
                    index: p.index,
                    label: label(r, p.index),
                    passes: p.passes,
                    outputs: p.outputs,
                    pass_all_k: band_of(&p.pass_all_k),
                    pass_any_k: band_of(&p.pass_any_k),
                })
            }),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireRun {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    pub config_hash: String,
    pub system: String,
    pub duration_s: Option<f64>,
    pub model_calls: u64,
    pub cached: u64,
    pub complete: bool,
    pub judge_calls: u64,
    pub tokens: u64,
    pub reused_from: Option<i64>,
    /// Each verifier's judge calls, by check name.
    pub judge_calls_by_check: std::collections::BTreeMap<String, u64>,
    /// How its calls went (`null` when the store has not recorded it).
    pub calls: Option<WireCalls>,
    /// Its cost in money (`crate::json::cost`).
    pub cost: crate::json::cost::WireCost,
}

/// A run's wall time beside its calls' summed time, each judge's
/// structured output, and where `concurrency = "auto"` settled.
#[derive(Debug, Serialize)]
pub struct WireCalls {
    pub processes: u64,
    pub wall_s: Option<f64>,
    pub process_s: Option<f64>,
    /// Time answered calls took, sent to answered, summed over calls.
    pub call_s: Option<f64>,
    /// Time calls waited on probity's side before being sent, summed.
    pub queued_s: Option<f64>,
    /// Of the run's calls, those paid by processes that died with them in
    /// flight (no answer recorded).
    pub lost_in_flight: u64,
    /// `{check, asked, used}` per judge that negotiates structured output.
    pub structured_output: Vec<WireStructured>,
    pub auto_concurrency: Option<WireAuto>,
}

#[derive(Debug, Serialize)]
pub struct WireStructured {
    pub check: String,
    pub asked: String,
    pub used: String,
}

#[derive(Debug, Serialize)]
pub struct WireAuto {
    pub chosen: u64,
    pub most: u64,
    pub settled: bool,
    /// `[calls at once, calls answered per second]` per limit tried.
    pub tried: Vec<(u64, Option<f64>)>,
}

fn wire_calls(c: &crate::document::info::CallsInfo) -> WireCalls {
    WireCalls {
        processes: c.processes,
        wall_s: num(c.wall_s),
        process_s: num(c.process_s),
        call_s: num(c.call_s),
        queued_s: num(c.queued_s),
        lost_in_flight: c.lost_in_flight,
        structured_output: c
            .structured
            .iter()
            .map(|(check, asked, used)| WireStructured {
                check: check.clone(),
                asked: asked.clone(),
                used: used.clone(),
            })
            .collect(),
        auto_concurrency: c.auto_concurrency.as_ref().map(|a| WireAuto {
            chosen: a.chosen,
            most: a.most,
            settled: a.settled,
            tried: a.tried.iter().map(|(n, x)| (*n, num(*x))).collect(),
        }),
    }
}

#[derive(Debug, Serialize)]
pub struct WireShape {
    pub inputs: usize,
    pub outputs_per_input: usize,
    pub checks: usize,
}

#[derive(Debug, Serialize)]
pub struct WireOptions {
    pub confidence: Option<f64>,
    pub interval: &'static str,
    pub errors: &'static str,
    pub verdict: &'static str,
    pub strategy: &'static str,
    pub aggregate: &'static str,
    pub retry_target: Option<f64>,
    /// How outputs of one input are clustered (`profile`, `beta-binomial`,
    /// `icc-bound`, `design-effect`, `binomial`).
    pub cluster: &'static str,
}

#[derive(Debug, Serialize)]
pub struct WireTally {
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
    pub conclusion: String,
    pub broken: usize,
}

#[derive(Debug, Serialize)]
pub struct WireCounts {
    pub pass: u64,
    pub fail: u64,
    pub error: u64,
    pub missing: u64,
}

#[derive(Debug, Serialize)]
pub struct WireRate {
    pub estimate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    pub confidence: Option<f64>,
    pub method: &'static str,
    pub n: u64,
    pub pass: u64,
    pub fail: u64,
    pub error: u64,
    pub missing: u64,
    pub design_effect: Option<f64>,
    pub effective_n: Option<f64>,
    pub inputs: u64,
    pub scope: &'static str,
    /// A check's rate over all outputs: how its outputs were clustered by
    /// input (`options.cluster`, or `none` when the interval is over
    /// outputs as independent trials); absent on other rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<&'static str>,
}

impl WireRate {
    pub(crate) fn new(r: &RateEstimate, method: IntervalMethod) -> Self {
        WireRate {
            estimate: num(r.estimate),
            lower: num(r.interval.lower),
            upper: num(r.interval.upper),
            confidence: num(r.confidence),
            method: name(method),
            n: r.n,
            pass: r.counts.pass,
            fail: r.counts.fail,
            error: r.counts.error,
            missing: r.counts.missing,
            design_effect: num(r.design_effect),
            effective_n: num(r.effective_n),
            inputs: r.inputs,
            scope: scope_name(r.scope),
            cluster: None,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireVerdict {
    pub decision: &'static str,
    pub threshold: Option<f64>,
    pub established: bool,
    pub samples_needed: Option<u64>,
    pub more_samples_needed: Option<u64>,
    /// Why it is not established and what would settle it (core's
    /// `NotEstablished`, tagged by `reason`) with the sentence the other
    /// formats print; absent when established.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<WireWhyNot>,
}

#[derive(Debug, Serialize)]
pub struct WireWhyNot {
    #[serde(flatten)]
    pub reason: probity_core::stats::NotEstablished,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct WireEntry {
    pub index: usize,
    pub label: Option<String>,
    pub rate: WireRate,
}

#[derive(Debug, Serialize)]
pub struct WireCheck<'a> {
    pub index: usize,
    pub name: String,
    pub kind: &'static str,
    pub message: String,
    pub threshold: Option<f64>,
    pub weight: Option<f64>,
    pub rate: WireRate,
    pub verdict: WireVerdict,
    pub worst_input: Option<WireEntry>,
    pub breakdown_by: Option<&'static str>,
    pub breakdown_below: usize,
    pub breakdown: Streamed<'a, WireEntry>,
    pub broken: bool,
    pub errors: WireCauses,
    pub consistency: Option<WireConsistency<'a>>,
    /// A verifier calibrated on a labelled set (added within v1).
    pub calibration: Option<crate::json::calibration::WireCalibration>,
    /// The inputs the check applies to, `{inputs, of}` (its `when`, or
    /// its inputs' own checks); `null` when it applies to all (added
    /// within v1). Its rate is over these inputs alone.
    pub applies_to: Option<probity_core::AppliesTo>,
}

#[derive(Debug, Serialize)]
pub struct WireNamed {
    pub index: usize,
    pub name: String,
}

#[derive(Debug, Serialize)]
pub struct WireAggregate {
    pub method: &'static str,
    pub rate: WireRate,
    pub worst_check: Option<WireNamed>,
    pub per_check: Vec<WireRate>,
}

#[derive(Debug, Serialize)]
pub struct WireProfiles<'a> {
    pub inputs: Streamed<'a, WireEntry>,
    pub outputs: Streamed<'a, WireEntry>,
}

#[derive(Debug, Serialize)]
pub struct WirePlan {
    pub p: Option<f64>,
    pub expected_attempts: Option<f64>,
    pub expected_retries: Option<f64>,
    pub attempts: Option<u32>,
    pub retries: Option<u32>,
    pub no_output: Option<f64>,
    pub expected_calls: Option<f64>,
}

impl WirePlan {
    fn new(g: Geometric, target: f64) -> Self {
        let attempts = g.attempts_for(target);
        WirePlan {
            p: num(g.p),
            expected_attempts: g.expected_attempts().and_then(num),
            expected_retries: g.expected_retries().and_then(num),
            attempts,
            retries: attempts.map(|m| m.saturating_sub(1)),
            no_output: attempts.and_then(|m| num(g.no_output(m))),
            expected_calls: attempts.and_then(|m| num(g.expected_calls(m))),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireInputPlan {
    pub index: usize,
    pub label: Option<String>,
    pub rate: WireRate,
    pub attempts: Option<u32>,
    pub retries: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct WireRetry<'a> {
    pub target: Option<f64>,
    pub rates: Vec<Option<f64>>,
    pub p_independent: Option<f64>,
    pub independent: WirePlan,
    pub measured: Option<WirePlan>,
    pub conservative: Option<WirePlan>,
    pub measured_rate: Option<WireRate>,
    pub dependence_ratio: Option<f64>,
    pub phi: Vec<Vec<Option<f64>>>,
    pub per_input: Streamed<'a, WireInputPlan>,
}

/// A value with an interval (`lower` = `upper` = `estimate` for a point).
#[derive(Debug, Serialize)]
pub struct WireBand {
    pub estimate: Option<f64>,
    pub lower: Option<f64>,
    pub upper: Option<f64>,
}

impl WireBand {
    fn new(b: &Band) -> Self {
        WireBand {
            estimate: num(b.estimate),
            lower: num(b.lower),
            upper: num(b.upper),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireGuardedMeasured {
    pub requests: u64,
    pub histogram: Vec<u64>,
    pub nothing_published: u64,
    pub success_within: WireRate,
    pub attempts_used: WireBand,
    pub calls: u64,
    pub calls_per_request: Option<f64>,
    pub tokens: u64,
}

#[derive(Debug, Serialize)]
pub struct WirePrediction {
    pub model: String,
    pub p: WireBand,
    pub success_within: WireBand,
    pub attempts_used: WireBand,
}

#[derive(Debug, Serialize)]
pub struct WireGuarded {
    pub attempts: u32,
    pub retries: u32,
    pub held: bool,
    pub outcome: &'static str,
    pub rule: &'static str,
    pub measured: WireGuardedMeasured,
    pub predictions: Vec<WirePrediction>,
}

impl WireGuarded {
    pub(crate) fn new(c: &RetryCheck, method: IntervalMethod) -> Self {
        let g = &c.measured;
        WireGuarded {
            attempts: g.m,
            retries: g.m.saturating_sub(1),
            held: c.held,
            outcome: match outcome(c) {
                Outcome::Held => "held",
                Outcome::NotHeld => "not-held",
                Outcome::Untested => "untested",
            },
            rule: RULE,
            measured: WireGuardedMeasured {
                requests: g.samples,
                histogram: g.histogram.clone(),
                nothing_published: g.nothing_published,
                success_within: WireRate::new(&g.success, method),
                attempts_used: WireBand::new(&g.attempts),
                calls: g.calls,
                calls_per_request: num(calls_per_request(g)),
                tokens: g.tokens,
            },
            predictions: c
                .predictions
                .iter()
                .map(|p| WirePrediction {
                    model: p.model.clone(),
                    p: WireBand::new(&p.p),
                    success_within: WireBand::new(&p.success_within),
                    attempts_used: WireBand::new(&p.attempts),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct WireExample {
    pub check: usize,
    pub check_name: Option<String>,
    pub input: usize,
    pub input_label: Option<String>,
    pub repetition: usize,
    pub output: String,
    pub reason: Option<String>,
    pub input_fields: Option<Map<String, Value>>,
}

fn label(r: &RunReport, i: usize) -> Option<String> {
    r.input_labels.get(i).filter(|l| !l.is_empty()).cloned()
}

fn entry(r: &RunReport, e: &ProfileEntry, labelled: bool, method: IntervalMethod) -> WireEntry {
    WireEntry {
        index: e.index,
        label: if labelled { label(r, e.index) } else { None },
        rate: WireRate::new(&e.rate, method),
    }
}

fn check<'a>(r: &'a RunReport, index: usize, c: &'a CheckSummary) -> WireCheck<'a> {
    let s = &r.summary;
    let method = s.options.interval;
    let breakdown_by = (!c.breakdown.is_empty()).then_some(match s.strategy {
        Strategy::Columns => "outputs",
        _ => "inputs",
    });
    WireCheck {
        index,
        name: c.info.name.clone(),
        kind: name(c.info.kind),
        message: c.info.message.clone(),
        threshold: num(c.info.minimum_success_percentage),
        weight: num(c.info.weight),
        rate: {
            // The interval the check's rate has is named by what computed
            // it (the clustered methods do not use `interval`).
            let (m, cluster) = crate::facts::run::interval_names(r);
            WireRate {
                method: m,
                cluster: Some(cluster),
                ..WireRate::new(&c.rate, method)
            }
        },
        verdict: WireVerdict {
            decision: name(c.verdict.decision),
            threshold: num(c.verdict.threshold),
            established: c.verdict.established,
            samples_needed: c.verdict.samples_needed,
            more_samples_needed: more_samples(c),
            why_not: c
                .verdict
                .why_not
                .filter(|_| !c.verdict.established)
                .map(|w| WireWhyNot {
                    reason: w,
                    text: crate::facts::run::why_not(&w, c),
                }),
        },
        worst_input: c.worst_input.as_ref().map(|w| entry(r, w, true, method)),
        breakdown_by,
        breakdown_below: c.breakdown_below,
        breakdown: Streamed::new(move || {
            let labelled = breakdown_by == Some("inputs");
            c.breakdown
                .iter()
                .map(move |e| entry(r, e, labelled, method))
        }),
        broken: r.broken_cause(index).is_some(),
        errors: WireCauses::new(r, &r.causes.checks.get(index).cloned().unwrap_or_default()),
        consistency: c
            .consistency
            .as_ref()
            .map(|k| WireConsistency::new(r, k, method)),
        calibration: crate::json::calibration::WireCalibration::of(
            c,
            r.summary.sequential.is_some(),
        ),
        applies_to: c.applies_to,
    }
}

/// The retry plan as a wire struct: the run's, or a plan's
/// (`probity.plan.v1`). `label` gives input `i`'s id.
pub(crate) fn retry<'a>(
    plan: &'a RetryPlan,
    target: f64,
    method: IntervalMethod,
    label: impl Fn(usize) -> Option<String> + Copy + 'a,
) -> WireRetry<'a> {
    WireRetry {
        target: num(target),
        rates: plan.rates.iter().map(|&x| num(x)).collect(),
        p_independent: num(plan.p_independent),
        independent: WirePlan::new(plan.independent(), target),
        measured: plan.measured().map(|g| WirePlan::new(g, target)),
        conservative: plan.conservative().map(|g| WirePlan::new(g, target)),
        measured_rate: plan
            .empirical
            .as_ref()
            .map(|e| WireRate::new(&e.overall, method)),
        dependence_ratio: plan.dependence_ratio().and_then(num),
        phi: plan
            .empirical
            .as_ref()
            .map(|e| {
                e.phi
                    .iter()
                    .map(|row| row.iter().map(|v| v.and_then(num)).collect())
                    .collect()
            })
            .unwrap_or_default(),
        per_input: Streamed::new(move || {
            let rates = plan
                .empirical
                .as_ref()
                .map_or(&[][..], |e| &e.per_input[..]);
            rates.iter().enumerate().map(move |(i, rate)| {
                let attempts = Geometric { p: rate.estimate }.attempts_for(target);
                WireInputPlan {
                    index: i,
                    label: label(i),
                    rate: WireRate::new(rate, method),
                    attempts,
                    retries: attempts.map(|m| m.saturating_sub(1)),
                }
            })
        }),
    }
}

/// Build the wire document of `r` (without its comparison).
pub fn wire(r: &RunReport) -> Wire<'_> {
    let s = &r.summary;
    let o = &s.options;
    let method = o.interval;
    let (pass, fail, inconclusive) = r.tally();
    let target = r.retry_target;
    Wire {
        schema: SCHEMA,
        run: WireRun {
            id: r.run.id,
            name: r.run.name.clone(),
            created_at: r.run.created_at.clone(),
            config_hash: r.run.config_hash.clone(),
            system: r.run.system.clone(),
            duration_s: r.run.duration_s.and_then(num),
            model_calls: r.run.model_calls,
            cached: r.run.cached,
            complete: r.run.complete,
            judge_calls: r.run.judge_calls,
            tokens: r.run.tokens,
            reused_from: r.run.reused_from,
            judge_calls_by_check: r.run.judge_calls_by_check.iter().cloned().collect(),
            calls: r.run.calls.as_ref().map(wire_calls),
            cost: crate::json::cost::wire_cost(&r.run.cost),
        },
        shape: WireShape {
            inputs: s.shape.0,
            outputs_per_input: s.shape.1,
            checks: s.shape.2,
        },
        options: WireOptions {
            confidence: num(o.confidence),
            interval: name(o.interval),
            errors: name(o.errors),
            verdict: name(o.verdict),
            strategy: name(s.strategy),
            aggregate: name(s.aggregate.method),
            retry_target: num(target),
            cluster: crate::facts::run::cluster_name(o.cluster),
        },
        passed: r.passed(),
        summary: WireTally {
            pass,
            fail,
            inconclusive,
            conclusion: r.conclusion(),
            broken: r.broken().len(),
        },
        counts: WireCounts {
            pass: s.counts.pass,
            fail: s.counts.fail,
            error: s.counts.error,
            missing: s.counts.missing,
        },
        checks: s
            .checks
            .iter()
            .enumerate()
            .map(|(k, c)| check(r, k, c))
            .collect(),
        aggregate: WireAggregate {
            method: name(s.aggregate.method),
            rate: WireRate::new(&s.aggregate.rate, method),
            worst_check: s.aggregate.worst_validator.map(|k| WireNamed {
                index: k,
                name: r.check_name(k),
            }),
            per_check: s
                .aggregate
                .per_validator
                .iter()
                .map(|p| WireRate::new(p, method))
                .collect(),
        },
        profiles: WireProfiles {
            inputs: Streamed::new(move || {
                s.input_profile
                    .iter()
                    .map(move |e| entry(r, e, true, method))
            }),
            outputs: Streamed::new(move || {
                s.output_profile
                    .iter()
                    .map(move |e| entry(r, e, false, method))
            }),
        },
        retry: retry(&s.retry, target, method, move |i| label(r, i)),
        examples: r
            .examples
            .iter()
            .map(|e| WireExample {
                check: e.check,
                check_name: s.checks.get(e.check).map(|c| c.info.name.clone()),
                input: e.input,
                input_label: label(r, e.input),
                repetition: e.repetition,
                output: e.output.clone(),
                reason: e.reason.clone(),
                input_fields: r.input_fields_of(e.input).cloned(),
            })
            .collect(),
        guarded: r.guarded.as_ref().map(|c| WireGuarded::new(c, method)),
        errors: WireErrors {
            system: WireCauses::new(r, &r.causes.system),
            outputs: r.causes.outputs,
        },
        failures: r
            .failures
            .iter()
            .map(|f| WireFailure {
                input: f.input,
                input_label: label(r, f.input),
                input_fields: r.input_fields_of(f.input).cloned(),
                repetition: f.repetition,
                output: f.output.clone(),
                error: f.error.clone(),
                failed: f.failed.clone(),
                errored: f.errored.clone(),
                reasons: f
                    .reasons
                    .iter()
                    .map(|(k, reason)| WireReason {
                        check: *k,
                        reason: reason.clone(),
                    })
                    .collect(),
            })
            .collect(),
        sequential: s
            .sequential
            .as_ref()
            .map(|o| WireSequential::new(o, s.shape.1 as u64)),
        live: r.live.as_ref().map(super::live::WireLive::new),
    }
}

/// Render the JSON report, pretty-printed, with a trailing newline; with
/// its comparison as the `comparison` field when the run has a baseline.
pub(crate) fn render(r: &RunReport) -> String {
    let mut s = match &r.baseline {
        None => serde_json::to_string_pretty(&wire(r)),
        Some(c) => {
            // As a map, so the keys are in the order probity has always
            // written a run with its comparison: alphabetical.
            let mut v = serde_json::to_value(wire(r))
                .expect("the wire structs serialise: string keys, no non-finite floats");
            v["comparison"] = crate::json::comparison::value(c);
            serde_json::to_string_pretty(&v)
        }
    }
    .expect("the wire structs serialise: string keys, no non-finite floats");
    s.push('\n');
    s
}

/// [`render`] written to `w` as it is made: a run without a baseline is
/// serialised straight into `w`, never held whole as a string (the JSON
/// report of a million inputs is gigabytes).
pub(crate) fn write(r: &RunReport, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    if r.baseline.is_some() {
        return w.write_all(render(r).as_bytes());
    }
    serde_json::to_writer_pretty(&mut *w, &wire(r)).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}
