"""The servers of the `openai` SDK suite (conftest.py has its fixtures).

`Process` starts real processes from `PROBITY_BIN` (default
`target/debug/probity` of this repository) on 127.0.0.1:0 — `probity sim
serve` and `probity serve` — read their `listening on http://ADDR/v1` line,
and stop them with SIGTERM at teardown. `FakeUpstream` is an
OpenAI-compatible upstream written here (`http.server` in a thread) that
records every request body it receives and answers what the test scripts.
Every wait is bounded.
"""

import json
import os
import selectors
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai

REPO = Path(__file__).resolve().parents[4]
# Resolved now: the servers run in their own working directories.
PROBITY_BIN = str(Path(os.environ.get("PROBITY_BIN") or REPO / "target" / "debug" / "probity").resolve())

#: Seconds a server may take to print its address, and to stop on SIGTERM.
START_TIMEOUT = 20
STOP_TIMEOUT = 10
#: Seconds any one client call may take (no test needs more than a few).
CLIENT_TIMEOUT = 20

#: The serve process's upstream key: no answer or error may ever show it.
UPSTREAM_KEY = "sk-upstream-SECRET-4f1c9a"
#: The bearer token clients of a guard with `token_env` must send.
GUARD_TOKEN = "guard-token-7d2e"


