//! A run's cost in the JSON documents (`run.cost` of `probity.report.v1`,
//! each variant's `cost.money` of `probity.variants.v1`): dedicated wire
//! structs, so the core's types can change without changing the format.
//!
//! ```text
//! {status: "priced" | "no_price" | "not_recorded" | "mixed_currencies",
//!  currency, total,                       // priced only
//!  system: part, judges: part,            // part: {cost, answered_calls, calls_with_usage,
//!                                         //        input_tokens, output_tokens}; cost null: not priced
//!  retries: null | part,                  // a run with a retry policy: its retries' calls to the system
//!  answered_calls, calls_with_usage, unpriced_calls}
//! ```

use probity_core::cost::{CostPart, RunCost};
use serde::Serialize;

/// A run's cost.
#[derive(Debug, Serialize)]
pub struct WireCost {
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<WireCostPart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judges: Option<WireCostPart>,
    /// Priced runs only: `null` without a retry policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<Option<WireCostPart>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_with_usage: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpriced_calls: Option<u64>,
}

/// Some calls' cost and usage.
#[derive(Debug, Serialize)]
pub struct WireCostPart {
    /// `null`: not priced (no price set for their provider).
    pub cost: Option<f64>,
    pub answered_calls: u64,
    pub calls_with_usage: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

fn part(p: &CostPart) -> WireCostPart {
    WireCostPart {
        cost: p.amount.filter(|a| a.is_finite()),
        answered_calls: p.usage.answered,
        calls_with_usage: p.usage.reported,
        input_tokens: p.usage.input_tokens,
        output_tokens: p.usage.output_tokens,
    }
}

/// `cost` on the wire.
pub fn wire_cost(cost: &RunCost) -> WireCost {
    let status = |s| WireCost {
        status: s,
        currency: None,
        total: None,
        system: None,
        judges: None,
        retries: None,
        answered_calls: None,
        calls_with_usage: None,
        unpriced_calls: None,
    };
    match cost {
        RunCost::NoPrice => status("no_price"),
        RunCost::NotRecorded => status("not_recorded"),
        RunCost::MixedCurrencies => status("mixed_currencies"),
        RunCost::Priced(c) => WireCost {
            status: "priced",
            currency: Some(c.currency.clone()),
            total: Some(c.total).filter(|t| t.is_finite()),
            system: Some(part(&c.system)),
            judges: Some(part(&c.judges)),
            retries: Some(c.retries.as_ref().map(part)),
            answered_calls: Some(c.answered),
            calls_with_usage: Some(c.reported),
            unpriced_calls: Some(c.unpriced_calls),
        },
    }
}
