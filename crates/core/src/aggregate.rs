//! Aggregation over validators (paper §3.3, §3.6.7). (TO BE IMPLEMENTED)
pub enum Aggregate { Mean, Weighted, Min }
pub struct AggregateResult;
