"""Agents from Python (docs/agents.md, "Python tools and agents"): tools
implemented by Python functions (:class:`Tool`, :func:`tool`), a black-box
agent written as a Python function, and :class:`AgentExperiment`, which
runs N tasks × M episodes of an agent and judges each episode's transcript
with the agent checks (``[[agent_check]]`` tables).

The engine calls a tool with the JSON arguments the agent gave and the
episode's state, and a black-box agent with the task's scenario; here each
user function is wrapped as a *runner*: ``runner(request_json) ->
answer_json`` (an ``async def`` runner for an ``async def`` function),
speaking the engine's command protocols (crates/engine/src/agent/hosted.rs).
"""

import enum
import inspect
import json
import typing
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from . import _workers
from ._experiment import Experiment, InputRow, PathLike
from ._input import Input
from ._system import fingerprint
from ._tables import Verifier
from ._validator import Validator

F = TypeVar("F", bound=Callable[..., Any])

#: What a tool does when its function raises: ``"answer"`` — the agent
#: reads ``"Type: message"`` as the tool's result, marked as an error, and
#: the episode goes on (the agent's business, as a real API's error
#: answer is); ``"end"`` — the episode ends as a tool error, counted apart
#: from the agent's failures (a broken tool, not the agent's fault).
ON_ERROR = ("answer", "end")

#: The parameter a tool function names to receive the episode's state.
STATE = "state"

_SCALARS: Dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(annotation: Any, where: str) -> Dict[str, Any]:
    """The JSON schema of a parameter's annotation: ``str``, ``int``,
    ``float``, ``bool``, ``list``/``List[X]``, ``dict``/``Dict[str, X]``,
    ``Optional[X]``, ``Literal[...]`` and ``Enum`` subclasses of str or int;
    no annotation (or ``Any``) accepts any value. Anything else is a
    ``TypeError`` asking for ``parameters``."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [m.value for m in annotation]
        if all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            return {"enum": values}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is list or origin in (list, Sequence):
        return {"type": "array", "items": _schema_of(args[0], where)} if args else {"type": "array"}
    if annotation is dict or origin in (dict, Mapping):
        if args and args[0] is not str:
            raise TypeError(f"{where}: a JSON object's keys are strings, not {args[0]!r}")
        return {"type": "object", "additionalProperties": _schema_of(args[1], where)} if args else {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _schema_of(rest[0], where)
        return {"anyOf": [_schema_of(a, where) for a in rest]}
    raise TypeError(
        f"{where}: no JSON schema for the annotation {annotation!r}; give the tool's "
        "`parameters` (a JSON schema) yourself"
    )


def schema_from_signature(fn: Callable[..., Any], name: str) -> Dict[str, Any]:
    """The object schema of ``fn``'s keyword arguments (every parameter
    but ``state``): each parameter's annotation as :func:`_schema_of`
    reads it; those without a default are ``required``. ``*args`` cannot
    be given by name, so a function taking it is refused."""
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (TypeError, ValueError, NameError) as e:
        raise TypeError(f"tool {name!r}: cannot read its signature ({e}); give `parameters`") from None
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for p in sig.parameters.values():
        if p.name == STATE:
            continue
        if p.kind == p.VAR_POSITIONAL or p.kind == p.POSITIONAL_ONLY:
            raise TypeError(f"tool {name!r}: its arguments come by name; `{p}` cannot be given so")
        if p.kind == p.VAR_KEYWORD:
            continue
        properties[p.name] = _schema_of(p.annotation, f"tool {name!r}, parameter {p.name!r}")
        if p.default is p.empty:
            required.append(p.name)
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _description(fn: Callable[..., Any]) -> str:
    """The docstring's first paragraph, on one line."""
    doc = inspect.getdoc(fn) or ""
    return " ".join(doc.split("\n\n")[0].split())


