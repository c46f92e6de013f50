//! Sentences and figures that every format says the same way, taken from
//! the documents: no markup, no escaping (each format escapes what it
//! takes from here for its medium).
//!
//! * [`run`]: a run's checks, aggregate and retry plan, its calls, the
//!   scope of its rates and the consistency of its checks;
//! * [`calibration`]: a calibrated verifier's judge and corrected rate;
//! * [`causes`]: errors apart from failures, with their causes;
//! * [`tensor`]: the order and counts of the tensor's heatmaps;
//! * [`guarded`]: the guarded system beside its prediction (§4.2);
//! * [`comparison`]: a comparison's changes in percentage points;
//! * [`sequential`]: a sequential run's stop and confidence sequences;
//! * [`live`]: a serve run's live rates, their sequences and alarms;
//! * [`variants`]: a variants run's matrix cells, differences and costs;
//! * [`cost`]: cost in money: a run's, its retries'.

pub mod calibration;
pub mod causes;
pub mod comparison;
pub mod cost;
pub mod guarded;
pub mod live;
pub mod run;
pub mod sequential;
pub mod tensor;
pub mod upstream;
pub mod variants;
