"""Training reports (train --report): the log matches the progress lines; plots are PNG."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest

from tests.conftest import ADDRESS_PATTERNS
from tests.helpers import ROOT, run

PNG = b"\x89PNG\r\n\x1a\n"
LINE = re.compile(r"\s*\[\s*(\d+)\] obj=(\S+)\s+tok-err=\s*(\S+)% seq-err=\s*(\S+)% "
                  r"time=\s*(\S+)s dev-err=\s*(\S+)% dev-F1=\s*(\S+)")


def _train_with_report(address_sample, directory):
    result = run("train", "-p", ADDRESS_PATTERNS, "-i", "8", "-d", address_sample["test"],
                 "--report", directory, address_sample["train"], directory.parent / "m.model")
    assert result.exit_code == 0, result.stderr
    return result


def test_log_has_one_row_per_iteration_with_the_printed_values(address_sample,
                                                                tmp_path) -> None:
    result = _train_with_report(address_sample, tmp_path / "rep")
    printed = [m.groups() for m in map(LINE.match, result.stderr.splitlines()) if m]
    with open(tmp_path / "rep" / "iterations.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(printed) == len(rows) == 8
    for (it, obj, tok, seq, secs, dev_err, dev_f1), row in zip(printed, rows, strict=True):
        assert int(row["iteration"]) == int(it)
        assert f"{float(row['objective']):.6f}" == obj
        assert f"{float(row['token_error']):.2f}" == tok
        assert f"{float(row['sequence_error']):.2f}" == seq
        assert f"{float(row['seconds']):.2f}" == secs
        assert f"{float(row['devel_error']):.2f}" == dev_err
        assert f"{float(row['devel_f1']):.2f}" == dev_f1
        assert float(row["gradient_norm"]) > 0
    assert float(rows[0]["iteration_seconds"]) == float(rows[0]["seconds"])
    total = sum(float(r["iteration_seconds"]) for r in rows)
    assert total == pytest.approx(float(rows[-1]["seconds"]))
    log = json.loads((tmp_path / "rep" / "iterations.json").read_text())
    assert [r["iteration"] for r in log] == list(range(1, 9))
    settings = json.loads((tmp_path / "rep" / "report.json").read_text())["settings"]
    assert settings["iterations"] == 8 and settings["options"]["maxiter"] == 8


def test_plots_are_png_and_the_page_embeds_them(address_sample, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    _train_with_report(address_sample, tmp_path / "rep")
    names = ("objective.png", "token_error.png", "devel_f1.png", "time.png")
    for name in names:
        data = (tmp_path / "rep" / name).read_bytes()
        assert data[:8] == PNG and data[12:16] == b"IHDR", name
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (640, 360)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(names)
    assert "<th>algorithm</th><td>l-bfgs</td>" in page


def _blocked_matplotlib_run(args: list[str]) -> subprocess.CompletedProcess:
    """Run the CLI in a process where matplotlib cannot be imported."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from crfkit.cli import main\n"
            f"sys.argv = ['crfkit', *{args!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n"
            "    assert 'matplotlib' not in sys.modules or sys.modules['matplotlib'] is None\n"
            "    raise\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_without_matplotlib_the_log_is_written_and_one_line_says_how(address_sample,
                                                                     tmp_path) -> None:
    out = tmp_path / "rep"
    done = _blocked_matplotlib_run(["train", "-q", "-p", str(ADDRESS_PATTERNS), "-i", "3",
                                    "--report", str(out), str(address_sample["train"]),
                                    str(tmp_path / "m.model")])
    assert done.returncode == 0, done.stderr
    assert (out / "iterations.csv").exists() and (out / "iterations.json").exists()
    assert not list(out.glob("*.png"))
    hints = [line for line in done.stderr.splitlines() if "pip install 'crfkit[plot]'" in line]
    assert len(hints) == 1, done.stderr


def test_matplotlib_is_not_imported_without_plotting() -> None:
    code = ("import sys\nimport crfkit.cli, crfkit.evaluation.report, crfkit.training.tune, "
            "crfkit.evaluation.confusion\n"
            "assert 'matplotlib' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr


def test_report_directory_that_is_a_file_is_one_error_line(address_sample, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run("train", "-p", ADDRESS_PATTERNS, "--report", blocker,
                 address_sample["train"], tmp_path / "m.model")
    assert result.exit_code == 1
    assert "--report" in result.stderr and "not a directory" in result.stderr
    assert not (tmp_path / "m.model").exists()
