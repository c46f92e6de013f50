//! What the native module uses of the package's `probity._workers`.

use pyo3::prelude::*;
use pyo3::types::PyBool;
use std::sync::Arc;

/// `submit(fn, args, coroutine, done) -> handle` and `abandon(handle)`
/// (systems and `async def` predicates; `done(outcome)` is called when the
/// call finishes), `describe(exception)` and `settle(value)` for plain
/// predicates made on the caller threads ([`crate::calls`]), and
/// `CallAbandoned`, the exception raised in a call given up.
#[derive(Clone)]
pub struct Workers {
    pub submit: Arc<Py<PyAny>>,
    pub abandon: Arc<Py<PyAny>>,
    describe: Arc<Py<PyAny>>,
    settle: Arc<Py<PyAny>>,
    pub abandoned: Arc<Py<PyAny>>,
    /// Set when the run is interrupted (Ctrl-C): a predicate being waited
    /// for is abandoned at once, not at its timeout.
    pub stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Workers {
    pub fn import(py: Python<'_>) -> PyResult<Self> {
        let m = py.import("probity._workers")?;
        let get =
            |name: &str| -> PyResult<Arc<Py<PyAny>>> { Ok(Arc::new(m.getattr(name)?.unbind())) };
        Ok(Workers {
            submit: get("submit")?,
            abandon: get("abandon")?,
            describe: get("describe")?,
            settle: get("settle")?,
            abandoned: get("CallAbandoned")?,
            stop: Arc::default(),
        })
    }

    /// `"Type: message"` then the traceback's innermost frames.
    pub fn describe(&self, py: Python<'_>, e: PyErr) -> String {
        let fallback = e.to_string();
        // `into_value` keeps the traceback on the exception.
        self.describe
            .call1(py, (e.into_value(py),))
            .and_then(|d| d.extract::<String>(py))
            .unwrap_or(fallback)
    }

    /// A predicate's value, awaited on the package's loop if it is
    /// awaitable (a plain function that returned a coroutine). A `bool`
    /// is returned as it is, without a call.
    pub fn settle<'py>(
        &self,
        py: Python<'py>,
        value: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if value.cast::<PyBool>().is_ok() {
            return Ok(value);
        }
        self.settle.bind(py).call1((value,))
    }
}
