"""The front door: an :class:`Experiment` (paper §2.2: N inputs × M
outputs × K checks of one system) and its :meth:`Experiment.run`."""

import json
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _probity
from ._input import Input
from ._result import Result
from ._system import Caller
from ._validator import Validator

PathLike = Union[str, "os.PathLike[str]"]


def _inputs(inputs: Any) -> Dict[str, Any]:
    """The inputs as tables: ``{"inputs": [...]}`` or ``{"file": path}``."""
    if isinstance(inputs, (str, os.PathLike)):
        return {"file": os.fspath(inputs)}
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
        raise ValueError("inputs is empty: a reliability test needs at least one input")
    return {"inputs": rows}


def _tables(what: str, items: Any) -> List[Dict[str, Any]]:
    if isinstance(items, Mapping):
        items = [items]
    out = []
    for k, t in enumerate(items or ()):
        if not isinstance(t, Mapping):
            raise TypeError(f"{what}[{k}] must be a dict (a [[{what[:-1]}]] table), got {type(t).__name__}")
        out.append(dict(t))
    return out


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
    * ``validators``: :class:`Validator` objects (Python callables) and
      ``[[validator]]`` tables as dicts (built-in kinds, expressions,
      ``kind = "program"``), in column order.
    * ``verifiers``: ``[[verifier]]`` tables (LLM judges, §4); with a Python
      system each needs its own ``system`` table.
    * ``retry``: a ``[retry]`` table (§4.1, §4.2): the guarded system is
      measured.
    * ``prompt``: a ``[prompt]`` table (``system``, ``user`` templates).
    * any other keyword: a key of probity.toml's ``[experiment]`` table
      (``confidence``, ``interval``, ``strategy``, ``aggregate``,
      ``verdict``, ``errors``, ``timeout_s``, ``error_budget``, ...).

    Every table is read by the engine's own configuration types: a key it
    does not know is a ValueError listing the keys it accepts.
    """

    def __init__(
        self,
        name: str,
        system: Union[Callable[..., Any], Mapping[str, Any]],
        inputs: Union[Sequence[Union[Mapping[str, Any], str]], PathLike],
        validators: Iterable[Union[Validator, Mapping[str, Any]]] = (),
        *,
        verifiers: Iterable[Mapping[str, Any]] = (),
        retry: Optional[Mapping[str, Any]] = None,
        outputs_per_input: int = 10,
        prompt: Optional[Mapping[str, Any]] = None,
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
        if isinstance(outputs_per_input, bool) or not isinstance(outputs_per_input, int):
            raise TypeError(f"outputs_per_input must be an int, got {outputs_per_input!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
        if retry is not None and not isinstance(retry, Mapping):
            raise TypeError(f"retry must be a dict (a [retry] table), got {type(retry).__name__}")
        if prompt is not None and not isinstance(prompt, Mapping):
            raise TypeError(f"prompt must be a dict (a [prompt] table), got {type(prompt).__name__}")
        self.name = name
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
        self.verifiers = _tables("verifiers", verifiers)
        if callable(system):
            for k, v in enumerate(self.verifiers):
                if "system" not in v:
                    raise ValueError(
                        f"verifiers[{k}] ({v.get('name')!r}) needs its own 'system' table "
                        "(the judge's provider) when the system is a Python callable"
                    )
        self.retry = dict(retry) if retry is not None else None
        self.prompt = dict(prompt) if prompt is not None else None
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
        described["validators"] = [
            v._describe() if isinstance(v, Validator) else v for v in self.validators
        ]
        if callable(self.system):
            described["system"] = {"python": Caller(self.system, 1).fingerprint}
        spec["text"] = json.dumps(described, indent=2, default=repr)
        return spec

    def run(self, store: Optional[PathLike] = None) -> Result:
        """Run the experiment and return its :class:`Result`. With
        ``store``, the run is written to that SQLite run store (created if
        needed; ``.probity/runs.db`` is the CLI's default), so ``probity
        runs``, ``report`` and ``compare`` read it; without, it is kept in
        memory only. The GIL is released while the run goes on; Ctrl-C
        stops it (KeyboardInterrupt)."""
        spec = self._spec()
        try:
            text = json.dumps(spec)
        except (TypeError, ValueError) as e:
            raise TypeError(f"the experiment's tables must hold JSON values: {e}") from None
        python_validators = []
        column = 0
        for v in self.validators:
            if isinstance(v, Validator):
                python_validators.append(
                    (column, v.name, v.message, v.minimum_success_percentage, v.weight, v.arity, v.check)
                )
            column += 1
        caller = Caller(self.system, self.concurrency) if callable(self.system) else None
        if store is not None:
            store = os.fspath(store)
            parent = os.path.dirname(os.path.abspath(store))
            os.makedirs(parent, exist_ok=True)
        try:
            doc, cells = _probity.run(
                text,
                os.getcwd(),
                (caller.submit, caller.fingerprint) if caller else None,
                python_validators,
                Input._from_json,
                store,
            )
        finally:
            if caller is not None:
                caller.close()
        return Result(json.loads(doc), cells)


def run(experiment: Experiment, store: Optional[PathLike] = None) -> Result:
    """``experiment.run(store)``."""
    return experiment.run(store)
