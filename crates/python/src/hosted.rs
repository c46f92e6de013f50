//! Python functions as the engine's hosted tools and black-box agents
//! ([`probity_engine::tools::hosted`]): the package's `_agents` wraps
//! each user function as `runner(request_json: str) -> str` (a tool's
//! answer, or the agent's transcript, as JSON text; `async def` when the
//! user's function is), and this side calls it through
//! `probity._workers.submit` — a plain function on a daemon thread, a
//! coroutine on the package's asyncio loop — awaiting its `done`
//! callback without a thread. An exception the runner lets through is
//! the call's failure (`"Type: message"` and the traceback); a call the
//! engine stops waiting for (its timeout) is abandoned.

use crate::workers::{answer, done_callback, Answer, Pending, Workers};
use probity_engine::tools::hosted::{Hosted, HostedFn};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::oneshot;

/// A runner of the package's `_agents`.
pub struct PyHosted {
    runner: Py<PyAny>,
    coroutine: bool,
    workers: Workers,
}

/// `(name, runner, coroutine)` as the package passes a function:
/// `HostedFn` named `name`.
pub fn hosted(name: String, runner: Py<PyAny>, coroutine: bool, workers: &Workers) -> HostedFn {
    HostedFn {
        name,
        function: Arc::new(PyHosted {
            runner,
            coroutine,
            workers: workers.clone(),
        }),
    }
}

/// The text in a runner's outcome `(ok, value)`.
fn read(outcome: &Bound<'_, PyAny>) -> Answer {
    match outcome.extract::<(bool, Bound<'_, PyAny>)>() {
        Ok((true, value)) => value
            .extract::<String>()
            .map_err(|e| format!("the function's answer is not text: {e}")),
        Ok((false, message)) => Err(message.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

impl PyHosted {
    /// Start the call; the answer arrives on the returned channel.
    fn start(&self, request: &Value) -> PyResult<(oneshot::Receiver<Answer>, Pending)> {
        crate::thread_state::keep();
        Python::attach(|py| {
            let (done, rx) = done_callback(py, read)?;
            let args = PyTuple::new(py, [request.to_string()])?;
            let handle = self.workers.submit.bind(py).call1((
                self.runner.bind(py),
                args,
                self.coroutine,
                done,
            ))?;
            let pending = Pending::new(handle.unbind(), self.workers.abandon.clone());
            Ok((rx, pending))
        })
    }
}

#[async_trait::async_trait]
impl Hosted for PyHosted {
    async fn call(&self, request: Value) -> Result<String, String> {
        // Waiting for the GIL may take a while: not on an async worker.
        let (rx, pending) =
            probity_engine::checks::blocking(|| self.start(&request)).map_err(|e| e.to_string())?;
        answer(rx, pending).await
    }
}
