//! `kind = "program"` validators: a check written in any language, run as
//! a long-running process that speaks JSON lines (docs/validators.md,
//! "Programs").
//!
//! * [`spec`]: the `[[validator]]` table with `kind = "program"`
//!   ([`ProgramSpec`]) and how it becomes a [`probity_core::Validator`].
//! * [`pool`]: the processes themselves ([`ProgramPool`]): a small pool,
//!   one request in flight per process, a timeout per answer, and every
//!   failure (a crash, a line that is not a verdict, a timeout) an Error
//!   cell naming the program.

pub(crate) mod pool;
pub(crate) mod spec;

pub use pool::{ProgramPool, ProgramSettings};
pub use spec::{ProgramKind, ProgramSpec};
