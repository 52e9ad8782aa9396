"""AROW, adaptive regularisation of weight vectors (Crammer et al., 2009), as CRFsuite's
``arow`` trains.

Each weight has a mean (the model) and a variance (how unsure it is), all
starting at 0 and ``variance``. After a wrongly decoded sequence, the means
move along the feature difference scaled by their variances, and the
variances of the features involved shrink: features seen often settle,
rare ones stay free to move. ``gamma`` trades the loss against the change.
The epoch is the caller's (:class:`crfkit.kernels.crfsuite_epochs.OnlineEpochs`),
over CRFsuite's shuffled order (:mod:`crfkit.optim.crandom`). Unlike ``ap``
and ``pa``, CRFsuite stops AROW when the mean loss per sequence is *at most*
``stop_eps``: with the default 0, as soon as an epoch makes no error.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.optim import IterationHook, Result, run_epochs
from crfkit.optim.crandom import crfsuite_orders

# epoch(W, S, order) -> (sum of losses, token errors, sequence errors)
ArowEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray], "tuple[float, int, int]"]


def at_most(eps: float, n_seqs: int) -> Callable[[float], str | None]:
    """Stop when the mean loss per sequence of an epoch is at most ``eps``."""

    def stop(f: float) -> str | None:
        if f / max(n_seqs, 1) <= eps:
            return f"converged (mean loss per sequence <= {eps:g})"
        return None

    return stop


def minimize(epoch: ArowEpoch, x0: np.ndarray, n_seqs: int, *, variance: float = 1.0,
             maxiter: int = 100, seed: int = 0, stop_eps: float = 0.0,
             on_iteration: IterationHook | None = None, drawn: int = 0) -> Result:
    """Train weights by AROW from ``x0`` (not modified); ``maxiter`` counts epochs."""
    if not variance > 0:
        raise ValueError("AROW needs an initial variance > 0")
    W = x0.astype(np.float64, copy=True)
    S = np.full(W.size, float(variance))

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        return epoch(W, S, order)

    return run_epochs(one_epoch, W, n_seqs, at_most(stop_eps, n_seqs), maxiter=maxiter,
                      seed=seed, on_iteration=on_iteration,
                      orders=crfsuite_orders(n_seqs, seed, drawn))
