//! Running the variants of a `[[variant]]` file: every chosen variant (or
//! those named) sampled one after another on the same inputs and
//! repetitions — in one input order when sequential, paired by design —
//! each stored as a run named `NAME/VARIANT` in one group; a group stopped
//! part-way is resumed variant by variant (finished variants read back,
//! the unfinished one continued, the rest started).

use crate::checks::calibration::LabelAnswers;
use crate::config::variant::Variants;
use crate::config::{Overrides, StoreTable};
use crate::run::experiment::Experiment;
use crate::run::outcome::{Progress, RunOutcome};
use crate::run::runner::{run_with, Control, ErrorClass, RunError, Sink};
use crate::run::stored::{self, StoredRun};
use crate::store::{RunStatus, Store, StoreError, VariantTag};
use crate::variants::group::{self, Step};
use std::path::{Path, PathBuf};
use thiserror::Error;
use tokio::sync::watch;

/// One variant, its configuration checked and its system built.
pub struct PlannedVariant {
    pub name: String,
    /// Its place among the file's variants: the matrix's order.
    pub index: usize,
    /// Its configuration's hash (`--resume` finds its run by it).
    pub hash: String,
    pub experiment: Experiment,
}

/// The variants to run, every one checked before any call.
pub struct VariantsPlan {
    /// The configuration's name: runs are stored as `NAME/VARIANT`.
    pub name: String,
    pub file: PathBuf,
    pub variants: Vec<PlannedVariant>,
    /// The variant the others are compared with; `None`: every pair.
    pub reference: Option<usize>,
    /// The first variant's `[store]` table: where the runs go.
    pub store: Option<StoreTable>,
}

impl VariantsPlan {
    /// Plan the variants `names` of `variants` (every one when empty),
    /// `overrides` applied; `all_pairs` compares every pair instead of
    /// against the reference; `sequential` makes each run sequential.
    /// Each variant's configuration is checked and its system built here:
    /// an error names the variant and its line.
    pub fn new(
        variants: &Variants,
        file: &Path,
        names: &[String],
        overrides: &Overrides,
        all_pairs: bool,
        sequential: bool,
    ) -> Result<VariantsPlan, VariantsError> {
        let usage = |e: crate::config::ConfigError| VariantsError::Usage(e.to_string());
        let chosen = variants.select(names, file).map_err(usage)?;
        let reference = Variants::reference(&chosen);
        let mut planned = Vec::with_capacity(chosen.len());
        let mut store = None;
        for spec in &chosen {
            let config = variants.config(spec, file, overrides).map_err(usage)?;
            let hash = config.hash.clone();
            if planned.is_empty() {
                store = config.file.store.clone();
            }
            let mut experiment = config
                .into_experiment()
                .map_err(|e| usage(spec.named_in(e, file)))?;
            if sequential && experiment.sequential.is_none() {
                experiment = experiment.sequential();
            }
            planned.push(PlannedVariant {
                name: spec.name.clone(),
                index: spec.index,
                hash,
                experiment,
            });
        }
        Ok(VariantsPlan {
            name: variants.name.clone(),
            file: file.to_path_buf(),
            variants: planned,
            reference: (!all_pairs).then_some(reference),
            store,
        })
    }
}

/// How a variants run ends without its report.
#[derive(Debug, Error)]
pub enum VariantsError {
    /// Bad usage or configuration (exit 2): a broken check, nothing to
    /// resume, a variant's configuration.
    #[error("{0}")]
    Usage(String),
    /// The run could not complete (exit 3): resumable.
    #[error("{0}")]
    Incomplete(String),
}

impl VariantsError {
    /// What this error means (see [`ErrorClass`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            VariantsError::Usage(_) => ErrorClass::Configuration,
            VariantsError::Incomplete(_) => ErrorClass::Incomplete,
        }
    }
}

impl From<StoreError> for VariantsError {
    fn from(e: StoreError) -> Self {
        VariantsError::Incomplete(e.to_string())
    }
}

/// A variants run's runs, in the matrix's order, whole or not.
pub struct VariantsOutcome {
    /// The group: the id of its first run.
    pub group: i64,
    pub runs: Vec<StoredRun>,
    pub reference: Option<usize>,
    /// Checks that could not judge any output: `  VARIANT: CHECK: cause`.
    pub broken: Vec<String>,
    /// Why the run stopped before every variant was done.
    pub stopped: Option<String>,
}

/// What a front door shows while variants run (the CLI's progress); every
/// method does nothing by default.
pub trait VariantsWatch {
    /// Variant `at` (from 0) of `total` is complete already: run `id`.
    fn complete(&mut self, _name: &str, _at: usize, _total: usize, _id: i64) {}
    /// Variant `at` of `total` starts (or resumes), `left` samples to
    /// take; an error refuses it (bad usage, exit 2).
    fn starting(
        &mut self,
        _name: &str,
        _at: (usize, usize),
        _resume: bool,
        _experiment: &Experiment,
        _left: u64,
    ) -> Result<(), String> {
        Ok(())
    }
    fn progress(&mut self, _p: &Progress) {}
    /// A variant's run ended.
    fn finished(&mut self, _outcome: &RunOutcome) {}
}

/// Shows nothing.
pub struct Quiet;

impl VariantsWatch for Quiet {}

