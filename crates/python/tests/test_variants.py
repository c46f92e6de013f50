"""A ``[[variant]]`` file run from Python by the engine's variants runner:
the same group and matrix ``probity run FILE`` makes, read back by the CLI."""

import json
import subprocess
from pathlib import Path

import probity
import pytest
from conftest import probity_binary

CONFIG = """
name = "polite"

[system]
provider = "sim"
contractions = 0.02
omit_welcome = 0.0

[experiment]
outputs_per_input = 10
concurrency = 4

[[input]]
id = "q1"
text = "Thank you!"

[[input]]
id = "q2"
text = "Tell me about trains."

[[input]]
id = "q3"
text = "Thank you so much."

[[input]]
id = "q4"
text = "What is a lighthouse?"

[[input]]
id = "q5"
text = "Describe the sea."

[[validator]]
name = "contraction_validator"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.8

[[variant]]
name = "base"

[[variant]]
name = "sloppy"
system.contractions = 0.9
"""


def write(tmp_path: Path) -> Path:
    path = tmp_path / "ab.toml"
    path.write_text(CONFIG)
    return path


def test_a_variants_file_runs_from_python_with_the_cli_matrix(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    result = probity.run_variants(write(tmp_path), store)
    assert [v.name for v in result.variants] == ["base", "sloppy"]
    assert result.reference == "base"
    assert all(v.status == "complete" for v in result.variants)
    # The sloppy variant overuses contractions 9 times in 10: it fails the
    # check the base passes, and the paired comparison says it is worse.
    assert result.variant("base").passed
    assert not result.variant("sloppy").passed
    assert not result.passed
    assert result.variant("sloppy").rate("contraction_validator") < result.variant("base").rate("contraction_validator")
    text = json.dumps(result.comparison)
    assert "sloppy" in text and "contraction_validator" in text
    assert "polite: 2 variants" in str(result)
    exe = probity_binary()
    if exe is None:
        return
    shown = subprocess.run(
        [exe, "report", str(result.variants[1].run_id), "--variants", "--format", "json", "--store", str(store)],
        capture_output=True, text=True, timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["group"] == result.group


def test_a_variants_file_with_an_unknown_variant_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(probity.ConfigError, match="nope"):
        probity.run_variants(write(tmp_path), tmp_path / "runs.db", variants=["nope"])


def test_nothing_to_resume_is_a_config_error_as_in_the_cli(tmp_path: Path) -> None:
    with pytest.raises(probity.ConfigError, match="nothing to resume"):
        probity.run_variants(write(tmp_path), tmp_path / "runs.db", resume=True)


def test_a_matrix_file_runs_its_product_from_python(tmp_path: Path) -> None:
    # The same file with a [matrix] in place of its [[variant]] tables:
    # 2 contraction rates × 2 seeds = 4 variants, named by their values.
    base = CONFIG[: CONFIG.index("[[variant]]")]
    path = tmp_path / "matrix.toml"
    path.write_text(base + '[matrix]\nsystem.contractions = { tidy = 0.02, sloppy = 0.9 }\nsystem.seed = [1, 2]\n')
    result = probity.run_variants(path, tmp_path / "runs.db")
    names = [v.name for v in result.variants]
    assert names == [
        "contractions=tidy · seed=1",
        "contractions=tidy · seed=2",
        "contractions=sloppy · seed=1",
        "contractions=sloppy · seed=2",
    ]
    assert result.reference == "contractions=tidy · seed=1"
    for name in names:
        sloppy = "sloppy" in name
        assert result.variant(name).passed is not sloppy, name
    # An empty list is refused before any call, naming the file and line.
    path.write_text(base + "[matrix]\nsystem.seed = []\n")
    line = (base + "[matrix]\n").count("\n") + 1
    with pytest.raises(probity.ConfigError, match=rf"matrix.toml: line {line}: \[matrix\]: system.seed: an empty list"):
        probity.run_variants(path, tmp_path / "runs2.db")
