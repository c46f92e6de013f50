//! A run: the experiment (N inputs × M outputs × K checks, paper §2.2),
//! sampled and checked by the runner (in rounds when sequential), recorded
//! in the store, and what is done with stored runs afterwards (revalidated,
//! read back, compared, exported as inputs).

pub(crate) mod claims;
pub mod compare;
pub(crate) mod definitions;
pub(crate) mod experiment;
pub mod export;
pub(crate) mod finish;
pub mod live;
pub(crate) mod outcome;
pub(crate) mod recording;
pub mod revalidate;
pub(crate) mod rounds;
pub(crate) mod runner;
pub mod stored;
