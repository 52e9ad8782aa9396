"""Stochastic gradient descent with an L2 penalty, as CRFsuite's ``l2sgd`` trains.

Minimises ``sum_s loss_s(w) + rho2/2 |w|^2`` one sequence at a time (the
penalty shared out as ``lam = rho2 / N`` per sequence) with the decaying rate
``eta_t = 1 / (lam (t0 + t))``, ``t0 = 1 / (lam eta0)``. The epoch itself is the
caller's (:class:`crfkit.kernels.crfsuite_epochs.OnlineEpochs`); this driver owns the
weights and the lazy-decay state, shuffles (from ``seed``), reports, stops.

``eta0`` is calibrated when not given, as CRFsuite does: on a sample of up to
``samples`` sequences, one epoch from zero weights per candidate rate,
starting at 0.1 and doubling while the sample objective improves (halving
when the first doubling does not), and the best rate is kept. The value
reported per epoch is the online objective (each sequence's loss at the
weights it was seen with, plus the penalty at the end of the epoch).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.optim.rates import SAMPLES, best_rate, sample_ids
from crfkit.vectors import dot

# epoch(W, last, state, order, lam, t0) -> (sum of losses, token errors, sequence errors,
# overflowed); W, last (per-weight decay marks) and state updated in place.
L2SgdEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float],
                      "tuple[float, int, int, bool]"]

def calibrate(epoch: L2SgdEpoch, n_weights: int, n_seqs: int, lam: float, seed: int, *,
              samples: int = SAMPLES) -> float:
    """The initial rate eta0 that best lowers the objective of a sample in one epoch."""
    sample = sample_ids(n_seqs, seed, samples)

    def trial(eta: float) -> float:
        W, last, state = np.zeros(n_weights), np.zeros(n_weights), np.zeros(2)
        loss, _, _, overflowed = epoch(W, last, state, sample, lam, _t0(lam, eta))
        value = loss + 0.5 * lam * len(sample) * dot(W, W)
        return np.inf if overflowed or not np.isfinite(value) else value

    return best_rate(trial)


def _t0(lam: float, eta0: float) -> float:
    # eta_0 * lam < 1 keeps the first decay factor (1 - eta lam) positive
    return max(1.0 / (lam * eta0), 1.5)


def minimize(epoch: L2SgdEpoch, x0: np.ndarray, n_seqs: int, *, rho2: float,
             eta0: float | None = None, maxiter: int = 1000, seed: int = 0,
             stop_eps: float = 1e-6, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Train weights by SGD-L2 from ``x0`` (not modified); ``maxiter`` counts epochs."""
    if not rho2 > 0:
        raise ValueError("l2sgd needs an L2 strength rho2 > 0")
    lam = rho2 / max(n_seqs, 1)
    if eta0 is None:
        eta0 = calibrate(epoch, x0.size, n_seqs, lam, seed)
    t0 = _t0(lam, eta0)
    W = x0.astype(np.float64, copy=True)
    last = np.zeros(W.size)
    state = np.zeros(2)

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors, overflowed = epoch(W, last, state, order, lam, t0)
        if overflowed:
            raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
        return loss + 0.5 * rho2 * dot(W, W), token_errors, sequence_errors

    return run_epochs(one_epoch, W, n_seqs, StopRule(stop_eps, stop_window), maxiter=maxiter,
                      seed=seed, on_iteration=on_iteration)
