//! `probity._probity`: the native half of the Python package `probity`
//! (crates/python/python/probity is the other half, and the API users
//! see). Its main function is [`run`]: the experiment's tables (read by the
//! engine's own configuration types, [`assemble`]), the Python validators
//! ([`validators`]) and system ([`system`]) in, the outcome out
//! ([`result`]). The run itself goes on with the GIL released, on a tokio
//! runtime shared by every run of the process. [`compare_results`] (Python's `compare`) hands two
//! results to core's comparison ([`compare`](mod@compare)).

mod assemble;
mod batch;
mod calls;
mod compare;
mod errors;
mod hosted;
mod inputs;
mod plan;
mod predicate;
mod result;
mod system;
mod thread_state;
mod validators;
mod variants;
mod workers;

use errors::Kind;
use inputs::PyInputs;
use probity_engine::config::ExperimentConfig;
use probity_engine::store::{Store, StoreLocation};
use probity_engine::{run_with, Control, Sink};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use system::PySystem;
use validators::PyValidator;
use workers::Workers;

/// The runtime every run of this process uses.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("probity-worker")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the runtime: {e}")))
}

/// A Python validator as the package passes it: `(column, name, message,
/// minimum_success_percentage, weight, arity, callable, coroutine,
/// timeout_s)`.
type ValidatorArg = (usize, String, String, f64, f64, usize, Py<PyAny>, bool, f64);

/// A Python function as the package passes it: `(name, runner,
/// coroutine)` ([`hosted`]).
type FunctionArg = (String, Py<PyAny>, bool);

/// An agent experiment's Python functions: the black-box agent, if it is
/// one, and the tools' `(tool_name, function)`.
type AgentArg = (Option<FunctionArg>, Vec<(String, FunctionArg)>);

/// `seconds` as a timeout: at least a millisecond, at most a day (what
/// the engine's `timeout_s` accepts; the engine refuses other values with
/// a message when it reads the table).
fn timeout(seconds: f64) -> Duration {
    Duration::from_secs_f64(if seconds.is_finite() {
        seconds.clamp(0.001, 86_400.0)
    } else {
        86_400.0
    })
}

/// Run an experiment; returns `(document_json, tensor_bytes)` (see
/// [`result`]).
///
/// * `spec`: the tables as JSON ([`assemble`]); `cwd`: what relative
///   paths resolve against; `origin`: the Python file that made the
///   experiment, which the engine's messages name.
/// * `system`: `(submit, fingerprint)` for a Python system ([`system`]), or
///   `None` to build the `system` table's provider.
/// * `validators`: the Python validators.
/// * `make_input(id, text, fields_json)`: the Python object an input is given
///   to Python code as.
/// * `store`: the run store: a SQLite file's path or a PostgreSQL URL
///   (`None`: memory only).
/// * `agent`: an agent experiment's Python functions (the black-box
///   agent's, the tools'), for the `python` entries of the spec's agent
///   tables ([`assemble`]).
///
/// Errors (`probity._errors`): `ConfigError` for a table or setting the
/// engine refuses (the message names it), `StoreLockedError` when another
/// process holds the store, `StoreError` for other store failures,
/// `RunError` when the run cannot complete; `KeyboardInterrupt` on Ctrl-C
/// (the run stops first; a stored run is kept, interrupted).
/// Where `store` is: a SQLite file's path or a PostgreSQL URL (a
/// mistyped URL is a `ConfigError` naming it, never a file named after it).
fn store_location(store: &str) -> PyResult<StoreLocation> {
    StoreLocation::parse(store).map_err(|e| errors::raise(Kind::Config, e))
}

