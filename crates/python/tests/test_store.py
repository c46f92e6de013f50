"""Runs written to the store are the CLI's runs: `probity runs` lists
them (when the binary is built), and the SQLite file holds them."""

import json
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import probity
import pytest
from conftest import SIM, paper_inputs, paper_validators, probity_binary


def test_a_stored_run_is_read_by_the_cli(tmp_path: Path) -> None:
    store = tmp_path / ".probity" / "runs.db"
    first = probity.Experiment("stored", SIM, paper_inputs(5), paper_validators(), outputs_per_input=4).run(store=store)
    second = probity.Experiment("stored", SIM, paper_inputs(5), paper_validators(), outputs_per_input=4).run(store=store)
    assert (first.run_id, second.run_id) == (1, 2)
    # A stored run's samples are read back: the failure message quotes outputs.
    assert len(first.samples) == 20
    db = sqlite3.connect(str(store))
    rows = db.execute("SELECT id, name, status FROM runs ORDER BY id").fetchall()
    assert rows == [(1, "stored", "complete"), (2, "stored", "complete")]
    assert db.execute("SELECT COUNT(*) FROM samples WHERE run_id = 1").fetchone() == (20,)
    exe = probity_binary()
    if exe is None:
        return  # the CLI is not built here; the store itself was checked
    runs = subprocess.run([exe, "runs", "--store", str(store)], capture_output=True, text=True, timeout=60)
    assert runs.returncode == 0, runs.stderr
    assert "stored" in runs.stdout
    report = subprocess.run(
        [exe, "report", "1", "--store", str(store), "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert "contraction_validator" in report.stdout


def test_a_mistyped_or_dead_url_is_named_not_taken_for_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(probity.ConfigError) as e:
        probity.Experiment("stored", SIM, paper_inputs(5), paper_validators()).run(
            store="postgress://ci:s3cret-pw@127.0.0.1/probity"
        )
    assert "not a store this knows" in str(e.value), str(e.value)
    assert "s3cret-pw" not in str(e.value)
    # A server that is not there (port 9: nothing listens) is a store
    # error naming the store, its password masked, before anything runs.
    calls = []

    def system(i: str) -> str:
        calls.append(i)
        return "ok"

    with pytest.raises(probity.StoreError) as dead:
        probity.Experiment("stored", system, paper_inputs(5), paper_validators()).run(
            store="postgres://ci:s3cret-pw@127.0.0.1:9/probity"
        )
    assert not isinstance(dead.value, probity.StoreLockedError)
    assert "127.0.0.1:9/probity" in str(dead.value), str(dead.value)
    assert "s3cret-pw" not in str(dead.value)
    assert calls == []
    # Nothing was created under the URLs' names.
    assert list(tmp_path.iterdir()) == []


def test_runs_go_to_a_postgresql_store_the_cli_reads(postgres_url: str) -> None:
    experiment = probity.Experiment("team", SIM, paper_inputs(6), paper_validators(), outputs_per_input=5)
    first, second = experiment.run(store=postgres_url), experiment.run(store=postgres_url)
    assert first.run_id is not None and second.run_id is not None
    assert first.run_id != second.run_id
    # Read back from the store: the samples and the failure message.
    assert len(first.samples) == 30
    assert [c.n for c in first.checks] == [30, 30]
    exe = probity_binary()
    if exe is None:
        return
    runs = subprocess.run([exe, "runs", "--store", postgres_url], capture_output=True, text=True, timeout=60)
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout.count("team") == 2, runs.stdout
    report = subprocess.run(
        [exe, "report", str(first.run_id), "--store", postgres_url, "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )
    assert report.returncode == 0, report.stderr
    checks = {c["name"]: c for c in json.loads(report.stdout)["checks"]}
    for c in first.checks:
        assert checks[c.name]["rate"]["n"] == c.n
        assert checks[c.name]["rate"]["estimate"] == pytest.approx(c.rate)


def test_a_wrong_password_is_a_store_error_that_never_shows_it(postgres_url: str) -> None:
    parts = urlsplit(postgres_url)
    wrong = urlunsplit(parts._replace(netloc=f"{parts.username}:not-the-pw-0x5@{parts.hostname}:{parts.port}"))
    with pytest.raises(probity.StoreError) as e:
        probity.Experiment("team", SIM, paper_inputs(2), paper_validators()).run(store=wrong)
    message = str(e.value)
    assert "not-the-pw-0x5" not in message
    assert "password" in message, message
