//! A provider table with its price: `price = { input_per_million = 2.5,
//! output_per_million = 10.0, currency = "USD" }` beside the provider's
//! own keys (`[system]`, `[verifier.system]`; docs/config.md, Cost). There
//! is no built-in price list to go stale: a provider without a price is
//! reported in tokens, never as free.
//!
//! The price is taken out of the table before the provider reads the rest
//! (whose unknown keys stay errors), and checked here, the one place a
//! price from a file is read ([`probity_core::cost::Price::validate`]).

use probity_core::cost::Price;
use serde::{Deserialize, Serialize};

/// A provider configuration `T` and the price of its tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Priced<T> {
    pub provider: T,
    pub price: Option<Price>,
}

impl<T> std::ops::Deref for Priced<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.provider
    }
}

impl<T> std::ops::DerefMut for Priced<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.provider
    }
}

impl<T> From<T> for Priced<T> {
    fn from(provider: T) -> Self {
        Priced {
            provider,
            price: None,
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Priced<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
        let price = match v.as_object_mut().and_then(|m| m.remove("price")) {
            None => None,
            Some(p) => {
                let price =
                    Price::deserialize(p).map_err(|e| D::Error::custom(format!("price: {e}")))?;
                price.validate().map_err(D::Error::custom)?;
                Some(price)
            }
        };
        let provider = T::deserialize(v).map_err(D::Error::custom)?;
        Ok(Priced { provider, price })
    }
}

impl<T: Serialize> Serialize for Priced<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut v = serde_json::to_value(&self.provider).map_err(S::Error::custom)?;
        if let (Some(m), Some(p)) = (v.as_object_mut(), &self.price) {
            m.insert(
                "price".into(),
                serde_json::to_value(p).map_err(S::Error::custom)?,
            );
        }
        v.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::config::ProviderConfig;

    fn read(text: &str) -> Result<Priced<ProviderConfig>, String> {
        #[derive(Deserialize)]
        struct F {
            system: Priced<ProviderConfig>,
        }
        toml::from_str::<F>(text)
            .map(|f| f.system)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_price_is_read_beside_the_providers_keys() {
        let p = read(
            "[system]\nprovider = \"sim\"\nseed = 3\nprice = { input_per_million = 2.5, output_per_million = 10 }\n",
        )
        .unwrap();
        assert_eq!(
            p.price,
            Some(Price {
                input_per_million: 2.5,
                output_per_million: 10.0,
                currency: "USD".into()
            })
        );
        assert_eq!(p.kind(), "sim");
        // Written back, it reads the same.
        let again: serde_json::Value = serde_json::to_value(&p).unwrap();
        assert_eq!(again["price"]["input_per_million"], 2.5);
        assert!(read("[system]\nprovider = \"sim\"\n")
            .unwrap()
            .price
            .is_none());
    }

    #[test]
    fn a_bad_price_names_its_field_and_line() {
        for (price, says) in [
            (
                "{ input_per_million = -1, output_per_million = 1 }",
                "price.input_per_million = -1",
            ),
            (
                "{ input_per_million = 1 }",
                "missing field `output_per_million`",
            ),
            (
                "{ input_per_million = 1, output_per_million = 1, per = 3 }",
                "unknown field `per`",
            ),
            (
                "{ input_per_million = \"2\", output_per_million = 1 }",
                "invalid type",
            ),
            (
                "{ input_per_million = 1, output_per_million = 1, currency = \"\" }",
                "price.currency",
            ),
        ] {
            let e = read(&format!(
                "name = \"x\"\n[system]\nprovider = \"sim\"\nprice = {price}\n"
            ))
            .unwrap_err();
            assert!(e.contains(says), "{price}: {e}");
            assert!(e.contains("line 2") || e.contains("line 4"), "{e}");
        }
    }
}
