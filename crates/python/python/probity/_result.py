"""What a run returns: :class:`Result`, a check's :class:`CheckResult`
and each output's :class:`Sample`."""

import importlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

#: Tensor cell codes (core's): never filled, pass, fail, could not judge.
MISSING, PASS, FAIL, ERROR = 0, 1, 2, 3


def _tensor(cells: bytes, shape: Tuple[int, int, int]) -> Any:
    """A numpy array of uint8 when numpy is installed, else nested lists."""
    n, m, k = shape
    try:
        import numpy as np
    except ImportError:
        flat = list(cells)
        return [[flat[(i * m + j) * k : (i * m + j + 1) * k] for j in range(m)] for i in range(n)]
    return np.frombuffer(cells, dtype=np.uint8).reshape(shape).copy()


def _pandas() -> Any:
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas") from None


class CheckResult:
    """One check's numbers.

    * ``name``, ``message``, ``kind`` (``"validator"`` or ``"verifier"``),
      ``weight``.
    * ``rate``: its success rate over every output judged; ``n``: how many.
    * ``interval``: (lower, upper) at the run's confidence, clustered by
      input (outputs of one input are correlated).
    * ``minimum_success_percentage``: the threshold it is judged against;
      ``verdict``: ``"pass"``, ``"fail"`` or ``"inconclusive"``;
      ``established``: whether the sample size settled it.
    * ``summary``: the engine's whole record of it (breakdown, worst input,
      pass^k and pass@k), as the JSON report's numbers.
    """

    name: str
    message: str
    minimum_success_percentage: float
    weight: float
    kind: str
    rate: float
    interval: Tuple[float, float]
    n: int
    verdict: str
    established: bool
    summary: Dict[str, Any]

    def __init__(self, summary: Dict[str, Any]) -> None:
        info, rate, verdict = summary["info"], summary["rate"], summary["verdict"]
        self.summary = summary
        self.name = info["name"]
        self.message = info["message"]
        self.minimum_success_percentage = info["minimum_success_percentage"]
        self.weight = info["weight"]
        self.kind = str(info.get("kind", "")).lower()
        self.rate = rate["estimate"]
        self.interval = (rate["interval"]["lower"], rate["interval"]["upper"])
        self.n = rate["n"]
        self.verdict = str(verdict["decision"]).lower()
        self.established = bool(verdict["established"])

    @property
    def passed(self) -> bool:
        """Whether its verdict is a pass."""
        return self.verdict == "pass"

    def to_dict(self) -> Dict[str, Any]:
        """Its headline numbers as a flat dict (one row of
        :meth:`Result.to_pandas`)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "rate": self.rate,
            "lower": self.interval[0],
            "upper": self.interval[1],
            "n": self.n,
            "minimum_success_percentage": self.minimum_success_percentage,
            "verdict": self.verdict,
            "established": self.established,
            "weight": self.weight,
            "message": self.message,
        }

    def __repr__(self) -> str:
        lo, hi = self.interval
        return (
            f"<{self.verdict.upper()} {self.name} {self.rate:.1%} [{lo:.1%}, {hi:.1%}] "
            f">= {self.minimum_success_percentage:.0%} (n={self.n})>"
        )


class Sample:
    """One output: its input (``input_id``, ``input_index``), its
    ``repetition`` (j), the ``output`` (None when the call failed, with the
    failure in ``error``), its ``cells`` (one code per check: :data:`PASS`,
    :data:`FAIL`, :data:`ERROR`), the ``reasons`` ``(k, text)`` of its
    Error cells and of verifiers' verdicts, and ``latency_ms``."""

    input_id: str
    input_index: int
    repetition: int
    output: Optional[str]
    error: Optional[str]
    cells: List[int]
    reasons: List[Tuple[int, str]]
    latency_ms: Optional[float]

    def __init__(self, row: Dict[str, Any]) -> None:
        self.input_id = row["input_id"]
        self.input_index = row["input_index"]
        self.repetition = row["repetition"]
        self.output = row["output"]
        self.error = row["error"]
        self.cells = list(row["cells"])
        self.reasons = [(int(k), str(r)) for k, r in row["reasons"]]
        self.latency_ms = row["latency_ms"]

    def reason(self, k: int) -> Optional[str]:
        """The reason of check ``k``'s cell, if it has one."""
        for kk, r in self.reasons:
            if kk == k:
                return r
        return None

    def to_dict(self) -> Dict[str, Any]:
        """Its fields as a dict."""
        return {
            "input_id": self.input_id,
            "input_index": self.input_index,
            "repetition": self.repetition,
            "output": self.output,
            "error": self.error,
            "cells": list(self.cells),
            "reasons": [list(r) for r in self.reasons],
            "latency_ms": self.latency_ms,
        }

    def __repr__(self) -> str:
        what = repr(self.output[:40]) if self.output is not None else f"error={self.error!r:.60}"
        return f"<Sample {self.input_id}#{self.repetition} {what} cells={self.cells}>"


