"""sgd-l1's defaults: the stopping rule on synthetic epoch histories, the calibrated
initial rate, and where the algorithm's own defaults apply (TrainOptions, the command
line, the model's record)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crfkit.io.reader import Sequence
from crfkit.kernels.epochs import SgdEpochs
from crfkit.optim import sgd
from crfkit.optim.sgd import ProgressStop
from crfkit.training.corpus import encode_training
from crfkit.training.train import TrainOptions
from crfkit.vectors import l1_norm
from tests.helpers import PATTERNS, ROOT, random_corpus, run


def learnable_corpus(seed: int, n_seqs: int) -> list[Sequence]:
    """Sequences whose label follows the word (mostly) and the previous label: a corpus
    SGD can learn, so that the best rate is neither the smallest nor the largest."""
    rng = np.random.default_rng(seed)
    words, tags = ["a", "B", "c1", "dd", "E"], ["N", "V"]
    seqs = []
    for _ in range(n_seqs):
        n = int(rng.integers(2, 8))
        rows, prev = [], 0
        for _ in range(n):
            w = int(rng.integers(len(words)))
            y = (w + prev) % 3 if rng.random() < 0.9 else int(rng.integers(3))
            rows.append([words[w], tags[w % 2], "XYZ"[y]])
            prev = y
        seqs.append(Sequence(rows=rows, lines=list(range(1, n + 1))))
    return seqs


def stop_epoch(history, eps: float, window: int) -> int | None:
    """The 1-based epoch after which the rule stops, or None."""
    rule = ProgressStop(eps, window)
    for k, f in enumerate(history, 1):
        if rule(f):
            return k
    return None


def geometric(level: float, scale: float, r: float, n: int) -> list[float]:
    """f_k = level + scale r^k: SGD's epoch objective with exponentially decaying steps."""
    return [level + scale * r ** k for k in range(1, n + 1)]


@pytest.mark.parametrize("r", [0.5, 0.7, 0.85])
@pytest.mark.parametrize("eps, window", [(0.02, 3), (0.05, 2), (0.01, 5)])
def test_stops_where_the_recent_fall_becomes_a_small_share_of_the_whole(r, eps, window):
    # recent / whole = (r^(k-w) - r^k) / (r - r^k); first k > w where it is below eps
    want = next(k for k in range(window + 1, 1000)
                if r ** (k - window) - r ** k < eps * (r - r ** k))
    assert stop_epoch(geometric(0.0, 1.0, r, 400), eps, window) == want
    # blind to the level the objective tends to and to its scale (corpus size)
    for level, scale in [(1e4, 1.0), (5e5, 3e4), (0.0, 1e-3)]:
        assert stop_epoch(geometric(level, scale, r, 400), eps, window) == want


def test_a_slower_decay_trains_longer():
    epochs = [stop_epoch(geometric(100.0, 5e4, r, 500), 0.02, 3) for r in (0.5, 0.7, 0.9)]
    assert epochs[0] < epochs[1] < epochs[2]


def test_one_noisy_epoch_does_not_stop_a_falling_objective():
    history = [50000.0, 30000.0, 20000.0, 20500.0, 15000.0, 12000.0, 12100.0, 10000.0]
    assert stop_epoch(history, 0.02, 3) is None
    # with a window of one epoch the same up-tick stops it: what the window is for
    assert stop_epoch(history, 0.02, 1) == 4


def test_an_objective_that_rises_over_the_window_stops_and_nothing_stops_before_it():
    rising = [100.0, 50.0, 40.0, 45.0, 46.0, 47.0]
    assert stop_epoch(rising, 0.02, 3) == 6
    assert stop_epoch(rising[:3] + [39.0, 38.0, 37.0], 0.02, 3) is None
    flat = [7.0] * 10  # no fall at all: stops as soon as the window is full
    assert stop_epoch(flat, 0.02, 3) == 4
    assert stop_epoch([100.0] * 3, 0.02, 3) is None


