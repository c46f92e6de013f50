//! What the native module uses of the package's `probity._workers`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCFunction, PyTuple};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

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

/// A call's answer: its text, or why there is none.
pub(crate) type Answer = Result<String, String>;

/// The `done(outcome)` callback a submitted call is given, and the channel
/// its answer arrives on: `read` turns the outcome into the answer. Only
/// the first call counts; the receiver may be gone (the run gave up on the
/// call at its timeout), and then nobody is told.
pub(crate) fn done_callback(
    py: Python<'_>,
    read: fn(&Bound<'_, PyAny>) -> Answer,
) -> PyResult<(Bound<'_, PyCFunction>, oneshot::Receiver<Answer>)> {
    let (tx, rx) = oneshot::channel::<Answer>();
    let done = on_done(py, read, move |answer| {
        let _ = tx.send(answer);
    })?;
    Ok((done, rx))
}

/// A `done(outcome)` callback for `submit` that hands `read(outcome)` to
/// `send`, once: a later call (there is none in `_workers`, but a callback
/// is Python's to call) is ignored.
pub(crate) fn on_done<T: 'static>(
    py: Python<'_>,
    read: fn(&Bound<'_, PyAny>) -> T,
    send: impl FnOnce(T) + Send + 'static,
) -> PyResult<Bound<'_, PyCFunction>> {
    let send = Mutex::new(Some(send));
    PyCFunction::new_closure(
        py,
        None,
        None,
        move |args: &Bound<'_, PyTuple>, _kwargs| -> PyResult<()> {
            let value = read(&args.get_item(0)?);
            if let Some(send) = send.lock().ok().and_then(|mut s| s.take()) {
                send(value);
            }
            Ok(())
        },
    )
}

/// The answer of a call submitted with [`done_callback`]'s callback, once
/// it came; the call is then no longer abandoned when `pending` drops.
pub(crate) async fn answer(rx: oneshot::Receiver<Answer>, pending: Pending) -> Answer {
    let answer = rx.await;
    pending.answered();
    answer.unwrap_or_else(|_| Err("the call ended without an answer".into()))
}

/// A submitted call (a system's, [`crate::system`], or a hosted
/// function's, [`crate::hosted`]): abandoned when dropped before its answer
/// arrived (the run's timeout, or the run stopped).
pub(crate) struct Pending {
    handle: Option<Py<PyAny>>,
    abandon: Arc<Py<PyAny>>,
}

impl Pending {
    /// The call `handle` (what `_workers.submit` returned), abandoned
    /// with `abandon` if dropped unanswered.
    pub(crate) fn new(handle: Py<PyAny>, abandon: Arc<Py<PyAny>>) -> Self {
        Pending {
            handle: Some(handle),
            abandon,
        }
    }

    pub(crate) fn answered(mut self) {
        self.handle = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(handle) = self.handle.take() else {
            return;
        };
        let abandon = self.abandon.clone();
        let go = move || {
            crate::thread_state::keep();
            Python::attach(|py| {
                // The call is given up either way.
                let _ = abandon.call1(py, (handle,));
            });
        };
        // Not on an async worker: the GIL may be busy.
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(go)),
            Err(_) => go(),
        }
    }
}
