"""Two results compared: :func:`compare` (``probity compare A B`` for
results in hand) and the :class:`Comparison` it returns, one
:class:`CheckComparison` per check.

The statistics are core's (``probity_core::compare::compare_runs``, the
function behind the CLI's ``probity compare``), called from the native
module on the two results' tensors and input ids: nothing is computed
here but the table's layout."""

import json
import warnings
import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import _probity
from ._result import Result

#: The accepted values of ``multiple=``: Holm's adjustment across the
#: checks compared (the default), or none (each check at level α alone).
MULTIPLE = ("holm", "none")

#: The verdicts of a check compared, core's names: the whole interval of
#: B − A above 0 (and, with Holm, the adjusted p-value ≤ α), below 0, an
#: interval that holds 0, or a run that judged no output of the check.
IMPROVED, REGRESSED, NO_DETECTABLE_CHANGE, NO_DATA = (
    "improved",
    "regressed",
    "no_detectable_change",
    "no_data",
)


def _num(x: Any) -> float:
    """A number of core's JSON; NaN where core wrote null (undefined)."""
    return float("nan") if x is None else float(x)


def _span(iv: Dict[str, Any]) -> Tuple[float, float]:
    return (_num(iv["lower"]), _num(iv["upper"]))


def _diff(d: Optional[Dict[str, Any]]) -> Tuple[Optional[float], Optional[Tuple[float, float]]]:
    if d is None:
        return None, None
    return _num(d["mean_diff"]), _span(d["interval"])


class CheckComparison:
    """One check compared, baseline (A) to candidate (B).

    * ``name``; ``minimum_success_percentage`` (the candidate's).
    * ``baseline_rate``, ``baseline_interval``, ``baseline_n`` and the
      same for the candidate: each run's own rate over all its outputs,
      clustered by input, as its report shows it.
    * ``difference``: B − A (positive is better), ``interval`` its
      two-sided interval at ``Comparison.confidence``, ``se`` its standard
      error: the comparison the verdict is taken from — paired by input
      (``paired`` True: the Student t interval over the per-input
      differences, ``paired_inputs`` shared inputs) when at least two
      shared inputs were usable, else unpaired (Newcombe's interval on
      each run's effective sample size).
    * ``paired_difference``/``paired_interval`` (None without shared
      inputs) and ``unpaired_difference``/``unpaired_interval``: both
      parts, whichever decided.
    * ``p_value``: the two-sided p-value of "no change" from the deciding
      interval; ``p_adjusted``: after the correction across the checks
      (Holm by default; equal to ``p_value`` with ``multiple="none"``).
    * ``verdict``: ``"improved"``, ``"regressed"``,
      ``"no_detectable_change"`` or ``"no_data"``; improved/regressed only
      when ``p_adjusted`` ≤ α = 1 − confidence (the interval may exclude 0
      while the adjusted verdict is no detectable change).
    * ``mde``: the smallest true change this comparison would detect with
      probability ``Comparison.power``.
    * ``detail``: core's whole record of it (``CheckComparison`` in
      crates/core/src/compare.rs).
    """

    name: str
    minimum_success_percentage: float
    baseline_rate: float
    baseline_interval: Tuple[float, float]
    baseline_n: int
    candidate_rate: float
    candidate_interval: Tuple[float, float]
    candidate_n: int
    difference: float
    interval: Tuple[float, float]
    se: float
    paired: bool
    paired_inputs: int
    paired_excluded: int
    paired_difference: Optional[float]
    paired_interval: Optional[Tuple[float, float]]
    unpaired_difference: float
    unpaired_interval: Tuple[float, float]
    p_value: float
    p_adjusted: float
    verdict: str
    mde: float
    detail: Dict[str, Any]

    def __init__(self, c: Dict[str, Any]) -> None:
        self.detail = c
        self.name = str(c["name"])
        self.minimum_success_percentage = _num(c["minimum_success_percentage"])
        a, b = c["baseline"], c["candidate"]
        self.baseline_rate, self.baseline_interval, self.baseline_n = _num(a["estimate"]), _span(a["interval"]), int(a["n"])
        self.candidate_rate, self.candidate_interval, self.candidate_n = (
            _num(b["estimate"]),
            _span(b["interval"]),
            int(b["n"]),
        )
        decisive = c["decisive"]
        self.difference, self.interval, self.se = _num(decisive["mean_diff"]), _span(decisive["interval"]), _num(decisive["se"])
        self.paired = c["basis"] == "paired"
        self.paired_inputs = int(c["paired_inputs"])
        self.paired_excluded = int(c["paired_excluded"])
        self.paired_difference, self.paired_interval = _diff(c.get("paired"))
        self.unpaired_difference, self.unpaired_interval = _num(c["unpaired"]["mean_diff"]), _span(c["unpaired"]["interval"])
        self.p_value = _num(c["p_value"])
        self.p_adjusted = _num(c["p_adjusted"])
        self.verdict = str(c["direction"])
        self.mde = _num(c["mde"])

    @property
    def regressed(self) -> bool:
        """Whether the candidate is established worse on this check."""
        return self.verdict == REGRESSED

    @property
    def improved(self) -> bool:
        """Whether the candidate is established better on this check."""
        return self.verdict == IMPROVED

    def to_dict(self) -> Dict[str, Any]:
        """Its headline numbers as a flat dict (one row of the table)."""
        return {
            "name": self.name,
            "baseline_rate": self.baseline_rate,
            "baseline_lower": self.baseline_interval[0],
            "baseline_upper": self.baseline_interval[1],
            "candidate_rate": self.candidate_rate,
            "candidate_lower": self.candidate_interval[0],
            "candidate_upper": self.candidate_interval[1],
            "difference": self.difference,
            "lower": self.interval[0],
            "upper": self.interval[1],
            "se": self.se,
            "paired": self.paired,
            "paired_inputs": self.paired_inputs,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "verdict": self.verdict,
            "mde": self.mde,
            "minimum_success_percentage": self.minimum_success_percentage,
        }

    def __repr__(self) -> str:
        lo, hi = self.interval
        return (
            f"<{self.verdict.upper()} {self.name} {self.baseline_rate:.1%} -> {self.candidate_rate:.1%}: "
            f"{self.difference:+.1%} [{lo:+.1%}, {hi:+.1%}] p={self.p_value:.3g} "
            f"(adjusted {self.p_adjusted:.3g}, {'paired' if self.paired else 'unpaired'})>"
        )


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1%}"


