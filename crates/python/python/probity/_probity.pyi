"""The native half of the package (crates/python/src): typed for mypy."""

from typing import Any, List, Optional, Sequence, Tuple

__version__: str
#: The engine's default ``timeout_s`` (``[experiment]``), in seconds.
DEFAULT_TIMEOUT_S: float

def run(
    spec: str,
    cwd: str,
    origin: str,
    system: Optional[Tuple[Any, str]],
    validators: List[Tuple[int, str, str, float, float, int, Any, bool, float]],
    make_input: Any,
    store: Optional[str] = None,
    agent: Optional[Tuple[Any, List[Tuple[str, Tuple[str, Any, bool]]]]] = None,
) -> Tuple[str, bytes]: ...
def retry_plan(
    rates: Sequence[float], target: float = 0.99
) -> Tuple[float, Optional[float], Optional[float], Optional[float], Optional[int], Optional[float]]: ...
def compare(
    baseline: Tuple[str, List[str], bytes],
    candidate: Tuple[str, List[str], bytes],
    multiple: str = "holm",
    confidence: Optional[float] = None,
    power: Optional[float] = None,
) -> str: ...
def run_variants(
    path: str,
    store: Optional[str] = None,
    names: List[str] = ...,
    all_pairs: bool = False,
    resume: bool = False,
    sequential: bool = False,
) -> str: ...
def count_error(field: str, value: int, what: str) -> Optional[str]: ...