class Tool:
    """A tool the agent may call, implemented by a Python function.

    * ``fn``: called with the agent's arguments as keyword arguments; if it
      has a parameter named ``state``, that is the episode's state (the
      ``environment``'s JSON document, a fresh copy per episode; ``None``
      without one), which it may change in place — kept when it returns,
      dropped when it raises. It returns the result: a ``str`` as it is,
      any other JSON value as JSON text. ``async def`` runs on probity's
      event loop.
    * ``name`` (default: the function's), ``description`` (default: its
      docstring's first paragraph), ``parameters``: the JSON schema of the
      arguments (default: from the signature's annotations, see
      :func:`schema_from_signature`).
    * ``on_error``: see :data:`ON_ERROR` (default ``"answer"``).
    * ``timeout_s``: how long one call may take (default 60); past it the
      call is abandoned and the episode ends as a tool error.

    The exception's text reaches the agent and the stored transcript as
    untrusted text, never an instruction to probity.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Mapping[str, Any]] = None,
        on_error: str = "answer",
        timeout_s: Optional[float] = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"Tool: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name if name is not None else getattr(fn, "__name__", "")
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Tool: name must be a non-empty str, got {self.name!r}")
        self.description = description if description is not None else _description(fn)
        if on_error not in ON_ERROR:
            raise ValueError(f"tool {self.name!r}: on_error must be one of {ON_ERROR}, got {on_error!r}")
        self.on_error = on_error
        if timeout_s is not None and (
            isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= 86_400
        ):
            raise ValueError(f"tool {self.name!r}: timeout_s must be a positive number of seconds, at most a day")
        self.timeout_s = timeout_s
        self.parameters = dict(parameters) if parameters is not None else schema_from_signature(fn, self.name)
        try:
            self._takes_state = STATE in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            self._takes_state = False
        self.is_async = _workers.is_async(fn)

    def table(self) -> Dict[str, Any]:
        """The ``[[tool]]`` table the engine reads."""
        t: Dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "python": fingerprint(self.fn),
        }
        if self.timeout_s is not None:
            t["timeout_s"] = float(self.timeout_s)
        return t

    def _call(self, request: str) -> Tuple[Dict[str, Any], Any, Dict[str, Any]]:
        """The request's arguments, the state, and the keyword arguments."""
        r = json.loads(request)
        arguments = r.get("arguments")
        state = r.get("state")
        kwargs = dict(arguments) if isinstance(arguments, dict) else {}
        if self._takes_state:
            kwargs[STATE] = state
        return r, state, kwargs

    def _answer(self, value: Any, state: Any) -> str:
        try:
            return json.dumps({"result": value, "is_error": False, "state": state})
        except (TypeError, ValueError):
            raise TypeError(
                f"tool {self.name!r} returned {type(value).__name__} (or changed the state so), which is not JSON"
            ) from None

    def _failed(self, e: Exception) -> str:
        if self.on_error == "end":
            raise e
        text = str(e)
        return json.dumps({"result": f"{type(e).__name__}: {text}" if text else type(e).__name__, "is_error": True})

    def runner(self) -> Callable[[str], Any]:
        """``runner(request_json) -> answer_json`` for the engine."""
        if self.is_async:

            async def run_async(request: str) -> str:
                _, state, kwargs = self._call(request)
                try:
                    value = await self.fn(**kwargs)
                except Exception as e:
                    return self._failed(e)
                return self._answer(value, state)

            return run_async

        def run(request: str) -> str:
            _, state, kwargs = self._call(request)
            try:
                value = self.fn(**kwargs)
            except Exception as e:
                return self._failed(e)
            return self._answer(value, state)

        return run

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@overload
def tool(fn: F) -> Tool: ...
@overload
def tool(
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    on_error: str = "answer",
    timeout_s: Optional[float] = None,
) -> Callable[[F], Tool]: ...
def tool(
    fn: Optional[F] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    on_error: str = "answer",
    timeout_s: Optional[float] = None,
) -> Union[Tool, Callable[[F], Tool]]:
    """Make a :class:`Tool` of a function: ``@probity.tool`` or
    ``@probity.tool(on_error="end", ...)``."""

    def make(f: F) -> Tool:
        return Tool(f, name=name, description=description, parameters=parameters, on_error=on_error, timeout_s=timeout_s)

    return make(fn) if fn is not None else make


