//! The reliability tensor (paper §3.6.1). (TO BE IMPLEMENTED)
pub use crate::stats::Counts;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell { Missing = 0, Pass = 1, Fail = 2, Error = 3 }
pub struct ReliabilityTensor;
