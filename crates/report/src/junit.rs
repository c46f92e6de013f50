//! The JUnit XML format, for CI test reporters (GitLab's `artifacts:
//! reports: junit`, GitHub actions such as `dorny/test-reporter` or
//! `mikepenz/action-junit-report`).
//!
//! | document | test cases |
//! | --- | --- |
//! | run | one per check, `guard prediction` for a run with a retry policy, `regression: CHECK` per check compared with a baseline |
//! | comparison | `regression: CHECK` per compared check |
//! | trend, plan | none: a trend or a plan checks nothing, so JUnit gets its text ([`crate::text`]), as `probity report --trend --format junit` always printed |
//!
//! Layout of a run: a `<testsuites>` root holding one `<testsuite name="probity:
//! RUN">`, which holds one `<testcase classname="probity.RUN" name="CHECK">`
//! per check. Both carry `tests`, `failures`, `errors`, `skipped` and `time`.
//!
//! Mapping of verdicts:
//!
//! | verdict | element | why |
//! | --- | --- | --- |
//! | pass | none (the test case passes) | |
//! | fail | `<failure type="below-minimum">` | |
//! | inconclusive | `<failure type="inconclusive">` | CI must not go green on a compliance the sample did not establish; `<skipped>` would let it |
//! | any non-pass with no output judged (`n = 0`) | `<error type="no-data">` | nothing was measured: a broken run, not a measured failure |
//! | a broken check (it could not judge any output) | `<error type="broken">` | its message says why; no verdict about the system |
//!
//! The `message` attribute holds the check's message and the figures
//! (rate, interval, threshold, n); the element's text repeats them with
//! the worst input and one failing output beside its input's fields.
//! `<system-out>` of every test case holds the figures, the inputs the
//! rate is over and what its interval is about, errors counted apart from
//! failures with their causes, the design effect, the consistency
//! (pass^k, pass@k) and whether the verdict was established.
//!
//! The suite's properties give the run's calls, judge calls, tokens and
//! reuse; its `<system-out>` (after the test cases) the calls to the
//! system that failed after their retries (not measured), with their
//! causes.
//!
//! A run made with a `[retry]` policy ([`RunReport::guarded`]) gets one more
//! test case, `guard prediction` (same classname): it checks the retry
//! plan's prediction against the guarded system as measured.
//!
//! | prediction | element |
//! | --- | --- |
//! | held | none (the test case passes) |
//! | did not hold | `<failure type="prediction">` |
//! | not tested (no joint pass rate to predict from) | `<error type="no-data">` |
//!
//! Its `message` gives the measured and predicted figures (P(success
//! within m), attempts used); the text and `<system-out>` give the whole
//! table. A prediction that did not hold fails the test case, so a CI test
//! reporter shows it: the retry budget planned from single attempts is
//! wrong for the guarded system. It does not change the run's verdict or
//! the CLI's exit code, which are about the checks.
//!
//! A run with a baseline ([`RunReport::baseline`]) gets one test case
//! `regression: CHECK` per compared check, failing with
//! `type="regression"` when the check regressed significantly; a
//! comparison alone is a test suite of those.
//!
//! The XML is written by `quick-junit` (the crate cargo-nextest writes
//! its JUnit with), which escapes every attribute and text; before that,
//! characters that XML 1.0 does not allow (most control characters,
//! escape sequences, bidirectional overrides) are removed by
//! [`crate::sanitize::xml_clean`]. A newline in a `message` attribute is
//! written as it is (XML readers show it as a space).

use crate::document::comparison::ComparisonReport;
use crate::document::run::RunReport;
use crate::document::Document;
use crate::facts::causes;
use crate::facts::comparison::{check_lines, points, points_interval};
use crate::facts::guarded::{
    attempts_band, measured_success, outcome as prediction_outcome, per_input,
};
use crate::facts::guarded::{pct_band, Outcome as GuardOutcome};
use crate::facts::run as facts;
use crate::facts::sequential;
use crate::numbers::{decision_word, name};
use crate::sanitize::{truncate_chars, xml_clean};
use probity_core::compare::Direction;
use probity_core::guarded::RetryCheck;
use probity_core::stats::Decision;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// Longest model output included in a failure's text, in characters.
pub const EXAMPLE_MAX_CHARS: usize = 2000;

/// How a check shows up in JUnit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failure,
    Error,
}

