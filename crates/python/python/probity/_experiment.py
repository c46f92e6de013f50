"""The front door: an :class:`Experiment` (paper §2.2: N inputs × M
outputs × K checks of one system) and its :meth:`Experiment.run`."""

import json
import math
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _probity
from ._errors import BrokenCheckError, ConfigError, ErrorBudgetExceededError, SystemUnreachableError
from ._input import Input
from ._result import Result
from ._system import Caller, _arity, fingerprint
from ._tables import Prompt, Retry, Verifier, table
from ._validator import Validator

PathLike = Union[str, "os.PathLike[str]"]
#: What a system may be: a callable (sync or async) or a provider table.
System = Union[Callable[..., Any], Mapping[str, Any]]
#: An input: its text, or a table of fields (``text``, ``id``, ...).
InputRow = Union[str, Mapping[str, Any]]


# The engine's bound on M (probity_engine::config::bounds).


def _non_finite(value: Any, path: str = "") -> Optional[str]:
    """``path = value`` of the first NaN or infinite float in ``value``
    (nested dicts and lists), or None: JSON has no such number, and the
    engine would see a parse error instead of the key."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} = {value}"
    if isinstance(value, Mapping):
        for k, v in value.items():
            found = _non_finite(v, f"{path}.{k}" if path else str(k))
            if found is not None:
                return found
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _non_finite(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _inputs(inputs: Any) -> Dict[str, Any]:
    """The inputs as tables: ``{"inputs": [...]}`` or ``{"file": path}``."""
    if isinstance(inputs, (str, os.PathLike)):
        path = os.fspath(inputs)
        if not str(path).lower().endswith((".jsonl", ".json", ".csv")):
            raise ValueError(
                f"inputs = {str(path)!r} is not a .jsonl, .json or .csv file's path; "
                f"inputs given inline are a list: [{str(path)!r}]"
            )
        return {"file": path}
    if isinstance(inputs, Mapping) or not isinstance(inputs, Iterable):
        raise TypeError(
            "inputs must be a list of dicts (input fields: text, id, ...) or of str, "
            f"or the path of a JSONL or CSV file; got {type(inputs).__name__}"
        )
    rows = []
    for k, row in enumerate(inputs):
        if isinstance(row, str):
            rows.append({"text": row})
        elif isinstance(row, Mapping):
            rows.append(dict(row))
        else:
            raise TypeError(f"inputs[{k}] must be a dict or a str, got {type(row).__name__}")
    if not rows:
        raise ConfigError("inputs is empty: a reliability test needs at least one input")
    return {"inputs": rows}


def _verifiers(items: Any) -> List[Dict[str, Any]]:
    if isinstance(items, (Mapping, Verifier)):
        items = [items]
    out = []
    for k, t in enumerate(items or ()):
        if not isinstance(t, (Mapping, Verifier)):
            raise TypeError(
                f"verifiers[{k}] must be a probity.Verifier or a dict (a [[verifier]] table), "
                f"got {type(t).__name__}"
            )
        out.append(table(f"verifiers[{k}]", t))
    return out


def _origin() -> str:
    """The file of the code that made the experiment (outside probity):
    what the engine's messages name."""
    frame = sys._getframe(1)
    here = os.path.dirname(os.path.abspath(__file__))
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_code.co_filename if frame is not None else "<python>"


_HALTS = {
    "broken_checks": BrokenCheckError,
    "first_calls_failed": SystemUnreachableError,
    "error_budget": ErrorBudgetExceededError,
}


