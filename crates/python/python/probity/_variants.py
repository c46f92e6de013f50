"""``probity.run_variants``: a probity.toml with ``[[variant]]`` tables run
by the engine's variants runner, exactly as ``probity run FILE`` runs it:
every variant sampled on the same inputs and repetitions, each stored as a
run ``NAME/VARIANT`` of one group, and the variants compared with the
reference (or every pair), Holm-adjusted across pairs × checks."""

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _probity

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class VariantColumn:
    """One variant of the matrix: its stored run and its verdicts."""

    name: str
    run_id: int
    #: ``complete`` or ``interrupted``.
    status: str
    #: Every check's verdict passes and the run is complete.
    passed: bool
    #: The run's summary as the engine builds it (checks, rates, intervals).
    summary: Dict[str, Any]
    #: Calls, tokens and latency of the variant.
    cost: Dict[str, Any]

    def rate(self, check: str) -> float:
        """The success rate of ``check`` in this variant."""
        for c in self.summary["checks"]:
            if c["info"]["name"] == check:
                return float(c["rate"]["estimate"])
        raise KeyError(f"variant {self.name!r} has no check {check!r}")


@dataclass(frozen=True)
class VariantsResult:
    """A variants run: its group, each variant's column, the comparison."""

    name: str
    #: The group: the id of its first run (``probity report ID --variants``).
    group: int
    #: The variant the others were compared with (``None``: every pair).
    reference: Optional[str]
    variants: List[VariantColumn]
    #: The paired comparison (core's ``VariantsComparison``) as a dict.
    comparison: Dict[str, Any]

    @property
    def passed(self) -> bool:
        """Every variant passes every check (``probity run``'s exit 0)."""
        return all(v.passed for v in self.variants)

    def variant(self, name: str) -> VariantColumn:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"no variant {name!r} (variants: {', '.join(v.name for v in self.variants)})")

    def __str__(self) -> str:
        lines = [f"{self.name}: {len(self.variants)} variant{'s' if len(self.variants) != 1 else ''} (group {self.group})"]
        for v in self.variants:
            verdict = "PASS" if v.passed else "FAIL"
            lines.append(f"  {verdict} {v.name} (run {v.run_id}, {v.status})")
        return "\n".join(lines)


def run_variants(
    path: PathLike,
    store: Optional[PathLike] = None,
    *,
    variants: Sequence[str] = (),
    all_pairs: bool = False,
    resume: bool = False,
    sequential: bool = False,
) -> VariantsResult:
    """Run the ``[[variant]]`` file at ``path``.

    ``store``: a SQLite file's path or a PostgreSQL URL (default: the
    file's ``[store]`` table, else ``.probity/runs.db``, as the CLI);
    ``variants``: the names to run (all when empty); ``all_pairs``: compare
    every pair instead of against the reference; ``resume``: continue the
    unfinished group of this file; ``sequential``: each variant's run
    sequential, in one shared input order.

    Raises ``ConfigError`` for a file or variant the engine refuses (the
    message names the variant and its line), ``RunError`` when a variant's
    run could not complete (``resume=True`` continues the group), the
    store's errors as ``Experiment.run`` does.
    """
    __tracebackhide__ = True  # ``store`` may hold a password
    doc = json.loads(
        _probity.run_variants(
            os.fspath(path),
            None if store is None else os.fspath(store),
            list(variants),
            all_pairs,
            resume,
            sequential,
        )
    )
    return VariantsResult(
        name=doc["name"],
        group=int(doc["group"]),
        reference=doc["reference"],
        variants=[
            VariantColumn(
                name=v["name"],
                run_id=int(v["run_id"]),
                status=v["status"],
                passed=bool(v["passed"]),
                summary=v["summary"],
                cost=v["cost"],
            )
            for v in doc["variants"]
        ],
        comparison=doc["comparison"],
    )
