//! The engine's errors as the package's exception classes
//! (`probity._errors`: `ConfigError`, `StoreError`, `StoreLockedError`,
//! `RunError`), each with the engine's own message.

use probity_engine::store::StoreError;
use probity_engine::{ErrorClass, RunError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// Which class of `probity._errors` an error is raised as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Config,
    Store,
    StoreLocked,
    Run,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Config => "ConfigError",
            Kind::Store => "StoreError",
            Kind::StoreLocked => "StoreLockedError",
            Kind::Run => "RunError",
        }
    }
}

/// A Python error of `kind` carrying `message`. Should the package's module
/// be missing (a broken install), a `RuntimeError` with the message.
pub fn raise(kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let class = py
            .import("probity._errors")
            .and_then(|m| m.getattr(kind.class()))
            .and_then(|c| Ok(c.cast_into::<PyType>()?));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

/// The class of an engine error as the package raises it: one table for
/// the CLI's exit codes and these classes ([`ErrorClass`]).
fn kind_of(class: ErrorClass) -> Kind {
    match class {
        ErrorClass::Configuration => Kind::Config,
        ErrorClass::Held => Kind::StoreLocked,
        ErrorClass::Store => Kind::Store,
        ErrorClass::Incomplete => Kind::Run,
    }
}

/// The kind of a store error.
pub fn store_kind(e: &StoreError) -> Kind {
    kind_of(ErrorClass::of_store(e))
}

/// The kind of a run's error.
pub fn run_kind(e: &RunError) -> Kind {
    kind_of(e.class())
}

/// The kind of a variants run's error.
pub fn variants_kind(e: &probity_engine::variants::VariantsError) -> Kind {
    kind_of(e.class())
}
