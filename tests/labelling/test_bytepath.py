"""The byte path (crfkit.labelling.bytepath) writes the column labeller's bytes, or steps
aside for input it does not read as the column labeller does."""

from __future__ import annotations

import io

import numpy as np
import pytest

from crfkit.features.patterns import read_patterns
from crfkit.io.columnar import read_token_blocks
from crfkit.io.reader import read_sequences
from crfkit.labelling import bytepath, bytetables
from crfkit.labelling.bytepath import byte_path_applies, label_file_bytes
from crfkit.labelling.columnar import label_blocks
from crfkit.labelling.label import LabelOptions
from crfkit.training.train import TrainOptions, train
from tests.helpers import one_error_line, run

# Every command kind the byte path covers: offsets out to +-3, absolute positions,
# literal text around and between cells, a pattern without cells, label transitions.
PATTERNS = """\
u:a=%x[-2,0]
u:b=%x[-1,0]/%x[0,1]
u:c=%x[0,0]
u:d=%x[1,0]/%x[2,1]
u:e=%x[3,1]
u:f=%x[@1,1]/%x[@-1,0]
u:g=x%x[0,1]y%x[-3,0]z
u:bias
b
"""


@pytest.fixture(scope="module")
def cells_model(address_sample, tmp_path_factory):
    path = tmp_path_factory.mktemp("bytepath") / "cells.pat"
    path.write_text(PATTERNS)
    return train(read_patterns(path), read_sequences(address_sample["train"]),
                 TrainOptions(maxiter=3))


@pytest.fixture(scope="module")
def relative_model(address_sample, tmp_path_factory):
    """The same patterns without absolute positions: tokens three or more from both ends
    of their sequence read no padding."""
    path = tmp_path_factory.mktemp("bytepath") / "relative.pat"
    path.write_text("".join(line + "\n" for line in PATTERNS.splitlines() if "@" not in line))
    return train(read_patterns(path), read_sequences(address_sample["train"]),
                 TrainOptions(maxiter=3))


def varied(sample: bytes) -> bytes:
    """The sample with unknown and UTF-8 words, 1- to 4-token sequences, runs of spaces
    and tabs, edge spaces, blank lines of white space, a UTF-8 signature and no final
    newline."""
    lines = sample.decode().split("\n")[:400]
    lines[3] = "zzqx Xx O"
    lines[5] = "Straße\tX  O"
    lines[6] = "  東京   Xx\tO "
    short = ["é x O", "", "a b O", "c d O", "", "one  only O", "  ", "w x O", "y z O",
             "v v O", "u u O", " \t "]
    return b"\xef\xbb\xbf" + ("\n\n".join(["\n".join(short), "\n".join(lines)]) +
                             "\n\n\n1 d O").encode()


def reference(model, data: bytes, options: LabelOptions, sep: str = "auto"):
    text = io.StringIO()
    stats = label_blocks(model, read_token_blocks(io.BytesIO(data), sep=sep), text, options,
                         source="f")
    return text.getvalue().encode(), stats


def by_bytes(model, data: bytes, options: LabelOptions, tmp_path, sep: str = "auto",
             **how):
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    stats = label_file_bytes(model, str(path), out, options, sep=sep, **how)
    out.flush()
    return None if stats is None else (raw.getvalue(), stats)


OPTIONS = [LabelOptions(), LabelOptions(check=True), LabelOptions(labels_only=True),
           LabelOptions(check=True, labels_only=True)]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("direct", [bytetables.DIRECT_CODES, 0])
def test_same_bytes_and_stats(cells_model, address_sample, tmp_path, monkeypatch, options,
                              direct):
    monkeypatch.setattr(bytetables, "DIRECT_CODES", direct)  # 0: every pattern hashed
    monkeypatch.setattr(bytepath, "WINDOW_BYTES", 500)  # windows cut between sequences
    data = varied(address_sample["test"].read_bytes())
    assert byte_path_applies(cells_model, options, encoding="utf-8", sep="auto")
    assert by_bytes(cells_model, data, options, tmp_path, threads=2) == \
        reference(cells_model, data, options)


def test_without_absolute_positions(relative_model, address_sample, tmp_path, monkeypatch):
    monkeypatch.setattr(bytepath, "WINDOW_BYTES", 500)
    data = varied(address_sample["test"].read_bytes())
    assert by_bytes(relative_model, data, LabelOptions(), tmp_path, threads=2) == \
        reference(relative_model, data, LabelOptions())


