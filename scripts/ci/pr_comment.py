#!/usr/bin/env python3
"""Create or update ONE pull-request comment holding a probity report.

The comment is found by a hidden marker (an HTML comment, invisible on
GitHub) among the pull request's comments, every page of them: when one
carries the marker it is edited, otherwise one is created. Running the
action again on the same pull request therefore never adds a second
comment.

Python standard library only (urllib), so the GitHub runner's python3 runs
it with nothing installed. Used by the composite action in `action.yml`;
tested against a stand-in for the GitHub REST API in
`scripts/ci/test_pr_comment.py`.

    pr_comment.py --body-file report.md [--marker TEXT] [--advisory]

Reads GITHUB_TOKEN (never printed), GITHUB_REPOSITORY (owner/name),
GITHUB_API_URL (default https://api.github.com) and the pull request's
number from --pr or GITHUB_EVENT_PATH. Exit status: 0 when the comment was
written; 1 on an API or input error, unless --advisory, which prints the
error as a GitHub warning and exits 0 (a comment is a courtesy: it must
not fail an advisory run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request

DEFAULT_MARKER = "<!-- probity-report -->"
# GitHub refuses comment bodies over 65536 characters.
MAX_BODY = 65536
TRUNCATED = "\n\n… (report cut to fit a GitHub comment; the job summary has all of it)\n"


class ApiError(Exception):
    """A failed call to the GitHub API, with a message fit for a person
    (`status`: the HTTP status, when the API answered)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def request(api: str, token: str, method: str, path: str, body: dict | None = None):
    """One call to the REST API: (decoded JSON, the Link header)."""
    url = path if path.startswith("http") else api.rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    req.add_header("User-Agent", "probity-action")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            link = resp.headers.get("Link", "")
    except urllib.error.HTTPError as e:
        detail = ""
        try:
            detail = json.loads(e.read() or b"{}").get("message", "")
        except (ValueError, AttributeError):
            pass
        hint = ""
        if e.code in (401, 403, 404):
            hint = (
                " (does the workflow grant `permissions: pull-requests: write`?"
                " A pull request from a fork gets a read-only token.)"
            )
        raise ApiError(
            f"GitHub API {method} {strip_query(url)} answered {e.code}"
            f"{': ' + detail if detail else ''}{hint}",
            e.code,
        ) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ApiError(f"GitHub API {method} {strip_query(url)} failed: {reason}") from None
    try:
        return (json.loads(raw) if raw else None), link
    except ValueError:
        raise ApiError(f"GitHub API {method} {strip_query(url)} answered with something not JSON") from None


def strip_query(url: str) -> str:
    return url.split("?", 1)[0]


def next_page(link: str) -> str | None:
    """The `rel="next"` URL of a Link header, if any."""
    for part in link.split(","):
        m = re.match(r'\s*<([^>]+)>\s*;\s*rel="next"', part)
        if m:
            return m.group(1)
    return None


def find_comment(api: str, token: str, repo: str, pr: int, marker: str):
    """The first comment of the pull request whose body starts with
    `marker`, as the ones this script writes do (every page read), or
    None. A reply quoting the report holds the marker later on."""
    url = f"/repos/{repo}/issues/{pr}/comments?per_page=100"
    while url:
        comments, link = request(api, token, "GET", url)
        for c in comments or []:
            if (c.get("body") or "").startswith(marker):
                return c
        url = next_page(link)
    return None


def compose(marker: str, report: str) -> str:
    """The comment: the marker, then the report, cut to GitHub's limit."""
    body = f"{marker}\n{report}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - len(TRUNCATED)] + TRUNCATED
    return body


def upsert(api: str, token: str, repo: str, pr: int, marker: str, report: str) -> tuple[str, int]:
    """Create or update the comment: ("created" | "updated", its id)."""
    body = compose(marker, report)
    found = find_comment(api, token, repo, pr, marker)
    if found is None:
        made, _ = request(api, token, "POST", f"/repos/{repo}/issues/{pr}/comments", {"body": body})
        return "created", int(made["id"])
    try:
        request(api, token, "PATCH", f"/repos/{repo}/issues/comments/{found['id']}", {"body": body})
    except ApiError as e:
        if e.status != 403:
            raise
        # Someone else's comment that starts with the marker: not ours to
        # edit. A new one; a token that may not write fails there, named.
        made, _ = request(api, token, "POST", f"/repos/{repo}/issues/{pr}/comments", {"body": body})
        return "created", int(made["id"])
    return "updated", int(found["id"])


def pr_number(arg: str | None) -> int:
    """--pr, or the pull request of the event GitHub ran the job for."""
    if arg:
        return int(arg)
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        raise ApiError("no pull request: give --pr or run on a pull_request event")
    with open(path, encoding="utf-8") as f:
        event = json.load(f)
    number = (event.get("pull_request") or {}).get("number") or event.get("number")
    if not number:
        raise ApiError(f"no pull request in the event {path}: not a pull_request event")
    return int(number)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--body-file", required=True, help="the Markdown report to post")
    p.add_argument("--marker", default=DEFAULT_MARKER, help="hidden marker that finds the comment")
    p.add_argument("--pr", help="pull request number (default: from GITHUB_EVENT_PATH)")
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", ""))
    p.add_argument("--api", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    p.add_argument("--advisory", action="store_true", help="on an error, warn and exit 0")
    a = p.parse_args(argv)
    token = os.environ.get("GITHUB_TOKEN", "")
    try:
        if not a.repo or "/" not in a.repo:
            raise ApiError("no repository: set GITHUB_REPOSITORY or --repo owner/name")
        try:
            with open(a.body_file, encoding="utf-8") as f:
                report = f.read()
        except OSError as e:
            raise ApiError(f"cannot read the report {a.body_file}: {e.strerror}") from None
        what, cid = upsert(a.api, token, a.repo, pr_number(a.pr), a.marker, report)
        print(f"probity: {what} pull-request comment {cid}")
        return 0
    except (ApiError, ValueError) as e:
        msg = str(e)
        if token:
            msg = msg.replace(token, "***")
        if a.advisory:
            print(f"::warning title=probity comment::{msg} (advisory: the job goes on)")
            return 0
        print(f"::error title=probity comment::{msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
