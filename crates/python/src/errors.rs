//! The engine's errors as the package's exception classes
//! (`probity._errors`: `ConfigError`, `StoreError`, `StoreLockedError`,
//! `RunError`), each with the engine's own message.

use probity_engine::store::StoreError;
use probity_engine::RunError;
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

/// Another process holds the store: SQLite's busy or locked (the busy
/// timeout passed), or a live lease on the run.
fn is_locked(e: &StoreError) -> bool {
    match e {
        StoreError::Leased { .. } => true,
        StoreError::Sqlite { source, .. } => matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        ),
        _ => false,
    }
}

/// The kind of a store error.
pub fn store_kind(e: &StoreError) -> Kind {
    if is_locked(e) {
        Kind::StoreLocked
    } else if matches!(e, StoreError::BadUrl { .. }) {
        Kind::Config
    } else {
        Kind::Store
    }
}

/// The kind of a run's error: a configuration the run refuses, the store,
/// or a run that could not complete.
pub fn run_kind(e: &RunError) -> Kind {
    match e {
        RunError::Config(_) => Kind::Config,
        RunError::Store(s) => store_kind(s),
        RunError::Aborted(_) | RunError::NothingToResume => Kind::Run,
    }
}
