//! The rows of the store as the engine reads and writes them: a run's
//! header and totals, samples, attempts, judgements, cached outputs; and how
//! a stored row becomes one (`rows`).

use super::settings::StoredSettings;
use probity_core::causes::Causes;
use probity_core::cost::{RunUsage, Usage};
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::Decision;
use probity_core::{Cell, CheckInfo, Input};
use serde::{Deserialize, Serialize};

/// A run's header row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub config_hash: String,
    pub config: String,
    pub system: String,
    pub inputs: usize,
    pub outputs_per_input: usize,
    pub checks: Vec<CheckInfo>,
    /// The analysis settings the run was made with.
    pub settings: StoredSettings,
    pub parent_run: Option<i64>,
    /// Calls made for this run over all its sessions (to the system and
    /// to judges, retries included).
    pub model_calls: u64,
    /// Of `model_calls`, those made to judges.
    pub judge_calls: u64,
    /// Tokens reported by providers (prompt + completion), all sessions.
    pub tokens: u64,
    /// Judge calls per check, in column order (0 for validators), all
    /// sessions.
    pub judge_calls_by_check: Vec<u64>,
    /// Answered calls' tokens, input and output apart, the system's and
    /// each judge's (schema 15); `None` for a run stored before, or one
    /// resumed from such a run: its cost is not known (never 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
    /// Of `model_calls`, those that ended (answered, failed or cut short)
    /// as far as the store knows (schema 16); `None` for a run stored
    /// before. The rest, `model_calls - calls_ended`, were sent by a
    /// process that died with them in flight: paid, no answer recorded
    /// ([`RunRecord::calls_lost_in_flight`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_ended: Option<u64>,
    /// Samples whose output was reused from run `reused_from` (no call).
    pub cached: u64,
    /// The run whose stored outputs this run reused (`probity run --reuse`).
    pub reused_from: Option<i64>,
    pub duration_s: Option<f64>,
    /// Each check's decision, in column order, as the run that wrote the
    /// last samples summarised them when it finished; `None` for a run
    /// being written, a run of `probity serve`, or one stored before
    /// schema 7 (rebuild it from its samples, `stored::load`).
    #[serde(default)]
    pub verdicts: Option<Vec<Decision>>,
    /// The run whose samples hold this run's outputs: a revalidated run's
    /// verdicts are stored over its source's outputs, never a copy. `None`:
    /// its own.
    #[serde(default)]
    pub outputs_from: Option<i64>,
    /// A sequential run's outcome (why it stopped, after how many inputs
    /// and samples, each check's confidence sequence), stored when it
    /// finishes; `None` for a fixed-size run, or one being written.
    #[serde(default)]
    pub sequential: Option<SequentialOutcome>,
    /// The variant this run is of a variants run (`[[variant]]`, schema
    /// 11), with its group; `None` for a run of a file without variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<VariantTag>,
    /// How its calls went, over every process that made them (schema 14);
    /// `None` for a run stored before, or one no process recorded calls of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<RunCalls>,
}

/// How a run's calls went, over every process that made them (schema 14):
/// the time they took, summed, beside the run's wall time — a shared run's
/// processes work at once, so its calls' time adds up to more than its
/// wall — and what each upstream was found to take.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunCalls {
    /// Processes (sessions) that recorded their calls.
    pub processes: u64,
    /// Seconds from the first of them starting to the last ending, on the
    /// store's clock, when they overlapped (a shared run); the sum of
    /// their durations when they did not (a resumed run: the gap between
    /// sessions is no work).
    pub wall_s: f64,
    /// Their durations, summed.
    pub process_s: f64,
    /// Seconds answered calls took from sending to answer (the upstream's
    /// service, with any time queued there), summed over every call.
    pub call_s: f64,
    /// Seconds calls waited on probity's side before they were sent (rate
    /// limits, `concurrency = "auto"`), summed.
    pub queued_s: f64,
    /// What the upstreams took, as the last process to record found it.
    pub upstream: UpstreamNotes,
}

/// What the upstreams were found to take during a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpstreamNotes {
    /// Each judge's structured output, for judges that negotiate one
    /// (`openai` providers): `(check, asked, used)`, modes by their
    /// configuration names (`json-schema`, `json-object`, `none`).
    #[serde(default)]
    pub structured: Vec<(String, String, String)>,
    /// `concurrency = "auto"`: where it settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_concurrency: Option<AutoConcurrency>,
}

/// Where `concurrency = "auto"` settled
/// ([`crate::provider::load::AutoSearch`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AutoConcurrency {
    /// Calls sent at once when the run ended.
    pub chosen: u64,
    /// The most it would send.
    pub most: u64,
    /// `(calls at once, calls answered per second)` per limit tried.
    pub tried: Vec<(u64, f64)>,
    /// False when the run ended before the search did.
    pub settled: bool,
}

