//! `probity run` of a file with `[[variant]]` tables: every variant (or
//! those `--variant` names) sampled one after another on the same inputs
//! and repetitions, each a stored run of its own in one group; then the
//! variants report (`probity report RUN --variants` renders a stored
//! group the same way).
//!
//! Exit code: 0 when every variant passes every check, 1 when any
//! variant fails one (as promptfoo fails when any provider's test does);
//! 2 on bad usage or a broken check; 3 when a variant's run could not
//! complete (`--resume` continues the group).

use crate::failure::{verdict_code, Failure};
use crate::output::{report_for, OutputArgs};
use crate::run_display::{check_pace, print_causes, Display};
use crate::store_arg::StoreArg;
use probity_core::compare::CompareOptions;
use probity_core::stats::MultipleTesting;
use probity_engine::checks::calibration::LabelAnswers;
use probity_engine::config::variant::Variants;
use probity_engine::config::Overrides;
use probity_engine::run::stored::{self, StoredRun};
use probity_engine::store::{RunRecord, Store};
use probity_engine::variants::{
    self as group, run_variants, VariantRun, VariantsError, VariantsPlan, VariantsWatch,
};
use probity_engine::Progress;
use probity_report::html::variants::INPUTS_SHOWN;
use probity_report::{InputOutputs, VariantColumn, VariantsReport};
use std::collections::HashMap;
use std::path::Path;

/// What `probity run` hands over for a variants run.
pub struct VariantsArgs<'a> {
    pub config: &'a Path,
    /// `--variant`: the variants to run (all when empty).
    pub names: &'a [String],
    /// `--all-pairs`: compare every pair rather than against the reference.
    pub all_pairs: bool,
    pub resume: bool,
    pub sequential: bool,
    /// `--fresh-labels`: every judge asked its labelled set again.
    pub label_answers: LabelAnswers,
    pub quiet: bool,
    pub store: &'a StoreArg,
    pub out: &'a OutputArgs,
}

fn usage(e: impl ToString) -> Failure {
    Failure::usage(e.to_string())
}

fn incomplete(e: impl ToString) -> Failure {
    Failure::incomplete(e.to_string())
}

impl From<VariantsError> for Failure {
    fn from(e: VariantsError) -> Self {
        match e {
            VariantsError::Usage(m) => Failure::usage(m),
            VariantsError::Incomplete(m) => Failure::incomplete(m),
        }
    }
}

/// The terminal side of a variants run: a line per variant, the pace the
/// rate limits allow, the progress bar, the causes of errors.
struct Shown<'a> {
    config: &'a Path,
    quiet: bool,
    display: Option<Display>,
}

impl VariantsWatch for Shown<'_> {
    fn complete(&mut self, name: &str, at: usize, total: usize, id: i64) {
        probity_engine::stderr_line!(
            "variant {name:?} ({} of {total}): run {id} is complete",
            at + 1
        );
    }

    fn starting(
        &mut self,
        name: &str,
        (at, total): (usize, usize),
        resume: bool,
        experiment: &probity_engine::Experiment,
        left: u64,
    ) -> Result<(), String> {
        let resuming = if resume { ": resuming" } else { "" };
        probity_engine::stderr_line!("variant {name:?} ({} of {total}){resuming}", at + 1);
        check_pace(self.config, experiment, left).map_err(|f| f.message)?;
        self.display = Some(Display::new(self.quiet, experiment));
        Ok(())
    }

    fn progress(&mut self, p: &Progress) {
        if let Some(d) = self.display.as_mut() {
            d.update(p);
        }
    }

    fn finished(&mut self, outcome: &probity_engine::RunOutcome) {
        if let Some(d) = self.display.take() {
            d.finish();
        }
        print_causes(outcome);
    }
}

/// Run the variants of `variants` (the file's, `--set`s applied).
pub async fn run(
    args: VariantsArgs<'_>,
    variants: Variants,
    overrides: &Overrides,
) -> Result<u8, Failure> {
    let file = args.config.display();
    // Every variant's configuration checked and its system built before
    // any call.
    let plan = VariantsPlan::new(
        &variants,
        args.config,
        args.names,
        overrides,
        args.all_pairs,
        args.sequential,
    )?;
    let mut store = args.store.open_for(plan.store.as_ref())?;
    args.out.check_targets()?;
    let cancel = crate::signals::cancel_on_stop();
    let mut shown = Shown {
        config: args.config,
        quiet: args.quiet,
        display: None,
    };
    let outcome = run_variants(
        &mut store,
        plan,
        args.resume,
        args.label_answers,
        cancel,
        &mut shown,
    )
    .await?;
    let group_id = outcome.group;
    let report = variants_report(
        &store,
        &variants.name,
        group_id,
        outcome.runs,
        outcome.reference,
        None,
    )?;
    args.out.emit(&report)?;
    if !outcome.broken.is_empty() {
        return Err(Failure::usage(format!(
            "checks could not judge any output, so they give no verdict about the system (fix them, then run again):\n{}",
            outcome.broken.join("\n")
        )));
    }
    if let Some(why) = outcome.stopped {
        return Err(Failure::incomplete(format!(
            "{why}; `probity run --resume {file}` continues the variants run (group {group_id})"
        )));
    }
    Ok(verdict_code(report.passed()))
}

/// `probity report RUN --variants`: the variants run that stored run `id`
/// is a variant of, compared as it was run (against its reference) or,
/// with `all_pairs`, every pair.
/// What a stored variants report compares each variant with.
#[derive(Debug, Clone, Copy)]
pub enum Against<'a> {
    /// The reference the run was made with (or every pair, if it was).
    Stored,
    /// Every pair (`--all-pairs`).
    EveryPair,
    /// The named variant (`--reference`).
    Variant(&'a str),
}

