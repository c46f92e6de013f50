//! Cost in money: the tokens providers reported, priced per million input
//! and output tokens (issue 40). There is no built-in price list: a price
//! is what the configuration says (`price = { input_per_million = 2.5,
//! output_per_million = 10.0 }` on a provider table), stored with the run
//! so a later report prices it as it was priced when it ran.
//!
//! The cost of `u` tokens at price `p` is
//! `u.input_tokens / 10⁶ · p.input_per_million + u.output_tokens / 10⁶ ·
//! p.output_per_million`. Calls whose provider reported no usage add no
//! tokens: a cost says how many of the answered calls it covers
//! ([`Usage::reported`] of [`Usage::answered`]), so a missing usage never
//! reads as a free call. Failed calls are not counted (providers do not
//! bill them).

use serde::{Deserialize, Serialize};

/// A price per million tokens, in `currency` (a label: nothing converts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
    #[serde(default = "usd")]
    pub currency: String,
}

fn usd() -> String {
    "USD".to_string()
}

/// Longest currency label, in characters.
pub const MAX_CURRENCY_CHARS: usize = 12;

/// The characters a currency label may hold besides letters and digits:
/// it is printed in every report, so no markup.
pub const CURRENCY_SIGNS: &str = "$€£¥₹_-.";

impl Price {
    /// The one check of a price: both rates finite and ≥ 0, a currency of
    /// 1–12 letters, digits or [`CURRENCY_SIGNS`]. The error names the
    /// field.
    pub fn validate(&self) -> Result<(), String> {
        for (field, x) in [
            ("input_per_million", self.input_per_million),
            ("output_per_million", self.output_per_million),
        ] {
            if !x.is_finite() || x < 0.0 {
                return Err(format!(
                    "price.{field} = {x}: must be a finite number ≥ 0 (the price per million tokens)"
                ));
            }
        }
        let c = &self.currency;
        if c.is_empty()
            || c.chars().count() > MAX_CURRENCY_CHARS
            || !c
                .chars()
                .all(|ch| ch.is_alphanumeric() || CURRENCY_SIGNS.contains(ch))
        {
            return Err(format!(
                "price.currency = {c:?}: must be 1 to {MAX_CURRENCY_CHARS} letters, digits or {CURRENCY_SIGNS}, e.g. \"USD\""
            ));
        }
        Ok(())
    }

    /// What `u` costs at this price (see the module's formula).
    pub fn cost(&self, u: &Usage) -> f64 {
        u.input_tokens as f64 / 1e6 * self.input_per_million
            + u.output_tokens as f64 / 1e6 * self.output_per_million
    }
}

/// The usage of some answered calls, as their providers reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Calls answered (a failed call is not counted).
    pub answered: u64,
    /// Of `answered`, those whose provider reported both input and output
    /// tokens.
    pub reported: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// One answered call's usage, `None` where the provider reported none.
    pub fn of_call(input: Option<u64>, output: Option<u64>) -> Usage {
        Usage {
            answered: 1,
            reported: u64::from(input.is_some() && output.is_some()),
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
        }
    }

    /// Every answered call reported its usage.
    pub fn complete(&self) -> bool {
        self.reported == self.answered
    }

    /// Each count the larger of two readings of the same counters (counts
    /// only grow; readings may arrive out of order).
    pub fn latest(&self, o: &Usage) -> Usage {
        Usage {
            answered: self.answered.max(o.answered),
            reported: self.reported.max(o.reported),
            input_tokens: self.input_tokens.max(o.input_tokens),
            output_tokens: self.output_tokens.max(o.output_tokens),
        }
    }

    /// What `self` holds beyond `earlier` (a part of it).
    pub fn minus(&self, earlier: &Usage) -> Usage {
        Usage {
            answered: self.answered.saturating_sub(earlier.answered),
            reported: self.reported.saturating_sub(earlier.reported),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            answered: self.answered + o.answered,
            reported: self.reported + o.reported,
            input_tokens: self.input_tokens + o.input_tokens,
            output_tokens: self.output_tokens + o.output_tokens,
        }
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), |a, b| a + b)
    }
}

