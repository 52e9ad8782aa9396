"""Passive-Aggressive training (Crammer et al., 2006), as CRFsuite's ``pa`` trains.

After each wrongly decoded sequence the weights move just enough to score the
gold path above the predicted one by a margin (``sqrt(errors)`` when
error-sensitive, else 1): PA takes the whole step, PA-I caps it at ``C``,
PA-II softens it by ``1/2C``. With ``averaging`` the model returned is the
average of the weights (as the averaged perceptron's). The epoch is the
caller's (:class:`crfkit.kernels.crfsuite_epochs.OnlineEpochs`), over
CRFsuite's shuffled order (:mod:`crfkit.optim.crandom`).

The value reported per epoch is the sum of the margin losses; training stops
when its mean per sequence is below ``stop_eps`` (CRFsuite's ``epsilon``, 0
by default: never), or after ``maxiter`` epochs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.optim import IterationHook, Result, run_epochs
from crfkit.optim.crandom import crfsuite_orders
from crfkit.optim.perceptron import averaged, below

# epoch(W, U, order, seen) -> (sum of losses, token errors, sequence errors)
PaEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, int], "tuple[float, int, int]"]


def minimize(epoch: PaEpoch, x0: np.ndarray, n_seqs: int, *, averaging: bool = True,
             maxiter: int = 100, seed: int = 0, stop_eps: float = 0.0,
             on_iteration: IterationHook | None = None, drawn: int = 0) -> Result:
    """Train weights by PA from ``x0`` (not modified); ``maxiter`` counts epochs."""
    W = x0.astype(np.float64, copy=True)
    U = np.zeros_like(W)
    out = W.copy() if averaging else W

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors = epoch(W, U, order, seen)
        if averaging:
            averaged(W, U, x0, seen + n_seqs, out)
        return loss, token_errors, sequence_errors

    return run_epochs(one_epoch, out, n_seqs, below(stop_eps, n_seqs, "mean loss"),
                      maxiter=maxiter, seed=seed, on_iteration=on_iteration,
                      orders=crfsuite_orders(n_seqs, seed, drawn))
