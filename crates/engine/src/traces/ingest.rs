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
use crate::checks::check::{Checks, Judging};
use crate::provider::call::Caller;
use crate::provider::types::AnswerMeta;
use crate::serve::monitor::{Monitor, MonitorConfig};
use crate::store::{LiveRecord, RunTotals, SampleRow, Writer};
use probity_core::conversation::{to_openai, Role};
use probity_core::validator::PreparedInput;
use probity_core::{Cell, CheckInfo, Input};
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

    /// Map, check, watch and record one span; `Err` with why it was not
    /// mapped (counted).
    pub async fn span(&self, span: &Span) -> Result<(), Unmapped> {
        self.counts.spans.fetch_add(1, Ordering::Relaxed);
        let mapped = match map(span, &self.operations) {
            Ok(m) => m,
            Err(why) => {
                self.counts.unmapped(&why);
                if let Unmapped::UnknownShape(c, detail) = &why {
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
                return Err(why);
            }
        };
        self.counts.mapped.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut ops) = self.counts.operations.lock() {
            *ops.entry(mapped.operation.clone()).or_default() += 1;
        }
        let idx = self.next.fetch_add(1, Ordering::Relaxed) as usize;
        let group = self.group_of(span, &mapped);
        let mut input = input_of(span, &mapped, &group);
        let text = AnswerMeta::checked_text(
            mapped.output.content.as_deref(),
            mapped.output.tool_calls_openai().as_ref(),
        );
        let (cells, reasons, output, error) = if mapped.output.is_empty() {
            // The span records a failure (an error status, no answer):
            // no check has anything to judge.
            let error = mapped.error.clone().unwrap_or_default();
            (
                vec![Cell::Error; self.checks.len()],
                Vec::new(),
                None,
                Some(mask(&error)),
            )
        } else {
            let judged = self.checks.verifiers.is_empty() || self.sampler.draw() == Draw::Judged;
            if self.sampler.samples() {
                input.fields.insert("judged".into(), judged.into());
            }
            let checks = if judged {
                &self.checks
            } else {
                &self.validators_only
            };
            let prepared = PreparedInput::new(&input);
            let mut checked = checks
                .check(&self.caller, &self.judging, &prepared, &text, 0, 1)
                .await;
            // Not drawn for the judges: their cells stay Missing (no rate).
            checked.cells.resize(self.checks.len(), Cell::Missing);
            (checked.cells, checked.reasons, Some(mask(&text)), None)
        };
        if output.is_some() {
            #[cfg(feature = "otlp-proto")]
            self.export(span, &cells, &reasons);
            self.all.announce(self.all.observe(0, &cells));
            if let Some(m) = self.group_monitor(&group) {
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
            input_tokens: mapped.input_tokens,
            output_tokens: mapped.output_tokens,
            call_attempts: 1,
            cells,
            reasons: reasons.into_iter().map(|(k, r)| (k, mask(&r))).collect(),
        };
        let stored = masked_input(&input);
        let record = LiveRecord {
            input: (idx, stored),
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
        Ok(())
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

/// The span as a test input (docs at the top of this file).
fn input_of(span: &Span, m: &Mapped, group: &str) -> Input {
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
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
        })
        .unwrap_or_default();
    let mut input = Input::text(format!("trace-{}-{}", span.trace_id, span.span_id), text);
    let f = &mut input.fields;
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
    input
}

/// `input` with its text fields' secrets masked.
fn masked_input(input: &Input) -> Input {
    let map = input.fields.to_map();
    let masked: serde_json::Map<String, serde_json::Value> =
        map.iter().map(|(k, v)| (k.clone(), mask_json(v))).collect();
    Input {
        id: input.id.clone(),
        fields: probity_core::Fields::from_map(&masked),
    }
}