def _signed(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:+.1%}"


def _p(x: float) -> str:
    if math.isnan(x):
        return "-"
    return "<0.0001" if x < 1e-4 else f"{x:.4f}"


def _printable(name: str) -> str:
    """A check's name on one line: control characters as escapes."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in name)


class Comparison:
    """Two results compared check by check: what :func:`compare` returns.

    * ``checks``: a :class:`CheckComparison` per check present in both
      results (matched by name), in the candidate's order;
      ``comparison["name"]`` finds one.
    * ``only_baseline_checks``, ``only_candidate_checks``: names of checks
      in one result only — listed, not compared.
    * ``regressions``, ``improvements``: the checks established worse /
      better; ``passed``: no check regressed (what ``probity compare``
      exits 0 on).
    * ``shared_inputs``, ``only_baseline_inputs``,
      ``only_candidate_inputs``: inputs matched by id between the runs
      (those in one run only are left out of the paired part);
      ``changed_inputs``: the ids of shared inputs whose content differs
      between the runs — still paired by id, as ``probity compare`` does,
      and warned about (:func:`compare` issues a ``UserWarning``).
    * ``confidence``, ``power``, ``multiple`` (``"holm"`` or ``"none"``),
      ``errors`` (the error-cell policy): the settings used.
    * ``baseline_name``, ``baseline_run_id``, ``candidate_name``,
      ``candidate_run_id``: the results compared.
    * :meth:`to_dict`; ``str()`` and ``repr()`` are a table.
    """

    checks: List[CheckComparison]
    only_baseline_checks: List[str]
    only_candidate_checks: List[str]
    shared_inputs: int
    only_baseline_inputs: int
    only_candidate_inputs: int
    changed_inputs: List[str]
    confidence: float
    power: float
    multiple: str
    errors: str
    baseline_name: str
    baseline_run_id: Optional[int]
    candidate_name: str
    candidate_run_id: Optional[int]
    detail: Dict[str, Any]

    def __init__(
        self, doc: Dict[str, Any], baseline: Result, candidate: Result, changed_inputs: List[str]
    ) -> None:
        self.detail = doc
        self.changed_inputs = list(changed_inputs)
        self.checks = [CheckComparison(c) for c in doc["checks"]]
        self.only_baseline_checks = [str(n) for n in doc["only_baseline_checks"]]
        self.only_candidate_checks = [str(n) for n in doc["only_candidate_checks"]]
        self.shared_inputs = int(doc["shared_inputs"])
        self.only_baseline_inputs = int(doc["only_baseline_inputs"])
        self.only_candidate_inputs = int(doc["only_candidate_inputs"])
        opts = doc["options"]
        self.confidence = _num(opts["confidence"])
        self.power = _num(opts["power"])
        self.multiple = str(opts["multiple"])
        self.errors = str(opts["errors"]).lower()
        self.baseline_name, self.baseline_run_id = baseline.name, baseline.run_id
        self.candidate_name, self.candidate_run_id = candidate.name, candidate.run_id
        self._regressed = bool(doc["regressed"])

    @property
    def regressions(self) -> List[CheckComparison]:
        """The checks on which the candidate is established worse."""
        return [c for c in self.checks if c.regressed]

    @property
    def improvements(self) -> List[CheckComparison]:
        """The checks on which the candidate is established better."""
        return [c for c in self.checks if c.improved]

    @property
    def passed(self) -> bool:
        """No check regressed (core's verdict; ``probity compare`` exits 1
        otherwise)."""
        return not self._regressed

    def to_dict(self) -> Dict[str, Any]:
        """The comparison as plain data (JSON-serializable but for NaN where
        a figure is undefined)."""
        return {
            "baseline": {"name": self.baseline_name, "run_id": self.baseline_run_id},
            "candidate": {"name": self.candidate_name, "run_id": self.candidate_run_id},
            "confidence": self.confidence,
            "power": self.power,
            "multiple": self.multiple,
            "errors": self.errors,
            "passed": self.passed,
            "shared_inputs": self.shared_inputs,
            "only_baseline_inputs": self.only_baseline_inputs,
            "only_candidate_inputs": self.only_candidate_inputs,
            "changed_inputs": list(self.changed_inputs),
            "checks": [c.to_dict() for c in self.checks],
            "regressions": [c.name for c in self.regressions],
            "improvements": [c.name for c in self.improvements],
            "only_baseline_checks": list(self.only_baseline_checks),
            "only_candidate_checks": list(self.only_candidate_checks),
        }

    def _label(self, name: str, run_id: Optional[int]) -> str:
        return f"{_printable(name)!r}" + (f" (run {run_id})" if run_id is not None else "")

    def __str__(self) -> str:
        word = "REGRESSED" if not self.passed else ("improved" if self.improvements else "no established regression")
        correction = "Holm-adjusted" if self.multiple == "holm" else "unadjusted"
        level = f"{self.confidence:.0%}" if round(self.confidence * 100, 6).is_integer() else f"{self.confidence:.1%}"
        lines = [
            f"baseline {self._label(self.baseline_name, self.baseline_run_id)} -> "
            f"candidate {self._label(self.candidate_name, self.candidate_run_id)}: {word}",
            f"change = candidate - baseline; {level} intervals; {correction} p-values; "
            f"{self.shared_inputs} shared inputs",
        ]
        if self.changed_inputs:
            lines.append(_changed_warning(self.changed_inputs))
        header = ["check", "baseline", "candidate", "change", f"{level} interval", "p", "p adj", "basis", "verdict"]
        rows = [header] + [
            [
                _printable(c.name),
                _pct(c.baseline_rate),
                _pct(c.candidate_rate),
                _signed(c.difference),
                f"[{_signed(c.interval[0])}, {_signed(c.interval[1])}]",
                _p(c.p_value),
                _p(c.p_adjusted),
                "paired" if c.paired else "unpaired",
                c.verdict.replace("_", " "),
            ]
            for c in self.checks
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            cells = [r[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(r[1:7], widths[1:7])]
            cells += [v.ljust(w) for v, w in zip(r[7:], widths[7:])]
            lines.append("  ".join(cells).rstrip())
        if self.only_baseline_checks:
            lines.append("only in the baseline (not compared): " + ", ".join(map(_printable, self.only_baseline_checks)))
        if self.only_candidate_checks:
            lines.append("only in the candidate (not compared): " + ", ".join(map(_printable, self.only_candidate_checks)))
        return "\n".join(lines)

    __repr__ = __str__

    def __getitem__(self, name: str) -> CheckComparison:
        for c in self.checks:
            if c.name == name:
                return c
        where = (
            " (only in the baseline)"
            if name in self.only_baseline_checks
            else " (only in the candidate)"
            if name in self.only_candidate_checks
            else ""
        )
        raise KeyError(
            f"no compared check named {name!r}{where} (compared: {', '.join(c.name for c in self.checks)})"
        )

    def __iter__(self) -> Iterator[CheckComparison]:
        return iter(self.checks)

    def __len__(self) -> int:
        return len(self.checks)


def _changed(baseline: Result, candidate: Result) -> List[str]:
    """Ids of the inputs both results share (matched as core's
    ``align_by_id`` matches them: the k-th occurrence of an id in one with
    its k-th in the other) whose content digests differ; none when either
    result has no digests."""
    a, b = baseline._input_digests, candidate._input_digests
    if len(a) != len(baseline.input_ids) or len(b) != len(candidate.input_ids):
        return []
    in_b: Dict[str, List[int]] = {}
    for j, id_ in enumerate(candidate.input_ids):
        in_b.setdefault(id_, []).append(j)
    seen: Dict[str, int] = {}
    changed = []
    for i, id_ in enumerate(baseline.input_ids):
        k = seen.get(id_, 0)
        seen[id_] = k + 1
        js = in_b.get(id_, [])
        if k < len(js) and a[i] != b[js[k]]:
            changed.append(id_)
    return changed


def _changed_warning(ids: List[str]) -> str:
    n = len(ids)
    return (
        f"warning: {n} shared input{'s' if n != 1 else ''} changed content between the runs "
        f"(e.g. {_printable(ids[0])!r}); still paired by id"
    )


def compare(
    baseline: Result,
    candidate: Result,
    *,
    multiple: str = "holm",
    confidence: Optional[float] = None,
    power: Optional[float] = None,
) -> Comparison:
    """Compare ``candidate`` (B) with ``baseline`` (A), check by check —
    ``probity compare A B`` for two results in hand (e.g. prompt A's run
    and prompt B's). Every change is B − A: positive is better.

    Checks are matched by name (one in a single result is listed in
    ``only_baseline_checks``/``only_candidate_checks``, not dropped);
    inputs by id. When the results share inputs the change is paired by
    input (Student t over the per-input differences, so differences in
    difficulty between inputs cancel); otherwise unpaired (Newcombe). With
    several checks the p-values are Holm-adjusted across them
    (``multiple="holm"``, the default; ``"none"`` judges each check at
    level α alone), so the chance that some check is flagged when nothing
    changed stays at most α. The statistics are core's, the CLI's own.

    * ``confidence``: of the intervals, in (0, 1); default the candidate's
      (its experiment's ``confidence``, 0.95 unless set).
    * ``power``: of the smallest detectable change (``mde``), in (0.5, 1);
      default 0.8.

    Shared input ids whose content changed between the results are still
    paired, as ``probity compare`` pairs them, and listed in
    ``changed_inputs`` with a ``UserWarning``: the paired change then mixes
    the systems' difference with the inputs'.

    Raises ``TypeError`` when ``baseline`` or ``candidate`` is not a
    :class:`probity.Result` or an option has the wrong type, and
    ``ValueError`` when ``multiple`` is not one of ``"holm"``, ``"none"``
    or ``confidence``/``power`` is out of range.
    """
    for arg, value in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(value, Result):
            raise TypeError(
                f"compare: {arg} must be a probity.Result (what Experiment.run() returns), "
                f"got {type(value).__name__}"
            )
    accepted = ", ".join(repr(m) for m in MULTIPLE)
    if not isinstance(multiple, str):
        raise TypeError(f"compare: multiple must be a str, one of {accepted}; got {type(multiple).__name__}")
    if multiple not in MULTIPLE:
        raise ValueError(f"compare: multiple must be one of {accepted}; got {multiple!r}")
    for arg, x in (("confidence", confidence), ("power", power)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise TypeError(f"compare: {arg} must be a number or None, got {type(x).__name__}")
    doc = _probity.compare(
        (json.dumps(baseline.summary), list(baseline.input_ids), baseline._cells),
        (json.dumps(candidate.summary), list(candidate.input_ids), candidate._cells),
        multiple,
        None if confidence is None else float(confidence),
        None if power is None else float(power),
    )
    changed = _changed(baseline, candidate)
    if changed:
        warnings.warn("probity.compare: " + _changed_warning(changed)[len("warning: ") :], UserWarning, stacklevel=2)
    return Comparison(json.loads(doc), baseline, candidate, changed)
