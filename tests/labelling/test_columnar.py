"""Labelling column blocks (crfkit.labelling.columnar) writes what label_stream writes."""

from __future__ import annotations

import io

import pytest

from crfkit.errors import InputError
from crfkit.io import text_input
from crfkit.io.columnar import read_token_blocks
from crfkit.io.reader import read_items
from crfkit.labelling import columnar
from crfkit.labelling import label as labelling
from crfkit.labelling.columnar import columnar_applies, label_blocks
from crfkit.labelling.label import LabelOptions, label_stream
from tests.helpers import run


def both(model, data: bytes, options: LabelOptions, sep: str = "auto"):
    """(text, stats or error) of label_stream over rows and of label_blocks over blocks."""
    out = []
    for read, label in ((read_items, label_stream), (read_token_blocks, label_blocks)):
        text = io.StringIO()
        try:
            stats = label(model, read(io.BytesIO(data), sep=sep), text, options, source="f")
        except InputError as err:
            stats = (err.message, err.line)
        out.append((text.getvalue(), stats))
    return out


@pytest.fixture
def small_pieces(monkeypatch):
    """Blocks of a few lines, batches of a few tokens: every seam is crossed."""
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", 40)
    monkeypatch.setattr(labelling, "BATCH_TOKENS", 7)


OPTIONS = [LabelOptions(), LabelOptions(check=True), LabelOptions(labels_only=True),
           LabelOptions(check=True, labels_only=True), LabelOptions(constraints="iob")]


@pytest.mark.parametrize("options", OPTIONS)
def test_same_text_and_stats(address_model, address_sample, small_pieces, options):
    data = address_sample["test"].read_bytes()
    rows, blocks = both(address_model, data, options)
    assert blocks == rows
    assert rows[0].count("\n\n") == 100


def test_tab_separated_input_written_with_tabs(address_model, address_sample, small_pieces):
    data = address_sample["test"].read_bytes().replace(b" ", b"\t")
    rows, blocks = both(address_model, data, LabelOptions(separator="\t", check=True), "tab")
    assert blocks == rows
    assert "\t" in rows[0]


def test_irregular_text_goes_on_through_label_stream(address_model, address_sample,
                                                     small_pieces):
    lines = address_sample["test"].read_text().split("\n")
    marked = "\n".join(lines[:60] + ["-DOCSTART- x O", ""] + lines[60:]).encode()
    rows, blocks = both(address_model, marked, LabelOptions(check=True))
    assert blocks == rows and "-DOCSTART- x O O" in rows[0] and rows[1].markers == 1
    lines[70] += " extra"
    rows, blocks = both(address_model, "\n".join(lines).encode(), LabelOptions())
    assert blocks == rows
    assert rows[1] == ("expected 3 columns, found 4", 71)


def test_too_few_columns_for_the_model(address_model):
    rows, blocks = both(address_model, b"a\nb\n\nc\n", LabelOptions())
    assert blocks == rows and rows[1][1] == 1


def test_which_labelling_takes_the_block_road(address_model):
    def applies(options, **how):
        return columnar_applies(address_model, options,
                                **{"sep": "auto", "live": False, "doc_sep": None, **how})

    assert applies(LabelOptions()) and applies(LabelOptions(check=True, constraints="iob"))
    assert applies(LabelOptions(separator="\t"), sep="tab")
    for options in (LabelOptions(nbest=2), LabelOptions(scores=True),
                    LabelOptions(marginals=True), LabelOptions(posterior=True),
                    LabelOptions(force=True)):
        assert not applies(options)
    assert not applies(LabelOptions(), live=True)
    assert not applies(LabelOptions(), doc_sep="^#")
    assert not applies(LabelOptions(), sep="tab")  # read tabs, written with spaces


def test_the_command_labels_a_file_by_blocks(address_model_file, address_sample, tmp_path,
                                             monkeypatch):
    used = []
    original = columnar.label_blocks

    def recording(*args, **kwargs):
        used.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(columnar, "label_blocks", recording)
    out = tmp_path / "out.txt"
    result = run("label", "-t", "1", "-m", address_model_file, address_sample["test"], out)
    assert result.exit_code == 0, result.stderr
    assert used and out.read_text().count("\n\n") == 100
