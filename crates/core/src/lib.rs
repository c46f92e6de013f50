//! # probity-core
//!
//! The pure heart of probity: the data model of a reliability test, the
//! reliability tensor `R[i][j][k]` (paper §3.6), the statistics that turn it
//! into honest rates with intervals, validators (paper §2.1, §3.1) and retry
//! planning (paper §4.2).
//!
//! This crate performs no I/O, runs no async code and reads no clock: every
//! function is a deterministic function of its arguments, which is what makes
//! the statistics testable against reference values.

pub mod agent;
pub mod aggregate;
pub mod calibrated;
pub mod causes;
pub mod compare;
pub mod conversation;
pub mod cost;
pub mod fields;
pub mod guarded;
pub mod judge_sim;
pub mod model;
pub mod monitor;
pub mod number;
pub mod options;
pub mod profile;
pub mod retry;
pub mod retry_class;
pub mod score;
pub mod sequential;
pub mod simulate;
pub mod stats;
pub mod summary;
pub mod tensor;
pub mod validator;
pub mod variants;
pub mod verdict;

pub use aggregate::{aggregate, Aggregate, AggregateResult};
pub use compare::{compare_runs, Comparison, Direction};
pub use model::{Fields, Input, Sample};
pub use options::AnalysisOptions;
pub use profile::{profile, strategy_rates, Profile, ProfileEntry, Strategy};
pub use retry::{Geometric, RetryPlan};
pub use sequential::{SequentialOutcome, SequentialTest, StopReason};
pub use stats::{Counts, ErrorPolicy, Interval, IntervalMethod, RateEstimate};
pub use summary::{AppliesTo, CheckInfo, CheckKind, CheckSummary, Summary};
pub use tensor::{Cell, ReliabilityTensor};
pub use validator::{evaluate_all, Builtin, Validator, ValidatorError, ValidatorSpec};
pub use verdict::Verdict;
