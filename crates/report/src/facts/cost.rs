//! Cost in money, said the same way in every format: a run's
//! ([`cost_phrase`]), its retries' ([`retries_cost_phrase`]).
//! `probity_core::cost` computes; this says.

use crate::numbers::plural;
use probity_core::cost::{amount_text, money, Cost, CostPart, RunCost};

/// `cost 0.1234 USD (system 0.1000, judges 0.0234)`, with what it does not
/// cover: `; covers 380 of 400 answered calls (20 reported no usage)`, `;
/// judges not priced (400 calls)`, and for a run with a retry policy what
/// its retries cost ([`retries_cost_phrase`]). `None` when no price was set (the run
/// is reported in tokens). Not escaped.
pub fn cost_phrase(cost: &RunCost) -> Option<String> {
    let c = match cost {
        RunCost::NoPrice => return None,
        RunCost::NotRecorded => return Some(
            "cost not known (its calls' usage was not stored: a run stored by an older probity)"
                .to_string(),
        ),
        RunCost::MixedCurrencies => {
            return Some("cost not added up: its prices are in more than one currency".to_string())
        }
        RunCost::Priced(c) => c,
    };
    let mut s = format!("cost {}", money(c.total, &c.currency));
    let part = |name: &str, p: &CostPart| match p.amount {
        Some(a) => format!("{name} {}", amount_text(a)),
        None => format!(
            "{name} not priced ({} {})",
            p.usage.answered,
            plural(p.usage.answered as usize, "call")
        ),
    };
    if c.judges.usage.answered > 0 || c.system.amount.is_none() {
        s.push_str(&format!(
            " ({}, {})",
            part("system", &c.system),
            part("judges", &c.judges)
        ));
    }
    if let Some(gap) = coverage(c) {
        s.push_str(&format!("; {gap}"));
    }
    if let (Some(r), Some(system)) = (&c.retries, c.system.amount) {
        if let Some(retries) = r.amount {
            s.push_str(&format!(
                "; {}",
                retries_cost_phrase(retries, system, &c.currency)
            ));
        }
    }
    Some(s)
}

/// `covers 380 of 400 answered calls (20 reported no usage)`: `None` when
/// every answered call reported its usage.
pub fn coverage(c: &Cost) -> Option<String> {
    (c.reported < c.answered).then(|| {
        format!(
            "covers {} of {} answered {} ({} reported no usage)",
            c.reported,
            c.answered,
            plural(c.answered as usize, "call"),
            c.answered - c.reported
        )
    })
}

/// What the retries of a guarded run cost: `retries cost 0.0120 USD of the
/// system's 0.0480 (25%)` — attempts after the first, their calls to the
/// system (their judge calls are counted in the run's judges' cost). Not
/// escaped.
pub fn retries_cost_phrase(retries: f64, system: f64, currency: &str) -> String {
    let share = if system > 0.0 {
        format!(" ({:.0}%)", 100.0 * retries / system)
    } else {
        String::new()
    };
    format!(
        "retries cost {} of the system's {}{share}",
        money(retries, currency),
        amount_text(system)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use probity_core::cost::{Price, RunPrices, RunUsage, Usage};

    fn usage(answered: u64, reported: u64, i: u64, o: u64) -> Usage {
        Usage {
            answered,
            reported,
            input_tokens: i,
            output_tokens: o,
        }
    }

    fn price(i: f64, o: f64) -> Price {
        Price {
            input_per_million: i,
            output_per_million: o,
            currency: "USD".into(),
        }
    }

    #[test]
    fn a_priced_run_says_its_cost_and_what_it_covers() {
        let u = RunUsage {
            system: usage(400, 380, 2_000_000, 500_000),
            judges: vec![Usage::default(), usage(100, 100, 300_000, 10_000)],
        };
        let p = RunPrices {
            system: Some(price(0.5, 2.0)),
            judges: vec![None, Some(price(1.0, 4.0))],
        };
        // system 1.0 + 1.0 = 2.0; judges 0.3 + 0.04 = 0.34.
        let s = cost_phrase(&RunCost::of(Some(&u), &p)).unwrap();
        assert_eq!(
            s,
            "cost 2.34 USD (system 2.00, judges 0.3400); covers 480 of 500 answered calls (20 reported no usage)"
        );
        assert_eq!(
            cost_phrase(&RunCost::of(Some(&u), &RunPrices::default())),
            None
        );
        assert!(cost_phrase(&RunCost::of(None, &p))
            .unwrap()
            .starts_with("cost not known"));
    }
}
