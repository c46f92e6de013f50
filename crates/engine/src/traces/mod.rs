//! Production traces (issue 37, paper §4.2.6): what an application already
//! traces with OpenTelemetry — the GenAI semantic conventions, OpenInference
//! or OpenLLMetry — checked by probity's validators and verifiers, watched
//! live, stored as a run, and its failures exported as tests.
//!
//! - [`span`]: OTLP JSON decoded into spans; [`proto`] the same from OTLP
//!   protobuf (feature `otlp-proto`).
//! - [`map`] a span to an input (a conversation whole) and an output
//!   (text and tool calls), by [`genai`], [`openinference`] or
//!   [`openllmetry`]; [`mapped`] what comes out, or why nothing did.
//! - [`ingest`] checks, watches and records mapped spans into a run that
//!   [`run`] opens and closes; [`import`] reads files into it;
//!   [`receiver`] is the OTLP/HTTP endpoint of `probity collect`.
//! - [`sample`] which spans the judges see (`judge_share`, a budget);
//!   [`export`] sends each verdict back as a `gen_ai.evaluation.result`
//!   event parented to its span.
//! - [`mask`] secrets before anything is stored; [`failures`] the failing
//!   spans as test inputs, de-duplicated.
//!
//! docs/traces.md describes the mappings, versions and the loop.

pub mod config;
#[cfg(feature = "otlp-proto")]
pub(crate) mod export;
pub mod failures;
pub(crate) mod genai;
pub mod import;
pub mod ingest;
pub(crate) mod map;
pub(crate) mod mapped;
pub(crate) mod mask;
pub(crate) mod metrics;
pub(crate) mod openinference;
pub(crate) mod openllmetry;
#[cfg(feature = "otlp-proto")]
pub(crate) mod proto;
pub mod receiver;
pub mod run;
pub(crate) mod sample;
pub(crate) mod span;