def test_every_thread_gets_as_many_windows():
    for size in (1, 999, 1 << 20, (1 << 20) + 1, 13_427_316):
        for threads in (1, 2, 3, 8):
            window = bytepath._window_bytes(size, threads)
            windows = -(-size // window)
            assert window <= bytepath.WINDOW_BYTES
            assert windows % threads == 0 or window == 1


def test_tab_separated(cells_model, address_sample, tmp_path):
    sample = address_sample["test"].read_bytes().replace(b" ", b"\t")
    # spaces inside and around fields, an empty field, a blank line of white space
    data = b"Str a\tX\tO\n a \t\tO\n \t \n" + sample + b"\n \n\n1\td\tO"
    options = LabelOptions(separator="\t", check=True)
    assert by_bytes(cells_model, data, options, tmp_path, sep="tab") == \
        reference(cells_model, data, options, "tab")


def test_space_separated_keeps_tabs_in_tokens(cells_model, address_sample, tmp_path):
    data = b"a\tb  Xx O\n\tc Xx O \n \t \n" + address_sample["test"].read_bytes()
    options = LabelOptions()
    assert by_bytes(cells_model, data, options, tmp_path, sep="space") == \
        reference(cells_model, data, options, "space")


def test_every_hash_colliding_still_finds_the_right_ids(cells_model, address_sample,
                                                        tmp_path, monkeypatch):
    monkeypatch.setattr(bytetables, "DIRECT_CODES", 0)
    data = b"\n".join(address_sample["test"].read_bytes().split(b"\n")[:150]) + \
        b"\nzzqx Xx O\n"
    options = LabelOptions(check=True)
    found = by_bytes(cells_model, data, options, tmp_path, hash_mask=np.uint64(0))
    assert found == reference(cells_model, data, options)


@pytest.mark.parametrize("irregular", [
    b"a Xx O\r\nb Xx O\r\n",  # CRLF
    b"a Xx O\n\n-DOCSTART- -X- O\n\nb Xx O\n",  # a document marker
    b"a Xx O\n\xff Xx O\n",  # not UTF-8
    b"a Xx O\nb Xx O extra\n",  # another column count
    b"a\nb\n",  # too few columns for the model
    b"\n \n",  # no token
    b"",
])
def test_irregular_input_is_left_to_the_column_labeller(cells_model, tmp_path, irregular):
    assert by_bytes(cells_model, irregular, LabelOptions(), tmp_path) is None


def test_numba_is_not_loaded_for_text_it_can_refuse_without(cells_model, tmp_path):
    loaded = []
    for data in (b"a Xx O\r\n", b"-DOCSTART- -X- O\n", b"\xff Xx O\n", b"", b"a Xx O\n"):
        by_bytes(cells_model, data, LabelOptions(), tmp_path, loading=lambda: loaded.append(1))
    assert loaded == [1]


def test_what_the_byte_path_serves(cells_model, address_model):
    def applies(model, options, encoding="utf-8", sep="auto"):
        return byte_path_applies(model, options, encoding=encoding, sep=sep)

    assert applies(cells_model, LabelOptions()) and applies(cells_model, LabelOptions(
        separator="\t"), sep="tab")
    assert applies(cells_model, LabelOptions(), "UTF8")
    assert not applies(cells_model, LabelOptions(), "utf-8-sig")  # writes a signature
    assert not applies(cells_model, LabelOptions(), "latin-1")
    assert not applies(address_model, LabelOptions())  # %X, %t, %m and * patterns
    for options in (LabelOptions(constraints="iob"), LabelOptions(nbest=2),
                    LabelOptions(prefer_kernels=True), LabelOptions(marginals=True)):
        assert not applies(cells_model, options)


def test_the_command_takes_the_byte_path_or_reports_at_the_line(
        cells_model, address_sample, tmp_path, monkeypatch):
    model = tmp_path / "m.model"
    cells_model.save(model)
    good = tmp_path / "good.txt"
    good.write_bytes(varied(address_sample["test"].read_bytes()))
    labelled, served = {}, []
    original = bytepath.label_file_bytes

    def recording(*args, **kwargs):
        stats = original(*args, **kwargs)
        served.append(stats is not None)
        return stats

    monkeypatch.setattr(bytepath, "label_file_bytes", recording)
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(bytepath, "BYTE_PATH_BYTES", threshold)
        out = tmp_path / f"out{threshold}.txt"
        result = run("label", "-q", "-m", model, good, out)
        assert result.exit_code == 0, result.stderr
        labelled[threshold] = out.read_bytes()
    assert served == [True] and labelled[0] == labelled[1 << 40]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a Xx O\nb Xx O\n\nc Xx\n")
    one_error_line(run("label", "-m", model, bad, tmp_path / "x.txt"), "bad.txt:4:",
                   "expected 3 columns, found 2")


def test_with_many_labels_a_smaller_file_repays_loading_numba(tmp_path, monkeypatch):
    """numpy's best path costs about L x L a token: the size thresholds, measured with 22
    labels, shrink by (22 / L)^2 for more labels and stay for fewer."""
    from crfkit.labelling import label as label_module

    path = tmp_path / "in.txt"
    path.write_bytes(b"x\n" * 5000)  # 10,000 bytes
    monkeypatch.setattr(bytepath, "BYTE_PATH_BYTES", 100_000)
    assert not bytepath.pays(str(path), 12) and not bytepath.pays(str(path), 22)
    assert not bytepath.pays(str(path), 69)  # 100,000 * (22/69)^2 = 10,166 > 10,000
    assert bytepath.pays(str(path), 70)  # 9,877
    assert not bytepath.pays("-", 1000)
    assert label_module.labels_scaled(16 << 20, 92) == int((16 << 20) * (22 / 92) ** 2)
    assert label_module.labels_scaled(16 << 20, 9) == 16 << 20
