//! The Python object each input is given to Python code as (made once per
//! input by the package's `Input` factory, a `str` of the input's text
//! with its id and fields), kept in a Python dict by input id.

use probity_core::Input;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Inputs as Python objects, made on first use.
pub struct PyInputs {
    /// `make(id: str, text: str, fields_json: str) -> probity.Input`.
    make: Py<PyAny>,
    /// id → object. A Python dict: its operations are atomic under the
    /// GIL, so no Rust lock is held while Python code runs.
    cache: Py<PyDict>,
}

impl PyInputs {
    pub fn new(py: Python<'_>, make: Py<PyAny>) -> Self {
        PyInputs {
            make,
            cache: PyDict::new(py).unbind(),
        }
    }

    /// The Python object for `input`.
    pub fn get<'py>(&self, py: Python<'py>, input: &Input) -> PyResult<Bound<'py, PyAny>> {
        let cache = self.cache.bind(py);
        if let Some(hit) = cache.get_item(&input.id)? {
            return Ok(hit);
        }
        let fields = serde_json::to_string(&input.fields)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        let made = self
            .make
            .bind(py)
            .call1((input.id.as_str(), input.as_text(), fields))?;
        cache.set_item(&input.id, &made)?;
        Ok(made)
    }
}
