//! `probity.run_variants` for Python: a `[[variant]]` file run by the
//! engine's own variants runner ([`run_variants`]), exactly as `probity run
//! FILE` runs it — every variant a stored run of one group, the variants
//! compared with the reference (or every pair), Holm across pairs × checks.
//! The matrix is returned as JSON: each variant's run, verdicts and cost,
//! and the comparison.

use crate::errors::{self, Kind};
use probity_core::compare::CompareOptions;
use probity_engine::checks::calibration::LabelAnswers;
use probity_engine::config::variant;
use probity_engine::config::Overrides;
use probity_engine::store::{RunStatus, Store, StoreLocation};
use probity_engine::variants::{self as group, run_variants, Quiet, VariantRun, VariantsPlan};
use serde_json::{json, Value};
use std::path::Path;

/// What [`matrix`] is asked for.
pub struct Asked<'a> {
    pub path: &'a Path,
    pub store: Option<StoreLocation>,
    pub names: &'a [String],
    pub all_pairs: bool,
    pub resume: bool,
    pub sequential: bool,
}

/// Run the variants of `asked.path` and return the matrix as JSON; an
/// error is `(kind, message)` (the classes of [`errors`]).
pub async fn matrix(
    asked: Asked<'_>,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<String, (Kind, String)> {
    let config = |m: String| (Kind::Config, m);
    let text = std::fs::read_to_string(asked.path)
        .map_err(|e| config(format!("{}: {e}", asked.path.display())))?;
    let variants = variant::parse(&text, asked.path)
        .map_err(|e| config(e.to_string()))?
        .ok_or_else(|| {
            config(format!(
                "{}: no [[variant]] tables (run it with Experiment instead)",
                asked.path.display()
            ))
        })?;
    let plan = VariantsPlan::new(
        &variants,
        asked.path,
        asked.names,
        &Overrides::default(),
        asked.all_pairs,
        asked.sequential,
    )
    .map_err(|e| (errors::variants_kind(&e), e.to_string()))?;
    let location = match (asked.store, &plan.store) {
        (Some(l), _) => l,
        (None, Some(table)) => table.location().map_err(config)?,
        (None, None) => StoreLocation::Sqlite(".probity/runs.db".into()),
    };
    let store_error =
        |e: probity_engine::store::StoreError| (errors::store_kind(&e), e.to_string());
    let mut store = Store::connect(&location).map_err(store_error)?;
    let outcome = run_variants(
        &mut store,
        plan,
        asked.resume,
        LabelAnswers::default(),
        cancel,
        &mut Quiet,
    )
    .await
    .map_err(|e| (errors::variants_kind(&e), e.to_string()))?;
    let runs: Vec<VariantRun<'_>> = outcome
        .runs
        .iter()
        .map(|r| VariantRun {
            record: &r.record,
            tensor: &r.tensor,
        })
        .collect();
    let comparison = group::compare(&store, &runs, outcome.reference, None::<CompareOptions>)
        .map_err(store_error)?;
    let mut columns = Vec::with_capacity(outcome.runs.len());
    for r in &outcome.runs {
        let cost = group::cost(&store, &r.record).map_err(store_error)?;
        columns.push(json!({
            "name": r.record.variant.as_ref().map_or(&r.record.name, |v| &v.name),
            "run_id": r.record.id,
            "status": format!("{:?}", r.record.status).to_lowercase(),
            "passed": r.record.status == RunStatus::Complete && r.summary.passed(),
            "summary": r.summary,
            "cost": cost,
        }));
    }
    let doc: Value = json!({
        "name": variants.name,
        "group": outcome.group,
        "reference": outcome.reference.and_then(|i| outcome.runs.get(i))
            .and_then(|r| r.record.variant.as_ref().map(|v| v.name.clone())),
        "variants": columns,
        "comparison": comparison,
        "broken": outcome.broken,
        "stopped": outcome.stopped,
    });
    Ok(doc.to_string())
}
