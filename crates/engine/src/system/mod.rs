//! The system a configuration names — under test, as a judge or as a
//! simulated user: which provider (`[system] provider = …`), its settings,
//! how it is built ([`ProviderConfig::build`]) and how it is labelled in
//! reports ([`label`]). It sits above `provider/` and `sim/`, whose
//! providers it builds, and below everything that builds one.

pub(crate) mod config;
pub mod label;
pub(crate) mod price;

pub use config::{ProviderConfig, ProviderKind};
pub use price::Priced;
