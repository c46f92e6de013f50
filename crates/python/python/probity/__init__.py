"""probity: reliability testing for LLM-based systems, with error bars.

An :class:`Experiment` samples a system N inputs × M outputs, checks every
output with K validators (Python callables, the paper's ``lambda o`` and
``lambda i, o``, or probity.toml's tables) and verifiers, and answers per
check with a success rate, its confidence interval and a verdict against
the check's minimum success percentage. In pytest::

    import probity

    def test_polite():
        result = probity.Experiment(
            "polite", my_app, ["Thank you!", "Hello"],
            [probity.Validator("contraction_validator",
                               "Output contains too many contractions",
                               lambda o: o.count("'") <= 3,
                               minimum_success_percentage=0.95)],
            outputs_per_input=20,
        ).run()
        probity.assert_reliable(result)
"""

from ._assert import assert_reliable
from ._experiment import Experiment, run
from ._input import Input
from ._plan import retry_plan
from ._probity import __version__
from ._result import ERROR, FAIL, MISSING, PASS, CheckResult, Result
from ._validator import Validator

__all__ = [
    "Experiment",
    "Validator",
    "Input",
    "Result",
    "CheckResult",
    "assert_reliable",
    "run",
    "retry_plan",
    "PASS",
    "FAIL",
    "ERROR",
    "MISSING",
    "__version__",
]
