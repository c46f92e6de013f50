//! `probity.compare` for Python: two results handed to core's comparison
//! ([`compare_runs`], docs/architecture.md "Comparing two runs on the same
//! inputs", docs/ci.md), exactly as `probity compare A B` hands it two
//! stored runs (the engine's `compare_loaded`): inputs matched by id
//! ([`align_by_id`]), checks by name, the candidate's analysis options
//! (confidence, error policy, interval and cluster methods), Holm across
//! the checks unless told otherwise. No statistics here: this module only
//! rebuilds each run's tensor from the bytes a Python `Result` keeps and
//! serializes what core returns.

use probity_core::compare::{
    align_by_id, compare_runs, CompareOptions, Comparison, RunData, DEFAULT_POWER,
};
use probity_core::stats::MultipleTesting;
use probity_core::summary::CheckInfo;
use probity_core::{AnalysisOptions, Cell, ReliabilityTensor};
use serde::Deserialize;
use serde_json::Value;

/// The part of a result's summary (the JSON `Result.summary` holds, as
/// [`result::document`](crate::result::document) wrote it) a comparison
/// reads: the tensor's shape, the analysis options, each column's check.
#[derive(Deserialize)]
struct SummaryPart {
    shape: (usize, usize, usize),
    options: AnalysisOptions,
    checks: Vec<CheckPart>,
}

#[derive(Deserialize)]
struct CheckPart {
    info: CheckInfo,
}

/// One result as Python passes it: its summary as JSON, its input ids (in
/// the tensor's input order) and its cells (`N × M × K` bytes in C order,
/// core's codes, as [`result::tensor_bytes`](crate::result::tensor_bytes)
/// wrote them).
pub struct Side<'a> {
    pub summary: &'a str,
    pub input_ids: &'a [String],
    pub cells: &'a [u8],
}

/// A result made whole again: its tensor, checks and options.
struct Run {
    tensor: ReliabilityTensor,
    checks: Vec<CheckInfo>,
    options: AnalysisOptions,
}

/// Core's cell of a byte code; `None` for a byte no tensor writes.
fn cell(code: u8) -> Option<Cell> {
    [Cell::Missing, Cell::Pass, Cell::Fail, Cell::Error]
        .into_iter()
        .find(|c| *c as u8 == code)
}

/// Rebuild one side; `role` (`baseline`/`candidate`) names it in errors.
fn run(side: &Side<'_>, role: &str) -> Result<Run, String> {
    let part: SummaryPart = serde_json::from_str(side.summary)
        .map_err(|e| format!("{role}: not a probity result's summary: {e}"))?;
    let (n, m, k) = part.shape;
    if n.checked_mul(m).and_then(|nm| nm.checked_mul(k)) != Some(side.cells.len()) {
        return Err(format!(
            "{role}: {} cells for a {n} × {m} × {k} tensor",
            side.cells.len()
        ));
    }
    if side.input_ids.len() != n {
        return Err(format!(
            "{role}: {} input ids for {n} inputs",
            side.input_ids.len()
        ));
    }
    let mut tensor = ReliabilityTensor::new(n, m, k).map_err(|e| format!("{role}: {e}"))?;
    for (at, &code) in side.cells.iter().enumerate() {
        let c = cell(code).ok_or_else(|| format!("{role}: cell {at} has code {code}"))?;
        if c != Cell::Missing {
            let (i, j, kk) = (at / (m * k), (at / k) % m, at % k);
            tensor
                .set(i, j, kk, c)
                .map_err(|e| format!("{role}: {e}"))?;
        }
    }
    Ok(Run {
        tensor,
        checks: part.checks.into_iter().map(|c| c.info).collect(),
        options: part.options,
    })
}

/// The correction a `multiple=` names: `holm` or `none`.
pub fn multiple_testing(name: &str) -> Option<MultipleTesting> {
    match name {
        "holm" => Some(MultipleTesting::Holm),
        "none" => Some(MultipleTesting::None),
        _ => None,
    }
}

/// Settings of a comparison beyond the candidate's own: the correction,
/// and the confidence and power when given (the CLI's `--no-correction`,
/// `--confidence`, `--power`).
pub struct Settings {
    pub multiple: MultipleTesting,
    pub confidence: Option<f64>,
    pub power: Option<f64>,
}

/// Compare `baseline` (A) with `candidate` (B): core's [`Comparison`] as
/// JSON (its serde form), each check with its `decisive` difference (the
/// one its verdict is taken from) added, and `regressed`.
pub fn compare(
    baseline: &Side<'_>,
    candidate: &Side<'_>,
    settings: &Settings,
) -> Result<String, String> {
    let a = run(baseline, "baseline")?;
    let b = run(candidate, "candidate")?;
    let mut opts = CompareOptions::from_analysis(&b.options);
    opts.multiple = settings.multiple;
    opts.power = settings.power.unwrap_or(DEFAULT_POWER);
    if let Some(c) = settings.confidence {
        opts.confidence = c;
    }
    let alignment = align_by_id(baseline.input_ids, candidate.input_ids);
    let comparison = compare_runs(
        RunData {
            tensor: &a.tensor,
            checks: &a.checks,
        },
        RunData {
            tensor: &b.tensor,
            checks: &b.checks,
        },
        &alignment,
        &opts,
    );
    serde_json::to_string(&document(&comparison)?)
        .map_err(|e| format!("cannot encode the comparison: {e}"))
}

fn document(c: &Comparison) -> Result<Value, String> {
    let encode = |e: serde_json::Error| format!("cannot encode the comparison: {e}");
    let mut doc = serde_json::to_value(c).map_err(encode)?;
    if let Some(checks) = doc.get_mut("checks").and_then(Value::as_array_mut) {
        for (json, check) in checks.iter_mut().zip(&c.checks) {
            if let Some(obj) = json.as_object_mut() {
                obj.insert(
                    "decisive".into(),
                    serde_json::to_value(check.decisive()).map_err(encode)?,
                );
            }
        }
    }
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("regressed".into(), Value::Bool(c.regressed()));
    }
    Ok(doc)
}
