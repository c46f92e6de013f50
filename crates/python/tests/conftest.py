"""Shared pieces of the Python tests: the paper's inputs and validators
(§2.1) and the simulator with its known rates."""

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional
from urllib.parse import urlsplit, urlunsplit

import pytest

import probity

pytest_plugins = ["pytester"]

#: The simulator as the README and `probity init` use it: contractions
#: overused in 10% of answers, "You're welcome" forgotten in 15% of answers
#: to thanks. Pinned (seed 0) so the tests repeat; unpinned, every run
#: samples afresh.
SIM: Dict[str, Any] = {"provider": "sim", "seed": 0, "contractions": 0.10, "omit_welcome": 0.15}


def paper_inputs(n: int = 20) -> List[str]:
    """Half thanks, half questions, as crates/engine/examples/in_process.rs."""
    return [
        f"Thank you for the advice on tomatoes, part {i}!"
        if i % 2 == 0
        else f"How deep should I plant bulbs, question {i}?"
        for i in range(n)
    ]


def paper_validators() -> List[probity.Validator]:
    """The paper's two validators (§2.1), as written there."""
    return [
        probity.Validator(
            "contraction_validator",
            "Output contains too many contractions",
            lambda o: o.count("'") <= 3,
            minimum_success_percentage=0.95,
        ),
        probity.Validator(
            "politeness_validator",
            "System seems to have forgotten its manners",
            lambda i, o: "You're welcome" in o if "Thank you" in i else True,
            minimum_success_percentage=0.90,
        ),
    ]


@pytest.fixture
def inputs() -> List[str]:
    return paper_inputs()


def column(tensor: Any, k: int) -> List[int]:
    """Check k's cells, every input and output: from the numpy array or
    the nested lists alike."""
    return [int(cells[k]) for outputs in tensor for cells in outputs]


ROOT = Path(__file__).resolve().parents[3]


def probity_binary() -> Optional[str]:
    """PROBITY_BIN, the workspace's release or debug build, or PATH's."""
    candidates = [os.environ.get("PROBITY_BIN")]
    candidates += [str(ROOT / "target" / p / "probity") for p in ("release", "debug")]
    candidates.append(shutil.which("probity"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database's URL, dropped afterwards: made with
    ``psql`` as the role in PROBITY_TEST_PG (``scripts/postgres.sh``). In
    CI (``CI`` set) a missing server fails the test; elsewhere it skips."""
    admin = os.environ.get("PROBITY_TEST_PG")
    psql = shutil.which("psql")
    if not admin or psql is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs the PostgreSQL tests: set PROBITY_TEST_PG (scripts/postgres.sh) and install psql")
        pytest.skip("no PostgreSQL here (set PROBITY_TEST_PG: scripts/postgres.sh)")
    name = f"probity_py_{uuid.uuid4().hex[:12]}"

    def sql(statement: str) -> None:
        subprocess.run([psql, admin, "-q", "-v", "ON_ERROR_STOP=1", "-c", statement], check=True, timeout=60)

    sql(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    finally:
        sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