/// The variants report of the group run `id` belongs to, read from the
/// store, each variant compared as `against` says; with `no_correction`
/// each difference is judged at level α on its own. A run of no group, or
/// a `--reference` the group does not have, is a usage error naming it.
pub fn stored_report(
    store: &Store,
    id: i64,
    against: Against<'_>,
    no_correction: bool,
) -> Result<VariantsReport, Failure> {
    let (g, records) = group::group_of(store, id)
        .map_err(usage)?
        .ok_or_else(|| {
            Failure::usage(format!(
                "run {id} is not a variant of a variants run ([[variant]] tables); `probity report {id}` shows it alone"
            ))
        })?;
    let name = records
        .first()
        .map(|r| group::base_name(r).to_string())
        .unwrap_or_default();
    let reference = match against {
        Against::Stored => reference_of(&records),
        Against::EveryPair => None,
        Against::Variant(name) => Some(
            records
                .iter()
                .position(|r| r.variant.as_ref().is_some_and(|v| v.name == name))
                .ok_or_else(|| {
                    let known: Vec<&str> = records
                        .iter()
                        .filter_map(|r| r.variant.as_ref().map(|v| v.name.as_str()))
                        .collect();
                    Failure::usage(format!(
                        "--reference {name:?}: the variants run of run {id} has no variant of that name (its variants: {})",
                        known.join(", ")
                    ))
                })?,
        ),
    };
    let runs = records
        .iter()
        .map(|r| stored::load(store, r.id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let opts = no_correction.then(|| {
        let first = reference.and_then(|i| records.get(i)).or(records.first());
        let mut o = first.map_or_else(CompareOptions::default, |r| {
            CompareOptions::from_analysis(&r.settings.analysis)
        });
        o.multiple = MultipleTesting::None;
        o
    });
    variants_report(store, &name, g, runs, reference, opts)
}

/// The position of the group's reference among `records` (the variant its
/// runs name as reference); `None`: every pair.
fn reference_of(records: &[RunRecord]) -> Option<usize> {
    let wanted = records
        .iter()
        .find_map(|r| r.variant.as_ref().and_then(|v| v.reference.clone()))?;
    Some(
        records
            .iter()
            .position(|r| r.variant.as_ref().is_some_and(|v| v.name == wanted))
            .unwrap_or(0),
    )
}

/// The variants report of group `g`'s `runs` (in the matrix's order).
pub fn variants_report(
    store: &Store,
    name: &str,
    g: i64,
    runs: Vec<StoredRun>,
    reference: Option<usize>,
    options: Option<CompareOptions>,
) -> Result<VariantsReport, Failure> {
    let comparison = group::compare(
        store,
        &runs
            .iter()
            .map(|r| VariantRun {
                record: &r.record,
                tensor: &r.tensor,
            })
            .collect::<Vec<_>>(),
        reference,
        options,
    )
    .map_err(incomplete)?;
    let ids: Vec<i64> = runs.iter().map(|r| r.record.id).collect();
    let (side_by_side, inputs) =
        side_by_side(store, &ids, reference.unwrap_or(0)).map_err(incomplete)?;
    let mut variants = Vec::with_capacity(runs.len());
    for run in runs {
        let cost = group::cost(store, &run.record).map_err(incomplete)?;
        let name = run
            .record
            .variant
            .as_ref()
            .map_or_else(|| run.record.name.clone(), |v| v.name.clone());
        variants.push(VariantColumn {
            name,
            report: report_for(store, run)?,
            cost,
        });
    }
    Ok(VariantsReport {
        name: name.to_string(),
        group: g,
        variants,
        comparison,
        side_by_side,
        inputs,
    })
}

/// The first [`INPUTS_SHOWN`] inputs of run `runs[first]` with every
/// run's outputs of them (matched by input id), and its number of inputs.
fn side_by_side(
    store: &Store,
    runs: &[i64],
    first: usize,
) -> Result<(Vec<InputOutputs>, usize), probity_engine::store::StoreError> {
    let Some(&lead) = runs.get(first).or(runs.first()) else {
        return Ok((Vec::new(), 0));
    };
    let lead_inputs = store.inputs(lead)?;
    let shown: Vec<String> = lead_inputs
        .iter()
        .take(INPUTS_SHOWN)
        .map(|i| i.id.clone())
        .collect();
    let mut rows: Vec<InputOutputs> = shown
        .iter()
        .map(|label| InputOutputs {
            label: label.clone(),
            outputs: vec![Vec::new(); runs.len()],
        })
        .collect();
    for (v, &id) in runs.iter().enumerate() {
        let at: HashMap<&str, usize> = shown
            .iter()
            .enumerate()
            .map(|(n, s)| (s.as_str(), n))
            .collect();
        let inputs = store.inputs(id)?;
        let mine: Vec<(usize, usize)> = inputs
            .iter()
            .enumerate()
            .filter_map(|(i, input)| at.get(input.id.as_str()).map(|&row| (i, row)))
            .collect();
        let (Some(lo), Some(hi)) = (
            mine.iter().map(|x| x.0).min(),
            mine.iter().map(|x| x.0).max(),
        ) else {
            continue;
        };
        let row_of: HashMap<usize, usize> = mine.into_iter().collect();
        for s in store.samples_of_inputs(id, lo..hi + 1)? {
            if let Some(&row) = row_of.get(&s.input_idx) {
                rows[row].outputs[v].push(crate::output::sample_shown(s));
            }
        }
    }
    Ok((rows, lead_inputs.len()))
}