/// The JUnit outcome of check `k`.
pub fn outcome(r: &RunReport, k: usize) -> Outcome {
    let c = &r.summary.checks[k];
    if r.broken_cause(k).is_some() {
        return Outcome::Error;
    }
    match c.verdict.decision {
        Decision::Pass => Outcome::Passed,
        _ if c.rate.n == 0 => Outcome::Error,
        Decision::Fail | Decision::Inconclusive => Outcome::Failure,
    }
}

/// Render `doc` as JUnit XML (a trend or a plan: its text).
pub(crate) fn render(doc: Document<'_>) -> String {
    match doc {
        Document::Run(r) => run(r),
        Document::Comparison(c) => comparison(c),
        Document::Trend(t) => crate::text::trend::render(t),
        Document::Plan(p) => crate::text::plan::render(p),
        Document::Variants(v) => variants(v),
    }
}

/// A test case `name` of `classname` with `status` and its `<system-out>`.
fn case(classname: &str, name: &str, status: TestCaseStatus, out: &str) -> TestCase {
    let mut c = TestCase::new(xml_clean(name), status);
    c.set_classname(xml_clean(classname))
        .set_time(Duration::ZERO)
        .set_system_out(xml_clean(out));
    c
}

/// A failing (`Failure`) or erring (`Error`) status of type `kind` with
/// its message and text.
fn non_success(kind: NonSuccessKind, ty: &str, message: &str, text: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(ty)
        .set_message(xml_clean(message))
        .set_description(xml_clean(text));
    s
}

/// The XML of a report with one suite.
fn write(suite: TestSuite, time: Duration) -> String {
    let mut report = Report::new("probity");
    report.set_time(time).add_test_suite(suite);
    // The report holds only strings this module cleaned; writing it to
    // memory cannot fail but would on a bug in the writer: say so.
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- probity: could not write JUnit XML: {e} -->\n"))
}

/// The report of a run: one test case per check, `guard prediction`, and
/// `regression: CHECK` per check compared with its baseline.
fn run(r: &RunReport) -> String {
    let (suite, time) = run_suite(r);
    write(suite, time)
}

/// A variants run: one suite per variant (its run's, named
/// `probity: NAME/VARIANT`), and a last suite `probity: NAME variants`
/// whose cases are the established differences (each a passing case
/// naming the better variant: a difference is a finding, not a failure)
/// and the conclusion in its `system-out`.
fn variants(r: &crate::document::variants::VariantsReport) -> String {
    let mut report = Report::new("probity");
    let mut total = Duration::ZERO;
    for v in &r.variants {
        let (suite, time) = run_suite(&v.report);
        total += time;
        report.add_test_suite(suite);
    }
    let c = &r.comparison;
    let mut suite = TestSuite::new(xml_clean(&format!("probity: {} variants", r.name)));
    let classname = format!("probity.{}.variants", r.name);
    for e in c.better() {
        suite.add_test_case(case(
            &classname,
            &format!(
                "{} better than {}: {}",
                c.names[e.better], c.names[e.worse], e.check.name
            ),
            TestCaseStatus::success(),
            &crate::facts::variants::difference(e.check, c.options.multiple),
        ));
    }
    suite.set_system_out(xml_clean(&format!(
        "{}\n{}",
        crate::facts::variants::conclusion(r),
        crate::facts::variants::method_line(c)
    )));
    report.add_test_suite(suite);
    report.set_time(total);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- probity: could not write JUnit XML: {e} -->\n"))
}

