//! Per-task and across-task statistics of episodes (issue 34 item 6).
//!
//! Per task i with c_i passing and n_i judged episodes (errors and
//! episodes the user spoiled left out): the pass rate c_i/n_i with its
//! interval, pass^k = C(c_i, k)/C(n_i, k) (unbiased for p_i^k) with the
//! interval [l^k, u^k] of [`Consistency`], and the task's [`TaskClass`].
//! Across tasks: the clustered rate (tasks as clusters,
//! [`RateEstimate::clustered`]) and the mean pass^k with its interval
//! ([`Consistency`], module docs of `stats::consistency`).
//!
//! Spoiled episodes: leaving them out is unbiased for the agent's rate
//! when the user's misbehaviour is independent of how the agent would
//! have done; it costs judged episodes (a wider interval). Without that
//! assumption the rate lies within [`UserEffect::bounds`]: the lower limit
//! of the interval counting every spoiled episode as a failure and the
//! upper limit counting each as a pass — the worst case, reported beside
//! the rate (as calibrated judges report theirs).

use crate::stats::{
    ClassCounts, ClusterSum, Consistency, Counts, Interval, IntervalMethod, RateEstimate,
    StatsError, TaskClass,
};
use crate::tensor::Cell;
use serde::{Deserialize, Serialize};

/// One episode's result: the agent's cell, and whether its user spoiled
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeResult {
    pub cell: Cell,
    pub spoiled: bool,
}

/// The cell of an episode over its checks: Error when any check erred (or
/// the episode did), else Fail when any failed, else Pass.
pub fn episode_cell(cells: impl IntoIterator<Item = Cell>) -> Cell {
    cells.into_iter().fold(Cell::Pass, |acc, c| match (acc, c) {
        (Cell::Error, _) | (_, Cell::Error) => Cell::Error,
        (Cell::Fail, _) | (_, Cell::Fail) => Cell::Fail,
        (Cell::Missing, _) | (_, Cell::Missing) => Cell::Missing,
        _ => Cell::Pass,
    })
}

/// One task's episodes, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskCounts {
    /// Judged episodes (user not spoiling) that passed / failed.
    pub pass: u64,
    pub fail: u64,
    /// Episodes that ended on an error (upstream, tool, simulator): never
    /// the agent's failure.
    pub error: u64,
    /// Episodes the user spoiled, by what the agent's cell would have
    /// been.
    pub spoiled_pass: u64,
    pub spoiled_fail: u64,
}

impl TaskCounts {
    /// Count `episodes`.
    pub fn of(episodes: &[EpisodeResult]) -> TaskCounts {
        let mut k = TaskCounts::default();
        for e in episodes {
            match (e.cell, e.spoiled) {
                (Cell::Error, _) => k.error += 1,
                (Cell::Pass, false) => k.pass += 1,
                (Cell::Fail, false) => k.fail += 1,
                (Cell::Pass, true) => k.spoiled_pass += 1,
                (Cell::Fail, true) => k.spoiled_fail += 1,
                (Cell::Missing | Cell::NotApplicable, _) => {}
            }
        }
        k
    }

    /// Judged episodes.
    pub fn judged(&self) -> u64 {
        self.pass + self.fail
    }

    pub fn spoiled(&self) -> u64 {
        self.spoiled_pass + self.spoiled_fail
    }
}

/// One task's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    pub counts: TaskCounts,
    /// c/n over the judged episodes, with its interval (these episodes of
    /// this task only).
    pub rate: RateEstimate,
    /// pass^k = C(c, k)/C(n, k) and its interval; `None` with fewer than
    /// k judged episodes.
    pub pass_k: Option<(f64, Interval)>,
    pub class: TaskClass,
}

/// What the user's spoiled episodes do to the agent's rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserEffect {
    /// Episodes spoiled, of all episodes that did not end on an error.
    pub spoiled: u64,
    pub episodes: u64,
    /// The rate had every spoiled episode been counted as the agent's
    /// failure (what a tool without user checks reports when the user's
    /// fault shows as failure).
    pub if_spoiled_failed: RateEstimate,
    /// The rate had every spoiled episode been a pass.
    pub if_spoiled_passed: RateEstimate,
    /// [lower of `if_spoiled_failed`, upper of `if_spoiled_passed`]: where
    /// the agent's rate lies whatever the spoiled episodes would have
    /// been.
    pub bounds: Interval,
}

/// Statistics of an agent over tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStats {
    pub tasks: Vec<TaskStats>,
    /// The clustered rate over judged episodes (tasks as clusters).
    pub rate: RateEstimate,
    /// Mean pass^k and pass@k over tasks with ≥ k judged episodes.
    pub consistency: Consistency,
    pub classes: ClassCounts,
    pub user: UserEffect,
}

fn clustered(
    per_task: &[(u64, u64)],
    counts: Counts,
    confidence: f64,
    method: IntervalMethod,
) -> Result<RateEstimate, StatsError> {
    let clusters: Vec<ClusterSum> = per_task
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|&(c, n)| ClusterSum::from_passes(c, n))
        .collect::<Result<_, _>>()?;
    RateEstimate::clustered(&clusters, counts, confidence, method)
}

impl AgentStats {
    /// From each task's counts, at `confidence` with `method` for the
    /// per-task intervals, pass^k for `k`.
    pub fn new(
        per_task: &[TaskCounts],
        k: u32,
        confidence: f64,
        method: IntervalMethod,
    ) -> Result<AgentStats, StatsError> {
        let judged: Vec<(u64, u64)> = per_task.iter().map(|t| (t.pass, t.judged())).collect();
        let consistency = Consistency::new(&judged, k, confidence, method)?;
        let tasks = per_task
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let counts = Counts {
                    pass: t.pass,
                    fail: t.fail,
                    error: 0,
                    missing: 0,
                };
                TaskStats {
                    counts: *t,
                    rate: RateEstimate::within_input(
                        counts,
                        crate::stats::ErrorPolicy::Exclude,
                        confidence,
                        method,
                    ),
                    pass_k: consistency.input(i).and_then(|r| r.pass_all_k),
                    class: TaskClass::of(t.pass, t.judged()),
                }
            })
            .collect();
        let total = |f: &dyn Fn(&TaskCounts) -> u64| per_task.iter().map(f).sum::<u64>();
        let counts = Counts {
            pass: total(&|t| t.pass),
            fail: total(&|t| t.fail),
            error: total(&|t| t.error),
            missing: 0,
        };
        let rate = clustered(&judged, counts, confidence, method)?;
        let failed: Vec<(u64, u64)> = per_task
            .iter()
            .map(|t| (t.pass, t.judged() + t.spoiled()))
            .collect();
        let passed: Vec<(u64, u64)> = per_task
            .iter()
            .map(|t| (t.pass + t.spoiled(), t.judged() + t.spoiled()))
            .collect();
        let if_spoiled_failed = clustered(&failed, counts, confidence, method)?;
        let if_spoiled_passed = clustered(&passed, counts, confidence, method)?;
        let user = UserEffect {
            spoiled: total(&|t| t.spoiled()),
            episodes: total(&|t| t.judged() + t.spoiled()),
            bounds: Interval {
                lower: if_spoiled_failed.interval.lower,
                upper: if_spoiled_passed.interval.upper,
            },
            if_spoiled_failed,
            if_spoiled_passed,
        };
        Ok(AgentStats {
            classes: consistency.classes(),
            tasks,
            rate,
            consistency,
            user,
        })
    }
}
