//! Python callables as validators: `lambda o: …` and `lambda i, o: …`
//! (the paper's §2.1), each a column of the tensor.
//!
//! A call goes to the package's workers (`probity._workers.submit`: a
//! daemon thread, or the asyncio loop for an `async def`) and is waited
//! for here without the GIL, for at most the check's timeout; a call that
//! takes longer is abandoned (`probity._workers.abandon`) and its cell is
//! an Error, so a predicate that loops forever costs one timeout, not the
//! run. The verdict must be a `bool` (or numpy's): anything else, `None`
//! included, is an Error cell naming the type, never a truthiness guess;
//! an exception is an Error cell with its type, message and traceback.

use crate::inputs::PyInputs;
use probity_core::{Input, Validator, Verdict};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCFunction, PyTuple};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One Python validator as the package hands it over.
pub struct PyValidator {
    /// The column among the configuration's validators.
    pub column: usize,
    pub name: String,
    pub message: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    /// 1: `f(output)`; 2: `f(input, output)`.
    pub arity: usize,
    pub callable: Py<PyAny>,
    /// An `async def`: run on the package's event loop.
    pub coroutine: bool,
    /// How long one call may take.
    pub timeout: Duration,
}

/// The package's `submit(fn, args, coroutine, done) -> handle` and
/// `abandon(handle)` (`probity._workers`); `done(outcome)` is called on
/// the worker when the call finishes.
#[derive(Clone)]
pub struct Workers {
    pub submit: Arc<Py<PyAny>>,
    pub abandon: Arc<Py<PyAny>>,
}

impl Workers {
    pub fn import(py: Python<'_>) -> PyResult<Self> {
        let m = py.import("probity._workers")?;
        Ok(Workers {
            submit: Arc::new(m.getattr("submit")?.unbind()),
            abandon: Arc::new(m.getattr("abandon")?.unbind()),
        })
    }
}

/// The validator calling `v.callable`.
pub fn validator(v: PyValidator, inputs: Arc<PyInputs>, workers: Workers) -> Validator {
    let PyValidator {
        name,
        message,
        minimum_success_percentage,
        weight,
        arity,
        callable,
        coroutine,
        timeout,
        ..
    } = v;
    let label = name.clone();
    let call = Call {
        callable,
        arity,
        coroutine,
        timeout,
        inputs,
        workers,
    };
    Validator::new(name)
        .message(message)
        .minimum_success_percentage(minimum_success_percentage)
        .weight(weight)
        .check_verdict(move |input: &Input, output: &str| call.verdict(&label, input, output))
}

/// What one validator needs to call its callable.
struct Call {
    callable: Py<PyAny>,
    arity: usize,
    coroutine: bool,
    timeout: Duration,
    inputs: Arc<PyInputs>,
    workers: Workers,
}

impl Call {
    fn verdict(&self, label: &str, input: &Input, output: &str) -> Verdict {
        crate::thread_state::keep();
        let (tx, rx) = mpsc::sync_channel::<Verdict>(1);
        let started = Python::attach(|py| self.start(py, input, output, tx));
        let handle = match started {
            Ok(h) => h,
            Err(e) => {
                return Verdict::error(format!("validator `{label}` could not be called: {e}"))
            }
        };
        match rx.recv_timeout(self.timeout) {
            Ok(Verdict::Error { reason }) => {
                Verdict::error(format!("validator `{label}` {reason}"))
            }
            Ok(v) => v,
            Err(_) => {
                Python::attach(|py| {
                    // Nothing more to do if abandoning fails: the call is
                    // already given up.
                    let _ = self.workers.abandon.call1(py, (handle,));
                });
                Verdict::error(format!(
                    "validator `{label}` did not return within {:.3} s (timeout_s); the call was abandoned",
                    self.timeout.as_secs_f64()
                ))
            }
        }
    }

    /// Submit the call; its verdict arrives on `tx`. Returns the handle
    /// `abandon` takes.
    fn start(
        &self,
        py: Python<'_>,
        input: &Input,
        output: &str,
        tx: mpsc::SyncSender<Verdict>,
    ) -> PyResult<Py<PyAny>> {
        let args = if self.arity == 2 {
            PyTuple::new(
                py,
                [
                    self.inputs.get(py, input)?,
                    output.into_pyobject(py)?.into_any(),
                ],
            )?
        } else {
            PyTuple::new(py, [output])?
        };
        let tx = Mutex::new(Some(tx));
        let done = PyCFunction::new_closure(
            py,
            None,
            None,
            move |args: &Bound<'_, PyTuple>, _kwargs| -> PyResult<()> {
                let verdict = read(&args.get_item(0)?);
                if let Some(tx) = tx.lock().ok().and_then(|mut t| t.take()) {
                    // Nobody listens after a timeout.
                    let _ = tx.try_send(verdict);
                }
                Ok(())
            },
        )?;
        self.workers.submit.call1(
            py,
            (self.callable.clone_ref(py), args, self.coroutine, done),
        )
    }
}

/// The verdict in a call's outcome: `(True, value)` with `value` a bool,
/// or an error (the reason reads after "validator `name` ").
fn read(outcome: &Bound<'_, PyAny>) -> Verdict {
    match outcome.extract::<(bool, Bound<'_, PyAny>)>() {
        Ok((true, value)) => verdict(&value),
        Ok((false, text)) => Verdict::error(format!("raised {text}")),
        Err(e) => Verdict::error(format!("raised {e}")),
    }
}

/// A predicate's value as a verdict: only `True`/`False` (and numpy's
/// `bool_`) decide; anything else says what it returned.
pub fn verdict(value: &Bound<'_, PyAny>) -> Verdict {
    if let Ok(b) = value.cast::<PyBool>() {
        return Verdict::from_bool(b.is_true());
    }
    let ty = value.get_type();
    let module = ty.module().map(|m| m.to_string()).unwrap_or_default();
    let name = ty
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    if module == "numpy" && (name == "bool_" || name == "bool") {
        if let Ok(b) = value.is_truthy() {
            return Verdict::from_bool(b);
        }
    }
    let shown = value
        .repr()
        .map(|r| truncate(&r.to_string(), 60))
        .unwrap_or_default();
    Verdict::error(format!(
        "returned {name} ({shown}), not a bool; it must return True or False"
    ))
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