class Experiment:
    """A reliability test (paper §2.2): ``system`` sampled
    ``outputs_per_input`` times (M) for each of the ``inputs`` (N), every
    output checked by every validator and verifier (K).

    * ``system``: a Python callable ``system(input)`` (or ``system(input,
      messages)``, the chat messages rendered from ``prompt``, feedback
      included on a retry) returning the output as a str — a plain function
      runs in a thread pool of ``concurrency`` threads, an ``async def`` on
      one asyncio loop; an exception is a failed call with its message as
      the cause. Or a provider table as in probity.toml's ``[system]``:
      ``{"provider": "sim"}``, ``{"provider": "openai", "model": ...}``.
    * ``inputs``: a list of dicts (fields; ``text`` is what the default
      prompt sends, ``id`` names it) or of str, or a JSONL/CSV file's path.
    * ``validators``: :class:`Validator` objects (Python predicates, also
      made by :func:`probity.validator`) and ``[[validator]]`` tables as
      dicts (built-in kinds, expressions, ``kind = "program"``), in column
      order.
    * ``verifiers``: :class:`Verifier` objects or ``[[verifier]]`` tables
      (LLM judges, §4); with a Python system each needs its own ``system``.
    * ``retry``: a :class:`Retry` or ``[retry]`` table (§4.1, §4.2): the
      guarded system is measured.
    * ``prompt``: a :class:`Prompt` or ``[prompt]`` table (``system``,
      ``user`` templates).
    * ``concurrency``: calls in flight at once.
    * any other keyword: a key of probity.toml's ``[experiment]`` table
      (``confidence``, ``interval``, ``strategy``, ``aggregate``,
      ``verdict``, ``errors``, ``timeout_s``, ``error_budget``, ...).
      ``timeout_s`` (default 60) bounds every call of the system and every
      call of a Python predicate without a timeout of its own: a call past
      it is an Error and the run goes on.

    Every table is read by the engine's own configuration types: a key it
    does not know is a :class:`probity.ConfigError` (a ``ValueError``)
    listing the keys it accepts.
    """

    def __init__(
        self,
        name: str,
        system: System,
        inputs: Union[Sequence[InputRow], PathLike],
        validators: Iterable[Union[Validator, Mapping[str, Any]]] = (),
        *,
        verifiers: Iterable[Union[Verifier, Mapping[str, Any]]] = (),
        retry: Optional[Union[Retry, Mapping[str, Any]]] = None,
        outputs_per_input: int = 10,
        prompt: Optional[Union[Prompt, Mapping[str, Any]]] = None,
        concurrency: int = 16,
        **experiment: Any,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"Experiment: name must be a non-empty str, got {name!r}")
        if not (callable(system) or isinstance(system, Mapping)):
            raise TypeError(
                "system must be a callable (system(input) -> str, sync or async) or a "
                f"provider table such as {{'provider': 'sim'}}; got {type(system).__name__}"
            )
        if callable(system):
            _arity(system)  # a signature that cannot take the input is refused now
        if isinstance(outputs_per_input, bool) or not isinstance(outputs_per_input, int):
            raise TypeError(f"outputs_per_input must be an int, got {outputs_per_input!r}")
        # The engine's one rule and wording for a count, whichever door.
        problem = _probity.count_error("outputs_per_input", outputs_per_input, "outputs_per_input")
        if problem is not None:
            raise ValueError(problem)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise TypeError(f"concurrency must be an int, got {concurrency!r}")
        problem = _probity.count_error("concurrency", concurrency, "concurrency")
        if problem is not None:
            raise ValueError(problem)
        self.name = name
        self._origin = _origin()
        self.system = system
        self._inputs = _inputs(inputs)
        self.validators: List[Union[Validator, Dict[str, Any]]] = []
        for k, v in enumerate(validators):
            if isinstance(v, Validator):
                self.validators.append(v)
            elif isinstance(v, Mapping):
                self.validators.append(dict(v))
            else:
                raise TypeError(
                    f"validators[{k}] must be a probity.Validator or a dict (a [[validator]] "
                    f"table), got {type(v).__name__}"
                )
        self.verifiers = _verifiers(verifiers)
        if callable(system):
            for k, v in enumerate(self.verifiers):
                if "system" not in v:
                    raise ValueError(
                        f"verifiers[{k}] ({v.get('name')!r}) needs its own 'system' table "
                        "(the judge's provider) when the system is a Python callable"
                    )
        self.retry = table("retry", retry) if retry is not None else None
        self.prompt = table("prompt", prompt) if prompt is not None else None
        self.outputs_per_input = outputs_per_input
        self.concurrency = concurrency
        self.experiment = dict(experiment)

    def _spec(self) -> Dict[str, Any]:
        table = dict(self.experiment)
        table["outputs_per_input"] = self.outputs_per_input
        table["concurrency"] = self.concurrency
        if "file" in self._inputs:
            table["inputs"] = self._inputs["file"]
        spec: Dict[str, Any] = {
            "name": self.name,
            "system": None if callable(self.system) else dict(self.system),
            "prompt": self.prompt,
            "experiment": table,
            "validators": [v for v in self.validators if not isinstance(v, Validator)],
            "verifiers": self.verifiers,
            "retry": self.retry,
            "inputs": self._inputs.get("inputs", []),
        }
        described = dict(spec)
        described["validators"] = [v.to_dict() if isinstance(v, Validator) else v for v in self.validators]
        if callable(self.system):
            described["system"] = {"python": fingerprint(self.system)}
        where = _non_finite(spec)
        if where is not None:
            raise ConfigError(f"{where}: not a finite number (every number here must be one)")
        spec["text"] = json.dumps(described, indent=2, default=repr)
        return spec

    def _functions(self) -> Optional[Tuple[Any, List[Tuple[str, Tuple[str, Any, bool]]]]]:
        """An agent experiment's Python functions (``probity.AgentExperiment``)."""
        return None

    def run(self, store: Optional[PathLike] = None) -> Result:
        """Run the experiment and return its :class:`Result`.

        With ``store``, the run is written to that run store, so
        ``probity runs``, ``report`` and ``compare`` read it: a SQLite
        file's path (created if needed; ``.probity/runs.db`` is the CLI's
        default) or a team's PostgreSQL database,
        ``postgres://user@host/db`` (which must exist; its tables are
        created; the password from the URL or ``PGPASSWORD``, never
        printed). Without, it is kept in memory only. The GIL is released while the run goes on;
        Ctrl-C stops it (KeyboardInterrupt).

        Raises (every one a :class:`probity.ProbityError`, with the engine's
        message): :class:`ConfigError` for a table or setting the engine
        refuses; :class:`BrokenCheckError` when a check could not judge any
        output; :class:`SystemUnreachableError` when the first calls all
        failed with one cause; :class:`ErrorBudgetExceededError` when more
        calls failed than ``error_budget`` allows (these three carry the
        run as ``.result``); :class:`StoreLockedError` when another process
        holds the store; :class:`StoreError`, :class:`RunError` otherwise.
        A run that merely fails its checks returns normally:
        :func:`assert_reliable` turns that into a test failure.
        """
        # Out of pytest's tracebacks: they quote a frame's arguments, and
        # ``store`` may be a URL with a password.
        __tracebackhide__ = True
        spec = self._spec()
        try:
            text = json.dumps(spec)
        except (TypeError, ValueError) as e:
            raise TypeError(f"the experiment's tables must hold JSON values: {e}") from None
        default_timeout = self.experiment.get("timeout_s", _probity.DEFAULT_TIMEOUT_S)
        if isinstance(default_timeout, bool) or not isinstance(default_timeout, (int, float)):
            raise ConfigError(f"experiment: timeout_s must be a number of seconds, got {default_timeout!r}")
        python_validators: List[Tuple[int, str, str, float, float, int, Any, bool, float]] = []
        for column, v in enumerate(self.validators):
            if isinstance(v, Validator):
                python_validators.append(
                    (
                        column,
                        v.name,
                        v.message,
                        v.minimum_success_percentage,
                        v.weight,
                        v.arity,
                        v.check,
                        v.is_async,
                        float(v.timeout_s if v.timeout_s is not None else default_timeout),
                    )
                )
        caller = Caller(self.system) if callable(self.system) else None
        path: Optional[str] = None
        if store is not None:
            # The engine reads the text (a mistyped URL is refused, not
            # made a file) and creates a file's folder.
            path = os.fspath(store)
            if not path.strip():
                raise ValueError("store must be a SQLite file's path or a postgres:// URL, not an empty string")
        doc, cells = _probity.run(
            text,
            os.getcwd(),
            self._origin,
            (caller.submit, caller.fingerprint) if caller else None,
            python_validators,
            Input._from_json,
            path,
            self._functions(),
        )
        result = Result(json.loads(doc), cells)
        if result.halt_kind is not None:
            raise _HALTS.get(result.halt_kind, SystemUnreachableError)(result.halt or "", result)
        if result.broken:
            lines = [f"  {name}: {reason}" for name, reason in result.broken]
            raise BrokenCheckError(
                ("a check" if len(lines) == 1 else "checks")
                + " could not judge any output, so the run gives no verdict about the system:\n"
                + "\n".join(lines),
                result,
            )
        return result


#: The type of the pytest plugin's ``probity_run`` fixture.
RunFixture = Callable[[Experiment], Result]


def run(experiment: Experiment, store: Optional[PathLike] = None) -> Result:
    """``experiment.run(store)``."""
    __tracebackhide__ = True  # ``store`` may hold a password
    return experiment.run(store)
