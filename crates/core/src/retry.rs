//! Retry planning (paper §4.2). (TO BE IMPLEMENTED)
pub struct RetryPlan;
