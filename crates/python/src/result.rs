//! A [`RunOutcome`] for Python: one JSON document (the summary as the
//! engine serializes it — a calibrated verifier's judge accuracy and
//! corrected rate in its check's `calibration` — the verdict's message,
//! the samples) and the
//! tensor's cells as bytes, `N × M × K` in C order, one byte each with
//! core's codes (0 missing, 1 pass, 2 fail, 3 error).

use probity_core::stats::Calibrated;
use probity_core::{Cell, Input};
use probity_engine::Halt;
use probity_engine::RunOutcome;
use serde_json::{json, Value};

/// The cell's code: core's own discriminant.
fn code(c: Cell) -> u8 {
    c as u8
}

/// The tensor's cells, `i`, then `j`, then `k`.
pub fn tensor_bytes(o: &RunOutcome) -> Vec<u8> {
    let (n, m, k) = o.tensor.shape();
    let mut out = vec![code(Cell::Missing); n * m * k];
    o.tensor.for_each(|i, j, kk, c| {
        if let Some(slot) = out.get_mut((i * m + j) * k + kk) {
            *slot = code(c);
        }
    });
    out
}

/// Why a run stopped with no verdict, as the package's exception classes
/// tell it: `broken_checks`, `first_calls_failed`, `error_budget`.
fn halt_kind(h: &Halt) -> &'static str {
    match h {
        Halt::BrokenChecks { .. } => "broken_checks",
        Halt::FirstCallsFailed { .. } => "first_calls_failed",
        Halt::ErrorBudget { .. } => "error_budget",
        Halt::GivenUp { .. } => "given_up",
    }
}

/// A digest of each input's content (SHA-256 of its canonical fields,
/// hex, first 16 bytes): what `probity.compare` checks shared input ids
/// against, as `probity compare` checks their fields (a changed input is
/// still paired, with a warning).
fn input_digests(inputs: &[Input]) -> Vec<String> {
    use sha2::{Digest, Sha256};
    inputs
        .iter()
        .map(|i| {
            Sha256::digest(i.fields.as_json().as_bytes())[..16]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        })
        .collect()
}

/// Everything else, as JSON; `inputs` are the run's, in order.
pub fn document(o: &RunOutcome, inputs: &[Input]) -> Result<String, String> {
    let samples: Vec<Value> = o
        .samples
        .iter()
        .map(|s| {
            json!({
                "input_id": o.input_ids.get(s.input_idx),
                "input_index": s.input_idx,
                "repetition": s.repetition,
                "output": s.output,
                "error": s.error,
                "cells": s.cells.iter().map(|c| code(*c)).collect::<Vec<_>>(),
                "reasons": s.reasons,
                "latency_ms": s.latency_ms,
            })
        })
        .collect();
    // A calibrated verifier without a corrected rate: why, in words (the
    // summary has the reason as data only).
    let calibration_problems: Vec<Option<String>> = o
        .summary
        .checks
        .iter()
        .map(|c| match &c.calibration {
            Some(Calibrated::Unusable { problem, .. }) => Some(problem.to_string()),
            _ => None,
        })
        .collect();
    let doc = json!({
        "name": o.name,
        "run_id": o.run_id,
        "status": format!("{:?}", o.status).to_lowercase(),
        "halt": o.halt.as_ref().map(|h| h.to_string()),
        "halt_kind": o.halt.as_ref().map(halt_kind),
        "passed": o.passed(),
        "failure_message": o.failure_message(),
        "broken": o.broken(),
        "summary": o.summary,
        "calibration_problems": calibration_problems,
        "input_ids": o.input_ids,
        "input_digests": input_digests(inputs),
        "samples": samples,
        "model_calls": o.model_calls,
        "errors": o.errors,
        "duration_s": o.duration.as_secs_f64(),
    });
    serde_json::to_string(&doc).map_err(|e| format!("cannot encode the result: {e}"))
}
