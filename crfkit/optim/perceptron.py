"""The averaged perceptron (Collins, 2002): Viterbi-driven updates, averaged weights.

Each epoch visits the sequences in a new random order (from ``seed``); the
kernel :func:`crfkit.kernels.epochs.perceptron_epoch` decodes each one and, when the
path is wrong, moves the weights towards the gold path. The model returned
(and shown to the iteration hook) is the *average* of the weight vectors
after every sequence, which generalises far better than the last one.

There is no probabilistic objective: the value reported is the number of
token errors made during the epoch, and with ``maxiter == 0`` training stops
when an epoch makes none, or when that number stopped improving (the
stopping rule). Regularisation strengths do not apply; averaging and the
number of epochs are the perceptron's regularisers.
"""

from __future__ import annotations

import numpy as np

from crfkit.kernels.epochs import perceptron_epoch
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.space import Dataset, FeatureSpace


def minimize(space: FeatureSpace, data: Dataset, x0: np.ndarray, *, maxiter: int = 0,
             seed: int = 0, stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Train CRF weights by the averaged perceptron from ``x0``; ``maxiter`` counts epochs."""
    W = x0.astype(np.float64, copy=True)
    U = np.zeros_like(W)
    avg = W.copy()
    out = np.zeros(2)
    s = space

    def epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        perceptron_epoch(W, U, seen, order, data.seq_ptr, data.tok_ptr, data.tok_obs,
                         data.labels, s.u_ptr, s.u_lab, s.b_ptr, s.b_prev, s.b_cur, s.n_u,
                         s.trans_offset, s.has_trans, s.n_b > 0, s.n_labels, out)
        np.multiply(U, -1.0 / max(seen + data.n_seqs, 1), out=avg)
        np.add(avg, W, out=avg)
        return float(out[0]), int(out[0]), int(out[1])

    rule = StopRule(stop_eps, stop_window)

    def stop(f: float) -> str | None:
        if f == 0:
            return "no training error (the data are separable)"
        return rule(f)

    return run_epochs(epoch, avg, data.n_seqs, stop, maxiter=maxiter, seed=seed,
                      on_iteration=on_iteration)
