"""Failures at the command line's edges: outputs that cannot be written, usage errors,
what -q silences. Each is one stderr line and a fixed exit status; no training is lost."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import pytest

from crfkit.io import atomic, fileformat
from crfkit.model.model import Model
from tests.helpers import ROOT, one_error_line, run

PATTERNS = ROOT / "patterns/address.pat"
FULL = "/dev/full"
NO_SPACE = "cannot write: No space left on device"

needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full here")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, address_model) -> dict[str, Path]:
    """Ten address sequences, their model and a CRF++ text model: inputs for every command."""
    tmp = tmp_path_factory.mktemp("tiny")
    data = tmp / "data.txt"
    blocks = (ROOT / "data/address-test.txt").read_text().split("\n\n")
    data.write_text("\n\n".join(blocks[:10]) + "\n\n")
    model = tmp / "address.model"
    address_model.save(model)
    crfpp = tmp / "crfpp.txt"  # the text layout of 'crf_learn -t': labels A, B; one unigram
    crfpp.write_text("version: 100\ncost-factor: 1\nmaxid: 6\nxsize: 1\n\nA\nB\n\n"
                     "U00:%x[0,0]\nB\n\n0 B\n4 U00:a\n\n"
                     + "".join(f"{w}\n" for w in (0.1, -0.2, 0.3, 0.0, 1.0, -1.0)))
    return {"data": data, "model": model, "crfpp": crfpp}


# (arguments, where the output goes): "file" puts /dev/full as the output argument,
# "stdout" sends standard output there.
COMMANDS = [
    (["train", "-q", "-i", "2", "-p", PATTERNS, "{data}", FULL], "file"),
    (["train", "-a", "list"], "stdout"),
    (["tune", "-q", "-i", "2", "-p", PATTERNS, "-d", "{data}", "{data}", FULL], "file"),
    (["label", "-m", "{model}", "{data}", FULL], "file"),
    (["label", "-m", "{model}", "{data}"], "stdout"),
    (["eval", "{data}"], "stdout"),
    (["dump", "{model}", FULL], "file"),
    (["dump", "{model}"], "stdout"),
    (["info", "{model}"], "stdout"),
    (["patterns", PATTERNS], "stdout"),
    (["patterns", PATTERNS, "{data}"], "stdout"),
    (["convert", "{crfpp}", FULL], "file"),
    (["--help"], "stdout"),
    (["train", "--help"], "stdout"),
    (["help", "train"], "stdout"),
    (["help", "--troff", "train"], "stdout"),
    (["--version"], "stdout"),
]


@needs_dev_full
@pytest.mark.parametrize("args, output", COMMANDS,
                         ids=lambda v: " ".join(getattr(a, "name", a) for a in v)
                         if isinstance(v, list) else str(v))
def test_an_output_that_cannot_be_written_is_one_line_and_exit_status_1(tiny, args, output):
    """Run for real (a subprocess): the interpreter's own flush of standard output at exit
    is part of what is tested."""
    argv = [str(a).format(**tiny) for a in args]
    with open(FULL if output == "stdout" else os.devnull, "wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "crfkit.cli", *argv], stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    where = FULL if output == "file" else "<stdout>"
    assert lines[0] == f"crfkit: error: {where}: {NO_SPACE}"


@contextmanager
def _full_disk_at(target: Path):
    """``atomic_output`` whose writes to ``target`` fail as on a full disk (at write time)."""
    real = atomic.atomic_output

    @contextmanager
    def output(path, **kwargs):
        with real(path, **kwargs) as out:
            if Path(path) == target:
                raise OSError(errno.ENOSPC, "No space left on device")
            yield out

    yield output


def test_a_trained_model_that_cannot_be_written_is_kept_elsewhere(tiny, tmp_path, monkeypatch):
    target = tmp_path / "out.model"
    with _full_disk_at(target) as output:
        monkeypatch.setattr(fileformat, "atomic_output", output)
        monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
        result = run("train", "-q", "-i", "2", "-p", PATTERNS, tiny["data"], target)
    line = one_error_line(result, f"{target}: {NO_SPACE}; the trained model is kept in ")
    assert result.exit_code == 1
    kept = Path(line.rsplit(" ", 1)[1])
    assert kept.parent == tmp_path and not target.exists()
    model = Model.load(kept)
    assert model.info["iterations"] == 2 and model.info["train_file"] == str(tiny["data"])


def test_the_model_path_is_probed_by_a_real_write(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "write", full)
    with pytest.raises(atomic.OutputError, match=NO_SPACE):
        atomic.check_writable(tmp_path / "m.model")
    assert os.listdir(tmp_path) == []


def test_usage_errors_are_one_line_with_a_hint_and_exit_status_2():
    for args, needle in ((["train", "--no-such-option"], "--no-such-option"),
                         (["train", "-i", "x"], "'x' is not a valid integer"),
                         (["no-such-command"], "no-such-command"),
                         (["info"], "Missing argument 'MODEL'")):
        result = run(*args)
        line = one_error_line(result, needle)
        assert result.exit_code == 2
        command = "" if args[0] == "no-such-command" else f" {args[0]}"  # after the program
        assert line.startswith("crfkit: error: ") and line.endswith(f"{command} --help')")


def test_quiet_training_still_shows_warnings(tiny, tmp_path):
    devel = tmp_path / "devel.txt"
    devel.write_text("18669 d NOT-A-LABEL\n\n")
    result = run("train", "-q", "-i", "1", "-p", PATTERNS, "-d", devel, tiny["data"],
                 tmp_path / "m.model")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("* warning: ") and "NOT-A-LABEL" in lines[0]


def test_quiet_labelling_prints_no_summary(tiny, tmp_path):
    loud = run("label", "-c", "-m", tiny["model"], tiny["data"], tmp_path / "a.txt")
    quiet = run("label", "-q", "-c", "-m", tiny["model"], tiny["data"], tmp_path / "b.txt")
    assert "token accuracy" in loud.stderr
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()


def test_the_reading_status_line_is_erased_when_reading_is_interrupted(monkeypatch):
    from crfkit import progress as progress_module

    monkeypatch.setattr(progress_module, "STATUS_INTERVAL", 0.0)
    stream = StringIO()
    reporter = progress_module.Progress(stream, live=True)

    def interrupted():
        yield from (object() for _ in range(3))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for _ in reporter.counted(interrupted()):
            pass
    assert "tokens/s" in stream.getvalue() and stream.getvalue().endswith("\r\x1b[K")


def test_the_training_header_names_the_label_order(tiny, tmp_path):
    first = run("train", "-i", "1", "-p", PATTERNS, tiny["data"], tmp_path / "1.model")
    second = run("train", "--order", "2", "-i", "1", "-p", PATTERNS, tiny["data"],
                 tmp_path / "2.model")
    assert "* crf order 1, l-bfgs: " in first.stderr, first.stderr
    assert "* crf order 2, l-bfgs: " in second.stderr, second.stderr


def test_convert_says_which_formats_it_expected(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    line = one_error_line(run("convert", garbage, tmp_path / "out.model"), str(garbage))
    assert "not a CRF++, Wapiti or CRFsuite model" in line and "crfkit model" not in line


def test_label_output_ending_in_gz_is_compressed(tiny, tmp_path):
    import gzip

    plain, packed = tmp_path / "out.txt", tmp_path / "out.txt.gz"
    for out in (plain, packed):
        assert run("label", "-m", tiny["model"], tiny["data"], out).exit_code == 0
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes() != b""


def test_dump_is_ascii_with_an_ascii_arrow(tiny):
    result = run("dump", tiny["model"])
    assert result.exit_code == 0 and result.stdout.isascii()
    assert any("->" in line.split("\t")[1] for line in result.stdout.splitlines()
               if line.count("\t") == 2)


def test_eval_exits_1_only_for_unreadable_input_or_a_broken_scheme(tmp_path):
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("a O I-NP\nb O O\n\n")  # all wrong, and I-NP starts a chunk
    assert run("eval", tagged).exit_code == 0  # bad scores are no error
    one_error_line(run("eval", "--scheme", "iob2", tagged), f"{tagged}:1:", "scheme iob2")
    assert run("eval", "--scheme", "iob2", tagged).exit_code == 1


def test_the_interrupted_line_erases_a_terminal_status_line_first():
    from crfkit.cli.failures import interrupted_line

    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    assert interrupted_line(Terminal()) == "\r\x1b[Kcrfkit: interrupted"
    assert interrupted_line(StringIO()) == "crfkit: interrupted"  # a log file: no escapes
