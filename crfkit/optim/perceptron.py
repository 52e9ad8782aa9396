"""The averaged perceptron (Collins, 2002): Viterbi-driven updates, averaged weights.

Each epoch visits the sequences in a new random order (from ``seed``); the
caller's epoch (in crfkit :class:`crfkit.kernels.epochs.PerceptronEpochs`)
decodes each one and, when the path is wrong, moves the weights towards the
gold path. The model returned
(and shown to the iteration hook) is the *average* of the weight vectors
after every sequence, which generalises far better than the last one.

There is no probabilistic objective: the value reported is the number of
token errors made during the epoch, and with ``maxiter == 0`` training stops
when an epoch makes none, or when that number stopped improving (the
stopping rule). Regularisation strengths do not apply; averaging and the
number of epochs are the perceptron's regularisers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.optim import IterationHook, Result, StopRule, run_epochs

# One epoch over ``order`` (``seen`` visited before), updating the weights W and
# Daume's sums U in place: epoch(W, U, order, seen) -> (token errors, sequence errors)
PerceptronEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, int], "tuple[int, int]"]


def minimize(epoch: PerceptronEpoch, x0: np.ndarray, n_seqs: int, *, maxiter: int = 0,
             seed: int = 0, stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Train weights by the averaged perceptron from ``x0`` over ``n_seqs`` sequences;
    ``maxiter`` counts epochs."""
    W = x0.astype(np.float64, copy=True)
    U = np.zeros_like(W)
    avg = W.copy()

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        token_errors, sequence_errors = epoch(W, U, order, seen)
        np.multiply(U, -1.0 / max(seen + n_seqs, 1), out=avg)
        np.add(avg, W, out=avg)
        return float(token_errors), token_errors, sequence_errors

    rule = StopRule(stop_eps, stop_window)

    def stop(f: float) -> str | None:
        if f == 0:
            return "no training error (the data are separable)"
        return rule(f)

    return run_epochs(one_epoch, avg, n_seqs, stop, maxiter=maxiter, seed=seed,
                      on_iteration=on_iteration)
