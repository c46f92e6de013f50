//! A stored run's header as the reports show it.

use probity_core::CheckKind;
use probity_engine::store::{RunCalls, RunRecord, RunStatus};
use probity_report::{AutoConcurrencyInfo, CallsInfo, RunInfo};

/// The report header of stored run `r`.
pub(crate) fn run_info(r: &RunRecord) -> RunInfo {
    RunInfo {
        id: r.id,
        name: r.name.clone(),
        created_at: r.created_at.clone(),
        config_hash: r.config_hash.clone(),
        system: r.system.clone(),
        system_label: probity_engine::system::label::system_label(&r.system),
        // A shared run's processes overlap: its wall time, not their sum.
        duration_s: r.calls.as_ref().map(|c| c.wall_s).or(r.duration_s),
        model_calls: r.model_calls,
        cached: r.cached,
        judge_calls: r.judge_calls,
        tokens: r.tokens,
        reused_from: r.reused_from,
        judge_calls_by_check: r
            .checks
            .iter()
            .zip(&r.judge_calls_by_check)
            .filter(|(c, _)| c.kind == CheckKind::Verifier)
            .map(|(c, &calls)| (c.name.clone(), calls))
            .collect(),
        complete: r.status == RunStatus::Complete,
        cost: probity_core::cost::RunCost::of(r.usage.as_ref(), &r.settings.prices),
        calls: r.calls.as_ref().map(|c| CallsInfo {
            lost_in_flight: r.calls_lost_in_flight().unwrap_or(0),
            ..calls_info(c)
        }),
    }
}

/// A run's calls as the reports show them.
fn calls_info(c: &RunCalls) -> CallsInfo {
    CallsInfo {
        processes: c.processes,
        wall_s: c.wall_s,
        process_s: c.process_s,
        call_s: c.call_s,
        queued_s: c.queued_s,
        lost_in_flight: 0,
        structured: c.upstream.structured.clone(),
        auto_concurrency: c
            .upstream
            .auto_concurrency
            .as_ref()
            .map(|a| AutoConcurrencyInfo {
                chosen: a.chosen,
                most: a.most,
                tried: a.tried.clone(),
                settled: a.settled,
            }),
    }
}