/// A run's test suite and its time.
fn run_suite(r: &RunReport) -> (TestSuite, Duration) {
    let s = &r.summary;
    let run = &r.run.name;
    let classname = format!("probity.{run}");
    let time = Duration::from_secs_f64(
        r.run
            .duration_s
            .filter(|d| d.is_finite() && *d >= 0.0)
            .unwrap_or(0.0),
    );
    let mut suite = TestSuite::new(xml_clean(&format!("probity: {run}")));
    suite.set_time(time);
    if !r.run.created_at.is_empty() {
        suite
            .extra
            .insert("timestamp".into(), xml_clean(&r.run.created_at).into());
    }
    let (n, m, kk) = s.shape;
    let props: [(&str, String); 15] = [
        ("probity.run.id", r.run.id.to_string()),
        ("probity.run.system", r.run.system.clone()),
        ("probity.run.config_hash", r.run.config_hash.clone()),
        ("probity.run.complete", r.run.complete.to_string()),
        ("probity.run.model_calls", r.run.model_calls.to_string()),
        ("probity.run.cached", r.run.cached.to_string()),
        ("probity.run.judge_calls", r.run.judge_calls.to_string()),
        ("probity.run.tokens", r.run.tokens.to_string()),
        (
            "probity.run.reused_from",
            r.run
                .reused_from
                .map_or_else(String::new, |x| x.to_string()),
        ),
        ("probity.run.calls", facts::calls_line(&r.run)),
        ("probity.errors.system", r.causes.system.total.to_string()),
        (
            "probity.broken",
            r.broken()
                .iter()
                .map(|(k, _)| r.check_name(*k))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "probity.shape",
            format!("{n} inputs x {m} outputs x {kk} checks"),
        ),
        (
            "probity.aggregate",
            facts::aggregate_line(r, &|name| name.to_string()),
        ),
        ("probity.conclusion", r.conclusion()),
    ];
    // A sequential run: why and when it stopped.
    let seq: Vec<(&str, String)> = s
        .sequential
        .iter()
        .flat_map(|o| {
            [
                ("probity.sequential", sequential::headline(o)),
                (
                    "probity.sequential.stop",
                    o.stop.map_or_else(String::new, |r| r.to_string()),
                ),
                ("probity.sequential.method", sequential::method_line(o)),
            ]
        })
        .collect();
    for (name, value) in props.into_iter().chain(seq) {
        suite.add_property(Property::new(name, xml_clean(&value)));
    }
    for idx in 0..s.checks.len() {
        suite.add_test_case(check_case(r, idx, &classname));
    }
    if let Some(g) = &r.guarded {
        suite.add_test_case(guard_case(g, &classname));
    }
    if let Some(c) = &r.baseline {
        suite.add_test_cases(comparison_cases(c, &classname));
    }
    let system = &r.causes.system;
    if system.total > 0 {
        suite.set_system_out(xml_clean(&cause_lines(
            r,
            system,
            &causes::system_head(system),
        )));
    }
    (suite, time)
}

/// The test case of check `idx`.
fn check_case(r: &RunReport, idx: usize, classname: &str) -> TestCase {
    let s = &r.summary;
    let c = &s.checks[idx];
    let figures = facts::figures(c, s.sequential.is_some());
    let established = facts::established(c);
    let headline = if c.info.message.is_empty() {
        format!("{}: {figures}", name(c.verdict.decision))
    } else {
        format!("{}: {figures}", c.info.message)
    };
    let broken = r.broken_cause(idx);
    let headline = match broken {
        Some(cause) => causes::broken_line(r, cause, &|s| s.to_string()),
        None => headline,
    };
    let status = match outcome(r, idx) {
        Outcome::Passed => TestCaseStatus::success(),
        o => {
            let (kind, ty) = match (o, c.verdict.decision) {
                (Outcome::Error, _) if broken.is_some() => (NonSuccessKind::Error, "broken"),
                (Outcome::Error, _) => (NonSuccessKind::Error, "no-data"),
                (_, Decision::Inconclusive) => (NonSuccessKind::Failure, "inconclusive"),
                _ => (NonSuccessKind::Failure, "below-minimum"),
            };
            let mut body = vec![format!(
                "{} (verdict {}, {established})",
                headline,
                name(c.verdict.decision)
            )];
            if let Some(w) = &c.worst_input {
                body.push(format!(
                    "worst input {}: {}",
                    r.input_label(w.index),
                    facts::rate_with_interval(&w.rate)
                ));
            }
            if let Some(ex) = r.example_for(idx) {
                body.push(format!(
                    "example failing output (input {}, output #{}):\n{}",
                    r.input_label(ex.input),
                    ex.repetition,
                    truncate_chars(&ex.output, EXAMPLE_MAX_CHARS)
                ));
                if let Some(reason) = &ex.reason {
                    body.push(format!("reason: {reason}"));
                }
                if let Some(fields) = r.input_fields_of(ex.input) {
                    body.push(format!(
                        "its input {}: {}",
                        r.input_label(ex.input),
                        truncate_chars(
                            &serde_json::to_string(fields).unwrap_or_default(),
                            EXAMPLE_MAX_CHARS
                        )
                    ));
                }
            }
            non_success(kind, ty, &headline, &body.join("\n"))
        }
    };
    let mut out = vec![
        format!("{}: {figures}", decision_word(c.verdict.decision)),
        established,
    ];
    if let Some(b) = broken {
        out.insert(0, causes::broken_line(r, b, &|s| s.to_string()));
    }
    out.extend(facts::check_inputs_note(c));
    out.extend(facts::scope_note(&c.rate));
    out.extend(facts::errors(&c.rate, s.options.errors));
    if let Some(g) = r.causes.checks.get(idx).filter(|g| g.total > 0) {
        out.push(cause_lines(r, g, &causes::check_head(g)));
    }
    if let Some(k) = &c.consistency {
        out.push(facts::consistency_line(k));
    }
    if let Some(seq) = s.sequential.as_ref().and_then(|o| o.checks.get(idx)) {
        out.push(format!(
            "confidence sequence (sequential run): {}",
            sequential::check_line(seq, s.shape.1 as u64, &|n| n.to_string())
        ));
    }
    case(classname, &c.info.name, status, &out.join("\n"))
}

