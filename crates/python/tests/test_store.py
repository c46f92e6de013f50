"""Runs written to the store are the CLI's runs: `probity runs` lists
them (when the binary is built), and the SQLite file holds them."""

import sqlite3
import subprocess
from pathlib import Path

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


def test_a_url_is_refused_not_taken_for_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url, says in [
        ("postgres://ci:s3cret-pw@127.0.0.1/probity", "writes a SQLite file"),
        ("postgress://ci:s3cret-pw@127.0.0.1/probity", "not a store this knows"),
    ]:
        with pytest.raises(probity.ConfigError) as e:
            probity.Experiment("stored", SIM, paper_inputs(5), paper_validators()).run(store=url)
        assert says in str(e.value), str(e.value)
        assert "s3cret-pw" not in str(e.value)
    # Nothing was created under the URL's name.
    assert list(tmp_path.iterdir()) == []
