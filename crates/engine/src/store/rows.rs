//! One reading of a stored row for both backends: the columns of a run,
//! a sample, an attempt, a cached output, as each backend's row type
//! yields them ([`RowRead`]), and the encodings both store (a cell per
//! byte, reasons and JSON settings as text).

use super::records::{
    AttemptCounts, AttemptRow, CachedOutput, RunCalls, RunRecord, RunStatus, SampleRow, VariantTag,
};
use probity_core::cost::{RunUsage, Usage};
use probity_core::Cell;

/// A stored row's columns, by position, as the store keeps them:
/// integers (64-bit), optional integers, text, reals, bytes and flags.
pub(super) trait RowRead {
    type Error;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn opt_real(&self, i: usize) -> Result<Option<f64>, Self::Error>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, Self::Error>;
    fn flag(&self, i: usize) -> Result<bool, Self::Error>;
}

/// A cell as stored: one byte (0 missing, 1 pass, 2 fail, 3 error, 4 not
/// applicable).
pub(super) fn cell_byte(c: Cell) -> u8 {
    c as u8
}

pub(super) fn byte_cell(b: u8) -> Cell {
    match b {
        1 => Cell::Pass,
        2 => Cell::Fail,
        3 => Cell::Error,
        4 => Cell::NotApplicable,
        _ => Cell::Missing,
    }
}

pub(super) fn cell_bytes(cells: &[Cell]) -> Vec<u8> {
    cells.iter().map(|&c| cell_byte(c)).collect()
}

/// Reasons as stored: JSON text, `None` when there are none.
pub(super) fn reasons_text(reasons: &[(usize, String)]) -> Option<String> {
    (!reasons.is_empty()).then(|| serde_json::to_string(reasons).unwrap_or_default())
}

