"""What a run returns: :class:`Result`, a check's :class:`CheckResult`
(with a calibrated verifier's :class:`Calibration`) and each output's
:class:`Sample`."""

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


def _span(iv: Optional[Dict[str, Any]]) -> Optional[Tuple[float, float]]:
    if iv is None:
        return None
    return (float(iv["lower"]), float(iv["upper"]))


class Calibration:
    """A calibrated verifier (``Verifier(..., calibration="labels.jsonl")``,
    paper §4): its judge's accuracy on the labelled set and the check's
    rate corrected for the judge's errors. ``CheckResult.calibration``; None
    for checks without a labelled set.

    * ``state``: ``"corrected"``, or ``"unusable"`` when no corrected rate
      can be given (``problem`` says why: a judge no better than chance, a
      run's rate its measured errors cannot explain, a class of label the
      judge never answered).
    * ``corrected_rate``, ``corrected_interval``: the Rogan–Gladen estimate
      θ̂ = (p̂ + Sp − 1)/(Se + Sp − 1), clipped to [0, 1], and its interval
      at the run's confidence, carrying the uncertainty of the run's rate
      (clustered by input) and of Se and Sp; None when ``unusable``. In a
      fixed-size run the check's verdict is theirs.
    * ``judged_rate``: p̂, the judge's own pass rate over the run's outputs,
      uncorrected (the check's ``judged_rate``).
    * ``labels_only_interval``: the interval were p̂ known exactly: what the
      judge's measured errors alone leave (when it holds the minimum, more
      outputs cannot settle the verdict; more labels can).
    * ``sensitivity``, ``sensitivity_interval``: Se = P(judge PASS | label
      PASS) with its Wilson interval; ``specificity``,
      ``specificity_interval``: Sp = P(judge FAIL | label FAIL). None when
      they could not be measured.
    * ``pass_labels``, ``judged_pass``, ``fail_labels``, ``judged_fail``:
      the counts they come from; ``errors``: labelled pairs the judge could
      not judge (left out of both).
    * ``weak``: why the judge is too weak for the minimum (``{"reason":
      "chance", ...}`` or ``{"reason": "threshold", "best_lower": ...,
      "minimum": ...}``), else None; ``problem``: why ``unusable``, in
      words, else None.
    """

    state: str
    judged_rate: Optional[float]
    corrected_rate: Optional[float]
    corrected_interval: Optional[Tuple[float, float]]
    labels_only_interval: Optional[Tuple[float, float]]
    sensitivity: Optional[float]
    sensitivity_interval: Optional[Tuple[float, float]]
    specificity: Optional[float]
    specificity_interval: Optional[Tuple[float, float]]
    pass_labels: Optional[int]
    judged_pass: Optional[int]
    fail_labels: Optional[int]
    judged_fail: Optional[int]
    errors: Optional[int]
    weak: Optional[Dict[str, Any]]
    problem: Optional[str]

    def __init__(self, calibration: Dict[str, Any], judged_rate: float, problem: Optional[str]) -> None:
        self.state = str(calibration["state"])
        corrected = self.state == "corrected"
        self.judged_rate = calibration["raw"] if corrected else judged_rate
        self.corrected_rate = calibration["estimate"] if corrected else None
        self.corrected_interval = _span(calibration.get("interval")) if corrected else None
        self.labels_only_interval = _span(calibration.get("labels_only")) if corrected else None
        judge = calibration.get("judge")
        se = judge["sensitivity"] if judge else None
        sp = judge["specificity"] if judge else None
        counts = judge["counts"] if judge else {}
        self.sensitivity = se["estimate"] if se else None
        self.sensitivity_interval = _span(se["interval"]) if se else None
        self.specificity = sp["estimate"] if sp else None
        self.specificity_interval = _span(sp["interval"]) if sp else None
        self.pass_labels = counts.get("pass_labels")
        self.judged_pass = counts.get("judged_pass")
        self.fail_labels = counts.get("fail_labels")
        self.judged_fail = counts.get("judged_fail")
        self.errors = counts.get("errors")
        self.weak = calibration.get("weak")
        self.problem = problem

    def to_dict(self) -> Dict[str, Any]:
        """Its fields as a dict."""
        return dict(vars(self))

    def __repr__(self) -> str:
        if self.corrected_rate is None or self.corrected_interval is None:
            return f"<Calibration unusable: {self.problem}>"
        lo, hi = self.corrected_interval
        return (
            f"<Calibration corrected {self.corrected_rate:.1%} [{lo:.1%}, {hi:.1%}] "
            f"(judged {self.judged_rate:.1%}; Se {self.sensitivity:.1%}, Sp {self.specificity:.1%})>"
        )


