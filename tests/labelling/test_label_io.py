"""``crfkit label`` input and output: co-process use on a pipe, ``-DOCSTART-`` document
markers, the training encoding as default, and the progress line on a terminal."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import click.testing
import pytest

import crfkit.labelling.label as labelling
from crfkit.labelling import forklabel
from crfkit.labelling.label import TokenMeter
from crfkit.model.model import Model
from tests.helpers import one_error_line, run

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n"
TRAIN = ("the DT B-NP\ncat NN I-NP\nsat VBD B-VP\non IN O\nthe DT B-NP\nmat NN I-NP\n\n"
         "a DT B-NP\ndog NN I-NP\nran VBD B-VP\n\nbig JJ B-NP\ndogs NNS I-NP\nbark VBP B-VP\n")
# CoNLL-2002 puts the marker right before a sentence, CoNLL-2003 adds a blank line.
DOCS = ("-DOCSTART- -DOCSTART- B-NP\nthe DT B-NP\ndog NN I-NP\n\nbig JJ B-NP\n"
        "-DOCSTART- -X- O\n\ncat NN I-NP\n\n-DOCSTART-\n")



@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("label-io")
    (tmp / "p.pat").write_text(PATTERNS)
    (tmp / "train.txt").write_text(TRAIN)
    path = tmp / "m.model"
    result = run("train", "-q", "-p", tmp / "p.pat", tmp / "train.txt", path)
    assert result.exit_code == 0, result.stderr
    return path


# --- co-process ------------------------------------------------------------------------------
def read_sequence_output(fd: int, timeout: float = 60.0) -> bytes:
    """Read from ``fd`` until a blank line ends a sequence's output, or fail after timeout."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n\n"):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], \
            f"no complete output after {timeout} s, got {data!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"end of output, got {data!r}"
        data += chunk
    return data


def test_pipe_input_is_labelled_one_sequence_at_a_time(model):
    """A co-process: write a sentence, read its labels, write the next (Wapiti does this)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crfkit.cli", "label", "-m", str(model), "-l"], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        process.stdin.write(b"the DT\ndog NN\nran VBD\n\n")
        process.stdin.flush()
        assert read_sequence_output(process.stdout.fileno()) == b"B-NP\nI-NP\nB-VP\n\n"
        process.stdin.write(b"-DOCSTART- -X-\n\nbig JJ\n")  # not complete yet ...
        process.stdin.flush()
        assert read_sequence_output(process.stdout.fileno()) == b"O\n\n"  # ... the marker is
        process.stdin.write(b"dogs NNS\n\n")
        process.stdin.flush()
        assert read_sequence_output(process.stdout.fileno()) == b"B-NP\nI-NP\n\n"
        process.stdin.close()
        assert process.wait(60) == 0
        assert process.stdout.read() == b"" and process.stderr.read() == b""
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_everything_before_a_pause_is_written_and_flushed(model, threads):
    """Also from the thread pool, which otherwise keeps batches in flight."""
    from crfkit.io.reader import PAUSE, DocStart, Sequence
    from crfkit.labelling.label import LabelOptions, label_stream

    given, expected = [0], []

    def items():
        for k in range(12):
            for _ in range(k % 3):
                given[0] += 1
                yield Sequence([["the", "DT"], ["dog", "NN"]], [1, 2])
            if k % 4 == 1:
                yield DocStart(["-DOCSTART-", "-X-"], 1, blank_after=True)
            expected.append(given[0])
            yield PAUSE

    class Output:
        text, flushed = "", []

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:  # what is written, and how far the input has been read
            self.flushed.append((self.text.count("the DT"), len(expected)))

    out = Output()
    label_stream(Model.load(model), items(), out, LabelOptions(), threads=threads)
    assert out.flushed == [(n, i + 1) for i, n in enumerate(expected)] and expected[-1] == 12
    assert out.text.count("-DOCSTART- -X- O\n\n") == 3


# --- document markers ------------------------------------------------------------------------
def test_docstart_lines_are_copied_in_place_with_o_labels(model):
    result = run("label", "-m", model, input=DOCS)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "-DOCSTART- -DOCSTART- B-NP O"
    assert lines[1:4] == ["the DT B-NP B-NP", "dog NN I-NP I-NP", ""]
    assert lines[4:9] == ["big JJ B-NP B-NP", "", "-DOCSTART- -X- O O", "", "cat NN I-NP I-NP"]
    assert lines[9:] == ["", "-DOCSTART- O O O", ""]  # padded to the width of token lines
    # every input line has its output line, in order
    assert [line.split()[:3] for line in lines if line] == \
        [(line.split() + ["O", "O"])[:3] for line in DOCS.split("\n") if line]


@pytest.mark.parametrize(("options", "marker"), [
    (["-l"], "O"),
    (["-l", "-n", "2", "--nbest-columns"], "O O"),
    (["--sep", "tab"], "-DOCSTART-\t-X-\tO\tO"),
    (["-n", "2"], "-DOCSTART- -X- O O"),
    (["-s"], "-DOCSTART- -X- O O"),
])
def test_docstart_output_in_every_mode(model, options, marker):
    text = "the DT B-NP\n\n-DOCSTART- -X- O\nbig JJ B-NP\n"
    if "tab" in options:
        text = text.replace(" ", "\t")
    result = run("label", "-m", model, *options, input=text)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines.count(marker) == 1
    after = lines[lines.index(marker) + 1]
    assert after.startswith(("#", "B-NP", "big")) and "DOCSTART" not in result.stdout[
        result.stdout.index(marker) + len(marker):]


def test_docstart_with_marginals_keeps_the_column_count(model):
    result = run("label", "-m", model, "--marginals", input=DOCS)
    assert result.exit_code == 0, result.stderr
    widths = {len(line.split()) for line in result.stdout.split("\n") if line}
    assert widths == {3 + 1 + len(Model.load(model).labels)}


def test_checked_output_with_docstart_is_scoreable(model, tmp_path):
    out = tmp_path / "out.txt"
    result = run("label", "-m", model, "-c", "-", out, input=DOCS)
    assert result.exit_code == 0, result.stderr
    assert "4 tokens" in result.stderr  # accuracy over real tokens only
    scored = run("eval", out)
    assert scored.exit_code == 0, scored.stderr
    assert scored.stdout.startswith("processed 7 tokens")  # 4 tokens and 3 O/O markers


def test_training_ignores_docstart_lines(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "train.txt").write_text("-DOCSTART- -DOCSTART- O\n" + TRAIN.replace(
        "\n\n", "\n-DOCSTART- -X- O\n\n"))
    (tmp_path / "devel.txt").write_text(DOCS)
    model = tmp_path / "m.model"
    result = run("train", "-q", "-p", tmp_path / "p.pat", "-d", tmp_path / "devel.txt",
                 tmp_path / "train.txt", model)
    assert result.exit_code == 0, result.stderr
    info = Model.load(model).info
    assert (info["sequences"], info["tokens"]) == (3, 12)
    dumped = run("dump", model)
    assert dumped.exit_code == 0 and "DOCSTART" not in dumped.stdout


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


# --- progress --------------------------------------------------------------------------------
@pytest.fixture
def fast_progress(monkeypatch):
    """Redraw after every batch of 4 tokens."""
    monkeypatch.setattr(labelling, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(labelling, "BATCH_TOKENS", 4)


def fake_tty(monkeypatch) -> None:
    """CliRunner's stderr (and stdout) claim to be a terminal."""
    monkeypatch.setattr(click.testing._NamedTextIOWrapper, "isatty", lambda self: True,
                        raising=False)


