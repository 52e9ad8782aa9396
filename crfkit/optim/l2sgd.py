"""Stochastic gradient descent with an L2 penalty, as CRFsuite's ``l2sgd`` trains.

Minimises ``sum_s loss_s(w) + rho2/2 |w|^2`` one sequence at a time (the
penalty shared out as ``lam = rho2 / N`` per sequence) with the decaying rate
``eta_t = 1 / (lam (t0 + t))``, ``t0 = 1 / (lam eta0)``. The epoch itself is the
caller's (:class:`crfkit.kernels.crfsuite_epochs.OnlineEpochs`); this driver owns the
weights and the lazy-decay state, orders the sequences as CRFsuite shuffles them
(:mod:`crfkit.optim.crandom`: one permutation, shuffled again before the calibration
and before every epoch), reports, stops, and returns the weights of the epoch with the
lowest objective (CRFsuite keeps them).

``eta0`` is calibrated as CRFsuite does (its ``calibration.*`` parameters,
:class:`Calibration`): on the first ``samples`` sequences of the shuffled order, one
epoch from zero weights per candidate rate. The rate starts at ``eta`` and is
multiplied by ``rate`` while a trial lowers the sample's loss below its value at zero
weights, until ``candidates`` such trials; then (or at the first trial that does not)
it restarts at ``eta / rate`` and is divided by ``rate`` until ``candidates`` trials
have lowered it; ``max_trials`` trials at most. The rate of the lowest finite loss wins.
The value reported per epoch is the online objective (each sequence's loss at the
weights it was seen with, plus the penalty at the end of the epoch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.optim.crandom import crfsuite_orders
from crfkit.vectors import dot

# epoch(W, last, state, order, lam, t0) -> (sum of losses, token errors, sequence errors,
# overflowed); W, last (per-weight decay marks) and state updated in place.
L2SgdEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float],
                      "tuple[float, int, int, bool]"]


@dataclass(frozen=True)
class Calibration:
    """CRFsuite's ``calibration.*`` parameters of l2sgd, with its defaults."""

    eta: float = 0.1
    rate: float = 2.0
    samples: int = 1000
    candidates: int = 10
    max_trials: int = 20

    def refusal(self) -> str | None:
        """The one-line refusal of a bad value, or None."""
        if not (self.eta > 0 and np.isfinite(self.eta)):
            return f"--calibration-eta must be > 0, got {self.eta}"
        if not (self.rate > 1 and np.isfinite(self.rate)):
            return f"--calibration-rate must be > 1, got {self.rate}"
        for name, value in (("samples", self.samples), ("candidates", self.candidates),
                            ("max-trials", self.max_trials)):
            if value < 1:
                return f"--calibration-{name} must be >= 1, got {value}"
        return None


def calibrate(epoch: L2SgdEpoch, n_weights: int, sample: np.ndarray, lam: float,
              c: Calibration = Calibration()) -> float:
    """The initial rate eta0 CRFsuite's calibration picks on ``sample`` (module docstring)."""
    def loss_after_epoch(t0: float) -> float:
        W, last, state = np.zeros(n_weights), np.zeros(n_weights), np.zeros(2)
        loss, _, _, overflowed = epoch(W, last, state, sample, lam, t0)
        value = loss + 0.5 * lam * len(sample) * dot(W, W)
        return np.inf if overflowed or not np.isfinite(value) else value

    initial = loss_after_epoch(np.inf)  # a zero rate: the loss at zero weights
    best_eta, best = c.eta, np.inf
    eta, left, decreasing, trials = c.eta, c.candidates, False, 1
    while left > 0 or not decreasing:
        value = loss_after_epoch(1.0 / (lam * eta))
        lowered = value < initial
        left -= lowered
        if value < best:
            best_eta, best = eta, value
        if decreasing:
            eta /= c.rate
        elif lowered and left > 0:
            eta *= c.rate
        else:
            decreasing, left, eta = True, c.candidates, c.eta / c.rate
        trials += 1
        if trials >= c.max_trials:
            break
    return best_eta


def minimize(epoch: L2SgdEpoch, x0: np.ndarray, n_seqs: int, *, rho2: float,
             eta0: float | None = None, maxiter: int = 1000, seed: int = 0,
             stop_eps: float = 1e-6, stop_window: int = 10,
             on_iteration: IterationHook | None = None,
             calibration: Calibration = Calibration(), drawn: int = 0) -> Result:
    """Train weights by SGD-L2 from ``x0`` (not modified); ``maxiter`` counts epochs;
    ``seed``: srand()'s (0 and 1: CRFsuite's own order), ``drawn``: rand() values used
    before (crfsuite_orders)."""
    if not rho2 > 0:
        raise ValueError("l2sgd needs an L2 strength rho2 > 0")
    lam = rho2 / max(n_seqs, 1)
    orders = crfsuite_orders(n_seqs, seed, drawn)
    if eta0 is None:
        sample = orders()[:min(calibration.samples, n_seqs)]
        eta0 = calibrate(epoch, x0.size, sample, lam, calibration)
    t0 = 1.0 / (lam * eta0)
    W = x0.astype(np.float64, copy=True)
    last = np.zeros(W.size)
    state = np.zeros(2)
    best = [np.inf, W.copy()]

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors, overflowed = epoch(W, last, state, order, lam, t0)
        if overflowed:
            raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
        value = loss + 0.5 * rho2 * dot(W, W)
        if value < best[0]:
            best[0] = value
            best[1][:] = W
        return value, token_errors, sequence_errors

    result = run_epochs(one_epoch, W, n_seqs, StopRule(stop_eps, stop_window), maxiter=maxiter,
                        seed=seed, on_iteration=on_iteration, orders=orders)
    if np.isfinite(best[0]):
        result.x, result.f = best[1], best[0]
    return result