class Process:
    """A server subprocess whose first stdout line is `listening on
    http://ADDR/v1`; its stderr goes to a file shown on failure."""

    def __init__(self, args, workdir, env=None, name="probity"):
        self.args = [PROBITY_BIN, *args]
        self.stderr_path = Path(workdir) / f"{name}.stderr"
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=full_env,
                cwd=workdir,
            )
        line = self._first_line()
        prefix = "listening on http://"
        if not line.startswith(prefix):
            self.stop()
            raise AssertionError(
                f"{' '.join(self.args)}: expected {prefix!r}…, got {line!r}\n{self.stderr()}"
            )
        self.base_url = line.strip()[len("listening on ") :]  # http://ADDR/v1
        self.root = self.base_url.removesuffix("/v1")  # http://ADDR
        # Keep reading stdout so a chatty server never blocks on a full pipe.
        self.drain = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self.drain.start()

    def _first_line(self):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        try:
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    self.stop()
                    raise AssertionError(
                        f"{' '.join(self.args)} printed no address within {START_TIMEOUT}s\n{self.stderr()}"
                    )
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    code = self.proc.wait(timeout=STOP_TIMEOUT)
                    raise AssertionError(
                        f"{' '.join(self.args)} exited ({code}) before listening\n{self.stderr()}"
                    )
                buf += chunk
        finally:
            sel.close()
        return buf.decode("utf-8", "replace").splitlines()[0]

    def stderr(self):
        try:
            return "stderr:\n" + self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        """SIGTERM, a bounded wait, then SIGKILL. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)
        if hasattr(self, "drain"):
            self.drain.join(timeout=STOP_TIMEOUT)
        return self.proc.returncode


# --- the fake upstream ------------------------------------------------------


def completion(content="Hello from upstream.", *, model=None, finish_reason="stop",
               tool_calls=None, usage=(11, 7)):
    """An OpenAI-shaped chat completion; `model=None`: the model asked for
    (the fake upstream echoes it, as a server serving that model does)."""
    message = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": usage[0] + usage[1]},
    }


#: Top-level and choice fields of a completion that a chunk does not repeat as is.
_OWN_TOP = ("id", "object", "created", "model", "choices", "usage")
_OWN_CHOICE = ("index", "message", "finish_reason", "logprobs")


def sse_chunks(body, include_usage=False):
    """A completion as the chunks an OpenAI server streams for it: content
    and a refusal in pieces, tool calls, the message's other fields
    (annotations, audio, …) in one delta, the answer's other top-level
    fields (service_tier, system_fingerprint) on every chunk, the choice's
    others and the logprobs with the finish reason; the usage chunk, with
    no choices, only when asked for."""
    choice = body["choices"][0]
    msg = choice["message"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"],
            "model": body["model"], **{k: v for k, v in body.items() if k not in _OWN_TOP}}

    def delta(d, **more):
        return {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None, **more}]}

    out = [delta({"role": "assistant", "content": ""})]
    for key in ("content", "refusal"):
        text = msg.get(key) or ""
        for i in range(0, len(text), 4):
            out.append(delta({key: text[i:i + 4]}))
    if msg.get("tool_calls"):
        out.append(delta({"tool_calls": [{"index": i, **c} for i, c in enumerate(msg["tool_calls"])]}))
    others = {k: v for k, v in msg.items()
              if k not in ("role", "content", "refusal", "tool_calls") and v is not None}
    if others:
        out.append(delta(others))
    last = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"],
            **{k: v for k, v in choice.items() if k not in _OWN_CHOICE}}
    if choice.get("logprobs") is not None:
        last["logprobs"] = choice["logprobs"]
    out.append({**base, "choices": [last]})
    if include_usage:
        out.append({**base, "choices": [], "usage": body.get("usage")})
    return out


class FakeUpstream:
    """An OpenAI-compatible server on 127.0.0.1:0 in a thread.

    `replies` decides each answer: a callable `(n, body) -> (status, json)`
    where `n` counts chat requests from 0, or a list of `(status, json)`
    whose last entry repeats; a third member, a dict, adds response headers. Every chat request body is kept in
    `requests` (parsed), its headers in `headers` (names in lower case). A request with
    `"stream": true` is answered as server-sent events of the same answer.
    """

    def __init__(self, replies=None):
        self.replies = replies if replies is not None else [(200, completion())]
        self.requests = []
        #: The path of each request (`…/chat/completions` or `…/responses`).
        self.paths = []
        self.headers = []
        self.lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, body, content_type="application/json", headers=None):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": "up-model", "object": "model", "created": 0, "owned_by": "fake"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                route = self.path.rstrip("/")
                if not (route.endswith("/chat/completions") or route.endswith("/responses")):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                    return
                with upstream.lock:
                    n = len(upstream.requests)
                    upstream.requests.append(body)
                    upstream.paths.append(route)
                    upstream.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, answer, *rest = upstream.reply(n, body)
                headers = rest[0] if rest else None
                if status == 200 and answer.get("model", "") is None:
                    answer = {**answer, "model": body.get("model")}
                if status == 200 and body.get("stream") is True:
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    events = b"".join(
                        b"data: " + json.dumps(c).encode() + b"\n\n"
                        for c in sse_chunks(answer, usage)
                    ) + b"data: [DONE]\n\n"
                    self._send(200, events, "text/event-stream", headers)
                else:
                    self._send(status, answer, headers=headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, n, body):
        if callable(self.replies):
            return self.replies(n, body)
        return self.replies[min(n, len(self.replies) - 1)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=STOP_TIMEOUT)


def response(text="Hello from upstream.", *, function_call=None, usage=(11, 7), rid="resp_up_1"):
    """An OpenAI-shaped Responses API response: one message of output text,
    or a function call."""
    if function_call is not None:
        name, arguments = function_call
        output = [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name,
                   "arguments": arguments, "status": "completed"}]
    else:
        output = [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    return {
        "id": rid, "object": "response", "created_at": 1700000000, "status": "completed",
        "model": "up-model", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "error": None, "incomplete_details": None, "instructions": None,
        "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                  "total_tokens": usage[0] + usage[1],
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


# --- probity serve ------------------------------------------------------------

NO_CANARY = '''
[[validator]]
name = "no_canary"
message = "The answer leaks the canary"
check = \'\'\'!output.contains("CANARY")\'\'\'
'''


def guard_toml(upstream_url, *, model="up-model", attempts=3, extra="", checks=NO_CANARY,
               upstream_extra="", call_attempts=1):
    return f'''name = "sdk-guard"
call_attempts = {call_attempts}
timeout_s = 10
{extra}
[upstream]
provider = "openai"
base_url = "{upstream_url}"
model = "{model}"
api_key_env = "PROBITY_SDK_UPSTREAM_KEY"
{upstream_extra}
[retry]
attempts = {attempts}
{checks}'''


class Guard:
    """A running `probity serve` and clients for it."""

    def __init__(self, process, token):
        self.process = process
        self.base_url = process.base_url
        self.root = process.root
        self.token = token

    def client(self, api_key=None, **kw):
        """The official client, without its own retries (so a count of
        upstream calls is the guard's) and with a bounded timeout."""
        return openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or self.token or "unused",
            max_retries=0,
            timeout=CLIENT_TIMEOUT,
            **kw,
        )


