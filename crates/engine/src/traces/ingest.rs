//! Traced spans into a run: each span mapped ([`super::map`]), its output
//! checked by the configuration's validators and verifiers (through
//! [`Checks`], as every other path), watched by live monitoring
//! (`serve::monitor`, the same sequences and alarms as `probity serve`),
//! and recorded as one input of the run with its sample — through the
//! store's writer, as `probity serve` records its traffic.
//!
//! A span becomes input `trace-<trace id>-<span id>` whose fields are
//! `text` (the last user message, or a tool's arguments), `messages` (the
//! conversation whole, OpenAI's shape), `trace_id`, `span_id`,
//! `operation`, `model`, `convention`, `service` and `group`; its sample
//! is the span's output (its text and tool calls as validators read them,
//! docs/validators.md "Tool calls"), its tokens and latency, or the span's
//! error. Text is stored with secrets masked ([`super::mask`]); checks see
//! it as traced.

use super::config::{GroupBy, Loaded};
use super::map::map;
use super::mapped::{Mapped, Unmapped};
use super::mask::{mask, mask_json};
use super::sample::{Draw, JudgeSampler};
use super::span::Span;
use crate::checks::check::{Checks, Judging, Validated};
use crate::provider::call::Caller;
use crate::provider::types::AnswerMeta;
use crate::serve::monitor::{Monitor, MonitorConfig};
use crate::store::{LiveRecord, RunTotals, SampleRow, Writer};
use futures_util::StreamExt;
use probity_core::conversation::{to_openai, Role};
use probity_core::validator::PreparedInput;
use probity_core::{Cell, CheckInfo, Input};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What happened to the spans so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Spans received.
    pub spans: AtomicU64,
    /// Spans mapped and checked.
    pub mapped: AtomicU64,
    /// Mapped spans the store did not keep (its writer refused them).
    pub unrecorded: AtomicU64,
    /// Spans not mapped, by (reason, convention or `-`).
    pub unmapped: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Mapped spans by operation.
    pub operations: Mutex<BTreeMap<String, u64>>,
}

impl Counts {
    fn unmapped(&self, why: &Unmapped) {
        let convention = match why {
            Unmapped::NoContent(c) | Unmapped::UnknownShape(c, _) => c.as_str(),
            Unmapped::NotLlm | Unmapped::Filtered => "-",
        };
        if let Ok(mut m) = self.unmapped.lock() {
            *m.entry((why.reason(), convention)).or_default() += 1;
        }
    }

    /// Unmapped spans of `reason`, over every convention.
    pub fn unmapped_of(&self, reason: &str) -> u64 {
        self.unmapped
            .lock()
            .map(|m| {
                m.iter()
                    .filter(|((r, _), _)| *r == reason)
                    .map(|(_, n)| n)
                    .sum::<u64>()
            })
            .unwrap_or(0)
    }
}

/// Spans drawn for the judges checked at once (their calls overlap).
const CONCURRENCY: usize = 16;

/// The first few shapes not understood, kept to be told once each.
const SHAPES_TOLD: u64 = 8;

/// Checks traced spans into run `run_id`.
pub struct Ingest {
    pub checks: Arc<Checks>,
    /// The validators alone, for spans the judges do not see.
    validators_only: Arc<Checks>,
    /// Which spans the verifiers judge ([`super::sample`]).
    pub sampler: JudgeSampler,
    pub infos: Vec<CheckInfo>,
    pub caller: Arc<Caller>,
    pub judging: Judging,
    pub writer: Writer,
    pub run_id: i64,
    pub group_by: GroupBy,
    pub operations: Vec<String>,
    pub max_groups: usize,
    pub confidence: f64,
    pub monitor_config: MonitorConfig,
    pub baselines: Vec<Option<probity_core::monitor::Baseline>>,
    /// Every span's watches.
    pub all: Monitor,
    /// Each group's watches (at most `max_groups`, then `other`).
    pub groups: Mutex<HashMap<String, Arc<Monitor>>>,
    pub counts: Counts,
    /// Where verdicts are sent as evaluation events (`export`).
    #[cfg(feature = "otlp-proto")]
    pub exporter: Option<super::export::Exporter>,
    next: AtomicU64,
}