@dataclass(frozen=True)
class Task:
    """One episode of a task, as a black-box agent is given it.

    ``input`` is the task (a :class:`probity.Input`: ``.id``, ``.fields``);
    ``repetition`` which of its M episodes this is (from 0); the rest is
    its scenario with the experiment's defaults filled in: ``messages``
    the conversation it starts with (OpenAI's chat shape), ``user_turns``
    a scripted user's messages, ``instructions`` and ``known_info`` for a
    simulated user, ``max_turns`` and the ``stop`` signal."""

    input: Input
    repetition: int
    messages: List[Dict[str, Any]] = field(default_factory=list)
    user_turns: List[str] = field(default_factory=list)
    instructions: Optional[str] = None
    known_info: Optional[str] = None
    max_turns: int = 20
    stop: str = "###STOP###"

    @property
    def id(self) -> str:
        return self.input.id

    @classmethod
    def _from_request(cls, request: str) -> "Task":
        r = json.loads(request)
        fields = r.get("input") or {}
        text = fields.get("text") if isinstance(fields.get("text"), str) else ""
        s = r.get("scenario") or {}
        return cls(
            input=Input(str(r.get("id", "")), text, fields),
            repetition=int(r.get("repetition", 0)),
            messages=list(s.get("messages") or []),
            user_turns=[str(t) for t in s.get("user_turns") or []],
            instructions=s.get("instructions"),
            known_info=s.get("known_info"),
            max_turns=int(s.get("max_turns") or 20),
            stop=str(s.get("stop") or "###STOP###"),
        )


#: What a black-box agent returns: ``{"messages": [...], "final_state":
#: ..., "stopped": bool}`` (the last two optional) or the messages alone.
Transcript = Union[Dict[str, Any], List[Dict[str, Any]]]


def _transcript_json(value: Any, name: str) -> str:
    if isinstance(value, list):
        value = {"messages": value}
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise TypeError(
            f"the agent {name} returned {type(value).__name__}; expected its transcript: "
            '{"messages": [...], "final_state": ..., "stopped": bool} or a list of messages'
        )
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"the agent {name} returned a transcript that is not JSON: {e}") from None


def agent_runner(fn: Callable[[Task], Any]) -> Callable[[str], Any]:
    """``runner(request_json) -> transcript_json`` for a black-box agent
    ``fn(task) -> transcript`` (sync or ``async def``)."""
    name = fingerprint(fn)
    if _workers.is_async(fn):

        async def run_async(request: str) -> str:
            return _transcript_json(await fn(Task._from_request(request)), name)

        return run_async

    def run(request: str) -> str:
        return _transcript_json(fn(Task._from_request(request)), name)

    return run


def _tools(items: Iterable[Union[Tool, Callable[..., Any], Mapping[str, Any]]]) -> List[Union[Tool, Dict[str, Any]]]:
    out: List[Union[Tool, Dict[str, Any]]] = []
    for k, t in enumerate(items):
        if isinstance(t, Tool):
            out.append(t)
        elif isinstance(t, Mapping):
            out.append(dict(t))
        elif callable(t):
            out.append(Tool(t))
        else:
            raise TypeError(
                f"tools[{k}] must be a probity.Tool, a function or a dict (a [[tool]] table), got {type(t).__name__}"
            )
    names = [t.name if isinstance(t, Tool) else t.get("name") for t in out]
    for n in names:
        if n is not None and names.count(n) > 1:
            raise ValueError(f"two tools are named {n!r}")
    return out


