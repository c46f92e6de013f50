//! What every document says about a run: [`RunInfo`].

/// Metadata of one run, as the run store knows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// The run's id in the run store.
    pub id: i64,
    /// The run's (experiment's) name.
    pub name: String,
    /// When the run was created, as stored (RFC 3339 preferred).
    pub created_at: String,
    /// Hash of the configuration the run was made with.
    pub config_hash: String,
    /// The system under test as stored: its provider's fingerprint.
    pub system: String,
    /// Its compact label, e.g. `openai/gpt-4o-mini`, `sim seed 42` (the
    /// engine's `system::label::system_label` of the fingerprint).
    pub system_label: String,
    /// Wall-clock duration of the run in seconds, when known.
    pub duration_s: Option<f64>,
    /// Calls made for this run over all its sessions: to the system and
    /// to judges, retries included.
    pub model_calls: u64,
    /// Outputs reused from run [`RunInfo::reused_from`] instead of a call
    /// (`probity run --reuse`); 0 when every sample was a fresh call.
    pub cached: u64,
    /// Of `model_calls`, those made to judges.
    pub judge_calls: u64,
    /// Tokens reported by providers (prompt + completion), all sessions; 0
    /// when no provider reports them.
    pub tokens: u64,
    /// The run whose stored outputs this run reused, when it reused some.
    pub reused_from: Option<i64>,
    /// Of `judge_calls`, each verifier's: `(check name, calls)`, in column
    /// order.
    pub judge_calls_by_check: Vec<(String, u64)>,
    /// False when the run stopped before every output was sampled and
    /// validated.
    pub complete: bool,
}
