//! A stored run's header as the reports show it.

use probity_core::CheckKind;
use probity_engine::store::{RunRecord, RunStatus};
use probity_report::RunInfo;

/// The report header of stored run `r`.
pub(crate) fn run_info(r: &RunRecord) -> RunInfo {
    RunInfo {
        id: r.id,
        name: r.name.clone(),
        created_at: r.created_at.clone(),
        config_hash: r.config_hash.clone(),
        system: r.system.clone(),
        system_label: probity_engine::system::label::system_label(&r.system),
        duration_s: r.duration_s,
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
    }
}