class Result:
    """A run's outcome.

    * ``passed``: every check's verdict passes, every sample was taken and
      no check is broken; ``failure_message``: why not (the report's
      failing lines, what :func:`probity.assert_reliable` raises), else
      None.
    * ``checks``: a :class:`CheckResult` per check, in column order
      (``result["name"]`` finds one).
    * ``tensor``: the reliability tensor R[i][j][k] (§3.6), N × M × K cells
      coded :data:`PASS`, :data:`FAIL`, :data:`ERROR`, :data:`MISSING` — a
      numpy uint8 array when numpy is installed, else nested lists.
    * ``samples``: a :class:`Sample` per output; ``input_ids``;
      ``run_id`` (None for a run kept in memory); ``status``; ``halt``
      (why it stopped with no verdict, if it did); ``broken`` (checks that
      could not judge any output, with their first reason).
    * ``aggregate``, ``input_profile`` (IRP), ``output_profile`` (ORP),
      ``retry_plan``: the engine's summary as the JSON report has it
      (``summary`` holds all of it).
    * :meth:`to_dict`, :meth:`to_pandas` (one row per check).
    """

    name: str
    run_id: Optional[int]
    status: str
    halt: Optional[str]
    halt_kind: Optional[str]
    passed: bool
    failure_message: Optional[str]
    broken: List[Tuple[str, str]]
    shape: Tuple[int, int, int]
    checks: List[CheckResult]
    aggregate: Dict[str, Any]
    input_profile: List[Dict[str, Any]]
    output_profile: List[Dict[str, Any]]
    retry_plan: Dict[str, Any]
    input_ids: List[str]
    samples: List[Sample]
    model_calls: int
    errors: int
    duration_s: float
    summary: Dict[str, Any]
    tensor: Any

    def __init__(self, doc: Dict[str, Any], cells: bytes) -> None:
        summary = doc["summary"]
        self.summary = summary
        self.name = doc["name"]
        self.run_id = doc["run_id"]
        self.status = doc["status"]
        self.halt = doc["halt"]
        self.halt_kind = doc.get("halt_kind")
        self.passed = doc["passed"]
        self.failure_message = doc["failure_message"]
        self.broken = [(str(b[0]), str(b[1])) for b in doc["broken"]]
        n, m, k = summary["shape"]
        self.shape = (int(n), int(m), int(k))
        self.checks = [CheckResult(c) for c in summary["checks"]]
        self.aggregate = summary["aggregate"]
        self.input_profile = summary["input_profile"]
        self.output_profile = summary["output_profile"]
        self.retry_plan = summary["retry"]
        self.input_ids = doc["input_ids"]
        self.samples = [Sample(s) for s in doc["samples"]]
        self.model_calls = doc["model_calls"]
        self.errors = doc["errors"]
        self.duration_s = doc["duration_s"]
        self.tensor = _tensor(cells, self.shape)

    @property
    def rates(self) -> Dict[str, float]:
        """Each check's success rate, by name."""
        return {c.name: c.rate for c in self.checks}

    @property
    def intervals(self) -> Dict[str, Tuple[float, float]]:
        """Each check's interval, by name."""
        return {c.name: c.interval for c in self.checks}

    @property
    def verdicts(self) -> Dict[str, str]:
        """Each check's verdict, by name."""
        return {c.name: c.verdict for c in self.checks}

    @property
    def failure_lines(self) -> List[str]:
        """The report's failing lines (``failure_message`` without its
        heading); empty when the run passed."""
        if not self.failure_message:
            return []
        return self.failure_message.splitlines()[1:]

    def to_dict(self) -> Dict[str, Any]:
        """The result as plain data (JSON-serializable, tensor aside)."""
        return {
            "name": self.name,
            "run_id": self.run_id,
            "status": self.status,
            "halt": self.halt,
            "passed": self.passed,
            "failure_message": self.failure_message,
            "broken": [list(b) for b in self.broken],
            "shape": list(self.shape),
            "checks": [c.to_dict() for c in self.checks],
            "input_ids": list(self.input_ids),
            "samples": [s.to_dict() for s in self.samples],
            "model_calls": self.model_calls,
            "errors": self.errors,
            "duration_s": self.duration_s,
            "summary": self.summary,
        }

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with one row per check (the columns of
        :meth:`CheckResult.to_dict`). Needs pandas."""
        return _pandas().DataFrame([c.to_dict() for c in self.checks])

    def samples_to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with one row per output: its input, its
        repetition, the output or its error, and one column of cell codes
        per check (named after it). Needs pandas."""
        names = [c.name for c in self.checks]
        rows = []
        for s in self.samples:
            row: Dict[str, Any] = {
                "input_id": s.input_id,
                "repetition": s.repetition,
                "output": s.output,
                "error": s.error,
            }
            row.update(zip(names, s.cells))
            rows.append(row)
        return _pandas().DataFrame(rows, columns=["input_id", "repetition", "output", "error", *names])

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check named {name!r} (checks: {', '.join(c.name for c in self.checks)})")

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.checks)

    def __repr__(self) -> str:
        n, m, k = self.shape
        word = "passed" if self.passed else "failed"
        return f"<Result {self.name!r} {word}: {n} inputs x {m} outputs x {k} checks>"