/// One process's calls, added to its run's ([`RunCalls`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionCalls {
    /// The process's duration, seconds.
    pub elapsed_s: f64,
    pub call_s: f64,
    pub queued_s: f64,
    pub upstream: UpstreamNotes,
}

/// A run that is one variant of a variants run (`[[variant]]` tables,
/// `probity run`): every variant is a run of its own, on the same inputs
/// and repetitions, linked by their group. Stored as `runs.variant` (this,
/// as JSON) and `runs.variant_group` (schema 11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantTag {
    /// The variant's name (`[[variant]] name`).
    pub name: String,
    /// Its place among the file's variants (0-based): the matrix's order.
    pub index: usize,
    /// The group: the id of its first run. `None` in a [`NewRun`]: the new
    /// run starts a group of its own.
    pub group: Option<i64>,
    /// The variant the others are compared with; `None`: every pair.
    pub reference: Option<String>,
}

/// A run's call counts over all its sessions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunTotals {
    /// Calls to the system and to judges (retries included).
    pub model_calls: u64,
    /// Of `model_calls`, those to judges.
    pub judge_calls: u64,
    /// Tokens reported (prompt + completion).
    pub tokens: u64,
    /// Judge calls per check, in column order (0 for validators).
    pub judge_calls_by_check: Vec<u64>,
    /// Answered calls' tokens, input and output apart: the system's, and
    /// each check's judge's (cost in money).
    #[serde(default)]
    pub usage: RunUsage,
    /// Of `model_calls`, those that ended: answered, failed, or cut short
    /// by this process. A shared run counts a call before it is sent and
    /// commits the count with its writer's batch (issue 38, item 5), so a
    /// worker killed outright leaves `model_calls - calls_ended` of its
    /// calls in flight counted: paid, with no answer recorded.
    #[serde(default)]
    pub calls_ended: u64,
}

impl std::ops::Add for RunTotals {
    type Output = RunTotals;
    fn add(self, o: RunTotals) -> RunTotals {
        self.zip(&o, |a, b| a + b, RunUsage::plus)
    }
}

impl RunTotals {
    /// Each count `op` of the two readings' (a check one of them lacks
    /// counts 0), the usage by `usage`: the one shape of [`Add`](std::ops::Add),
    /// [`RunTotals::latest`] and [`RunTotals::since`].
    fn zip(
        &self,
        o: &RunTotals,
        op: fn(u64, u64) -> u64,
        usage: fn(&RunUsage, &RunUsage) -> RunUsage,
    ) -> RunTotals {
        let k = self
            .judge_calls_by_check
            .len()
            .max(o.judge_calls_by_check.len());
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        RunTotals {
            model_calls: op(self.model_calls, o.model_calls),
            judge_calls: op(self.judge_calls, o.judge_calls),
            tokens: op(self.tokens, o.tokens),
            judge_calls_by_check: (0..k)
                .map(|i| {
                    op(
                        at(&self.judge_calls_by_check, i),
                        at(&o.judge_calls_by_check, i),
                    )
                })
                .collect(),
            usage: usage(&self.usage, &o.usage),
            calls_ended: op(self.calls_ended, o.calls_ended),
        }
    }

    /// Each count the larger of two readings of the same session's
    /// counters (every count only grows): readings taken by several tasks
    /// may reach the writer out of order, and the later must never count
    /// less.
    pub fn latest(self, o: RunTotals) -> RunTotals {
        self.zip(&o, u64::max, RunUsage::latest)
    }

    /// What `self` counted beyond `earlier` (an earlier reading of the
    /// same session's counts).
    pub fn since(&self, earlier: &RunTotals) -> RunTotals {
        self.zip(earlier, u64::saturating_sub, RunUsage::since)
    }
}

impl RunRecord {
    /// The counts so far.
    pub fn totals(&self) -> RunTotals {
        RunTotals {
            model_calls: self.model_calls,
            judge_calls: self.judge_calls,
            tokens: self.tokens,
            judge_calls_by_check: self.judge_calls_by_check.clone(),
            usage: self.usage.clone().unwrap_or_default(),
            // A run stored before schema 16: every call counted ended.
            calls_ended: self.calls_ended.unwrap_or(self.model_calls),
        }
    }