impl Ingest {
    /// An ingest of `loaded`'s checks into run `run_id` through `writer`.
    pub fn new(
        loaded: &Loaded,
        checks: Arc<Checks>,
        caller: Arc<Caller>,
        judging: Judging,
        writer: Writer,
        run_id: i64,
        baselines: Vec<Option<probity_core::monitor::Baseline>>,
    ) -> Result<Ingest, String> {
        let infos = checks.infos();
        let c = &loaded.config;
        let all = Monitor::new(&infos, c.confidence, &c.monitor, &baselines, &[], run_id)?;
        let validators_only = Arc::new(Checks {
            validators: checks.validators.clone(),
            verifiers: Vec::new(),
            conversation: Vec::new(),
            stop: checks.stop.clone(),
        });
        Ok(Ingest {
            validators_only,
            sampler: JudgeSampler::new(c.judge_share, c.judge_budget_per_hour),
            checks,
            infos,
            caller,
            judging,
            writer,
            run_id,
            group_by: loaded.group_by.clone(),
            operations: c.operations.clone(),
            max_groups: c.max_groups,
            confidence: c.confidence,
            monitor_config: c.monitor.clone(),
            baselines,
            all,
            groups: Mutex::new(HashMap::new()),
            counts: Counts::default(),
            #[cfg(feature = "otlp-proto")]
            exporter: c
                .export
                .as_deref()
                .map(super::export::Exporter::start)
                .transpose()?,
            next: AtomicU64::new(0),
        })
    }