/// Run `plan`'s variants into `store`, one after another; `resume`
/// continues the unfinished group of these configurations; `cancel` set
/// to `true` stops before the next variant (and the current one as a run
/// stops).
pub async fn run_variants(
    store: &mut Store,
    plan: VariantsPlan,
    resume: bool,
    label_answers: LabelAnswers,
    cancel: watch::Receiver<bool>,
    watch: &mut dyn VariantsWatch,
) -> Result<VariantsOutcome, VariantsError> {
    let mut group = Group::open(store, &plan, resume)?;
    let total = plan.variants.len();
    let reference_name = plan.reference.map(|r| plan.variants[r].name.clone());
    let mut runs = Vec::with_capacity(total);
    let (mut broken, mut stopped) = (Vec::new(), None);
    for (at, variant) in plan.variants.into_iter().enumerate() {
        let tag = VariantTag {
            name: variant.name.clone(),
            index: variant.index,
            group: group.id,
            reference: reference_name.clone(),
        };
        let step = match resume {
            true => group::step(store, &group.existing, &tag, &variant.hash)
                .map_err(VariantsError::Usage)?,
            false => Step::Start,
        };
        if let Step::Done(id) = step {
            watch.complete(&variant.name, at, total, id);
            runs.push(stored::load(store, id)?);
            continue;
        }
        if *cancel.borrow() {
            stopped = Some(format!("interrupted before variant {:?}", variant.name));
            break;
        }
        let name = variant.name.clone();
        let outcome = group
            .run_one(
                store,
                variant,
                tag,
                step,
                (at, total),
                label_answers,
                &cancel,
                watch,
            )
            .await?;
        let run_id = outcome.stored_id();
        broken.extend(
            outcome
                .broken()
                .into_iter()
                .map(|(check, m)| format!("  {name}: {check}: {m}")),
        );
        let complete = outcome.status == RunStatus::Complete;
        runs.push(StoredRun {
            record: store.run(run_id)?,
            tensor: outcome.tensor,
            summary: outcome.summary,
            causes: Some(outcome.causes),
            live: None,
        });
        if !complete {
            stopped = Some(format!(
                "variant {name:?}: run {run_id} stopped before every sample was taken"
            ));
            break;
        }
    }
    let group = group.id.ok_or_else(|| {
        VariantsError::Incomplete("the variants run stopped before its first run was stored".into())
    })?;
    Ok(VariantsOutcome {
        group,
        runs,
        reference: plan.reference,
        broken,
        stopped,
    })
}

/// The group being run: its id once its first run is stored, the runs a
/// resumed group holds, and the order sequential variants share.
struct Group {
    id: Option<i64>,
    existing: Vec<crate::store::RunRecord>,
    seed: u64,
    file: PathBuf,
}

impl Group {
    fn open(store: &Store, plan: &VariantsPlan, resume: bool) -> Result<Group, VariantsError> {
        let (id, existing) = if resume {
            let hashes: Vec<String> = plan.variants.iter().map(|p| p.hash.clone()).collect();
            let Some(g) = group::resumable_group(store, &hashes)? else {
                return Err(VariantsError::Usage(format!(
                    "nothing to resume: {} holds no unfinished variants run of {} (run without --resume to start one)",
                    store.location(),
                    plan.file.display()
                )));
            };
            (Some(g), group::group_runs(store, &plan.name, g)?)
        } else {
            (None, Vec::new())
        };
        // Sequential variants visit the inputs in one order (paired by
        // design): the group's, when resumed.
        let seed = existing
            .iter()
            .find_map(|r| r.settings.sequential.map(|s| s.seed))
            .unwrap_or_else(group::new_seed);
        Ok(Group {
            id,
            existing,
            seed,
            file: plan.file.clone(),
        })
    }

    /// Run (or resume) one variant as a run of the group.
    #[allow(clippy::too_many_arguments)]
    async fn run_one(
        &mut self,
        store: &mut Store,
        variant: PlannedVariant,
        tag: VariantTag,
        step: Step,
        at: (usize, usize),
        label_answers: LabelAnswers,
        cancel: &watch::Receiver<bool>,
        watch: &mut dyn VariantsWatch,
    ) -> Result<RunOutcome, VariantsError> {
        let PlannedVariant {
            name,
            mut experiment,
            ..
        } = variant;
        if experiment.sequential.is_some() {
            experiment = experiment.sequential_seed(self.seed);
        }
        experiment.variant = Some(tag);
        let n = (experiment.inputs.len() * experiment.outputs_per_input) as u64;
        let resume = matches!(step, Step::Resume(_));
        let left = match step {
            Step::Resume(id) => n.saturating_sub(store.sample_count(id)? as u64),
            _ => n,
        };
        watch
            .starting(&name, at, resume, &experiment, left)
            .map_err(VariantsError::Usage)?;
        let outcome = run_with(
            &experiment,
            Sink::Store(store),
            Control {
                resume,
                cancel: Some(cancel.clone()),
                on_progress: Some(Box::new(|p: &Progress| watch.progress(p))),
                label_answers,
                ..Control::default()
            },
        )
        .await
        .map_err(|e: RunError| match e.class().exit_code() {
            2 => VariantsError::Usage(format!("variant {name:?}: {e}")),
            _ => VariantsError::Incomplete(format!("variant {name:?}: {e}")),
        })?;
        watch.finished(&outcome);
        let run_id = outcome.stored_id();
        if self.id.is_none() {
            self.id = store.run(run_id)?.variant.and_then(|t| t.group);
        }
        if let Some(halt) = &outcome.halt {
            let what = format!("variant {name:?}: run {run_id} stopped with no verdict: {halt}");
            let file = self.file.display();
            return Err(if halt.is_configuration() {
                VariantsError::Usage(format!(
                    "{what}\nfix the check, then `probity run {file}` again"
                ))
            } else {
                VariantsError::Incomplete(format!(
                    "{what}\n`probity run --resume {file}` continues the variants once the cause is fixed"
                ))
            });
        }
        Ok(outcome)
    }
}
