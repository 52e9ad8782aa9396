"""The averaged perceptron (Collins, 2002), as CRFsuite's ``ap`` trains it.

Each epoch visits the sequences in CRFsuite's shuffled order
(:mod:`crfkit.optim.crandom`); the caller's epoch
(:meth:`crfkit.kernels.crfsuite_epochs.OnlineEpochs.ap`) decodes each one and,
when the path is wrong, moves the weights towards the gold path. The model
returned (and shown to the iteration hook) is the *average* of the weight
vectors, which generalises far better than the last one.

There is no probabilistic objective: the value reported is CRFsuite's loss,
the sum over the wrongly labelled sequences of their ratio of wrong labels.
Training runs ``maxiter`` epochs, and stops earlier only when that loss per
sequence falls below ``stop_eps`` (CRFsuite's ``epsilon``, 0 by default:
never). Regularisation strengths do not apply; averaging and the number of
epochs are the perceptron's regularisers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.optim import IterationHook, Result, run_epochs
from crfkit.optim.crandom import crfsuite_orders

# One epoch over ``order`` (``seen`` visited before), updating the weights W and
# Daume's sums U in place: epoch(W, U, order, seen) -> (loss, token errors, sequence errors)
PerceptronEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, int], "tuple[float, int, int]"]


def averaged(W: np.ndarray, U: np.ndarray, W0: np.ndarray, updates: int,
             out: np.ndarray) -> None:
    """CRFsuite's average into ``out``: the mean of the weight vectors before the first
    update and after each of ``updates`` sequences, from Daume's sums U (``sum_i i d_i``
    over the steps d_i, i counted from 0)."""
    np.subtract(W, W0, out=out)
    np.add(out, U, out=out)
    np.multiply(out, -1.0 / (updates + 1), out=out)
    np.add(out, W, out=out)


def below(eps: float, n_seqs: int, what: str) -> Callable[[float], str | None]:
    """CRFsuite's stopping test of ap and pa: the epoch's loss per sequence < ``eps``."""

    def stop(f: float) -> str | None:
        if f == 0 and eps > 0:
            return "no training error (the data are separable)"
        if f / max(n_seqs, 1) < eps:
            return f"converged ({what} per sequence < {eps:g})"
        return None

    return stop


def minimize(epoch: PerceptronEpoch, x0: np.ndarray, n_seqs: int, *, maxiter: int = 100,
             seed: int = 0, stop_eps: float = 0.0,
             on_iteration: IterationHook | None = None, drawn: int = 0) -> Result:
    """Train weights by the averaged perceptron from ``x0`` over ``n_seqs`` sequences;
    ``maxiter`` counts epochs (0: until stopped)."""
    W = x0.astype(np.float64, copy=True)
    U = np.zeros_like(W)
    avg = W.copy()

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors = epoch(W, U, order, seen)
        averaged(W, U, x0, seen + n_seqs, avg)
        return loss, token_errors, sequence_errors

    return run_epochs(one_epoch, avg, n_seqs, below(stop_eps, n_seqs, "error ratio"),
                      maxiter=maxiter, seed=seed, on_iteration=on_iteration,
                      orders=crfsuite_orders(n_seqs, seed, drawn))
