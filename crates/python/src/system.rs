//! A Python callable as the system under test: a [`Provider`].
//!
//! The package's `_system.Caller` does the Python side: `submit(input,
//! messages, repetition, attempt, done)` (`messages`: the conversation
//! whole in OpenAI's chat shape, as JSON text) starts the call — a coroutine on
//! one asyncio loop in a background thread, or a plain function on a
//! daemon thread (`probity._workers`) — and calls `done` with `(True,
//! output)` or `(False, "Type: message\nTraceback …")` when it finishes. Here the GIL is held only to submit and to read the result; the
//! call itself is awaited without a thread, through a done-callback and a
//! oneshot channel, so many calls run at once. The run's timeout
//! (`timeout_s`) drops a call still waited for: the Python call is then
//! abandoned (cancelled, or interrupted in its thread), and a thread that
//! cannot be interrupted is a daemon that never delays the exit.

use crate::inputs::PyInputs;
use crate::workers::{answer, done_callback, Answer, Pending, Workers};
use probity_engine::provider::{Completion, Provider, ProviderError, Request};
use pyo3::prelude::*;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The system under test, in Python.
pub struct PySystem {
    /// `submit(input, messages, repetition, attempt, done) -> handle`.
    pub submit: Py<PyAny>,
    pub inputs: Arc<PyInputs>,
    /// Part of the cache key: the callable's qualified name.
    pub fingerprint: String,
    pub workers: Workers,
}

/// The output in a call's outcome: a `str`, or why there is none.
fn read(outcome: &Bound<'_, PyAny>) -> Answer {
    match outcome.extract::<(bool, Bound<'_, PyAny>)>() {
        Ok((true, value)) => match value.extract::<String>() {
            Ok(text) => Ok(text),
            // A str that is not valid Unicode text (a lone surrogate, as
            // from a bad decode with errors="surrogateescape").
            Err(e) if value.is_instance_of::<pyo3::types::PyString>() => Err(format!(
                "UnicodeEncodeError: the system returned a str that is not valid text: {e}"
            )),
            Err(_) => Err(format!(
                "TypeError: the system returned {}, expected str",
                value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| "?".into())
            )),
        },
        Ok((false, message)) => Err(message.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

impl PySystem {
    /// Start the call; the answer arrives on the returned channel.
    fn start(&self, request: &Request) -> PyResult<(oneshot::Receiver<Answer>, Pending)> {
        crate::thread_state::keep();
        Python::attach(|py| {
            let input = self.inputs.get(py, &request.input)?;
            // The conversation whole, in OpenAI's chat shape, as JSON text
            // (`json.loads` on the Python side makes it dicts and lists).
            let messages = probity_core::conversation::to_openai(&request.messages).to_string();
            let (done, rx) = done_callback(py, read)?;
            let handle = self.submit.bind(py).call1((
                input,
                messages,
                request.repetition,
                request.attempt,
                done,
            ))?;
            let pending = Pending::new(handle.unbind(), self.workers.abandon.clone());
            Ok((rx, pending))
        })
    }
}

#[async_trait::async_trait]
impl Provider for PySystem {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        // Waiting for the GIL may take a while (Python threads busy): not
        // on an async worker.
        let (rx, pending) = probity_engine::checks::blocking(|| self.start(request))
            .map_err(|e| ProviderError::Raised(e.to_string()))?;
        let text = answer(rx, pending).await.map_err(ProviderError::Raised)?;
        Ok(Completion {
            text,
            input_tokens: None,
            output_tokens: None,
        })
    }

    fn fingerprint(&self) -> String {
        format!("python|{}", self.fingerprint)
    }
}