fn reasons_of(text: Option<String>) -> Vec<(usize, String)> {
    text.and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

/// The columns [`run_from_row`] reads, in its order.
pub(super) const RUN_COLUMNS: &str =
    "SELECT id, name, created_at, finished_at, status, config_hash, config, system, inputs,
    outputs_per_input, checks, settings, parent_run, model_calls, cached, duration_s,
    judge_calls, tokens, reused_from, judge_calls_by_check, verdicts, outputs_from,
    sequential, variant, variant_group, processes, call_s, queued_s, process_s,
    span_end_s - span_start_s, upstream, usage, calls_ended FROM runs";

/// The tokens and usage of one stored attempt ([`AttemptCounts`]; the
/// caller sets its place and calls): `(call_attempts, input_tokens,
/// output_tokens, answered)` as stored. An attempt whose output was served
/// from a store (no call) or that failed is not an answered call.
pub(super) fn attempt_usage(
    call_attempts: i64,
    input: Option<i64>,
    output: Option<i64>,
    answered: bool,
) -> AttemptCounts {
    let (input, output) = (input.map(|v| v as u64), output.map(|v| v as u64));
    AttemptCounts {
        input_idx: 0,
        attempt: 0,
        published: false,
        calls: 0,
        tokens: input.unwrap_or(0) + output.unwrap_or(0),
        usage: if answered && call_attempts > 0 {
            Usage::of_call(input, output)
        } else {
            Usage::default()
        },
    }
}

/// A new run's usage, as stored: none yet, and known (`NULL` is a run
/// stored before usage was kept, schema 15).
pub(super) const USAGE_NONE: &str = "{}";

/// A run's stored usage (`None`: not known) with `added` counted in, as
/// stored: a run whose usage is not known stays so (what it used before
/// is lost; adding to nothing would read as its whole cost).
pub(super) fn usage_plus(stored: Option<String>, added: &RunUsage) -> Option<String> {
    let stored: RunUsage = serde_json::from_str(&stored?).ok()?;
    serde_json::to_string(&stored.plus(added)).ok()
}

/// The columns [`sample_from_row`] reads: a run's own samples, or a
/// revalidated run's verdicts over the outputs of the run they came from
/// (the `run_samples` view).
pub(super) const SAMPLE_COLUMNS: &str =
    "SELECT input_idx, repetition, cache_key, output, error, latency_ms, input_tokens, output_tokens,
    call_attempts, cells, reasons FROM run_samples";

/// The columns [`attempt_from_row`] reads, before its `WHERE`.
pub(super) const ATTEMPT_COLUMNS: &str =
    "SELECT input_idx, repetition, attempt, output, error, latency_ms, input_tokens, output_tokens,
    call_attempts, judge_calls, cells, reasons, passed, published, cache_key FROM attempts";

pub(super) fn run_from_row<R: RowRead>(r: &R) -> Result<RunRecord, R::Error> {
    Ok(RunRecord {
        id: r.int(0)?,
        name: r.text(1)?,
        created_at: r.text(2)?,
        finished_at: r.opt_text(3)?,
        status: RunStatus::parse(&r.text(4)?),
        config_hash: r.text(5)?,
        config: r.text(6)?,
        system: r.text(7)?,
        inputs: r.int(8)? as usize,
        outputs_per_input: r.int(9)? as usize,
        checks: serde_json::from_str(&r.text(10)?).unwrap_or_default(),
        // A settings column this version cannot read (none has been
        // written so far) is analysed with the defaults.
        settings: serde_json::from_str(&r.text(11)?).unwrap_or_default(),
        parent_run: r.opt_int(12)?,
        model_calls: r.int(13)? as u64,
        cached: r.int(14)? as u64,
        duration_s: r.opt_real(15)?,
        judge_calls: r.int(16)? as u64,
        tokens: r.int(17)? as u64,
        reused_from: r.opt_int(18)?,
        judge_calls_by_check: r
            .opt_text(19)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        // Unreadable (a decision this version does not know) reads as none.
        verdicts: r.opt_text(20)?.and_then(|s| serde_json::from_str(&s).ok()),
        outputs_from: r.opt_int(21)?,
        sequential: r.opt_text(22)?.and_then(|s| serde_json::from_str(&s).ok()),
        variant: variant_of(r.opt_text(23)?, r.opt_int(24)?),
        calls: calls_of(
            r.opt_int(25)?,
            [
                r.opt_real(26)?,
                r.opt_real(27)?,
                r.opt_real(28)?,
                r.opt_real(29)?,
            ],
            r.opt_text(30)?,
        ),
        // Unreadable (written by a newer probity): not known.
        usage: r.opt_text(31)?.and_then(|s| serde_json::from_str(&s).ok()),
        calls_ended: r.opt_int(32)?.map(|n| n.max(0) as u64),
    })
}

/// A run's calls as stored (schema 14): `None` until a process recorded
/// some. The wall is the span when the processes overlapped (it is then
/// shorter than their summed durations), else those durations' sum.
fn calls_of(
    processes: Option<i64>,
    [call_s, queued_s, process_s, span_s]: [Option<f64>; 4],
    upstream: Option<String>,
) -> Option<RunCalls> {
    let processes = processes.filter(|p| *p > 0)? as u64;
    let process_s = process_s.unwrap_or(0.0);
    let wall_s = match span_s {
        Some(span) if span.is_finite() && span >= 0.0 && span < process_s => span,
        _ => process_s,
    };
    Some(RunCalls {
        processes,
        wall_s,
        process_s,
        call_s: call_s.unwrap_or(0.0),
        queued_s: queued_s.unwrap_or(0.0),
        // Unreadable (written by a newer probity): nothing known.
        upstream: upstream
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
    })
}

/// A run's variant as stored: the tag as JSON and its group (schema 11).
fn variant_of(tag: Option<String>, group: Option<i64>) -> Option<VariantTag> {
    let mut tag: VariantTag = serde_json::from_str(&tag?).ok()?;
    tag.group = group;
    Some(tag)
}

/// A run's variant as stored: `(runs.variant, whether the run starts its
/// group)`.
pub(super) fn variant_text(tag: Option<&VariantTag>) -> (Option<String>, Option<i64>, bool) {
    match tag {
        None => (None, None, false),
        Some(t) => (serde_json::to_string(t).ok(), t.group, t.group.is_none()),
    }
}

pub(super) fn sample_from_row<R: RowRead>(r: &R) -> Result<SampleRow, R::Error> {
    Ok(SampleRow {
        input_idx: r.int(0)? as usize,
        repetition: r.int(1)? as usize,
        cache_key: r.text(2)?,
        output: r.opt_text(3)?,
        error: r.opt_text(4)?,
        latency_ms: r.opt_real(5)?,
        input_tokens: r.opt_int(6)?.map(|v| v as u64),
        output_tokens: r.opt_int(7)?.map(|v| v as u64),
        call_attempts: r.int(8)? as u32,
        cells: r.bytes(9)?.into_iter().map(byte_cell).collect(),
        reasons: reasons_of(r.opt_text(10)?),
    })
}

/// A sample read for its causes only: `(input, repetition, error, cells,
/// reasons)`, no output.
pub(super) fn causes_row<R: RowRead>(r: &R) -> Result<SampleRow, R::Error> {
    Ok(SampleRow {
        input_idx: r.int(0)? as usize,
        repetition: r.int(1)? as usize,
        cache_key: String::new(),
        output: None,
        error: r.opt_text(2)?,
        latency_ms: None,
        input_tokens: None,
        output_tokens: None,
        call_attempts: 0,
        cells: r.bytes(3)?.into_iter().map(byte_cell).collect(),
        reasons: reasons_of(r.opt_text(4)?),
    })
}

pub(super) fn attempt_from_row<R: RowRead>(r: &R) -> Result<AttemptRow, R::Error> {
    Ok(AttemptRow {
        input_idx: r.int(0)? as usize,
        repetition: r.int(1)? as usize,
        attempt: r.int(2)? as u32,
        output: r.opt_text(3)?,
        error: r.opt_text(4)?,
        latency_ms: r.opt_real(5)?,
        input_tokens: r.opt_int(6)?.map(|v| v as u64),
        output_tokens: r.opt_int(7)?.map(|v| v as u64),
        call_attempts: r.int(8)? as u32,
        judge_calls: r.int(9)? as u64,
        cells: r.bytes(10)?.into_iter().map(byte_cell).collect(),
        reasons: reasons_of(r.opt_text(11)?),
        passed: r.flag(12)?,
        published: r.flag(13)?,
        cache_key: r.opt_text(14)?,
    })
}

/// `(output, latency_ms, input_tokens, output_tokens)` as a cached output.
pub(super) fn cached_from_row<R: RowRead>(r: &R, at: usize) -> Result<CachedOutput, R::Error> {
    Ok(CachedOutput {
        output: r.text(at)?,
        latency_ms: r.opt_real(at + 1)?,
        input_tokens: r.opt_int(at + 2)?.map(|v| v as u64),
        output_tokens: r.opt_int(at + 3)?.map(|v| v as u64),
    })
}

/// A run's inputs from their stored `(id, fields)` rows, the fields a
/// JSON object each; a row that is not one is damage, named.
pub(super) fn inputs_from(
    rows: Vec<(String, String)>,
    run: i64,
    store: &super::location::StoreLocation,
) -> Result<Vec<probity_core::Input>, super::error::StoreError> {
    rows.into_iter()
        .map(|(id, fields)| match serde_json::from_str(&fields) {
            Ok(serde_json::Value::Object(fields)) => Ok(probity_core::Input {
                id,
                fields: fields.into(),
            }),
            _ => Err(super::error::StoreError::Damaged {
                store: store.clone(),
                run,
                what: format!("fields of input {id:?} are not a JSON object"),
            }),
        })
        .collect()
}
/// A run's judge calls per check as stored (JSON), plus `delta`.
pub(super) fn add_by_check(stored: Option<String>, delta: &[u64]) -> String {
    let mut by_check: Vec<u64> = stored
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    if by_check.len() < delta.len() {
        by_check.resize(delta.len(), 0);
    }
    for (total, d) in by_check.iter_mut().zip(delta) {
        *total += d;
    }
    serde_json::to_string(&by_check).unwrap_or_default()
}
