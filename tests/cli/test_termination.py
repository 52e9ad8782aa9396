"""``kill`` (SIGTERM) stops a training as Ctrl-C does: the model trained so far is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from crfkit.cli.termination import TERMINATED_STATUS
from crfkit.model.model import Model

ROOT = Path(__file__).resolve().parents[2]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a job with '&'


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_sigterm_during_training_keeps_the_model_and_exits_143(tmp_path, background):
    model = tmp_path / "m.model"
    argv = [sys.executable, "-m", "crfkit.cli", "train", "-i", "1000000", "-e", "0",
            "-p", str(ROOT / "patterns/address.pat"), str(ROOT / "data/address-train.txt"),
            str(model)]
    lines = []
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=_ignore_sigint if background else None) as child:
        for line in child.stderr:
            lines.append(line)
            if line.lstrip().startswith("[   3]"):
                child.send_signal(signal.SIGTERM)
                break
        lines.extend(child.stderr)
    assert child.returncode == TERMINATED_STATUS, "".join(lines)
    assert any("interrupted after" in line for line in lines), "".join(lines)
    kept = Model.load(str(model))
    assert kept.info["stop_reason"] == "interrupted" and kept.info["iterations"] >= 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.model"]  # no temporary left
