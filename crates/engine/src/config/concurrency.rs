//! `[experiment] concurrency` (and `--concurrency`): a number of calls in
//! flight at once, or `"auto"` — probity finds the upstream's useful
//! concurrency itself ([`crate::provider::load::UpstreamLoad::auto`],
//! docs/providers.md, Test a model on your machine).

use crate::bounds;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Calls in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// This many, from 1 to [`bounds::MAX_CONCURRENCY`].
    Fixed(usize),
    /// Found while the run goes: from one call at a time, doubled while
    /// the throughput grows with it, up to [`Concurrency::AUTO_MOST`].
    Auto,
}

impl Default for Concurrency {
    /// 16 calls at once.
    fn default() -> Self {
        Concurrency::Fixed(16)
    }
}

impl Concurrency {
    /// The most calls `auto` sends at once.
    pub const AUTO_MOST: usize = 32;

    /// The workers a run starts: the fixed number, or `auto`'s ceiling.
    pub fn workers(self) -> usize {
        match self {
            Concurrency::Fixed(n) => n,
            Concurrency::Auto => Concurrency::AUTO_MOST,
        }
    }

    pub(crate) fn is_auto(self) -> bool {
        self == Concurrency::Auto
    }

    /// Within bounds: a fixed number from 1 to [`bounds::MAX_CONCURRENCY`].
    pub fn check(self) -> Result<(), String> {
        match self {
            Concurrency::Fixed(n) => {
                bounds::within("concurrency", n, bounds::MAX_CONCURRENCY).map(|_| ())
            }
            Concurrency::Auto => Ok(()),
        }
    }
}

impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Concurrency::Fixed(n) => write!(f, "{n}"),
            Concurrency::Auto => f.write_str("auto"),
        }
    }
}

impl std::str::FromStr for Concurrency {
    type Err = String;

    /// `auto`, or a number from 1 to [`bounds::MAX_CONCURRENCY`]
    /// (`--concurrency`).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(Concurrency::Auto);
        }
        let n = s.trim().parse::<u64>().ok();
        let n = bounds::count("concurrency", n, &s, bounds::MAX_CONCURRENCY)
            .map_err(|e| format!("{e} (or \"auto\")"))?;
        Ok(Concurrency::Fixed(n))
    }
}

impl Serialize for Concurrency {
    /// A number as a number (so a file's hash is what it was), `auto` as
    /// the string.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Concurrency::Fixed(n) => s.serialize_u64(*n as u64),
            Concurrency::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Concurrency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(i64),
            Word(String),
        }
        let expected = || "concurrency must be a number of calls at once or \"auto\"".to_string();
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(expected()))? {
            Raw::Count(n) => bounds::count(
                "concurrency",
                u64::try_from(n).ok(),
                &n,
                bounds::MAX_CONCURRENCY,
            )
            .map(Concurrency::Fixed)
            .map_err(serde::de::Error::custom),
            Raw::Word(w) if w == "auto" => Ok(Concurrency::Auto),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "{}, not \"{}\"",
                expected(),
                w.escape_debug()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct E {
        concurrency: Concurrency,
    }

    #[test]
    fn a_number_or_auto_and_nothing_else() {
        let read = |t: &str| toml::from_str::<E>(t).map(|e| e.concurrency);
        assert_eq!(read("concurrency = 4").unwrap(), Concurrency::Fixed(4));
        assert_eq!(read("concurrency = \"auto\"").unwrap(), Concurrency::Auto);
        let e = read("concurrency = \"fast\"").err().unwrap().to_string();
        assert!(e.contains("\"auto\"") && e.contains("fast"), "{e}");
        assert!(Concurrency::Fixed(0)
            .check()
            .unwrap_err()
            .contains("from 1"));
        let e = read("concurrency = -3").err().unwrap().to_string();
        assert!(e.contains("from 1 to 10,000, not -3"), "{e}");
        assert_eq!("auto".parse(), Ok(Concurrency::Auto));
        assert_eq!("8".parse(), Ok(Concurrency::Fixed(8)));
        assert!("0".parse::<Concurrency>().unwrap_err().contains("auto"));
        // A number is written back as a number: a file's hash keeps.
        let back = toml::to_string(&E {
            concurrency: Concurrency::Fixed(16),
        })
        .unwrap();
        assert_eq!(back.trim(), "concurrency = 16");
        assert_eq!(Concurrency::Auto.workers(), Concurrency::AUTO_MOST);
    }
}
