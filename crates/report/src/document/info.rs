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
    /// How its calls went, when the store recorded it (a run stored by an
    /// older probity, or by `probity serve`, has none).
    pub calls: Option<CallsInfo>,
    /// Its cost in money: its calls' tokens at the prices it was run with.
    pub cost: probity_core::cost::RunCost,
}

/// How a run's calls went, over every process that made them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallsInfo {
    /// Processes that made calls (a shared run's workers).
    pub processes: u64,
    /// The run's wall time, seconds: from the first process's start to
    /// the last's end when they worked at once.
    pub wall_s: f64,
    /// The processes' durations, summed.
    pub process_s: f64,
    /// The time answered calls took (sent to answered), summed over calls.
    pub call_s: f64,
    /// The time calls waited on probity's side before being sent, summed.
    pub queued_s: f64,
    /// Calls paid with no answer recorded: counted before they were sent
    /// by a process that died (kill -9, a lost machine) with them in
    /// flight. 0 when none did, or for a run stored before schema 15.
    pub lost_in_flight: u64,
    /// Each judge negotiating structured output: `(check, asked, used)`.
    pub structured: Vec<(String, String, String)>,
    /// `concurrency = "auto"`: where it settled.
    pub auto_concurrency: Option<AutoConcurrencyInfo>,
}

/// Where `concurrency = "auto"` settled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AutoConcurrencyInfo {
    /// Calls sent at once when the run ended.
    pub chosen: u64,
    /// The most it would send.
    pub most: u64,
    /// `(calls at once, calls answered per second)` per limit tried.
    pub tried: Vec<(u64, f64)>,
    /// False when the run ended before the search did.
    pub settled: bool,
}