/// A run's usage: the calls to the system and, per check column, to its
/// judge (zero for checks without one).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunUsage {
    pub system: Usage,
    #[serde(default)]
    pub judges: Vec<Usage>,
}

impl RunUsage {
    /// The system's `op` and each judge's (a judge one of them lacks
    /// counts nothing): the one shape of [`RunUsage::plus`],
    /// [`RunUsage::latest`] and [`RunUsage::since`].
    fn zip(&self, o: &RunUsage, op: impl Fn(&Usage, &Usage) -> Usage) -> RunUsage {
        let k = self.judges.len().max(o.judges.len());
        let at = |v: &[Usage], i: usize| v.get(i).copied().unwrap_or_default();
        RunUsage {
            system: op(&self.system, &o.system),
            judges: (0..k)
                .map(|i| op(&at(&self.judges, i), &at(&o.judges, i)))
                .collect(),
        }
    }

    /// Both added, judge by judge.
    pub fn plus(&self, o: &RunUsage) -> RunUsage {
        self.zip(o, |a, b| *a + *b)
    }

    /// [`Usage::latest`], judge by judge.
    pub fn latest(&self, o: &RunUsage) -> RunUsage {
        self.zip(o, Usage::latest)
    }

    /// What `self` counted beyond `earlier`.
    pub fn since(&self, earlier: &RunUsage) -> RunUsage {
        self.zip(earlier, Usage::minus)
    }
}

/// The prices a run was made with: the system's and, per check column, its
/// judge's (`None`: not priced).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunPrices {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Price>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<Option<Price>>,
}

impl RunPrices {
    /// Some price is set.
    pub fn any(&self) -> bool {
        self.system.is_some() || self.judges.iter().any(Option::is_some)
    }
}

/// One part of a cost: the calls it covers and what they cost, `None`
/// when they are not priced (no price configured) while some were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostPart {
    pub usage: Usage,
    /// Money; `None`: calls were answered but no price was set for them.
    pub amount: Option<f64>,
}

/// A run's cost: its calls to the system and to its judges apart, and the
/// total, in one currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub currency: String,
    pub system: CostPart,
    pub judges: CostPart,
    /// `system + judges`, of the priced parts.
    pub total: f64,
    /// Calls answered (system and judges) and those with usage reported.
    pub answered: u64,
    pub reported: u64,
    /// Answered calls left unpriced (no price for their provider).
    pub unpriced_calls: u64,
    /// A run with a retry policy: its attempts after the first, their
    /// calls to the system (part of `system`): what reliability cost
    /// (§4.2). `None` for a run without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<CostPart>,
}

/// What a run's cost is known to be.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunCost {
    /// No price in its configuration: reported in tokens only.
    #[default]
    NoPrice,
    /// Stored before usage was kept (schema 15), or resumed from such a
    /// run: not known, never 0.
    NotRecorded,
    /// Its prices are in more than one currency: not added up.
    MixedCurrencies,
    Priced(Cost),
}

impl RunCost {
    /// A stored run's cost: its `usage` (`None`: not recorded) at `prices`.
    pub fn of(usage: Option<&RunUsage>, prices: &RunPrices) -> RunCost {
        match usage {
            _ if !prices.any() => RunCost::NoPrice,
            None => RunCost::NotRecorded,
            Some(u) => Cost::of(u, prices),
        }
    }

    /// The cost, when priced.
    pub fn priced(&self) -> Option<&Cost> {
        match self {
            RunCost::Priced(c) => Some(c),
            _ => None,
        }
    }
}

