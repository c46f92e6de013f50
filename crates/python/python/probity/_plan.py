"""Retry planning (paper §4.2.2), computed by the engine's core."""

from typing import Any, Dict, Optional, Sequence

from . import _probity


class RetryPlan:
    """The plan for validators passing at assumed rates (§4.2.2).

    * ``p_pass``: the chance an attempt passes every validator (the
      product of the rates, assumed independent).
    * ``expected_attempts``: E[R] = 1/p_pass; ``expected_retries``:
      E[R] - 1 (None when p_pass = 0).
    * ``attempts_exact``: the unrounded m; ``attempts``: m, the fewest
      attempts reaching the target; ``success_within_attempts``:
      1 - (1 - p_pass)^m.
    """

    def __init__(
        self,
        p_pass: float,
        expected_attempts: Optional[float],
        expected_retries: Optional[float],
        attempts_exact: Optional[float],
        attempts: Optional[int],
        success_within_attempts: Optional[float],
    ) -> None:
        self.p_pass = p_pass
        self.expected_attempts = expected_attempts
        self.expected_retries = expected_retries
        self.attempts_exact = attempts_exact
        self.attempts = attempts
        self.success_within_attempts = success_within_attempts

    def to_dict(self) -> Dict[str, Any]:
        """Its fields as a dict."""
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"RetryPlan(p_pass={self.p_pass:.4g}, attempts={self.attempts})"


def retry_plan(rates: Sequence[float], target: float = 0.99) -> RetryPlan:
    """The :class:`RetryPlan` for validators passing at ``rates`` (assumed
    independent) and the wanted probability ``target`` of an accepted
    output within m attempts. A rate outside [0, 1] or a target outside
    (0, 1) is a :class:`probity.ConfigError`."""
    from ._errors import ConfigError

    if isinstance(rates, (str, bytes)):
        raise TypeError(f"retry_plan: rates must be a sequence of numbers such as [0.95, 0.9], not {rates!r}")
    try:
        p, e_r, e_retries, exact, m, within = _probity.retry_plan([float(r) for r in rates], float(target))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return RetryPlan(p, e_r, e_retries, exact, m, within)