/// A group of errors as lines: the head, then every cause kept.
fn cause_lines(r: &RunReport, g: &probity_core::causes::CauseGroup, head: &str) -> String {
    let mut lines = vec![format!("{head}:")];
    for c in &g.causes {
        lines.push(format!(
            "  {}",
            causes::cause_line(r, c, &|s| s.to_string())
        ));
    }
    if let Some(rest) = causes::rest(g, g.causes.len()) {
        lines.push(format!("  {rest}"));
    }
    lines.join("\n")
}

/// The name of the guarded system's test case.
pub const GUARD_CASE: &str = "guard prediction";

/// The `guard prediction` test case of a run with a retry policy.
fn guard_case(check: &RetryCheck, classname: &str) -> TestCase {
    let g = &check.measured;
    let figures = match per_input(check) {
        Some(j) => format!(
            "P(success within {m}) measured {} vs predicted (each input at its own rate) {}; attempts used measured {} vs predicted {}",
            pct_band(&measured_success(g)),
            pct_band(&j.success_within),
            attempts_band(&g.attempts),
            attempts_band(&j.attempts),
            m = g.m
        ),
        None => format!(
            "P(success within {m}) measured {}; attempts used measured {}",
            pct_band(&measured_success(g)),
            attempts_band(&g.attempts),
            m = g.m
        ),
    };
    let table = crate::text::guarded::block(check, false);
    let status = match prediction_outcome(check) {
        GuardOutcome::Held => TestCaseStatus::success(),
        GuardOutcome::NotHeld => non_success(
            NonSuccessKind::Failure,
            "prediction",
            &format!("retry prediction did not hold: {figures}"),
            &table,
        ),
        GuardOutcome::Untested => non_success(
            NonSuccessKind::Error,
            "no-data",
            &format!("retry prediction not tested: no joint pass rate; {figures}"),
            &table,
        ),
    };
    case(
        classname,
        GUARD_CASE,
        status,
        &format!("{figures}\n{table}"),
    )
}

/// Test cases `regression: CHECK`, one per compared check, failing
/// (`type="regression"`) when the check regressed.
fn comparison_cases(r: &ComparisonReport, classname: &str) -> Vec<TestCase> {
    r.comparison
        .checks
        .iter()
        .map(|k| {
            let lines = check_lines(k, r.comparison.options.multiple).join("\n");
            let headline = format!(
                "{} against baseline run {}: change {} pts, interval {}",
                k.direction.words(),
                r.baseline.id,
                points(k.decisive().mean_diff),
                points_interval(k.decisive())
            );
            let status = if k.direction == Direction::Regressed {
                non_success(NonSuccessKind::Failure, "regression", &headline, &lines)
            } else {
                TestCaseStatus::success()
            };
            case(
                classname,
                &format!("regression: {}", k.name),
                status,
                &format!("{headline}\n{lines}"),
            )
        })
        .collect()
}

/// The comparison alone as a JUnit XML document.
fn comparison(r: &ComparisonReport) -> String {
    let name = format!("probity compare: {} -> {}", r.baseline.id, r.candidate.id);
    let mut suite = TestSuite::new(xml_clean(&name));
    suite.set_time(Duration::ZERO);
    suite.add_test_cases(comparison_cases(
        r,
        &format!("probity.{}", r.candidate.name),
    ));
    write(suite, Duration::ZERO)
}
