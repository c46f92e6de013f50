"""Ctrl-C stops a run: KeyboardInterrupt reaches Python, and a stored run
is kept, marked interrupted (resumable from the CLI)."""

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Tuple

SCRIPT = r'''
import os, sys, time
import probity

def system(i):
    open(sys.argv[1], "a").close()   # the run has started
    time.sleep(0.2)
    return "ok"

probity.Experiment(
    "slow", system, ["q%d" % n for n in range(50)],
    [probity.Validator("v", check=lambda o: True)], outputs_per_input=4, concurrency=2,
).run(store=sys.argv[2])
print("finished")
'''


def interrupt_once_started(script: Path, started: Path, *args: str, wait_s: float = 60) -> Tuple[str, str]:
    """Run ``script`` (its first argument: the file it creates once it has
    got going), send SIGINT then, and return its stdout and stderr."""
    # A shell without job control starts background commands with SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler: the
    # child gets Ctrl-C as an interactive terminal gives it, whoever runs
    # this suite.
    child = subprocess.Popen(
        [sys.executable, str(script), str(started), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the script never got going"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        return child.communicate(timeout=wait_s)
    finally:
        if child.poll() is None:
            child.kill()


def test_ctrl_c_raises_keyboard_interrupt_and_keeps_the_stored_run_interrupted(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SCRIPT)
    started, store = tmp_path / "started", tmp_path / "runs.db"
    out, err = interrupt_once_started(script, started, str(store))
    assert "finished" not in out
    assert "KeyboardInterrupt" in err, err
    rows = sqlite3.connect(str(store)).execute("SELECT name, status FROM runs").fetchall()
    assert rows == [("slow", "interrupted")]


VALIDATOR_SCRIPT = r'''
import sys, time
import probity

def slow(o):
    open(sys.argv[1], "a").close()   # a predicate is running
    time.sleep(600)                  # far longer than the test waits
    return True

probity.Experiment(
    "slow-check", lambda i: "out", ["a"], [probity.Validator("slow", check=slow, timeout_s=900)],
    outputs_per_input=2,
).run()
print("finished")
'''


def test_ctrl_c_stops_a_run_waiting_on_a_python_validator(tmp_path: Path) -> None:
    # Before, the run waited for the predicate to return or reach its
    # timeout (here 900 s) before the KeyboardInterrupt came through.
    script = tmp_path / "slow_check.py"
    script.write_text(VALIDATOR_SCRIPT)
    # Well before the predicate's 600 s sleep or its 900 s timeout.
    out, err = interrupt_once_started(script, tmp_path / "started", wait_s=120)
    assert "finished" not in out
    assert "KeyboardInterrupt" in err, err


ASYNC_TEST = r'''
import time
import pytest
import probity

def system(i):
    open(STARTED, "a").close()   # the run has started
    time.sleep(0.2)
    return "ok"

@pytest.mark.asyncio
@pytest.mark.probity
async def test_slow():
    return probity.Experiment(
        "slow-async", system, ["q%d" % n for n in range(50)],
        [probity.Validator("v", check=lambda o: True)], outputs_per_input=4, concurrency=2,
    )
'''

PYTEST_LAUNCHER = r'''
import sys
import pytest
sys.exit(pytest.main([sys.argv[3], "-q", "-p", "no:cacheprovider", "--probity-store", sys.argv[2],
                      "-o", "asyncio_default_fixture_loop_scope=function"]))
'''


def test_ctrl_c_stops_an_async_marked_test(tmp_path: Path) -> None:
    # Before, asyncio's own SIGINT handler took the signal: the run went on
    # to its last call (here 40 s) and was stored complete.
    pytest = __import__("pytest")
    pytest.importorskip("pytest_asyncio")
    started, store = tmp_path / "started", tmp_path / "runs.db"
    test = tmp_path / "test_slow_async.py"
    test.write_text(f"STARTED = {str(started)!r}\n" + ASYNC_TEST)
    launcher = tmp_path / "launch.py"
    launcher.write_text(PYTEST_LAUNCHER)
    out, err = interrupt_once_started(launcher, started, str(store), str(test), wait_s=20)
    assert "KeyboardInterrupt" in out + err, out + err
    rows = sqlite3.connect(str(store)).execute("SELECT name, status FROM runs").fetchall()
    assert rows == [("slow-async", "interrupted")]
