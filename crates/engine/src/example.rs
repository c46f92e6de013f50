//! The example that `probity init` writes: the paper's two validators (§2.1)
//! on the built-in simulator.

/// `probity.toml`.
pub const CONFIG: &str = include_str!("example/probity.toml");
/// `inputs.jsonl`, twenty questions, half of them thanks.
pub const INPUTS: &str = include_str!("example/inputs.jsonl");