    /// Spans checked and recorded so far.
    pub fn recorded(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// The run's totals so far (judge calls).
    pub fn totals(&self) -> RunTotals {
        RunTotals {
            judge_calls_by_check: self.checks.judge_calls(),
            ..self.caller.totals()
        }
    }

    /// Map, check, watch and record `spans` (one export, or a few lines
    /// of a file), each unmapped one counted with why.
    ///
    /// The work of each span that is pure — mapping, its input and the
    /// masked copy stored, the validators of a span the judges do not see —
    /// is done for all of them at once on the evaluation pool's threads (a
    /// single hand-over, every core busy; a hand-over per span cost more
    /// than the validators). Spans drawn for the judges are then checked
    /// whole ([`Checks::check`]), up to [`CONCURRENCY`] at once. Last, in
    /// the spans' order, each is counted, watched and recorded.
    pub async fn spans(&self, spans: &[Span]) {
        use rayon::prelude::*;
        let prepared: Vec<Prepared> = crate::checks::check::off_async_workers(|| {
            spans.par_iter().map(|s| self.prepare(s)).collect()
        });
        let todo: Vec<usize> = (0..prepared.len())
            .filter(|&i| {
                matches!(&prepared[i], Prepared::Mapped(r)
                    if r.checked.is_none() && !r.mapped.output.is_empty())
            })
            .collect();
        let prepared_ref = &prepared;
        let mut judged: HashMap<usize, Validated> = futures_util::stream::iter(todo)
            .map(|i| self.judge(i, &prepared_ref[i]))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for (i, (span, p)) in spans.iter().zip(prepared).enumerate() {
            match p {
                Prepared::Unmapped(why) => self.unmapped(span, &why),
                Prepared::Mapped(mut r) => {
                    let checked = r.checked.take().or_else(|| judged.remove(&i));
                    self.record(span, *r, checked);
                }
            }
        }
    }

    /// The checks, judges included, of the `i`th prepared span.
    async fn judge(&self, i: usize, p: &Prepared) -> (usize, Validated) {
        let Prepared::Mapped(r) = p else {
            return (i, (Vec::new(), Vec::new()));
        };
        let prepared = PreparedInput::new(&r.input);
        let checked = self
            .checks
            .check(&self.caller, &self.judging, &prepared, &r.text, 0, 1)
            .await;
        (i, (checked.cells, checked.reasons))
    }

    /// Count `span`, not mapped because of `why` (the first few shapes
    /// not understood told on stderr).
    fn unmapped(&self, span: &Span, why: &Unmapped) {
        self.counts.spans.fetch_add(1, Ordering::Relaxed);
        self.counts.unmapped(why);
        if let Unmapped::UnknownShape(c, detail) = why {
            let n = self.counts.unmapped_of("unknown_shape");
            if n <= SHAPES_TOLD {
                crate::stderr::line(format_args!(
                    "warning: span {} of trace {} ({}) not mapped: {}",
                    span.span_id,
                    span.trace_id,
                    c.as_str(),
                    crate::provider::redact::one_line(detail)
                ));
            }
        }
    }

    /// The pure part of one span's work (see [`Ingest::spans`]): mapped,
    /// its input as checks see it and as stored (masked), its checked
    /// text, and — unless the judges see it — its validators' columns.
    fn prepare(&self, span: &Span) -> Prepared {
        let mapped = match map(span, &self.operations) {
            Ok(m) => m,
            Err(why) => return Prepared::Unmapped(why),
        };
        let group = self.group_of(span, &mapped);
        let mut fields = input_fields(span, &mapped, &group);
        let text = AnswerMeta::checked_text(
            mapped.output.content.as_deref(),
            mapped.output.tool_calls_openai().as_ref(),
        );
        let judged = if mapped.output.is_empty() {
            None
        } else {
            let judged = self.checks.verifiers.is_empty() || self.sampler.draw() == Draw::Judged;
            if self.sampler.samples() {
                fields.insert("judged".into(), judged.into());
            }
            Some(judged)
        };
        let id = format!("trace-{}-{}", span.trace_id, span.span_id);
        let stored = Input {
            id: id.clone(),
            fields: probity_core::Fields::from_map(
                &fields
                    .iter()
                    .map(|(k, v)| (k.clone(), mask_json(v)))
                    .collect(),
            ),
        };
        let input = Input {
            id,
            fields: probity_core::Fields::from_map(&fields),
        };
        // A span drawn for the judges is checked whole later (async); a
        // span without an answer has nothing to check.
        let checked = match judged {
            Some(j) if !j || self.checks.verifiers.is_empty() => Some(self.validate(&input, &text)),
            _ => None,
        };
        let masked_output = (!mapped.output.is_empty()).then(|| mask(&text));
        Prepared::Mapped(Box::new(Ready {
            mapped,
            group,
            input,
            stored,
            text,
            masked_output,
            checked,
        }))
    }

    /// The validators' columns of `text` (those the judges do not see);
    /// a validator that panics gives Error cells, as on the evaluation
    /// pool of [`Checks::check`].
    fn validate(&self, input: &Input, text: &str) -> Validated {
        let checks = &self.validators_only;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            checks.validate(&PreparedInput::new(input), text)
        }))
        .unwrap_or_else(|_| {
            let reason = "the check's evaluation stopped unexpectedly".to_string();
            (
                vec![Cell::Error; checks.validators.len()],
                (0..checks.validators.len())
                    .map(|k| (k, reason.clone()))
                    .collect(),
            )
        })
    }

    /// Count, watch and record one mapped span whose columns are
    /// `checked` (`None`: its output is empty, or its checks failed to
    /// run).
    fn record(&self, span: &Span, r: Ready, checked: Option<Validated>) {
        self.counts.spans.fetch_add(1, Ordering::Relaxed);
        self.counts.mapped.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut ops) = self.counts.operations.lock() {
            *ops.entry(r.mapped.operation.clone()).or_default() += 1;
        }
        let idx = self.next.fetch_add(1, Ordering::Relaxed) as usize;
        let (cells, reasons, output, error) = match (r.masked_output, checked) {
            (Some(output), Some((mut cells, reasons))) => {
                // Not drawn for the judges: their cells stay Missing (no rate).
                cells.resize(self.checks.len(), Cell::Missing);
                (cells, reasons, Some(output), None)
            }
            _ => {
                // The span records a failure (an error status, no answer):
                // no check has anything to judge.
                let error = r.mapped.error.clone().unwrap_or_default();
                (
                    vec![Cell::Error; self.checks.len()],
                    Vec::new(),
                    None,
                    Some(mask(&error)),
                )
            }
        };
        if output.is_some() {
            #[cfg(feature = "otlp-proto")]
            self.export(span, &cells, &reasons);
            self.all.announce(self.all.observe(0, &cells));
            if let Some(m) = self.group_monitor(&r.group) {
                m.announce(m.observe(0, &cells));
            }
        }
        let sample = SampleRow {
            input_idx: idx,
            repetition: 0,
            cache_key: String::new(),
            output,
            error,
            latency_ms: span.latency_ms(),
            input_tokens: r.mapped.input_tokens,
            output_tokens: r.mapped.output_tokens,
            call_attempts: 1,
            cells,
            reasons: reasons.into_iter().map(|(k, r)| (k, mask(&r))).collect(),
        };
        let record = LiveRecord {
            input: (idx, r.stored),
            attempts: Vec::new(),
            sample,
            totals: self.totals(),
        };
        if let Err(e) = self.writer.send_record(record) {
            let n = self.counts.unrecorded.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                crate::stderr::line(format_args!(
                    "warning: span {} checked but not recorded ({n} so far): {e}",
                    span.span_id
                ));
            }
        }
    }

    /// Send the span's verdicts as evaluation events, when `export` is set.
    #[cfg(feature = "otlp-proto")]
    fn export(&self, span: &Span, cells: &[Cell], reasons: &[(usize, String)]) {
        use super::export::{SpanVerdicts, Verdict};
        let Some(exporter) = &self.exporter else {
            return;
        };
        let verdicts = self
            .infos
            .iter()
            .zip(cells)
            .enumerate()
            .map(|(k, (info, cell))| {
                let own: Vec<String> = reasons
                    .iter()
                    .filter(|(kk, _)| *kk == k)
                    .map(|(_, r)| mask(r))
                    .collect();
                Verdict {
                    check: info.name.clone(),
                    cell: *cell,
                    explanation: (!own.is_empty()).then(|| own.join("; ")),
                }
            })
            .collect();
        exporter.send(SpanVerdicts {
            trace_id: span.trace_id.clone(),
            span_id: span.span_id.clone(),
            response_id: span.str("gen_ai.response.id"),
            verdicts,
        });
    }

    /// Evaluation events sent and not sent, when `export` is set.
    pub fn exported(&self) -> Option<(u64, u64)> {
        #[cfg(feature = "otlp-proto")]
        if let Some(e) = &self.exporter {
            return Some((
                e.counts.sent.load(Ordering::Relaxed),
                e.counts.failed.load(Ordering::Relaxed),
            ));
        }
        None
    }

    /// Send the queued evaluation events (`export`), then stop sending.
    pub async fn close_export(&self) {
        #[cfg(feature = "otlp-proto")]
        if let Some(e) = &self.exporter {
            e.close().await;
        }
    }

    /// The span's group under `group_by`.
    fn group_of(&self, span: &Span, m: &Mapped) -> String {
        let g = match &self.group_by {
            GroupBy::None => None,
            GroupBy::Model => m.model.clone(),
            GroupBy::Operation => Some(m.operation.clone()),
            GroupBy::Service => span.service.clone(),
            GroupBy::Convention => Some(m.convention.as_str().to_string()),
            GroupBy::Attribute(key) => span.str(key),
        };
        g.unwrap_or_else(|| "-".into())
    }

    /// The watches of `group` (created on its first span; past
    /// `max_groups`, those of `other`).
    fn group_monitor(&self, group: &str) -> Option<Arc<Monitor>> {
        if self.group_by == GroupBy::None {
            return None;
        }
        let mut groups = self.groups.lock().ok()?;
        let key = if groups.contains_key(group) || groups.len() < self.max_groups {
            group.to_string()
        } else {
            "other".to_string()
        };
        if let Some(m) = groups.get(&key) {
            return Some(m.clone());
        }
        let m = Arc::new(
            Monitor::new(
                &self.infos,
                self.confidence,
                &self.monitor_config,
                &self.baselines,
                &[],
                self.run_id,
            )
            .ok()?,
        );
        groups.insert(key, m.clone());
        Some(m)
    }
}