class CheckResult:
    """One check's numbers.

    * ``name``, ``message``, ``kind`` (``"validator"`` or ``"verifier"``),
      ``weight``.
    * ``rate``: its success rate over every output judged; ``n``: how many;
      ``errors``: outputs it could not judge (its Error cells: the check
      raised, timed out or returned no verdict), left out of ``rate``.
    * ``interval``: (lower, upper) at the run's confidence, clustered by
      input (outputs of one input are correlated).
    * ``minimum_success_percentage``: the threshold it is judged against;
      ``verdict``: ``"pass"``, ``"fail"`` or ``"inconclusive"``;
      ``established``: whether the sample size settled it.
    * ``summary``: the engine's whole record of it (breakdown, worst input,
      pass^k and pass@k), as the JSON report's numbers.
    * ``calibration``: a calibrated verifier's :class:`Calibration` (the
      judge's sensitivity and specificity, the corrected rate), else None.
      In a fixed-size run its ``rate`` and ``interval`` are then the
      corrected ones — the verdict's, as the report's row shows them — and
      ``judged_rate``, ``judged_interval`` the judge's own. For every other
      check (and in a sequential run, whose verdicts are its sequences')
      ``judged_rate`` and ``judged_interval`` equal ``rate`` and
      ``interval``.
    """

    name: str
    message: str
    minimum_success_percentage: float
    weight: float
    kind: str
    rate: float
    interval: Tuple[float, float]
    n: int
    errors: int
    verdict: str
    established: bool
    summary: Dict[str, Any]
    judged_rate: float
    judged_interval: Tuple[float, float]
    calibration: Optional[Calibration]

    def __init__(
        self,
        summary: Dict[str, Any],
        sequential: bool = False,
        calibration_problem: Optional[str] = None,
    ) -> None:
        info, rate, verdict = summary["info"], summary["rate"], summary["verdict"]
        self.summary = summary
        self.name = info["name"]
        self.message = info["message"]
        self.minimum_success_percentage = info["minimum_success_percentage"]
        self.weight = info["weight"]
        self.kind = str(info.get("kind", "")).lower()
        self.judged_rate = rate["estimate"]
        self.judged_interval = (rate["interval"]["lower"], rate["interval"]["upper"])
        self.rate, self.interval = self.judged_rate, self.judged_interval
        self.n = rate["n"]
        self.errors = int(rate.get("counts", {}).get("error", 0))
        self.verdict = str(verdict["decision"]).lower()
        self.established = bool(verdict["established"])
        cal = summary.get("calibration")
        self.calibration = Calibration(cal, self.judged_rate, calibration_problem) if cal else None
        c = self.calibration
        # The row's rate is the verdict's (the report's rule): corrected in
        # a fixed-size run that judged something.
        if c is not None and c.corrected_rate is not None and c.corrected_interval is not None:
            if not sequential and self.n > 0:
                self.rate, self.interval = c.corrected_rate, c.corrected_interval

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
            "errors": self.errors,
            "minimum_success_percentage": self.minimum_success_percentage,
            "verdict": self.verdict,
            "established": self.established,
            "weight": self.weight,
            "message": self.message,
            "judged_rate": self.judged_rate,
            "sensitivity": self.calibration.sensitivity if self.calibration else None,
            "specificity": self.calibration.specificity if self.calibration else None,
        }

    def __repr__(self) -> str:
        lo, hi = self.interval
        errors = f", {self.errors} not judged" if self.errors else ""
        return (
            f"<{self.verdict.upper()} {self.name} {self.rate:.1%} [{lo:.1%}, {hi:.1%}] "
            f">= {self.minimum_success_percentage:.0%} (n={self.n}{errors})>"
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
    * ``calibrations``: each calibrated verifier's :class:`Calibration`, by
      name (its judge's accuracy and the corrected rate).
    * ``aggregate``, ``input_profile`` (IRP), ``output_profile`` (ORP),
      ``retry_plan``: the engine's summary as the JSON report has it
      (``summary`` holds all of it).
    * :meth:`to_dict`, :meth:`to_pandas` (one row per check).
    * :func:`probity.compare` compares two of them (baseline, candidate).
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
    _cells: bytes

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
        sequential = summary.get("sequential") is not None
        problems = doc.get("calibration_problems") or []
        self.checks = [
            CheckResult(c, sequential, problems[k] if k < len(problems) else None)
            for k, c in enumerate(summary["checks"])
        ]
        self.aggregate = summary["aggregate"]
        self.input_profile = summary["input_profile"]
        self.output_profile = summary["output_profile"]
        self.retry_plan = summary["retry"]
        self.input_ids = doc["input_ids"]
        # A digest of each input's content, for probity.compare (absent in
        # a result made by an older package: then nothing is checked).
        self._input_digests: List[str] = list(doc.get("input_digests") or [])
        self.samples = [Sample(s) for s in doc["samples"]]
        self.model_calls = doc["model_calls"]
        self.errors = doc["errors"]
        self.duration_s = doc["duration_s"]
        self.tensor = _tensor(cells, self.shape)
        # The cells as the engine wrote them, for probity.compare.
        self._cells = bytes(cells)

    @property
    def rates(self) -> Dict[str, float]:
        """Each check's success rate, by name."""
        return {c.name: c.rate for c in self.checks}

    @property
    def calibrations(self) -> Dict[str, Calibration]:
        """Each calibrated verifier's :class:`Calibration`, by name."""
        return {c.name: c.calibration for c in self.checks if c.calibration is not None}

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

    def __str__(self) -> str:
        """The run as ``print(result)`` shows it: a heading (name, run,
        PASS/FAIL, shape, calls, time), one line per check (verdict, rate,
        interval at the run's confidence, minimum, established or not, n,
        outputs not judged), then why it stopped, broken checks and the
        failing lines, when there are any."""
        n, m, k = self.shape
        run = f" (run {self.run_id})" if self.run_id is not None else ""
        head = "PASS" if self.passed else "FAIL"
        if self.halt is not None:
            head = "NO VERDICT"
        lines = [
            f"{self.name}{run}: {head} — {n} input{'s' if n != 1 else ''} × {m} output{'s' if m != 1 else ''}"
            f" × {k} check{'s' if k != 1 else ''}, {self.model_calls} calls, {self.duration_s:.1f} s"
            + (f", {self.errors} errors" if self.errors else "")
        ]
        width = max((len(c.name) for c in self.checks), default=0)
        for c in self.checks:
            lo, hi = c.interval
            settled = "established" if c.established else "not established"
            errors = f", {c.errors} not judged" if c.errors else ""
            lines.append(
                f"  {c.verdict.upper():<12} {c.name:<{width}}  {c.rate:6.1%} [{lo:.1%}, {hi:.1%}]"
                f"  min {c.minimum_success_percentage:.0%}  {settled}  (n={c.n}{errors})"
            )
        if self.halt is not None:
            lines.append(f"  stopped with no verdict: {self.halt}")
        for name, reason in self.broken:
            lines.append(f"  broken: {name}: {reason}")
        if self.failure_lines:
            lines.append("  failing (as the report says it):")
            lines.extend(f"    {line.strip()}" for line in self.failure_lines)
        return "\n".join(lines)
