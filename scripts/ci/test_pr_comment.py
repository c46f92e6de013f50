"""Tests of pr_comment.py against a stand-in for the GitHub REST API.

The stand-in is an http.server on 127.0.0.1 (a free port) started by each
test: it keeps issue comments in memory, pages them with GitHub's Link
headers, checks the bearer token, and can be told to fail. The script is
run as a subprocess, as the action runs it.

    python3 -m unittest discover -s scripts/ci -v
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pr_comment.py")
TOKEN = "ghs_secret_token_123"


class FakeGitHub:
    """Issue comments of one repository, served like api.github.com."""

    def __init__(self, per_page_cap: int = 100):
        self.comments: dict[int, list[dict]] = {}
        self.next_id = 1000
        self.per_page_cap = per_page_cap
        self.fail_with: int | None = None
        self.requests: list[tuple[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body, headers=None):
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}")

            def handle_any(self, method):
                url = urlparse(self.path)
                fake.requests.append((method, url.path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self.reply(401, {"message": "Bad credentials"})
                if fake.fail_with:
                    return self.reply(fake.fail_with, {"message": "Resource not accessible by integration"})
                parts = url.path.strip("/").split("/")
                # /repos/o/r/issues/{n}/comments
                if len(parts) == 6 and parts[3] == "issues" and parts[5] == "comments":
                    pr = int(parts[4])
                    if method == "GET":
                        q = parse_qs(url.query)
                        per = min(int(q.get("per_page", ["30"])[0]), fake.per_page_cap)
                        page = int(q.get("page", ["1"])[0])
                        items = fake.comments.get(pr, [])
                        chunk = items[(page - 1) * per : page * per]
                        headers = {}
                        if page * per < len(items):
                            base = f"http://{self.headers['Host']}{url.path}"
                            headers["Link"] = (
                                f'<{base}?per_page={per}&page={page + 1}>; rel="next", '
                                f'<{base}?per_page={per}&page={(len(items) - 1) // per + 1}>; rel="last"'
                            )
                        return self.reply(200, chunk, headers)
                    if method == "POST":
                        c = {"id": fake.next_id, "body": self.body()["body"]}
                        fake.next_id += 1
                        fake.comments.setdefault(pr, []).append(c)
                        return self.reply(201, c)
                # /repos/o/r/issues/comments/{id}
                if len(parts) == 6 and parts[3] == "issues" and parts[4] == "comments" and method == "PATCH":
                    cid = int(parts[5])
                    for items in fake.comments.values():
                        for c in items:
                            if c["id"] == cid:
                                if c.get("others"):
                                    return self.reply(403, {"message": "Resource not accessible by integration"})
                                c["body"] = self.body()["body"]
                                return self.reply(200, c)
                    return self.reply(404, {"message": "Not Found"})
                return self.reply(404, {"message": "Not Found"})

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_PATCH(self):
                self.handle_any("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class PrCommentTest(unittest.TestCase):
    def setUp(self):
        self.gh = FakeGitHub()
        self.addCleanup(self.gh.close)
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.event = os.path.join(self.dir.name, "event.json")
        with open(self.event, "w") as f:
            json.dump({"pull_request": {"number": 7}}, f)

    def run_script(self, report: str, *args: str, token: str = TOKEN):
        path = os.path.join(self.dir.name, "report.md")
        with open(path, "w") as f:
            f.write(report)
        env = dict(os.environ)
        env.update(
            GITHUB_TOKEN=token,
            GITHUB_REPOSITORY="acme/bot",
            GITHUB_API_URL=self.gh.url,
            GITHUB_EVENT_PATH=self.event,
        )
        return subprocess.run(
            [sys.executable, SCRIPT, "--body-file", path, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_creates_then_updates_the_same_comment(self):
        out = self.run_script("## run 1: FAIL")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("created pull-request comment 1000", out.stdout)
        self.assertEqual(len(self.gh.comments[7]), 1)
        self.assertTrue(self.gh.comments[7][0]["body"].startswith("<!-- probity-report -->\n## run 1"))
        out = self.run_script("## run 2: PASS")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("updated pull-request comment 1000", out.stdout)
        self.assertEqual(len(self.gh.comments[7]), 1, "a second comment was added")
        self.assertIn("## run 2: PASS", self.gh.comments[7][0]["body"])
        self.assertIn(("PATCH", "/repos/acme/bot/issues/comments/1000"), self.gh.requests)

    def test_finds_the_marker_on_a_later_page(self):
        self.gh.per_page_cap = 2
        self.gh.comments[7] = [{"id": i, "body": f"human comment {i}"} for i in range(1, 6)]
        self.gh.comments[7].append({"id": 6, "body": "<!-- probity-report -->\nold"})
        self.gh.comments[7].append({"id": 7, "body": "later human comment"})
        out = self.run_script("new report")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("updated pull-request comment 6", out.stdout)
        self.assertEqual(len(self.gh.comments[7]), 7)
        self.assertEqual(self.gh.comments[7][5]["body"], "<!-- probity-report -->\nnew report")
        gets = [p for m, p in self.gh.requests if m == "GET"]
        self.assertEqual(len(gets), 3, "pages 1-3 of 2 comments each were read")

    def test_someone_elses_comment_with_the_marker_is_left_alone(self):
        self.gh.comments[7] = [
            {"id": 1, "body": "> <!-- probity-report -->\n> quoted in a reply"},
            {"id": 2, "body": "<!-- probity-report -->\nposted by a person", "others": True},
        ]
        out = self.run_script("the report")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("created pull-request comment 1000", out.stdout)
        self.assertEqual([c["body"] for c in self.gh.comments[7][:2]],
                         ["> <!-- probity-report -->\n> quoted in a reply",
                          "<!-- probity-report -->\nposted by a person"])

    def test_markers_keep_configs_apart(self):
        self.assertEqual(self.run_script("a", "--marker", "<!-- probity: a.toml -->").returncode, 0)
        self.assertEqual(self.run_script("b", "--marker", "<!-- probity: b.toml -->").returncode, 0)
        self.assertEqual(self.run_script("a2", "--marker", "<!-- probity: a.toml -->").returncode, 0)
        bodies = [c["body"] for c in self.gh.comments[7]]
        self.assertEqual(bodies, ["<!-- probity: a.toml -->\na2", "<!-- probity: b.toml -->\nb"])

    def test_api_error_is_clear_and_fails_a_gate_run(self):
        self.gh.fail_with = 403
        out = self.run_script("x")
        self.assertEqual(out.returncode, 1)
        self.assertIn("GitHub API GET http://127.0.0.1:", out.stderr)
        self.assertIn("/repos/acme/bot/issues/7/comments answered 403", out.stderr)
        self.assertIn("Resource not accessible by integration", out.stderr)
        self.assertIn("pull-requests: write", out.stderr)
        self.assertNotIn(TOKEN, out.stderr + out.stdout)

    def test_api_error_does_not_fail_an_advisory_run(self):
        self.gh.fail_with = 500
        out = self.run_script("x", "--advisory")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("::warning title=probity comment::GitHub API GET", out.stdout)
        self.assertIn("answered 500", out.stdout)

    def test_bad_token_and_unreachable_api(self):
        out = self.run_script("x", token="wrong")
        self.assertEqual(out.returncode, 1)
        self.assertIn("answered 401: Bad credentials", out.stderr)
        self.gh.close()
        out = self.run_script("x", "--advisory")
        self.assertEqual(out.returncode, 0)
        self.assertIn("failed:", out.stdout)

    def test_long_reports_are_cut_to_githubs_limit(self):
        out = self.run_script("x" * 70000)
        self.assertEqual(out.returncode, 0, out.stderr)
        body = self.gh.comments[7][0]["body"]
        self.assertLessEqual(len(body), 65536)
        self.assertIn("report cut to fit a GitHub comment", body)

    def test_not_a_pull_request(self):
        with open(self.event, "w") as f:
            json.dump({"ref": "refs/heads/main"}, f)
        out = self.run_script("x")
        self.assertEqual(out.returncode, 1)
        self.assertIn("not a pull_request event", out.stderr)


if __name__ == "__main__":
    unittest.main()
