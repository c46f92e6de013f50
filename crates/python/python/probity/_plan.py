"""Retry planning (paper §4.2.2), computed by the engine's core."""

from typing import Dict, Optional, Sequence

from . import _probity


def retry_plan(rates: Sequence[float], target: float = 0.99) -> Dict[str, Optional[float]]:
    """The plan for validators passing at ``rates`` (assumed independent,
    §4.2.2) and the wanted probability ``target`` of an accepted output:
    ``p_pass`` (the product of the rates), ``expected_attempts`` E[R] =
    1/p_pass, ``expected_retries`` E[R] - 1, ``attempts_exact`` (the
    unrounded m), ``attempts`` (m, the fewest attempts reaching the
    target) and ``success_within_attempts`` (1 - (1 - p_pass)^m)."""
    p, e_r, e_retries, exact, m, within = _probity.retry_plan([float(r) for r in rates], float(target))
    return {
        "p_pass": p,
        "expected_attempts": e_r,
        "expected_retries": e_retries,
        "attempts_exact": exact,
        "attempts": m,
        "success_within_attempts": within,
    }
