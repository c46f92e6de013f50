//! A Python callable as the system under test: a [`Provider`].
//!
//! The package's `_system.Caller` does the Python side: `submit(input,
//! messages, repetition, attempt)` starts the call — a coroutine on one
//! asyncio loop in a background thread, or a plain function in a thread
//! pool — and returns a `concurrent.futures.Future` whose result is
//! `(True, text)` or `(False, "ExceptionType: message")`. Here the GIL is
//! held only to submit and to read the result; the call itself is awaited
//! without a thread, through a done-callback and a oneshot channel, so many
//! calls run at once.

use crate::inputs::PyInputs;
use probity_engine::provider::{Completion, Provider, ProviderError, Request};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyTuple};
use std::sync::{Arc, Mutex};

/// The system under test, in Python.
pub struct PySystem {
    /// `submit(input, messages, repetition, attempt) -> Future`.
    pub submit: Py<PyAny>,
    pub inputs: Arc<PyInputs>,
    /// Part of the cache key: the callable's qualified name.
    pub fingerprint: String,
}

type Answer = Result<String, String>;

fn read(fut: &Bound<'_, PyAny>) -> Answer {
    let outcome = fut
        .call_method0("result")
        .and_then(|r| r.extract::<(bool, String)>());
    match outcome {
        Ok((true, text)) => Ok(text),
        Ok((false, message)) => Err(message),
        Err(e) => Err(e.to_string()),
    }
}

impl PySystem {
    /// Start the call; the answer arrives on the returned channel.
    fn start(&self, request: &Request) -> PyResult<tokio::sync::oneshot::Receiver<Answer>> {
        let (tx, rx) = tokio::sync::oneshot::channel::<Answer>();
        crate::thread_state::keep();
        Python::attach(|py| {
            let input = self.inputs.get(py, &request.input)?;
            let messages: Vec<(String, String)> = request
                .messages
                .iter()
                .map(|m| {
                    let role = serde_json::to_value(m.role)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    (role, m.content.clone())
                })
                .collect();
            let fut = self.submit.bind(py).call1((
                input,
                messages,
                request.repetition,
                request.attempt,
            ))?;
            let tx = Mutex::new(Some(tx));
            let done = PyCFunction::new_closure(
                py,
                None,
                None,
                move |args: &Bound<'_, PyTuple>, _kwargs| -> PyResult<()> {
                    let answer = read(&args.get_item(0)?);
                    if let Some(tx) = tx.lock().ok().and_then(|mut t| t.take()) {
                        // The run may have given up on this call (timeout):
                        // nobody to tell.
                        let _ = tx.send(answer);
                    }
                    Ok(())
                },
            )?;
            fut.call_method1("add_done_callback", (done,))?;
            Ok(rx)
        })
    }
}

#[async_trait::async_trait]
impl Provider for PySystem {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        // Waiting for the GIL may take a while (Python threads busy): not
        // on an async worker.
        let rx = probity_engine::check::blocking(|| self.start(request))
            .map_err(|e| ProviderError::Raised(e.to_string()))?;
        match rx.await {
            Ok(Ok(text)) => Ok(Completion {
                text,
                input_tokens: None,
                output_tokens: None,
            }),
            Ok(Err(message)) => Err(ProviderError::Raised(message)),
            Err(_) => Err(ProviderError::Raised(
                "the call ended without an answer".into(),
            )),
        }
    }

    fn fingerprint(&self) -> String {
        format!("python|{}", self.fingerprint)
    }
}
