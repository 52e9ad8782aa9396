"""l2sgd's calibration.* parameters: the walk over rates that train_l2sgd.c makes, and
their refusals (the weights against python-crfsuite: test_crfsuite_online.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crfkit.optim.l2sgd import Calibration, calibrate
from tests.helpers import CHUNK_TRAIN, one_error_line, run

LAM = 0.5


def _walk(loss_of_eta, c: Calibration) -> tuple[list[float], float]:
    """The rates tried (in order) and the one chosen, for a sample loss given per rate."""
    tried = []

    def epoch(W, last, state, order, lam, t0):
        eta = 1.0 / (lam * t0)
        if eta > 0:
            tried.append(eta)
        return loss_of_eta(eta), 0, 0, False

    chosen = calibrate(epoch, 3, np.arange(2, dtype=np.int64), LAM, c)
    return tried, chosen


def test_the_walk_goes_up_then_down_counting_the_rates_that_lower_the_loss():
    # below the loss at zero weights (10) for every rate up to 1; the lowest at 0.4
    def loss(eta):
        return 10.0 if eta == 0 or eta > 1 else 5.0 + abs(math.log(eta / 0.4))

    tried, chosen = _walk(loss, Calibration(candidates=3))
    assert tried == pytest.approx([0.1, 0.2, 0.4, 0.05, 0.025, 0.0125])
    assert chosen == pytest.approx(0.4)
    tried, _ = _walk(loss, Calibration(eta=0.5, rate=4.0, candidates=2))
    assert tried == pytest.approx([0.5, 2.0, 0.125, 0.5 / 16])  # 2.0 does not lower it


def test_max_trials_counts_as_crfsuite_counts():
    tried, _ = _walk(lambda eta: 10.0 - eta, Calibration(max_trials=4))
    assert len(tried) == 3  # trials numbered from 1, the walk stops on reaching max_trials


def test_rates_that_never_lower_the_loss_run_to_max_trials():
    """No rate counts as a candidate: the walk halves until max_trials, and the lowest
    loss among those tried (here the smallest rate's) wins."""
    tried, chosen = _walk(lambda eta: 10.0 + eta, Calibration(candidates=1))
    assert tried == pytest.approx([0.1 / 2 ** i for i in range(19)])
    assert chosen == tried[-1]


@pytest.mark.parametrize("options,needle", [
    (["--calibration-eta", "0.1"], "applies to -a l2sgd only"),
    (["-a", "l2sgd", "--calibration-rate", "1"], "--calibration-rate must be > 1"),
    (["-a", "l2sgd", "--calibration-samples", "0"], "--calibration-samples must be >= 1"),
    (["-a", "l2sgd", "--calibration-eta", "-1"], "--calibration-eta must be > 0"),
])
def test_bad_calibration_options_are_refused_in_one_line(tmp_path, options, needle):
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB\n")
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    one_error_line(run("train", "-p", tmp_path / "p.pat", *options, tmp_path / "t.txt",
                       tmp_path / "m"), needle)


def test_the_cli_records_the_calibration_given(tmp_path):
    from crfkit.model.model import Model

    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB\n")
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    result = run("train", "-q", "-a", "l2sgd", "-i", 2, "--calibration-eta", "0.3",
                 "--calibration-max-trials", 3, "-p", tmp_path / "p.pat", tmp_path / "t.txt",
                 tmp_path / "m")
    assert result.exit_code == 0, result.stderr
    options = Model.load(tmp_path / "m").info["options"]
    assert options["calibration_eta"] == 0.3 and options["calibration_max_trials"] == 3
    assert "calibration_rate" not in options
