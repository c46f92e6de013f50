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
use probity_engine::store::{RunRecord, RunStatus, Store, VariantTag};
use probity_engine::stored::{self, StoredRun};
use probity_engine::variants::{self as group, Step, VariantRun};
use probity_engine::{run_with, Control, Progress, RunError, Sink};
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

/// Run the variants of `variants` (the file's, `--set`s applied).
pub async fn run(
    args: VariantsArgs<'_>,
    variants: Variants,
    overrides: &Overrides,
) -> Result<u8, Failure> {
    let file = args.config.display();
    let chosen = variants.select(args.names, args.config).map_err(usage)?;
    let reference = Variants::reference(&chosen);
    let reference_name = (!args.all_pairs).then(|| chosen[reference].name.clone());
    // Every variant's configuration checked and its system built before
    // any call.
    let mut planned = Vec::with_capacity(chosen.len());
    for spec in &chosen {
        let config = variants
            .config(spec, args.config, overrides)
            .map_err(usage)?;
        let hash = config.hash.clone();
        let table = config.file.store.clone();
        let mut e = config
            .into_experiment()
            .map_err(|e| usage(spec.named_in(e, args.config)))?;
        if args.sequential && e.sequential.is_none() {
            e = e.sequential();
        }
        planned.push((*spec, hash, table, e));
    }
    let mut store = args.store.open_for(planned[0].2.as_ref())?;
    args.out.check_targets()?;
    let (mut group_id, existing) = if args.resume {
        let hashes: Vec<String> = planned.iter().map(|p| p.1.clone()).collect();
        match group::resumable_group(&store, &hashes).map_err(incomplete)? {
            Some(g) => (
                Some(g),
                group::group_runs(&store, &variants.name, g).map_err(incomplete)?,
            ),
            None => {
                return Err(Failure::usage(format!(
                    "nothing to resume: {} holds no unfinished variants run of {file} (run without --resume to start one)",
                    store.location()
                )))
            }
        }
    } else {
        (None, Vec::new())
    };
    // Sequential variants visit the inputs in one order (paired by design):
    // the group's, when resumed.
    let seed = existing
        .iter()
        .find_map(|r| r.settings.sequential.map(|s| s.seed))
        .unwrap_or_else(group::new_seed);

    let cancel = crate::signals::cancel_on_stop();

    let total = planned.len();
    let mut runs: Vec<StoredRun> = Vec::with_capacity(total);
    let mut broken: Vec<String> = Vec::new();
    let mut stopped = None;
    for (at, (spec, hash, _, mut experiment)) in planned.into_iter().enumerate() {
        let tag = VariantTag {
            name: spec.name.clone(),
            index: spec.index,
            group: group_id,
            reference: reference_name.clone(),
        };
        let step = if args.resume {
            group::step(&store, &existing, &tag, &hash).map_err(Failure::usage)?
        } else {
            Step::Start
        };
        if let Step::Done(id) = step {
            probity_engine::stderr_line!(
                "variant {:?} ({} of {total}): run {id} is complete",
                spec.name,
                at + 1
            );
            runs.push(stored::load(&store, id).map_err(incomplete)?);
            continue;
        }
        if *cancel.borrow() {
            stopped = Some(format!("interrupted before variant {:?}", spec.name));
            break;
        }
        if experiment.sequential.is_some() {
            experiment = experiment.sequential_seed(seed);
        }
        experiment.variant = Some(tag);
        let n = (experiment.inputs.len() * experiment.outputs_per_input) as u64;
        let resume = matches!(step, Step::Resume(_));
        let left = match step {
            Step::Resume(id) => {
                n.saturating_sub(store.sample_count(id).map_err(incomplete)? as u64)
            }
            _ => n,
        };
        probity_engine::stderr_line!(
            "variant {:?} ({} of {total}){}",
            spec.name,
            at + 1,
            if resume { ": resuming" } else { "" }
        );
        check_pace(args.config, &experiment, left)?;
        let mut display = Display::new(args.quiet, &experiment);
        let outcome = run_with(
            &experiment,
            Sink::Store(&mut store),
            Control {
                resume,
                cancel: Some(cancel.clone()),
                on_progress: Some(Box::new(|p: &Progress| display.update(p))),
                reuse: None,
                shared: false,
                join: None,
                label_answers: args.label_answers,
            },
        )
        .await
        .map_err(|e| match e {
            RunError::Config(_)
            | RunError::NothingToResume
            | RunError::Store(probity_engine::store::StoreError::Leased { .. }) => {
                Failure::usage(format!("variant {:?}: {e}", spec.name))
            }
            other => Failure::incomplete(format!("variant {:?}: {other}", spec.name)),
        })?;
        display.finish();
        let run_id = outcome.stored_id();
        if group_id.is_none() {
            group_id = store
                .run(run_id)
                .map_err(incomplete)?
                .variant
                .and_then(|t| t.group);
        }
        print_causes(&outcome);
        if let Some(halt) = &outcome.halt {
            let what = format!(
                "variant {:?}: run {run_id} stopped with no verdict: {halt}",
                spec.name
            );
            return Err(if halt.is_configuration() {
                Failure::usage(format!(
                    "{what}\nfix the check, then `probity run {file}` again"
                ))
            } else {
                Failure::incomplete(format!(
                    "{what}\n`probity run --resume {file}` continues the variants once the cause is fixed"
                ))
            });
        }
        broken.extend(
            outcome
                .broken()
                .into_iter()
                .map(|(name, m)| format!("  {}: {name}: {m}", spec.name)),
        );
        let complete = outcome.status == RunStatus::Complete;
        runs.push(StoredRun {
            record: store.run(run_id).map_err(incomplete)?,
            tensor: outcome.tensor,
            summary: outcome.summary,
            causes: Some(outcome.causes),
            live: None,
        });
        if !complete {
            stopped = Some(format!(
                "variant {:?}: run {run_id} stopped before every sample was taken",
                spec.name
            ));
            break;
        }
    }
    let Some(group_id) = group_id else {
        return Err(Failure::incomplete(
            "the variants run stopped before its first run was stored",
        ));
    };
    let reference = (!args.all_pairs).then_some(reference);
    let report = variants_report(&store, &variants.name, group_id, runs, reference, None)?;
    args.out.emit(&report)?;
    if !broken.is_empty() {
        return Err(Failure::usage(format!(
            "checks could not judge any output, so they give no verdict about the system (fix them, then run again):\n{}",
            broken.join("\n")
        )));
    }
    if let Some(why) = stopped {
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
