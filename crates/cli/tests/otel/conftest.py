"""Real OpenTelemetry clients against `probity collect` (issue 37, point 6):
the official `openai` SDK calling `probity sim serve`, traced by
`opentelemetry-instrumentation-openai-v2` or
`openinference-instrumentation-openai`, and an OpenAI Agents SDK app
traced by `openinference-instrumentation-openai-agents`, exported by
`opentelemetry-exporter-otlp-proto-http`; probity's evaluation events
decoded by the official `opentelemetry-proto` package. The processes are real; every
wait is bounded."""

import os
import selectors
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
PROBITY_BIN = str(Path(os.environ.get("PROBITY_BIN") or REPO / "target" / "debug" / "probity").resolve())
APP = str(Path(__file__).resolve().parent / "app.py")
AGENTS_APP = str(Path(__file__).resolve().parent / "agents_app.py")
START_TIMEOUT = 20
STOP_TIMEOUT = 20


class Process:
    """A probity server whose first stdout line is `listening on URL`."""

    def __init__(self, args, workdir, name):
        self.stderr_path = Path(workdir) / f"{name}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [PROBITY_BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=err, env={**os.environ, "NO_COLOR": "1"}, cwd=workdir)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                self.stop()
                raise AssertionError(f"{name} did not start: {self.stderr()}")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                self.stop()
                raise AssertionError(f"{name} exited: {self.stderr()}")
            buf += chunk
        line = buf.decode().splitlines()[0].strip()
        assert line.startswith("listening on "), line
        self.url = line[len("listening on "):]
        self.drain = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self.drain.start()

    def stderr(self):
        return self.stderr_path.read_text(errors="replace")

    def stop(self):
        """SIGTERM; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"did not stop on SIGTERM: {self.stderr()}")


def probity(workdir, *args):
    """`probity ARGS` in `workdir`; (code, stdout, stderr)."""
    p = subprocess.run([PROBITY_BIN, *args], cwd=workdir, capture_output=True, text=True,
                       env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    return p.returncode, p.stdout, p.stderr


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def run_app(which, sim_url, otlp_url, n, env=None, tools=False, ids=None):
    """The traced application, as a process of its own (an instrumentation
    patches the SDK for the whole process); `which` = "openai-agents" runs
    agents_app.py."""
    if which == "openai-agents":
        args = [sys.executable, AGENTS_APP, sim_url, otlp_url, str(n)]
    else:
        args = [sys.executable, APP, which, sim_url, otlp_url, str(n)] + (["--tools"] if tools else [])
        args += ["--ids", str(ids)] if ids else []
    p = subprocess.run(args, capture_output=True, text=True, timeout=180,
                       env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr


@pytest.fixture
def servers(tmp_path):
    """`servers(sim_toml, collect_toml)`: `probity sim serve` and `probity
    collect` started in `tmp_path`, stopped at teardown."""
    started = []

    def start(sim_toml, collect_toml):
        (tmp_path / "sim.toml").write_text(sim_toml)
        (tmp_path / "traces.toml").write_text(collect_toml)
        sim = Process(["sim", "serve", "--listen", "127.0.0.1:0", "--config", "sim.toml"], tmp_path, "sim")
        started.append(sim)
        collect = Process(["collect", "--config", "traces.toml", "--listen", "127.0.0.1:0",
                           "--store", str(tmp_path / "runs.db")], tmp_path, "collect")
        started.append(collect)
        return sim, collect

    yield start
    for p in reversed(started):
        p.stop()


class LogsReceiver:
    """An OTLP/HTTP logs endpoint on 127.0.0.1: each POST's body decoded by
    the official `opentelemetry-proto` package's ExportLogsServiceRequest."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
            ExportLogsServiceResponse,
        )

        self.requests = []
        self.paths = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append((self.path, self.headers["Content-Type"]))
                receiver.requests.append(ExportLogsServiceRequest.FromString(body))
                out = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def records(self):
        """Every log record received, with its resource's attributes."""
        return [r for req in self.requests for rl in req.resource_logs
                for sl in rl.scope_logs for r in sl.log_records]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def logs_receiver():
    r = LogsReceiver()
    yield r
    r.stop()
