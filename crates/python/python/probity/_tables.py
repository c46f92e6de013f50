"""The experiment's other tables as objects: :class:`Verifier` (an LLM
judge, paper §4), :class:`Retry` (the guard, §4.1–§4.2) and
:class:`Prompt`. Each is the probity.toml table of the same name
(docs/config.md): the engine reads it with the same code and refuses a
key it does not know, naming it."""

import os
from typing import Any, Dict, Mapping, Optional, Union


def _drop_none(table: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in table.items() if v is not None}


class Verifier:
    """An LLM judge (§4): a ``[[verifier]]`` table, one column after the
    validators.

    * ``name``, ``instructions``: the check's name and what the judge
      checks, in plain words.
    * ``message``: shown with a failing verdict.
    * ``minimum_success_percentage``, ``weight``: as a validator's.
    * ``system``: the judge's provider table (``{"provider": "openai",
      "model": ...}``, or ``{"provider": "sim", "false_pass": 0.05}`` for
      a simulated judge); required when the system under test is a Python
      callable.
    * ``calibration``: a labelled set — a JSON-lines file of ``{"input":
      ..., "output": ..., "label": "PASS" | "FAIL"}`` (docs/validators.md,
      *Verifiers whose errors are accounted for*). A relative path resolves
      against the working directory when :meth:`Experiment.run` is called,
      as the ``inputs`` file does (pass an absolute path, e.g.
      ``Path(__file__).parent / "labels.jsonl"``, to be independent of
      it). When the run begins the judge answers every labelled pair (the
      calls count as the verifier's); the check is then judged on its rate
      corrected for the judge's errors, and its
      :class:`~probity.CheckResult` has ``calibration`` (a
      :class:`~probity.Calibration`: ``corrected_rate``,
      ``corrected_interval``, ``sensitivity``, ``specificity`` with their
      intervals, ``judged_rate``), ``rate``/``interval`` corrected and
      ``judged_rate``/``judged_interval`` the judge's own. A missing or
      malformed file is a :class:`~probity.ConfigError` naming it (and the
      line at fault).
    * any other keyword: another key of the table (``structured``).
    """

    def __init__(
        self,
        name: str,
        instructions: str,
        *,
        message: Optional[str] = None,
        minimum_success_percentage: float = 1.0,
        weight: float = 1.0,
        system: Optional[Mapping[str, Any]] = None,
        calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
        **table: Any,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"Verifier: name must be a non-empty str, got {name!r}")
        if not isinstance(instructions, str):
            raise TypeError(f"Verifier {name!r}: instructions must be a str, got {instructions!r}")
        self.name = name
        self.instructions = instructions
        self.message = message
        self.minimum_success_percentage = minimum_success_percentage
        self.weight = weight
        self.system: Optional[Dict[str, Any]] = dict(system) if system is not None else None
        if calibration is not None and not isinstance(calibration, (str, os.PathLike)):
            raise TypeError(
                f"Verifier {name!r}: calibration must be the path of a labelled set (str or "
                f"os.PathLike), got {type(calibration).__name__}"
            )
        self.calibration: Optional[str] = os.fspath(calibration) if calibration is not None else None
        self.extra: Dict[str, Any] = dict(table)

    def to_dict(self) -> Dict[str, Any]:
        """The ``[[verifier]]`` table."""
        return _drop_none(
            {
                "name": self.name,
                "instructions": self.instructions,
                "message": self.message,
                "minimum_success_percentage": self.minimum_success_percentage,
                "weight": self.weight,
                "system": self.system,
                "calibration": self.calibration,
                **self.extra,
            }
        )

    def __repr__(self) -> str:
        return f"Verifier({self.name!r}, minimum_success_percentage={self.minimum_success_percentage})"


class Retry:
    """A retry policy (§4.1, §4.2): the run then measures the guarded
    system — up to ``attempts`` attempts per sample, retried while the
    checks ``on`` (``"validators"``, ``"verifiers"`` or ``"all"``) fail,
    the failure fed back when ``feedback`` (with ``feedback_template``, a
    minijinja template over ``input``, ``previous_output``, ``reasons``);
    ``attempt_timeout_s`` bounds one attempt, ``deadline_s`` all of them."""

    def __init__(
        self,
        attempts: int = 3,
        *,
        on: Optional[str] = None,
        feedback: Optional[bool] = None,
        feedback_template: Optional[str] = None,
        attempt_timeout_s: Optional[float] = None,
        deadline_s: Optional[float] = None,
    ) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError(f"Retry: attempts must be an int, got {attempts!r}")
        if attempts < 1:
            raise ValueError(f"Retry: attempts must be at least 1, got {attempts}")
        self.attempts = attempts
        self.on = on
        self.feedback = feedback
        self.feedback_template = feedback_template
        self.attempt_timeout_s = attempt_timeout_s
        self.deadline_s = deadline_s

    def to_dict(self) -> Dict[str, Any]:
        """The ``[retry]`` table."""
        return _drop_none(
            {
                "attempts": self.attempts,
                "on": self.on,
                "feedback": self.feedback,
                "feedback_template": self.feedback_template,
                "attempt_timeout_s": self.attempt_timeout_s,
                "deadline_s": self.deadline_s,
            }
        )

    def __repr__(self) -> str:
        return f"Retry({self.attempts}, on={self.on!r})"


class Prompt:
    """The chat messages the system is sent for an input: ``system`` and
    ``user`` minijinja templates over ``input`` (its fields, as
    ``input.question``; ``{{ input }}`` alone is its text, which is the
    default ``user``). An input with a ``messages`` field (a conversation
    in OpenAI's chat shape) is sent as that conversation, whole;
    ``conversation_system`` (``"if-none"``, ``"first"``, ``"never"``) and
    ``conversation_user`` (``"as-sent"``, ``"template"``) say what the
    templates add to it (docs/config.md)."""

    def __init__(
        self,
        user: Optional[str] = None,
        *,
        system: Optional[str] = None,
        conversation_system: Optional[str] = None,
        conversation_user: Optional[str] = None,
    ) -> None:
        self.user = user
        self.system = system
        self.conversation_system = conversation_system
        self.conversation_user = conversation_user

    def to_dict(self) -> Dict[str, Any]:
        """The ``[prompt]`` table."""
        return _drop_none(
            {
                "system": self.system,
                "user": self.user,
                "conversation_system": self.conversation_system,
                "conversation_user": self.conversation_user,
            }
        )

    def __repr__(self) -> str:
        return f"Prompt(user={self.user!r}, system={self.system!r})"


def table(what: str, value: Union[Verifier, Retry, Prompt, Mapping[str, Any]]) -> Dict[str, Any]:
    """An object's table, or a dict's copy; ``what`` names it in errors."""
    if isinstance(value, (Verifier, Retry, Prompt)):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{what} must be a probity object or a dict (a table), got {type(value).__name__}")