def _tables(name: str, items: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for k, t in enumerate(items):
        if not isinstance(t, Mapping):
            raise TypeError(f"{name}[{k}] must be a dict, got {type(t).__name__}")
        out.append(_without_none(dict(t)))
    return out


def _without_none(value: Any) -> Any:
    """``value`` without ``None`` entries (TOML, which the engine reads
    the agent tables as, has no null)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


class AgentExperiment(Experiment):
    """A reliability test of an agent (docs/agents.md): each of the
    ``outputs_per_input`` (M) outputs of a task is one whole episode, from
    a fresh state, judged by the agent ``checks`` (the tensor's first
    columns), then by any ``validators`` over the agent's last reply.

    * ``agent``: an ``[agent]`` table — a provider table for a model with
      tools (``{"provider": "openai", "model": ..., "system": ...}``) — or a
      Python function ``agent(task: probity.Task) -> transcript`` (sync or
      ``async def``) that runs the episode itself with its own tools (an
      OpenAI Agents SDK agent: :func:`probity.agents_sdk.agent`). A
      function that raises ends the episode as an error of the agent's
      harness, counted apart.
    * ``tasks``: the inputs (dicts with a ``scenario``, see
      docs/agents.md), or a JSONL file's path.
    * ``checks``: ``[[agent_check]]`` tables.
    * ``tools``: :class:`Tool` objects (or plain functions, made tools),
      and ``[[tool]]`` tables (mock, command, MCP, builtin) as dicts.
    * ``user``: a ``[user]`` table (default: the scripted user);
      ``user_checks``: ``[[user_check]]`` tables.
    * ``state``: the environment's initial state (a JSON document).
    * ``max_turns``, ``stop``, ``agent_timeout_s``: the ``[agent]``
      table's (a Python agent's call may last ``agent_timeout_s``, default
      300).
    * everything else as :class:`probity.Experiment` (``validators``,
      ``verifiers``, ``outputs_per_input``, ``concurrency``, any key of
      ``[experiment]`` such as ``pass_k``).
    """

    def __init__(
        self,
        name: str,
        agent: Union[Mapping[str, Any], Callable[[Task], Any]],
        tasks: Union[Sequence[InputRow], PathLike],
        checks: Iterable[Mapping[str, Any]] = (),
        *,
        tools: Iterable[Union[Tool, Callable[..., Any], Mapping[str, Any]]] = (),
        user: Optional[Mapping[str, Any]] = None,
        user_checks: Iterable[Mapping[str, Any]] = (),
        state: Any = None,
        max_turns: Optional[int] = None,
        stop: Optional[str] = None,
        agent_timeout_s: Optional[float] = None,
        validators: Iterable[Union[Validator, Mapping[str, Any]]] = (),
        verifiers: Iterable[Union[Verifier, Mapping[str, Any]]] = (),
        outputs_per_input: int = 10,
        concurrency: int = 16,
        **experiment: Any,
    ) -> None:
        if not (callable(agent) or isinstance(agent, Mapping)):
            raise TypeError(
                "agent must be an [agent] table (a dict: a provider with tools) or a function "
                f"agent(task) -> transcript; got {type(agent).__name__}"
            )
        judge = experiment.pop("system", None)
        super().__init__(
            name,
            judge if judge is not None else {"provider": "sim"},
            tasks,
            validators,
            verifiers=verifiers,
            outputs_per_input=outputs_per_input,
            concurrency=concurrency,
            **experiment,
        )
        self._judge = judge
        self.agent = agent
        table: Dict[str, Any] = {} if callable(agent) else _without_none(dict(agent))
        if callable(agent):
            table["python"] = fingerprint(agent)
            if agent_timeout_s is not None:
                table["timeout_s"] = float(agent_timeout_s)
        elif agent_timeout_s is not None:
            raise ValueError("agent_timeout_s is for an agent written as a Python function")
        if max_turns is not None:
            table["max_turns"] = max_turns
        if stop is not None:
            table["stop"] = stop
        self.tools = _tools(tools)
        self.checks = _tables("checks", checks)
        self.user_checks = _tables("user_checks", user_checks)
        self._agent_tables: Dict[str, Any] = {"agent": table, "tool": [t.table() if isinstance(t, Tool) else _without_none(t) for t in self.tools]}
        if user is not None:
            self._agent_tables["user"] = _without_none(dict(user))
        if state is not None:
            self._agent_tables["environment"] = {"state": _without_none(state)}
        if self.checks:
            self._agent_tables["agent_check"] = self.checks
        if self.user_checks:
            self._agent_tables["user_check"] = self.user_checks

    def _spec(self) -> Dict[str, Any]:
        spec = super()._spec()
        described = json.loads(spec["text"])
        if self._judge is None:
            spec["system"] = described["system"] = None
        spec["agent"] = self._agent_tables
        described["agent"] = self._agent_tables
        spec["text"] = json.dumps(described, indent=2, default=repr)
        return spec

    def _functions(self) -> Optional[Tuple[Any, List[Tuple[str, Tuple[str, Any, bool]]]]]:
        agent = None
        if callable(self.agent):
            agent = (fingerprint(self.agent), agent_runner(self.agent), _workers.is_async(self.agent))
        tools = [(t.name, (fingerprint(t.fn), t.runner(), t.is_async)) for t in self.tools if isinstance(t, Tool)]
        return (agent, tools)
