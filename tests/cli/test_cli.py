"""End-to-end CLI behaviour: train -> label -> eval, and every bad-input case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import ROOT, one_error_line, run

SMALL_PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n"
TRAIN = "the DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\na DT B-NP\ndog NN I-NP\nran VBD B-VP\n"


@pytest.fixture
def files(tmp_path: Path):
    pat = tmp_path / "small.pat"
    pat.write_text(SMALL_PATTERNS)
    train = tmp_path / "train.txt"
    train.write_text(TRAIN)
    return tmp_path, pat, train


@pytest.mark.slow
def test_quick_start_pipeline_learns(tmp_path: Path):
    """The README quick start on the shipped sample: train, label -c, eval."""
    model = tmp_path / "address.model"
    out = tmp_path / "out.txt"
    result = run("train", "-p", str(ROOT / "patterns/address.pat"), "-i", "40",
                 str(ROOT / "data/address-train.txt"), str(model))
    assert result.exit_code == 0, result.stderr
    assert "[  40]" in result.stderr  # one progress line per iteration
    result = run("label", "-m", str(model), "-c", str(ROOT / "data/address-test.txt"), str(out))
    assert result.exit_code == 0, result.stderr
    first = out.read_text().splitlines()[0].split()
    assert len(first) == 4  # token, shape, gold, predicted
    result = run("eval", "--format", "json", str(out))
    import json

    report = json.loads(result.stdout)
    assert report["overall"]["f1"] > 90.0


def test_label_from_stdin_to_stdout_and_labels_only(files):
    tmp, pat, train = files
    model = tmp / "m.model"
    assert run("train", "-q", "-p", str(pat), str(train), str(model)).exit_code == 0
    result = run("label", "-m", str(model), input="the DT\ncat NN\n\na DT\n")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("the DT ") and lines[0].split()[-1] in ("B-NP", "I-NP", "B-VP")
    assert lines[2] == ""  # blank line between sequences
    result = run("label", "-m", str(model), "-l", input="the DT\ncat NN\n")
    assert result.stdout.split() == ["B-NP", "I-NP"]


def test_training_reproduces_a_learnable_corpus(files):
    tmp, pat, train = files
    model = tmp / "m.model"
    assert run("train", "-q", "-p", str(pat), "-2", "0.01", str(train), str(model)).exit_code == 0
    result = run("label", "-m", str(model), "-l", str(train))
    assert result.stdout.split() == [line.split()[-1] for line in TRAIN.splitlines() if line]


# --- bad input: one line naming file (and line), non-zero exit, no output file --------------
def training_refused(files, *needles: str) -> None:
    """Training on the fixture's files fails in one line naming ``needles``; no model."""
    tmp, pat, train = files
    one_error_line(run("train", "-p", str(pat), str(train), str(tmp / "m.model")), *needles)
    assert not (tmp / "m.model").exists()


@pytest.mark.parametrize("text,line", [("the DT B-NP\ncat I-NP\n", 2), ("the\ncat\n", 1)],
                         ids=["inconsistent-columns", "label-column-missing"])
def test_bad_training_file(files, text, line):
    _, _, train = files
    train.write_text(text)
    training_refused(files, f"{train}:{line}")


def test_pattern_column_beyond_data(files):
    _, pat, _ = files
    pat.write_text("U00:%x[0,0]\nU01:%x[0,5]\n")
    training_refused(files, f"{pat}:2", "column 5")


@pytest.mark.parametrize("line,column", [
    ("X00:%x[0,0]", 1), ("U00:%y[0,0]", 6), ("U00:%x[0,0", 11), ("U00:%x[a,0]", 8),
    ('U00:%t[0,0,"\\d]', 12), ('U00:%m[0,0,"*a"]', 13), ("U00:%x[0,-1]", 5),
])
def test_unparseable_pattern_line(files, line, column):
    _, pat, _ = files
    pat.write_text("U00:%x[0,0]\n\n" + line + "\n")
    training_refused(files, f"{pat}:3:{column}:")


def test_empty_training_file(files):
    _, _, train = files
    train.write_text("\n\n")
    training_refused(files, str(train))


def test_failed_training_keeps_the_previous_model(files):
    tmp, pat, train = files
    model = tmp / "m.model"
    model.write_bytes(b"previous model")
    train.write_text("the DT B-NP\n\ncat NN\n")
    one_error_line(run("train", "-p", str(pat), str(train), str(model)), f"{train}:3")
    assert model.read_bytes() == b"previous model"
    assert sorted(os.listdir(tmp)) == ["m.model", "small.pat", "train.txt"]


@pytest.mark.parametrize("content", [b"", b"hello world\n", b"\x89PNG\r\n\x1a\n" + bytes(100)])
def test_foreign_model_file(files, content):
    tmp, _, train = files
    model = tmp / "bad.model"
    model.write_bytes(content)
    one_error_line(run("label", "-m", str(model), str(train)), str(model))


def test_truncated_model_file(files):
    tmp, pat, train = files
    model = tmp / "m.model"
    assert run("train", "-q", "-p", str(pat), str(train), str(model)).exit_code == 0
    data = model.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 1):
        model.write_bytes(data[:cut])
        one_error_line(run("label", "-m", str(model), str(train)), str(model))


def test_label_input_with_too_few_columns(files):
    tmp, pat, train = files
    model = tmp / "m.model"
    assert run("train", "-q", "-p", str(pat), str(train), str(model)).exit_code == 0
    bad = tmp / "one-column.txt"
    bad.write_text("the\ncat\n")
    out = tmp / "out.txt"
    one_error_line(run("label", "-m", str(model), str(bad), str(out)), f"{bad}:1")
    assert not out.exists()


def test_bad_option_values(files):
    tmp, pat, train = files
    for option in (["-2", "-1"], ["-w", "-1"], ["-i", "-3"], ["-f", "0"]):
        result = run("train", "-p", str(pat), *option, str(train), str(tmp / "m.model"))
        one_error_line(result, option[0])


def test_help_lists_choices_and_never_truncates():
    from crfkit.cli import ALGORITHM_NAMES, MODEL_TYPE_NAMES
    from crfkit.model.types import MODEL_TYPES
    from crfkit.training.train import ALGORITHMS

    assert MODEL_TYPE_NAMES == tuple(MODEL_TYPES)
    assert ALGORITHM_NAMES == tuple(ALGORITHMS)
    top = run("--help").stdout
    commands = top.split("Commands:")[1]
    assert "..." not in commands and len(commands.strip().splitlines()) == 10
    train = " ".join(run("train", "--help").stdout.split())
    assert "crf|memm|maxent|skipchain" in train and "l-bfgs|sgd-l1|ap" in train
    assert "standard input" in train and "crfkit.model" in train
    assert "the -d file and the pattern file" in train
    label = " ".join(run("label", "--help").stdout.split())
    assert "INPUT and OUTPUT default to standard input and output" in label