def test_sgd_defaults_are_its_own_and_explicit_values_win():
    o = TrainOptions(algo="sgd-l1")
    assert (o.rho1, o.stopeps, o.stopwin) == (sgd.DEFAULT_RHO1, sgd.DEFAULT_STOP_EPS,
                                              sgd.DEFAULT_STOP_WINDOW)
    assert o.rho1 > 0
    assert (TrainOptions().rho1, TrainOptions().stopeps, TrainOptions().stopwin) == (0.0, 1e-5, 10)
    # ap, pa, arow: CRFsuite's epsilon 0 (every epoch asked for runs)
    assert (TrainOptions(algo="ap").stopeps, TrainOptions(algo="ap").rho1) == (0.0, 0.0)
    given = TrainOptions(algo="sgd-l1", rho1=0.0, stopeps=1e-4, stopwin=7)
    assert (given.rho1, given.stopeps, given.stopwin) == (0.0, 1e-4, 7)


def test_train_command_uses_and_records_the_sgd_defaults(address_sample, tmp_path):
    from crfkit.model.model import Model

    model = tmp_path / "m.model"
    result = run("train", "-a", "sgd-l1", "-p", ROOT / "patterns/address.pat",
                 address_sample["train"], model)
    assert result.exit_code == 0, result.stderr
    info = Model.load(model).info
    assert info["stop_reason"].startswith("converged (the last 3 epochs"), info["stop_reason"]
    assert 3 < info["iterations"] < 100
    options = info["options"]
    assert (options["rho1"], options["stopeps"], options["stopwin"]) == (0.3, 0.02, 3)
    steps = math.log2(options["eta0"] / sgd.CALIBRATION_ETA)  # the calibrated rate is recorded
    assert steps == round(steps)
    assert math.isfinite(info["objective"]) and np.count_nonzero(Model.load(model).weights)


def sample_objective(epochs, x0, sample, eta, alpha, rho1_share):
    W, q, state = x0.copy(), np.zeros(x0.size), np.zeros(1)
    loss = epochs(W, sample, 0, eta, alpha, rho1_share, q, state)[0]
    return loss + rho1_share * l1_norm(W)


@pytest.mark.parametrize("rho1", [0.0, 0.5])
def test_calibrated_rate_beats_its_neighbours_on_the_sample(rho1):
    c = encode_training(PATTERNS, learnable_corpus(5, n_seqs=300))
    n = c.data.n_seqs
    epochs = SgdEpochs(c.space, c.data)
    x0 = np.zeros(c.space.n_weights)
    eta = sgd.calibrate(epochs, x0, n, rho1, 0.9, seed=3, samples=100)
    assert eta == sgd.calibrate(epochs, x0, n, rho1, 0.9, seed=3, samples=100)  # reproducible
    steps = math.log2(eta / sgd.CALIBRATION_ETA)
    assert steps == round(steps) and abs(steps) < sgd.CALIBRATION_TRIALS  # inside the grid
    # the sample, drawn again the same way; its penalty is its share of the corpus's
    rng = np.random.default_rng(3)
    sample = np.sort(rng.choice(n, size=100, replace=False)).astype(np.int64)
    share = rho1 * 100 / n
    best = sample_objective(epochs, x0, sample, eta, 0.9, share)
    for neighbour in (eta * 2, eta / 2):
        assert best <= sample_objective(epochs, x0, sample, neighbour, 0.9, share)


def test_minimize_calibrates_only_without_a_rate(monkeypatch):
    c = encode_training(PATTERNS, random_corpus(5, n_seqs=20, max_len=5))
    calls = []
    real = sgd.calibrate
    monkeypatch.setattr(sgd, "calibrate", lambda *a, **k: calls.append(a) or real(*a, **k))
    x0 = np.zeros(c.space.n_weights)
    calibrated = sgd.minimize(SgdEpochs(c.space, c.data), x0, c.data.n_seqs, maxiter=2,
                              alpha=0.9)
    assert len(calls) == 1
    eta = real(SgdEpochs(c.space, c.data), x0, c.data.n_seqs, sgd.DEFAULT_RHO1, 0.9, 0)
    given = sgd.minimize(SgdEpochs(c.space, c.data), x0, c.data.n_seqs, maxiter=2, eta0=eta,
                         alpha=0.9)
    assert len(calls) == 1
    assert np.array_equal(calibrated.x, given.x)
