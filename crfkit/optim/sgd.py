"""Stochastic gradient descent with the cumulative L1 penalty (Tsuruoka et al., 2009).

One update per sequence, sequences in a new random order each epoch (drawn
from ``seed``, so a run is reproducible), learning rate
``eta0 * alpha**(k/N)`` decaying exponentially with the number k of
sequences seen (N per epoch). The epoch itself is the caller's (an
:data:`SgdEpoch`, in crfkit :class:`crfkit.kernels.epochs.SgdEpochs`): this
driver owns the weights and the penalty state, shuffles, reports, applies the
stopping rule and handles Ctrl-C.

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

from collections.abc import Callable

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.vectors import l1_norm

# One epoch over the sequences in ``order`` (``seen`` visited before), updating the
# weights W, the per-weight penalties q and the total penalty state[0] in place:
# epoch(W, order, seen, eta0, alpha, rho1, q, state)
#     -> (sum of the sequences' losses, token errors, sequence errors, overflowed)
SgdEpoch = Callable[[np.ndarray, np.ndarray, int, float, float, float, np.ndarray, np.ndarray],
                    "tuple[float, int, int, bool]"]


def minimize(epoch: SgdEpoch, x0: np.ndarray, n_seqs: int, *, rho1: float = 0.0,
             eta0: float = 0.3, alpha: float = 0.9, maxiter: int = 0, seed: int = 0,
             stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Train weights by SGD-L1 from ``x0`` (not modified) over ``n_seqs`` sequences;
    ``maxiter`` counts epochs."""
    if rho1 < 0 or eta0 <= 0 or not 0 < alpha <= 1:
        raise ValueError("need rho1 >= 0, eta0 > 0 and 0 < alpha <= 1")
    W = x0.astype(np.float64, copy=True)
    q = np.zeros(W.size)
    state = np.zeros(1)

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors, overflowed = epoch(W, order, seen, eta0, alpha,
                                                                rho1, q, state)
        if overflowed:
            raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
        return loss + rho1 * l1_norm(W), token_errors, sequence_errors

    return run_epochs(one_epoch, W, n_seqs, StopRule(stop_eps, stop_window), maxiter=maxiter,
                      seed=seed, on_iteration=on_iteration)
