"""``crfkit label`` input and output: the training encoding as default."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from crfkit.cli import cli
from crfkit.model import Model
from tests.helpers import one_error_line

PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n"
TRAIN = ("the DT B-NP\ncat NN I-NP\nsat VBD B-VP\non IN O\nthe DT B-NP\nmat NN I-NP\n\n"
         "a DT B-NP\ndog NN I-NP\nran VBD B-VP\n\nbig JJ B-NP\ndogs NNS I-NP\nbark VBP B-VP\n")


def run(*args, input: str | bytes | None = None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("label-io")
    (tmp / "p.pat").write_text(PATTERNS)
    (tmp / "train.txt").write_text(TRAIN)
    path = tmp / "m.model"
    result = run("train", "-q", "-p", tmp / "p.pat", tmp / "train.txt", path)
    assert result.exit_code == 0, result.stderr
    return path


# --- encodings -------------------------------------------------------------------------------
def test_label_reads_and_writes_the_training_encoding_by_default(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "train.txt").write_bytes(TRAIN.replace("cat", "café").encode("latin-1"))
    model = tmp_path / "m.model"
    result = run("train", "-q", "-p", tmp_path / "p.pat", "--encoding", "latin-1",
                 tmp_path / "train.txt", model)
    assert result.exit_code == 0, result.stderr
    assert Model.load(model).info["encoding"] == "iso8859-1"
    assert "encoding:" in run("info", model).stdout
    (tmp_path / "test.txt").write_bytes("the DT\ncafé NN\n".encode("latin-1"))
    out = tmp_path / "out.txt"
    result = run("label", "-m", model, tmp_path / "test.txt", out)
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == "the DT B-NP\ncafé NN I-NP\n\n".encode("latin-1")
    # --encoding still wins, and a decode error names the file, line, offset and option
    failed = run("label", "-m", model, "--encoding", "utf-8", tmp_path / "test.txt", out)
    one_error_line(failed, f"{tmp_path / 'test.txt'}:2:", "byte offset 10", "--encoding")


def test_models_without_a_recorded_encoding_label_utf8(model, tmp_path):
    old = Model.load(model)
    old.info.pop("encoding")
    old.save(tmp_path / "old.model")
    result = run("label", "-m", tmp_path / "old.model", input="big JJ\ncafé NN\n".encode())
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.decode("utf-8").split("\n")[1].startswith("café NN ")
    shown = " ".join(run("label", "--help").stdout.split())
    assert "the encoding the model was trained with" in shown


def test_unknown_encoding_is_one_error_line(model):
    one_error_line(run("label", "-m", model, "--encoding", "no-such", input="a DT\n"),
                   "unknown encoding 'no-such'")
