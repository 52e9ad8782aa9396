"""Stochastic gradient descent with the cumulative L1 penalty (Tsuruoka et al., 2009).

One update per sequence, sequences in a new random order each epoch (drawn
from ``seed``, so a run is reproducible), learning rate
``eta0 * alpha**(k/N)`` decaying exponentially with the number k of
sequences seen (N per epoch). The kernel is :func:`crfkit.kernels.epochs.sgd_epoch`;
this driver shuffles, reports, applies the stopping rule and handles Ctrl-C.

What the progress line calls the objective is the *online* one: the sum of
each sequence's loss at the weights it was seen with, plus ``rho1 |w|_1``
at the end of the epoch. It costs nothing (the forward-backward that gives
the gradient gives the loss) and tracks the true objective closely once the
learning rate is small; the exact value would cost a second pass.

There is no L2 term (as in Wapiti's ``sgd-l1``): with decaying steps and
early stopping on a development set it is rarely needed, and a lazy L2 decay
would touch every weight at every step.
"""

from __future__ import annotations

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.kernels.epochs import sgd_epoch
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.optim.lbfgs import l1_norm
from crfkit.space import Dataset, FeatureSpace


def minimize(space: FeatureSpace, data: Dataset, x0: np.ndarray, *, rho1: float = 0.0,
             eta0: float = 0.3, alpha: float = 0.9, maxiter: int = 0, seed: int = 0,
             stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Train CRF weights by SGD-L1 from ``x0`` (not modified); ``maxiter`` counts epochs."""
    if rho1 < 0 or eta0 <= 0 or not 0 < alpha <= 1:
        raise ValueError("need rho1 >= 0, eta0 > 0 and 0 < alpha <= 1")
    W = x0.astype(np.float64, copy=True)
    n = W.size
    q = np.zeros(n)
    G = np.zeros(n)
    state = np.zeros(1)
    out = np.zeros(4)
    s = space

    def epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        sgd_epoch(W, order, data.seq_ptr, data.tok_ptr, data.tok_obs, data.labels,
                  s.u_ptr, s.u_lab, s.b_ptr, s.b_prev, s.b_cur, s.n_u, s.trans_offset,
                  s.has_trans, s.n_b > 0, s.n_labels, float(eta0), float(alpha),
                  float(rho1), seen, q, G, state, out)
        if out[3]:
            raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
        return float(out[0]) + rho1 * l1_norm(W), int(out[1]), int(out[2])

    return run_epochs(epoch, W, data.n_seqs, StopRule(stop_eps, stop_window), maxiter=maxiter,
                      seed=seed, on_iteration=on_iteration)