def test_progress_on_a_terminal(model, tmp_path, monkeypatch, fast_progress):
    fake_tty(monkeypatch)
    text = "the DT\ndog NN\nran VBD\n\n" * 20
    result = run("label", "-m", model, "-", tmp_path / "out.txt", input=text)
    assert result.exit_code == 0, result.stderr
    shown = result.stderr.split("\r")  # each redraw starts with \r
    assert shown[0] == "" and shown[-2].strip() == "" and shown[-1] == ""  # erased at the end
    counts = [int(line.split()[2]) for line in shown[1:-2]]
    assert counts == list(range(6, 61, 6))  # a batch is two sequences of three tokens
    assert all(line.rstrip().endswith(" tokens/s") for line in shown[1:-2])
    assert (tmp_path / "out.txt").read_text().count("\n\n") == 20


@pytest.mark.parametrize("case", ["quiet", "not a tty", "output to the terminal"])
def test_no_progress_when_quiet_or_not_a_terminal(model, tmp_path, monkeypatch, fast_progress,
                                                  case):
    if case != "not a tty":
        fake_tty(monkeypatch)
    args = {"quiet": ["-q", "-", tmp_path / "out.txt"], "not a tty": ["-", tmp_path / "o.txt"],
            "output to the terminal": []}[case]
    result = run("label", "-m", model, *args, input="the DT\ndog NN\n\n" * 20)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


def test_token_meter_is_rate_limited_and_counts_the_other_half():
    now = [0.0]
    screen = io.StringIO()
    meter = TokenMeter(screen, also=lambda: 1000, clock=lambda: now[0])
    meter.add(10)  # too early: nothing drawn
    now[0] = 0.1
    meter.add(10)
    assert screen.getvalue() == ""
    now[0] = 0.5
    meter.add(30)
    line = "crfkit label: 1,050 tokens, 2,100 tokens/s"
    assert screen.getvalue() == "\r" + line
    meter.close()
    assert screen.getvalue() == "\r" + line + "\r" + " " * len(line) + "\r"
    meter.close()  # only once


def test_forked_half_counts_through_shared_memory():
    count = forklabel._SharedCount()
    pid = os.fork()
    if pid == 0:
        count.add(5)
        count.add(7)
        os._exit(0)
    os.waitpid(pid, 0)
    assert count.value() == 12