impl Cost {
    /// What `usage` costs at `prices` ([`RunCost::Priced`]): judge `k`'s
    /// calls at judge `k`'s price. Parts without a price are counted as
    /// unpriced calls, never as free.
    pub fn of(usage: &RunUsage, prices: &RunPrices) -> RunCost {
        if !prices.any() {
            return RunCost::NoPrice;
        }
        let mut currencies = prices
            .judges
            .iter()
            .flatten()
            .chain(prices.system.as_ref())
            .map(|p| p.currency.as_str());
        let currency = currencies.next().unwrap_or("USD").to_string();
        if currencies.any(|c| c != currency) {
            return RunCost::MixedCurrencies;
        }
        let mut unpriced = 0;
        let system = CostPart {
            usage: usage.system,
            amount: match &prices.system {
                Some(p) => Some(p.cost(&usage.system)),
                None => {
                    unpriced += usage.system.answered;
                    None
                }
            },
        };
        let mut judge_amount: Option<f64> = None;
        for (k, u) in usage.judges.iter().enumerate() {
            if u.answered == 0 {
                continue;
            }
            match prices.judges.get(k).and_then(Option::as_ref) {
                Some(p) => *judge_amount.get_or_insert(0.0) += p.cost(u),
                None => unpriced += u.answered,
            }
        }
        let judges = CostPart {
            usage: usage.judges.iter().copied().sum(),
            amount: judge_amount.or_else(|| {
                // No judge answered: nothing to price, and it cost nothing.
                (usage.judges.iter().all(|u| u.answered == 0)).then_some(0.0)
            }),
        };
        let total = system.amount.unwrap_or(0.0) + judges.amount.unwrap_or(0.0);
        RunCost::Priced(Cost {
            retries: None,
            currency,
            answered: system.usage.answered + judges.usage.answered,
            reported: system.usage.reported + judges.usage.reported,
            system,
            judges,
            total,
            unpriced_calls: unpriced,
        })
    }

    /// This cost with its retries' share: `retries`, the usage of the
    /// system's calls for attempts after the first, at `price` (the
    /// system's).
    pub fn with_retries(mut self, retries: Usage, price: Option<&Price>) -> Cost {
        self.retries = Some(CostPart {
            usage: retries,
            amount: price.map(|p| p.cost(&retries)),
        });
        self
    }

    /// Every answered call is priced and reported its usage.
    pub fn complete(&self) -> bool {
        self.unpriced_calls == 0 && self.reported == self.answered
    }
}

/// `amount` in `currency` with enough digits for small sums: `$0.0123`
/// style without the symbol — `0.0123 USD` (4 significant digits below 1,
/// cents above).
pub fn money(amount: f64, currency: &str) -> String {
    format!("{} {currency}", amount_text(amount))
}

