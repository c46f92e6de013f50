"""Every main path of probity against a real language model (issue 39).

The model (local_model.py: SmolLM2-135M-Instruct served by llama-cpp-python
on 127.0.0.1, one thread) is started once for the session, or taken from
`PROBITY_REAL_MODEL_URL` when one is already serving. `scripts/real_model.sh
install VENV` installs what this needs; `.ci/run` runs this suite, never
skipped. The model is real: its answers differ run to run, so the tests
assert what holds for any model (verdict shapes, intervals holding their
estimate, exit codes, nothing lost, seeds repeating), never a pass rate.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "openai_sdk"))

from local_model import MODEL, LocalModel  # noqa: E402
from probity_servers import PROBITY_BIN  # noqa: E402

#: Seconds one `probity` command may take (a call is about 0.5-1.5 s here).
COMMAND_TIMEOUT = 600


@pytest.fixture(scope="session")
def model_url(tmp_path_factory):
    """The real model's base URL (`http://127.0.0.1:PORT/v1`)."""
    url = os.environ.get("PROBITY_REAL_MODEL_URL")
    if url:
        yield url.rstrip("/")
        return
    server = LocalModel(tmp_path_factory.mktemp("model") / "server.log")
    try:
        yield server.base_url
    finally:
        server.stop()


class Probity:
    """The `probity` binary in one directory with one store."""

    def __init__(self, workdir: Path):
        self.dir = workdir
        self.store = str(workdir / "runs.db")

    def write(self, name: str, text: str) -> Path:
        path = self.dir / name
        path.write_text(text)
        return path

    def run(self, *args, ok=(0, 1)):
        """`probity ARGS --store STORE`; its exit code must be one of `ok`."""
        p = subprocess.run(
            [PROBITY_BIN, *map(str, args), "--store", self.store],
            cwd=self.dir, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert p.returncode in ok, (
            f"probity {' '.join(map(str, args))} exited {p.returncode}\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
        )
        return p

    def report(self, run) -> dict:
        return json.loads(self.run("report", run, "--format", "json", ok=(0,)).stdout)


@pytest.fixture
def probity(tmp_path):
    return Probity(tmp_path)


def system_table(url: str, **extra) -> str:
    """A `[system]` table for the real model: short answers (max_tokens)
    keep a call near half a second."""
    fields = {"temperature": 0.8, "max_tokens": 48, **extra}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items())
    return f'[system]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "{MODEL}"\n{lines}'


#: Five inputs: thanks (the politeness rule applies) and questions.
INPUTS = [
    "Thank you for the tomatoes!",
    "How deep are tulip bulbs planted?",
    "Thank you so much for the advice on roses.",
    "What is a good first houseplant?",
    "When should I water basil?",
]


def inputs_toml(n=len(INPUTS)) -> str:
    return "".join(f'[[input]]\nid = "in{i}"\ntext = {json.dumps(t)}\n' for i, t in enumerate(INPUTS[:n]))


#: The paper's two validators (§2.1).
VALIDATORS = '''
[[validator]]
name = "no_contractions"
message = "Output contains too many contractions"
check = \'\'\'count(output, "'") <= 3\'\'\'
minimum_success_percentage = 0.9

[[validator]]
name = "polite"
message = "System seems to have forgotten its manners"
check = \'\'\'if input.text.contains("Thank you") { output.contains("welcome") } else { true }\'\'\'
minimum_success_percentage = 0.5
'''
