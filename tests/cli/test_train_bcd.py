"""crfkit train -a bcd, --kappa and --sparse (Wapiti's options) from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, one_error_line, run, trained_model

PATTERNS = "u:w=%x[0,0]\nu:t=%x[0,1]\n*:pt=%x[-1,1]\nB\n"


def test_bcd_trains_labels_and_records_kappa(tmp_path: Path):
    model = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-a", "bcd", "-1", "0.05", "-2",
                          "0.01", "--kappa", "2", "-i", "30")
    info = Model.load(model).info
    assert info["algorithm"] == "bcd" and info["options"]["kappa"] == 2.0
    assert "sparse" not in info["options"]
    out = run("label", "-m", model, "-c", tmp_path / "train.txt").stdout
    assert run("eval", input=out).output.count("FB1: 100.00") >= 1


@pytest.mark.parametrize("algo", ["l-bfgs", "bcd"])
def test_sparse_changes_no_bit(tmp_path: Path, algo: str):
    """Wapiti's sparse forward-backward is how crfkit's kernels always work: the flag is
    accepted (-s or --sparse) and the model is the same file."""
    dense = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-a", algo, "-1", "0.3", "-i", "8")
    dense_bytes = dense.read_bytes()
    for flag in ("-s", "--sparse"):
        sparse = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-a", algo, "-1", "0.3",
                               "-i", "8", flag)
        assert sparse.read_bytes() == dense_bytes


@pytest.mark.parametrize("options,needle", [
    (["-a", "bcd", "--kappa", "0"], "--kappa"),
    (["-a", "bcd", "--order", "2"], "second-order"),
    (["-a", "bcd", "-T", "memm"], "memm"),
    (["-a", "bcd", "-p", "s.pat"], "-a bcd"),
])
def test_bcd_refusals(tmp_path: Path, options: list[str], needle: str):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "s.pat").write_text(PATTERNS + 's:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]\n')
    (tmp_path / "train.txt").write_text(CHUNK_TRAIN)
    options = [str(tmp_path / o) if o.endswith(".pat") else o for o in options]
    if "-p" not in options:
        options += ["-p", str(tmp_path / "p.pat")]
    one_error_line(run("train", "-q", *options, tmp_path / "train.txt", tmp_path / "m.model"),
                   needle)
