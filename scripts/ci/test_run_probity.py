"""Tests of run_probity.sh (the action's run step) with a stand-in
`probity` on PATH that records its arguments, writes a Markdown report
and exits with the status a test asks for.

    python3 -m unittest discover -s scripts/ci -v
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_probity.sh")

FAKE = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$FAKE_ARGS"
while [ $# -gt 0 ]; do
  if [ "$1" = --markdown ]; then printf '## probity report (exit %s)\\n' "$FAKE_EXIT" >> "$2"; fi
  shift
done
exit "$FAKE_EXIT"
"""


class RunProbityTest(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        fake = os.path.join(bindir, "probity")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, 0o755)
        self.path = bindir + os.pathsep + os.environ["PATH"]

    def run_step(self, exit_code: int, mode: str, **env):
        summary = os.path.join(self.dir, "summary.md")
        output = os.path.join(self.dir, "output")
        e = dict(os.environ)
        e.update(
            PATH=self.path,
            FAKE_EXIT=str(exit_code),
            FAKE_ARGS=os.path.join(self.dir, "args"),
            PROBITY_CONFIG="demo/probity.toml",
            PROBITY_BASELINE="polite-assistant",
            PROBITY_MODE=mode,
            PROBITY_OUT=os.path.join(self.dir, "out"),
            GITHUB_STEP_SUMMARY=summary,
            GITHUB_OUTPUT=output,
        )
        e.update(env)
        p = subprocess.run(["bash", SCRIPT], env=e, capture_output=True, text=True, timeout=60)
        with open(e["FAKE_ARGS"]) as f:
            args = f.read().split("\n")
        with open(summary) as f:
            s = f.read()
        with open(output) as f:
            o = f.read()
        return p, args, s, o

    def test_runs_with_baseline_and_writes_the_summary(self):
        p, args, summary, output = self.run_step(0, "gate", PROBITY_ARGS="--sequential --confidence 0.9")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(args[:3], ["run", "demo/probity.toml", "--quiet"])
        self.assertIn("--baseline", args)
        self.assertEqual(args[args.index("--baseline") + 1], "polite-assistant")
        self.assertIn("--sequential", args)
        self.assertEqual(args[args.index("--confidence") + 1], "0.9")
        self.assertEqual(summary, "## probity report (exit 0)\n")
        self.assertIn("exit-code=0\n", output)

    def test_gate_mode_exits_as_the_run(self):
        for code in (1, 2, 3):
            p, _, summary, output = self.run_step(code, "gate")
            self.assertEqual(p.returncode, code)
            self.assertIn(f"exit-code={code}", output)
            self.assertIn(f"(exit {code})", summary)
            self.assertIn("::error", p.stdout)

    def test_advisory_mode_warns_but_passes_except_on_bad_configuration(self):
        for code in (1, 3):
            p, _, _, output = self.run_step(code, "advisory")
            self.assertEqual(p.returncode, 0)
            self.assertIn("::warning", p.stdout)
            self.assertIn(f"exit-code={code}", output)
        p, _, _, _ = self.run_step(2, "advisory")
        self.assertEqual(p.returncode, 2)

    def test_no_baseline_and_a_bad_mode(self):
        p, args, _, _ = self.run_step(0, "advisory", PROBITY_BASELINE="")
        self.assertNotIn("--baseline", args)
        e = dict(os.environ, PATH=self.path, PROBITY_MODE="strict", PROBITY_OUT=self.dir)
        p = subprocess.run(["bash", SCRIPT], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("mode must be advisory or gate", p.stdout)


if __name__ == "__main__":
    unittest.main()
