"""What a run returns: :class:`Result`, and a check's :class:`CheckResult`."""

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
        return [[flat[(i * m + j) * k:(i * m + j + 1) * k] for j in range(m)] for i in range(n)]
    return np.frombuffer(cells, dtype=np.uint8).reshape(shape).copy()


class CheckResult:
    """One check's numbers: its success ``rate`` over every output judged,
    its ``interval`` (lower, upper) at the run's confidence (clustered by
    input), the ``minimum_success_percentage`` it is judged against and the
    ``verdict`` (``"pass"``, ``"fail"`` or ``"inconclusive"``), whether the
    sample size ``established`` it, and ``summary``, the engine's whole
    record of it (breakdown, worst input, pass^k and pass@k)."""

    def __init__(self, summary: Dict[str, Any]) -> None:
        info, rate, verdict = summary["info"], summary["rate"], summary["verdict"]
        self.summary = summary
        self.name: str = info["name"]
        self.message: str = info["message"]
        self.minimum_success_percentage: float = info["minimum_success_percentage"]
        self.weight: float = info["weight"]
        self.kind: str = str(info.get("kind", "")).lower()
        self.rate: float = rate["estimate"]
        self.interval: Tuple[float, float] = (rate["interval"]["lower"], rate["interval"]["upper"])
        self.n: int = rate["n"]
        self.verdict: str = str(verdict["decision"]).lower()
        self.established: bool = bool(verdict["established"])

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def __repr__(self) -> str:
        lo, hi = self.interval
        return (
            f"<{self.verdict.upper()} {self.name} {self.rate:.1%} [{lo:.1%}, {hi:.1%}] "
            f">= {self.minimum_success_percentage:.0%} (n={self.n})>"
        )


class Result:
    """A run's outcome.

    * ``passed``: every check's verdict passes, every sample was taken and
      no check is broken; ``failure_message``: why not (what
      :func:`probity.assert_reliable` fails with), else None.
    * ``checks``: a :class:`CheckResult` per check, in column order
      (``result["name"]`` finds one); ``aggregate``, ``input_profile``
      (IRP), ``output_profile`` (ORP), ``retry_plan``: the engine's summary
      (``summary`` holds all of it, as the JSON report's numbers).
    * ``tensor``: the reliability tensor R[i][j][k] (§3.6), N × M × K cells
      coded :data:`PASS`, :data:`FAIL`, :data:`ERROR`, :data:`MISSING` — a
      numpy uint8 array when numpy is installed, else nested lists.
    * ``samples``: every output with its cells and the reasons of its Error
      cells; ``input_ids``; ``run_id`` (None for a run kept in memory).
    """

    def __init__(self, doc: Dict[str, Any], cells: bytes) -> None:
        self._doc = doc
        summary = doc["summary"]
        self.summary: Dict[str, Any] = summary
        self.name: str = doc["name"]
        self.run_id: Optional[int] = doc["run_id"]
        self.status: str = doc["status"]
        self.halt: Optional[str] = doc["halt"]
        self.passed: bool = doc["passed"]
        self.failure_message: Optional[str] = doc["failure_message"]
        self.broken: List[Tuple[str, str]] = [tuple(b) for b in doc["broken"]]
        self.shape: Tuple[int, int, int] = tuple(summary["shape"])  # type: ignore[assignment]
        self.checks: List[CheckResult] = [CheckResult(c) for c in summary["checks"]]
        self.aggregate: Dict[str, Any] = summary["aggregate"]
        self.input_profile: List[Dict[str, Any]] = summary["input_profile"]
        self.output_profile: List[Dict[str, Any]] = summary["output_profile"]
        self.retry_plan: Dict[str, Any] = summary["retry"]
        self.input_ids: List[str] = doc["input_ids"]
        self.samples: List[Dict[str, Any]] = doc["samples"]
        self.model_calls: int = doc["model_calls"]
        self.errors: int = doc["errors"]
        self.duration_s: float = doc["duration_s"]
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