#[pyfunction]
#[pyo3(signature = (spec, cwd, origin, system, validators, make_input, store=None, agent=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    spec: &str,
    cwd: PathBuf,
    origin: PathBuf,
    system: Option<(Py<PyAny>, String)>,
    validators: Vec<ValidatorArg>,
    make_input: Py<PyAny>,
    store: Option<String>,
    agent: Option<AgentArg>,
) -> PyResult<(String, Py<PyBytes>)> {
    let inputs = Arc::new(PyInputs::new(py, make_input));
    let workers = Workers::import(py)?;
    let stop = workers.stop.clone();
    let code = validators::validators(
        validators
            .into_iter()
            .map(
                |(column, name, message, msp, weight, arity, callable, coroutine, timeout_s)| {
                    PyValidator {
                        column,
                        name,
                        message,
                        minimum_success_percentage: msp,
                        weight,
                        arity,
                        callable,
                        coroutine,
                        timeout: timeout(timeout_s),
                    }
                },
            )
            .collect(),
        inputs.clone(),
        workers.clone(),
    );
    let store = store.as_deref().map(store_location).transpose()?;
    let mut config =
        assemble::config(spec, &cwd, code).map_err(|m| errors::raise(Kind::Config, m))?;
    let agent_name = match agent {
        Some(functions) => give_functions(&mut config, functions, &workers)?,
        None => None,
    };
    let mut experiment = config
        .experiment()
        .map_err(|e| errors::raise(Kind::Config, assemble::message(e)))?;
    // The engine's messages name the Python file, not a probity.toml.
    if let Some(source) = experiment.source.as_mut() {
        source.path = origin;
    }
    if let Some(name) = agent_name {
        // The run's system is the Python agent: its name is the
        // fingerprint (and label); it is never called as a provider.
        experiment.system = Arc::new(
            probity_engine::provider::FnProvider::new(|_| {
                Err(probity_engine::provider::ProviderError::Raised(
                    "a Python agent runs whole episodes, not single calls".into(),
                ))
            })
            .with_fingerprint(format!("python-agent|{name}")),
        );
    }
    if let Some((submit, fingerprint)) = system {
        experiment.system = Arc::new(PySystem {
            submit,
            inputs,
            fingerprint,
            workers,
        });
    }
    let rt = runtime()?;
    let (outcome, interrupted) = py.detach(|| {
        rt.block_on(async {
            let mut opened = match &store {
                Some(location) => Some(
                    Store::connect(location)
                        .map_err(|e| (errors::store_kind(&e), e.to_string()))?,
                ),
                None => None,
            };
            let mut interrupted = None;
            let outcome = {
                let sink = match opened.as_mut() {
                    Some(s) => Sink::Store(s),
                    None => Sink::Memory,
                };
                let (cancel, cancelled) = tokio::sync::watch::channel(false);
                let control = Control {
                    cancel: Some(cancelled),
                    ..Control::default()
                };
                let running = run_with(&experiment, sink, control);
                tokio::pin!(running);
                loop {
                    tokio::select! {
                        r = &mut running => break r,
                        _ = tokio::time::sleep(Duration::from_millis(100)), if interrupted.is_none() => {
                            // Ctrl-C reaches Python's handler; stop the run
                            // (it ends gracefully) and raise it afterwards.
                            if let Err(e) = Python::attach(|py| py.check_signals()) {
                                interrupted = Some(e);
                                let _ = cancel.send(true);
                                // Predicates being waited for are abandoned now.
                                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                }
            };
            let mut outcome = outcome.map_err(|e| (errors::run_kind(&e), e.to_string()))?;
            // A stored run's samples stay in the store; read them back so
            // the result (and its failure message) quotes outputs.
            if let (Some(s), Some(id)) = (&opened, outcome.run_id) {
                outcome.samples = s
                    .samples(id)
                    .map_err(|e| (errors::store_kind(&e), e.to_string()))?;
            }
            Ok::<_, (Kind, String)>((outcome, interrupted))
        })
    })
    .map_err(|(kind, message)| errors::raise(kind, message))?;
    if let Some(e) = interrupted {
        return Err(if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            e
        } else {
            PyKeyboardInterrupt::new_err(e.to_string())
        });
    }
    let doc = result::document(&outcome, &experiment.inputs).map_err(PyRuntimeError::new_err)?;
    let cells = PyBytes::new(py, &result::tensor_bytes(&outcome)).unbind();
    Ok((doc, cells))
}

/// Give the configuration's agent its Python functions; the agent's name
/// when it is one. A function for a table that does not name one is a
/// `ConfigError`.
fn give_functions(
    config: &mut probity_engine::config::Config,
    (agent, tools): AgentArg,
    workers: &Workers,
) -> PyResult<Option<String>> {
    let Some(current) = config.agent.as_deref() else {
        return Err(errors::raise(
            Kind::Config,
            "Python functions were given for an agent, but there is no [agent] table",
        ));
    };
    let mut a = current.clone();
    let agent_name = agent.as_ref().map(|(name, _, _)| name.clone());
    a.hosted.agent = agent.map(|(name, runner, co)| hosted::hosted(name, runner, co, workers));
    for (tool, (name, runner, co)) in tools {
        a.hosted
            .tools
            .insert(tool, hosted::hosted(name, runner, co, workers));
    }
    config.agent = Some(Arc::new(a));
    Ok(agent_name)
}

/// One result for [`compare_results`]: `(summary_json, input_ids, cells)`.
type ResultArg = (String, Vec<String>, Py<PyBytes>);

/// Compare result `baseline` (A) with `candidate` (B) (see
/// [`compare`](mod@compare)): core's comparison as JSON. `multiple`: `"holm"` or
/// `"none"`; `confidence`, `power`: the CLI's `--confidence` (default the
/// candidate's) and `--power` (default 0.8). A `ValueError` names a bad
/// argument or a result that is not one.
#[pyfunction]
#[pyo3(name = "compare", signature = (baseline, candidate, multiple="holm", confidence=None, power=None))]
fn compare_results(
    py: Python<'_>,
    baseline: ResultArg,
    candidate: ResultArg,
    multiple: &str,
    confidence: Option<f64>,
    power: Option<f64>,
) -> PyResult<String> {
    let multiple = compare::multiple_testing(multiple).ok_or_else(|| {
        PyValueError::new_err(format!(
            "compare: multiple must be \"holm\" or \"none\", got {multiple:?}"
        ))
    })?;
    if let Some(c) = confidence.filter(|c| !(*c > 0.0 && *c < 1.0)) {
        return Err(PyValueError::new_err(format!(
            "compare: confidence must lie strictly between 0 and 1, got {c}"
        )));
    }
    if let Some(p) = power.filter(|p| !(*p > 0.5 && *p < 1.0)) {
        return Err(PyValueError::new_err(format!(
            "compare: power must lie strictly between 0.5 and 1, got {p}"
        )));
    }
    fn side<'a>(py: Python<'a>, r: &'a ResultArg) -> compare::Side<'a> {
        compare::Side {
            summary: &r.0,
            input_ids: &r.1,
            cells: r.2.as_bytes(py),
        }
    }
    let settings = compare::Settings {
        multiple,
        confidence,
        power,
    };
    compare::compare(&side(py, &baseline), &side(py, &candidate), &settings)
        .map_err(PyValueError::new_err)
}

/// Run the `[[variant]]` file at `path` (see [`variants`](mod@variants)):
/// the matrix as JSON. `store`: a SQLite path or PostgreSQL URL (default:
/// the file's `[store]`, else `.probity/runs.db`); `names`: the variants
/// to run (all when empty). Errors as [`run`]'s; `KeyboardInterrupt` on
/// Ctrl-C (the variant being run stops first, kept interrupted).
#[pyfunction]
#[pyo3(signature = (path, store=None, names=Vec::new(), all_pairs=false, resume=false, sequential=false))]
fn run_variants(
    py: Python<'_>,
    path: PathBuf,
    store: Option<String>,
    names: Vec<String>,
    all_pairs: bool,
    resume: bool,
    sequential: bool,
) -> PyResult<String> {
    let store = store.as_deref().map(store_location).transpose()?;
    let rt = runtime()?;
    let (cancel, cancelled) = tokio::sync::watch::channel(false);
    let mut interrupted = None;
    let asked = variants::Asked {
        path: &path,
        store,
        names: &names,
        all_pairs,
        resume,
        sequential,
    };
    let doc = py.detach(|| {
        rt.block_on(async {
            let running = variants::matrix(asked, cancelled);
            tokio::pin!(running);
            loop {
                tokio::select! {
                    r = &mut running => break r,
                    _ = tokio::time::sleep(Duration::from_millis(100)), if interrupted.is_none() => {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            interrupted = Some(e);
                            let _ = cancel.send(true);
                        }
                    }
                }
            }
        })
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    doc.map_err(|(kind, message)| errors::raise(kind, message))
}

/// Why `value`, given as `field`, is not a valid count of `what`
/// (`"outputs_per_input"` or `"concurrency"`): the engine's one rule and
/// wording for every door ([`bounds::count`]); `None` when it is valid.
#[pyfunction]
fn count_error(field: &str, value: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<String>> {
    use probity_engine::bounds;
    let most = match what {
        "outputs_per_input" => bounds::MAX_OUTPUTS_PER_INPUT,
        "concurrency" => bounds::MAX_CONCURRENCY,
        other => return Err(PyValueError::new_err(format!("no bound for {other:?}"))),
    };
    let shown = value.str()?.to_string();
    let v = value.extract::<u64>().ok();
    Ok(bounds::count(field, v, &shown, most).err())
}

#[pymodule]
fn _probity(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(plan::retry_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compare_results, m)?)?;
    m.add_function(wrap_pyfunction!(run_variants, m)?)?;
    m.add_function(wrap_pyfunction!(count_error, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_TIMEOUT_S", ExperimentConfig::default().timeout_s)?;
    Ok(())
}
