//! A variants run (`[[variant]]` tables, docs/config.md, Variants): the
//! versions of one system sampled on the same inputs and repetitions, each
//! a stored run of its own in one group ([`group`]), orchestrated here for
//! the CLI, the Rust library and the Python package alike ([`runner`]).

pub(crate) mod group;
pub(crate) mod runner;

pub use group::{
    base_name, compare, cost, group_of, group_runs, new_seed, resumable_group, step, Step,
    VariantRun,
};
pub use runner::{
    run_variants, PlannedVariant, Quiet, VariantsError, VariantsOutcome, VariantsPlan,
    VariantsWatch,
};