/// The number part of [`money`]; from 10^12 up (an absurd price, or a
/// typo in one) with an exponent rather than hundreds of digits, and a sum
/// past `f64` said to be so.
pub fn amount_text(amount: f64) -> String {
    let a = amount.abs();
    if !a.is_finite() {
        "too large to count".to_string()
    } else if a >= 1e12 {
        format!("{amount:.3e}")
    } else if a == 0.0 {
        "0".to_string()
    } else if a >= 1.0 {
        format!("{amount:.2}")
    } else {
        // 4 significant digits: 0.01234, 0.0001234.
        let digits = (3 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{amount:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(i: f64, o: f64) -> Price {
        Price {
            input_per_million: i,
            output_per_million: o,
            currency: "USD".into(),
        }
    }

    fn used(answered: u64, reported: u64, i: u64, o: u64) -> Usage {
        Usage {
            answered,
            reported,
            input_tokens: i,
            output_tokens: o,
        }
    }

    #[test]
    fn huge_amounts_have_an_exponent_and_overflow_is_named() {
        assert_eq!(amount_text(2.6799e306), "2.680e306");
        assert_eq!(amount_text(999_999_999_999.0), "999999999999.00");
        assert_eq!(amount_text(f64::INFINITY), "too large to count");
        assert_eq!(amount_text(0.012344), "0.01234");
    }

    #[test]
    fn cost_is_tokens_times_price_per_million() {
        // 120 000 in at 2.5/M = 0.3; 30 000 out at 10/M = 0.3.
        let c = price(2.5, 10.0).cost(&used(3, 3, 120_000, 30_000));
        assert!((c - 0.6).abs() < 1e-12, "{c}");
    }

    #[test]
    fn each_judge_is_priced_at_its_own_price() {
        let usage = RunUsage {
            system: used(10, 10, 1_000_000, 200_000),
            judges: vec![used(0, 0, 0, 0), used(10, 8, 500_000, 10_000)],
        };
        let prices = RunPrices {
            system: Some(price(1.0, 4.0)),
            judges: vec![None, Some(price(0.2, 0.8))],
        };
        let c = Cost::of(&usage, &prices).priced().cloned().unwrap();
        // system: 1.0 + 0.8 = 1.8; judge: 0.1 + 0.008 = 0.108.
        assert!((c.system.amount.unwrap() - 1.8).abs() < 1e-12);
        assert!((c.judges.amount.unwrap() - 0.108).abs() < 1e-12);
        assert!((c.total - 1.908).abs() < 1e-12);
        assert_eq!((c.answered, c.reported, c.unpriced_calls), (20, 18, 0));
        assert!(!c.complete());
    }

    #[test]
    fn unpriced_calls_are_counted_never_free() {
        let usage = RunUsage {
            system: used(5, 5, 100, 100),
            judges: vec![used(5, 5, 100, 100)],
        };
        let prices = RunPrices {
            system: Some(price(1.0, 1.0)),
            judges: vec![None],
        };
        let c = Cost::of(&usage, &prices).priced().cloned().unwrap();
        assert_eq!(c.judges.amount, None);
        assert_eq!(c.unpriced_calls, 5);
        assert_eq!(Cost::of(&usage, &RunPrices::default()), RunCost::NoPrice);
        let mixed = RunPrices {
            system: Some(price(1.0, 1.0)),
            judges: vec![Some(Price {
                currency: "EUR".into(),
                ..price(1.0, 1.0)
            })],
        };
        assert_eq!(Cost::of(&usage, &mixed), RunCost::MixedCurrencies);
    }

    #[test]
    fn bad_prices_name_the_field() {
        for (p, field) in [
            (price(-1.0, 1.0), "input_per_million"),
            (price(1.0, f64::NAN), "output_per_million"),
            (price(1.0, f64::INFINITY), "output_per_million"),
            (
                Price {
                    currency: "US D".into(),
                    ..price(1.0, 1.0)
                },
                "currency",
            ),
            (
                Price {
                    currency: "<b>".into(),
                    ..price(1.0, 1.0)
                },
                "currency",
            ),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.contains(field), "{e}");
        }
        assert!(price(0.0, 0.0).validate().is_ok());
        for ok in ["EUR", "$", "€", "credits"] {
            let p = Price {
                currency: ok.into(),
                ..price(1.0, 1.0)
            };
            assert!(p.validate().is_ok(), "{ok}");
        }
    }

    #[test]
    fn a_call_without_usage_is_answered_but_not_reported() {
        let u = Usage::of_call(Some(10), None) + Usage::of_call(Some(3), Some(4));
        assert_eq!(u, used(2, 1, 13, 4));
        assert_eq!(
            u.minus(&Usage::of_call(Some(3), Some(4))),
            used(1, 0, 10, 0)
        );
    }

    #[test]
    fn money_keeps_small_sums_readable() {
        assert_eq!(money(0.0, "USD"), "0 USD");
        assert_eq!(money(12.345, "USD"), "12.35 USD");
        assert_eq!(amount_text(0.012346), "0.01235");
        assert_eq!(amount_text(0.00012), "0.0001200");
    }
}