/// The span's fields as a test input (docs at the top of this file),
/// built as one map: `Fields` keeps its JSON text, which an insert
/// parses and writes whole again.
fn input_fields(span: &Span, m: &Mapped, group: &str) -> Map<String, Value> {
    let text = m
        .messages
        .iter()
        .rev()
        .find(|x| x.role == Role::User)
        .map(|x| x.content.clone())
        .or_else(|| {
            // A tool's call: its arguments.
            m.messages
                .iter()
                .flat_map(|x| &x.tool_calls)
                .next()
                .map(|c| match &c.arguments {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
        })
        .unwrap_or_default();
    let mut f = Map::new();
    f.insert("text".into(), text.into());
    f.insert("messages".into(), to_openai(&m.messages));
    f.insert("trace_id".into(), span.trace_id.clone().into());
    f.insert("span_id".into(), span.span_id.clone().into());
    f.insert("operation".into(), m.operation.clone().into());
    f.insert("convention".into(), m.convention.as_str().into());
    f.insert("group".into(), group.into());
    if let Some(model) = &m.model {
        f.insert("model".into(), model.clone().into());
    }
    if let Some(service) = &span.service {
        f.insert("service".into(), service.clone().into());
    }
    f
}

/// One span's pure work, done ahead ([`Ingest::prepare`]).
enum Prepared {
    Unmapped(Unmapped),
    Mapped(Box<Ready>),
}

/// A mapped span ready to be checked by the judges, watched and recorded.
struct Ready {
    mapped: Mapped,
    group: String,
    /// The input as checks see it (as traced).
    input: Input,
    /// The input as stored (secrets masked).
    stored: Input,
    /// The output as validators read it.
    text: String,
    /// `text` masked, when the span has an answer.
    masked_output: Option<String>,
    /// The validators' columns, when the judges do not see the span.
    checked: Option<Validated>,
}
