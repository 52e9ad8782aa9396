"""Labelling a file in two processes (crfkit.labelling.forklabel) writes what one process writes."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from crfkit.labelling import forklabel
from tests.helpers import run

ROOT = Path(__file__).resolve().parents[2]
TEST = ROOT / "data/address-test.txt"


@pytest.fixture(scope="module")
def model(address_model_file):
    return address_model_file


@pytest.fixture
def split_small_files(monkeypatch):
    """Split any file, and record what each two-process attempt returned."""
    monkeypatch.setattr(forklabel, "MIN_BYTES", 0)
    outcomes = []
    original = forklabel.label_file_in_two

    def recording(*args, **kwargs):
        outcomes.append(original(*args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(forklabel, "label_file_in_two", recording)
    return outcomes


def test_split_offset_is_just_after_a_blank_line_past_the_middle(tmp_path, monkeypatch):
    monkeypatch.setattr(forklabel, "MIN_BYTES", 0)
    for newline in ("\n", "\r\n"):
        text = newline.join(["a X", "b Y", "", "c X", "d Y", "", "e X", "f Y", ""])
        path = tmp_path / "f.txt"
        path.write_bytes(text.encode())
        offset = forklabel.split_offset(str(path))
        data = path.read_bytes()
        assert len(data) // 2 <= offset < len(data)
        assert data[:offset].endswith(b"\n\n" if newline == "\n" else b"\n\r\n")
        assert data[offset:].startswith(b"e X")
    (tmp_path / "one.txt").write_text("a X\nb Y\nc Z\n")
    assert forklabel.split_offset(str(tmp_path / "one.txt")) is None  # no blank line after
    (tmp_path / "f.gz").write_bytes(gzip.compress(b"a X\n\nb Y\n\nc Z\n"))
    assert forklabel.split_offset(str(tmp_path / "f.gz")) is None
    monkeypatch.setattr(forklabel, "MIN_BYTES", 1 << 18)
    assert forklabel.split_offset(str(path)) is None  # small files stay in one process


def test_encodings_that_can_be_cut_at_a_blank_line():
    assert all(map(forklabel.splittable, ["utf-8", "latin-1", "euc-jp", "shift_jis", "cp1256"]))
    assert not any(map(forklabel.splittable, ["utf-16", "utf-32", "iso-2022-jp", "utf-7"]))


@pytest.mark.parametrize("options", [["-c"], ["-l"], ["--sep", "tab"]])
def test_two_processes_write_what_one_process_writes(model, tmp_path, split_small_files,
                                                     options):
    data = tmp_path / "in.txt"
    text = TEST.read_text(encoding="utf-8")
    if "--sep" in options:
        text = "\n".join(line.replace(" ", "\t") for line in text.split("\n"))
    data.write_text(text, encoding="utf-8")
    results = {}
    for threads in ("1", "2"):
        out = tmp_path / f"out{threads}.txt"
        results[threads] = run("label", "-m", model, "-t", threads, *options, data, out)
        assert results[threads].exit_code == 0, results[threads].stderr
    assert len(split_small_files) == 1 and split_small_files[0] is not None  # -t 2 split
    assert (tmp_path / "out2.txt").read_bytes() == (tmp_path / "out1.txt").read_bytes()
    assert results["2"].stderr == results["1"].stderr  # -c: the same counts and accuracy


def cut_where_columns_change(blocks: list[str], tmp_path: Path) -> list[str]:
    """The blocks, their last column dropped from block k on, k chosen so that the file is
    cut just before block k: each half alone is consistent, the whole file is not."""
    probe = tmp_path / "probe.txt"
    for k in range(len(blocks) // 3, len(blocks)):
        damaged = blocks[:k] + ["\n".join(row.rsplit("\t", 1)[0] for row in b.split("\n"))
                                for b in blocks[k:]]
        text = "\n\n".join(damaged) + "\n"
        probe.write_text(text, encoding="utf-8")
        offset = forklabel.split_offset(str(probe))
        if offset == len(("\n\n".join(damaged[:k]) + "\n\n").encode()):
            return damaged
    raise AssertionError("no cut lands where the columns change")


@pytest.mark.parametrize("damage", ["short line in the second half", "columns change at the cut"])
def test_errors_are_reported_as_one_process_reports_them(model, tmp_path, split_small_files,
                                                         damage):
    blocks = TEST.read_text(encoding="utf-8").strip("\n").split("\n\n")
    half = len(blocks) // 2
    if damage == "short line in the second half":
        rows = blocks[half + 3].split("\n")
        rows[1] = rows[1].split()[0]
        blocks[half + 3] = "\n".join(rows)
    else:  # one column fewer from exactly the sequence where the file is cut
        blocks = cut_where_columns_change(blocks, tmp_path)
    data = tmp_path / "bad.txt"
    data.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    results = [run("label", "-m", model, "-t", threads, data, tmp_path / f"o{threads}.txt")
               for threads in ("1", "2")]
    assert results[0].exit_code != 0 and f"{data}:" in results[0].stderr  # file:line
    assert (results[1].exit_code, results[1].stderr) == (results[0].exit_code, results[0].stderr)
    assert split_small_files == [None]  # tried, fell back to one process
    assert not (tmp_path / "o2.txt").exists()
