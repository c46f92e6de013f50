"""probity: reliability testing for LLM-based systems, with error bars.

An :class:`Experiment` samples a system N inputs × M outputs, checks every
output with K validators (Python predicates, the paper's ``lambda o`` and
``lambda i, o``, or probity.toml's tables) and verifiers, and answers per
check with a success rate, its confidence interval and a verdict against
the check's minimum success percentage. In pytest::

    import probity

    @probity.validator(name="contraction_validator", minimum=0.95)
    def few_contractions(o: str) -> bool:
        "Output contains too many contractions"
        return o.count("'") <= 3

    def test_polite() -> None:
        result = probity.Experiment(
            "polite", my_app, ["Thank you!", "Hello"], [few_contractions],
            outputs_per_input=20,
        ).run()
        probity.assert_reliable(result)

The pytest plugin (installed with the package) adds the ``probity_run``
fixture and the ``--probity-store`` and ``--probity-outputs`` options.
:func:`compare` compares two results check by check (prompt A's run with
prompt B's): the change, its interval and whether it is established.
Every error is a :class:`ProbityError`; see its subclasses.
"""

from ._agents import AgentExperiment, Task, Tool, Transcript, schema_from_signature, tool
from ._assert import assert_reliable
from ._compare import CheckComparison, Comparison, compare
from ._errors import (
    BrokenCheckError,
    ConfigError,
    ErrorBudgetExceededError,
    NotReliableError,
    ProbityError,
    RunError,
    StoreError,
    StoreLockedError,
    SystemUnreachableError,
)
from ._experiment import Experiment, RunFixture, run
from ._input import Input
from ._plan import RetryPlan, retry_plan
from ._probity import __version__
from ._result import ERROR, FAIL, MISSING, PASS, Calibration, CheckResult, Result, Sample
from ._tables import Prompt, Retry, Verifier
from ._validator import Validator, validator
from ._variants import VariantColumn, VariantsResult, run_variants
from ._workers import CallAbandoned

__all__ = [
    "Experiment",
    "AgentExperiment",
    "Task",
    "Tool",
    "Transcript",
    "tool",
    "schema_from_signature",
    "Validator",
    "validator",
    "Verifier",
    "Retry",
    "Prompt",
    "Input",
    "Result",
    "CheckResult",
    "Calibration",
    "Sample",
    "compare",
    "Comparison",
    "CheckComparison",
    "RetryPlan",
    "assert_reliable",
    "RunFixture",
    "run",
    "retry_plan",
    "run_variants",
    "VariantsResult",
    "VariantColumn",
    "PASS",
    "FAIL",
    "ERROR",
    "MISSING",
    "ProbityError",
    "ConfigError",
    "BrokenCheckError",
    "StoreError",
    "StoreLockedError",
    "RunError",
    "SystemUnreachableError",
    "ErrorBudgetExceededError",
    "NotReliableError",
    "CallAbandoned",
    "__version__",
]
