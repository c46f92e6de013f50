//! Verifier- and validator-driven retry (paper §4.1, §4.2): the guard
//! around a provider, and the policy it follows.

pub(crate) mod exchange;
pub(crate) mod guard;
pub(crate) mod policy;
