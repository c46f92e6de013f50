//! Statistics: proportions with intervals, cluster-robust rates, verdicts
//! against thresholds and sample sizes.
//!
//! Every rate probity prints carries an interval (docs/architecture.md, Design decisions).

pub mod betabin;
pub mod calibration;
pub mod cluster;
pub mod consistency;
pub mod counts;
pub mod decision;
pub mod error;
pub mod interval;
pub mod multiple;
pub mod paired;
pub mod projection;
pub mod rate;
pub mod reason;
pub mod sequential;
pub mod sequential_group;
pub mod unseen;

pub use betabin::{beta_binomial_score, ScoreInterval};
pub use calibration::{
    best_lower_bound_of, corrected_rate, labels_needed_before_run, outputs_to_settle, Calibrated,
    CalibrationError, CorrectedRate, JudgeAccuracy, LabelCounts, LabelNeeds, LabelPair, Measured,
    RunVariance, Sampling, Weakness,
};
pub use cluster::{clustered_mean, ClusterSum, ClusteredEstimate};
pub use consistency::{
    pass_all_k, pass_any_k, ClassCounts, Consistency, InputConsistency, TaskClass,
};
pub use counts::{Counts, ErrorPolicy};
pub use decision::{
    excludes_threshold, judge, sample_size_for_margin, samples_to_detect, Decision,
    ThresholdVerdict, VerdictMode, MAX_SAMPLES,
};
pub use error::StatsError;
pub use interval::{
    normal_quantile, proportion_interval, try_proportion_interval, z_value, Interval,
    IntervalMethod,
};
pub use multiple::{holm, MultipleTesting};
pub use paired::{compare_paired, compare_unpaired, inputs_needed, t_value, Difference};
pub use rate::{ClusterMethod, RateEstimate, Scope, MIN_INPUTS};
pub use reason::{NotEstablished, TheseInputs};
pub use sequential::BettingSequence;
