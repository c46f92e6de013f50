//! What judges an output: the validators and verifiers of a run in column
//! order (`check`), LLM judges (`verifier`, paper §4), `[[validator]]`
//! tables and external programs, templates in their settings (`templated`), what a judge is shown (`judge_prompt`), the keys that recognise a request
//! already answered, and judges' labelled sets (`labels`, `calibration`).

pub mod cache_key;
pub mod calibration;
pub(crate) mod check;
pub(crate) mod judge_prompt;
pub mod labels;
pub mod program;
pub mod templated;
pub(crate) mod validator_table;
pub mod verifier;

pub use check::{blocking, install_expression_clock, NOT_JUDGED};
