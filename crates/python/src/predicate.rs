//! One Python predicate, `lambda o: …` or `lambda i, o: …` (the paper's
//! §2.1): how it is called and what its value means. The verdict must be a
//! `bool` (or numpy's): anything else, `None` included, is an Error naming
//! the type, never a truthiness guess; an exception is an Error with its
//! type, message and traceback. Errors' reasons read after "validator
//! `name` ".

use crate::inputs::PyInputs;
use crate::workers::{on_done, Workers};
use probity_core::{Input, Verdict};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// A predicate and what calling it needs.
pub struct Predicate {
    pub callable: Py<PyAny>,
    /// 1: `f(output)`; 2: `f(input, output)`.
    pub arity: usize,
    /// An `async def`: run on the package's event loop.
    pub coroutine: bool,
    /// How long one call may take.
    pub timeout: Duration,
    pub inputs: Arc<PyInputs>,
    pub workers: Workers,
}

impl Predicate {
    /// The reason of a call abandoned after its timeout.
    pub fn timed_out(&self) -> String {
        format!(
            "did not return within {:.3} s (timeout_s); the call was abandoned",
            self.timeout.as_secs_f64()
        )
    }

    /// The arguments: `(output,)`, or `(input, output)` when given the
    /// input.
    fn args<'py>(
        &self,
        py: Python<'py>,
        input: Option<&Input>,
        output: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        match input {
            Some(input) => PyTuple::new(
                py,
                [
                    self.inputs.get(py, input)?,
                    output.into_pyobject(py)?.into_any(),
                ],
            ),
            None => PyTuple::new(py, [output]),
        }
    }

    /// Call a plain predicate on this thread, the GIL held. `input` is
    /// needed when the arity is 2.
    pub fn call(&self, py: Python<'_>, input: Option<&Input>, output: &str) -> Verdict {
        let input = if self.arity == 2 { input } else { None };
        let args = match self.args(py, input, output) {
            Ok(a) => a,
            Err(e) => return Verdict::error(format!("could not be called: {e}")),
        };
        let outcome = self
            .callable
            .bind(py)
            .call1(args)
            .and_then(|value| self.workers.settle(py, value));
        match outcome {
            Ok(value) => verdict(&value),
            Err(e) => Verdict::error(format!("raised {}", self.workers.describe(py, e))),
        }
    }

    /// An `async def` predicate: submitted to the package's event loop and
    /// waited for here, without the GIL, for at most the timeout; then
    /// cancelled.
    pub fn on_the_loop(&self, input: &Input, output: &str) -> Verdict {
        crate::thread_state::keep();
        let (tx, rx) = mpsc::sync_channel::<Verdict>(1);
        let input = (self.arity == 2).then_some(input);
        let started = Python::attach(|py| self.start(py, input, output, tx));
        let handle = match started {
            Ok(h) => h,
            Err(e) => return Verdict::error(format!("could not be called: {e}")),
        };
        match rx.recv_timeout(self.timeout) {
            Ok(v) => v,
            Err(_) => {
                Python::attach(|py| {
                    // Nothing more to do if abandoning fails: the call is
                    // already given up.
                    let _ = self.workers.abandon.call1(py, (handle,));
                });
                Verdict::error(self.timed_out())
            }
        }
    }

    /// Submit the coroutine; its verdict arrives on `tx`. Returns the
    /// handle `abandon` takes.
    fn start(
        &self,
        py: Python<'_>,
        input: Option<&Input>,
        output: &str,
        tx: mpsc::SyncSender<Verdict>,
    ) -> PyResult<Py<PyAny>> {
        let args = self.args(py, input, output)?;
        let done = on_done(py, read, move |verdict| {
            // Nobody listens after a timeout.
            let _ = tx.try_send(verdict);
        })?;
        self.workers
            .submit
            .call1(py, (self.callable.clone_ref(py), args, true, done))
    }
}

/// The verdict in a coroutine's outcome: `(True, value)` with `value` a
/// bool, or `(False, "Type: message\nTraceback …")`.
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