    /// Calls paid with no answer recorded: sent by a process that died
    /// (kill -9, a lost machine) with them in flight, counted before they
    /// were sent (`model_calls - calls_ended`); `None` for a run stored
    /// before schema 16.
    pub fn calls_lost_in_flight(&self) -> Option<u64> {
        self.calls_ended
            .map(|ended| self.model_calls.saturating_sub(ended))
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    /// Being written (or killed while being written: resumable).
    Running,
    /// Stopped before every sample was taken (Ctrl-C, deadline): resumable.
    Interrupted,
    Complete,
}

impl RunStatus {
    /// The stored name; a status this version does not know reads as
    /// `Running` (resumable, never complete).
    pub(super) fn parse(s: &str) -> RunStatus {
        s.parse().unwrap_or(RunStatus::Running)
    }
}

/// A new run's header, before it has an id.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub name: &'a str,
    pub config_hash: &'a str,
    pub config: &'a str,
    pub system: &'a str,
    pub inputs: &'a [Input],
    pub outputs_per_input: usize,
    pub checks: &'a [CheckInfo],
    pub settings: &'a StoredSettings,
    pub parent_run: Option<i64>,
    /// The run whose stored outputs this one reuses, if any.
    pub reused_from: Option<i64>,
    /// A revalidation: the run whose samples hold the outputs this run
    /// re-checks (its rows hold only verdicts).
    pub outputs_from: Option<i64>,
    /// The variant this run is, when it is one (`[[variant]]`).
    pub variant: Option<&'a VariantTag>,
}

/// One stored sample and its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    pub input_idx: usize,
    pub repetition: usize,
    pub cache_key: String,
    /// The output, or `None` when the call failed.
    pub output: Option<String>,
    /// Why the call failed.
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub call_attempts: u32,
    /// One cell per check, in column order.
    pub cells: Vec<Cell>,
    /// Reasons for Error (and verifier) cells: `(k, reason)`.
    pub reasons: Vec<(usize, String)>,
}

impl SampleRow {
    /// Count this sample's errors into `causes`: a failed call's error, or
    /// the reasons of the checks that could not judge its output.
    pub fn note_causes(&self, causes: &mut Causes) {
        let at = (self.input_idx, self.repetition);
        match &self.error {
            Some(e) => causes.add_call_error(at, e),
            None => causes.add_output(
                at,
                self.reasons
                    .iter()
                    .filter(|(k, _)| self.cells.get(*k) == Some(&Cell::Error))
                    .map(|(k, r)| (*k, r.as_str())),
            ),
        }
    }
}

/// What the guarded measurement counts of one stored attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptCounts {
    pub input_idx: usize,
    /// 1-based.
    pub attempt: u32,
    pub published: bool,
    /// Calls made for it: to the system (retries included) and to judges.
    pub calls: u64,
    /// Tokens reported (prompt + completion).
    pub tokens: u64,
    /// Its call to the system's usage, input and output apart: answered
    /// when it made a call that was answered (not an error, not served
    /// from a store).
    pub usage: Usage,
}

/// One attempt of a guarded sample (a run with a retry policy, or live
/// traffic through `probity serve`). The sample itself (`samples`) holds the
/// first attempt: the single-attempt tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub input_idx: usize,
    pub repetition: usize,
    /// 1-based.
    pub attempt: u32,
    pub output: Option<String>,
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub call_attempts: u32,
    pub judge_calls: u64,
    pub cells: Vec<Cell>,
    pub reasons: Vec<(usize, String)>,
    /// Passed every deciding check.
    pub passed: bool,
    /// This attempt's output was published.
    pub published: bool,
    /// The request's cache key (see `crate::checks::cache_key::attempt_key`)
    /// when the attempt produced an output and outputs are cached; `None`
    /// for errors, live traffic and stores older than schema 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// A successful judgement (PASS or FAIL) of a judge request, cached under
/// its key (see `crate::checks::cache_key::judgement_key`). Failed or unreadable
/// judgements are never cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgementRow {
    pub cache_key: String,
    pub pass: bool,
    pub reasons: Vec<String>,
    /// The judge's answer as received.
    pub raw: String,
}

/// What keeping a verdict does to one already kept under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// It stays (insert-or-ignore): the first verdict kept is the one read.
    Stays,
    /// It is replaced (`--fresh-labels`: the judge was asked again because
    /// its answers may have changed behind the same name).
    Replaced,
}

/// A judge's verdict on one pair of a verifier's labelled set (PASS or
/// FAIL, with its reasons), kept under the key of the judge's request
/// (`crate::checks::calibration::label_key`) so a later run that would ask
/// the very same question reads it instead of calling the judge. Failed
/// calls and unreadable answers are never kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelVerdict {
    pub cache_key: String,
    pub pass: bool,
    pub reasons: Vec<String>,
}

/// A cached, successful output for a cache key.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedOutput {
    pub output: String,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}
