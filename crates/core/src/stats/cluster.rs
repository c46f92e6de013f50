//! Cluster-robust mean of per-output scores, inputs as clusters. (TO BE IMPLEMENTED)

use serde::{Deserialize, Serialize};

/// Sufficient statistics of one cluster (one input's outputs): the sum of
/// its scores, the sum of their squares and how many there are. Scores are in
/// [0, 1]: 0/1 for a single validator, a weighted mean across validators for
/// an aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterSum {
    pub sum: f64,
    pub sum_sq: f64,
    pub count: u64,
}

/// The clustered mean of all observations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredEstimate {
    pub mean: f64,
    pub n: u64,
    pub clusters: usize,
    pub se_naive: f64,
    pub se_cluster: f64,
    pub design_effect: f64,
    pub effective_n: f64,
}

pub fn clustered_mean(clusters: &[ClusterSum]) -> ClusteredEstimate {
    let _ = clusters;
    todo!()
}
