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

Defaults (what ``crfkit train -a sgd-l1`` uses when not told otherwise): an L1
term (``rho1`` 0.3: without one the training data are separable, the
objective sinks towards zero for ever and no rule on it can say "done"),
``eta0`` calibrated on a sample (:func:`calibrate`: on CoNLL-2000 it picks
0.2; 1.0 was worse at every epoch), ``alpha`` 0.8 (0.9 kept the rate high
for thirty epochs), and :class:`ProgressStop`. A relative rule on the
objective's value (L-BFGS's) suits an objective that converges fast; SGD's
with decaying steps moves by a slowly shrinking fraction each epoch long
after the model has stopped changing (on CoNLL-2000, test F1 flat from
epoch ~6 while the objective still fell 1-2% an epoch at epoch 20), so it
ran for minutes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.optim.rates import ETA, SAMPLES, TRIALS, best_rate, sample_ids
from crfkit.vectors import l1_norm

# One epoch over the sequences in ``order`` (``seen`` visited before), updating the
# weights W, the per-weight penalties q and the total penalty state[0] in place:
# epoch(W, order, seen, eta0, alpha, rho1, q, state)
#     -> (sum of the sequences' losses, token errors, sequence errors, overflowed)
SgdEpoch = Callable[[np.ndarray, np.ndarray, int, float, float, float, np.ndarray, np.ndarray],
                    "tuple[float, int, int, bool]"]

DEFAULT_RHO1 = 0.3
DEFAULT_STOP_EPS = 0.02
DEFAULT_STOP_WINDOW = 3

# The initial rate where there is no sample epoch to calibrate it on (crfkit.dask)
UNCALIBRATED_ETA0 = 0.3
# eta0's calibration grid (when none is given), after CRFsuite's search
CALIBRATION_ETA, CALIBRATION_TRIALS = ETA, TRIALS


def calibrate(epoch: SgdEpoch, x0: np.ndarray, n_seqs: int, rho1: float, alpha: float,
              seed: int, *, samples: int = SAMPLES) -> float:
    """The initial rate that best lowers the objective of a sample in one epoch from x0.

    The sample is up to ``samples`` sequences drawn from ``seed``, its penalty
    scaled to its share of the corpus (each step takes the penalty a step of
    the full run takes); the candidates are :func:`crfkit.optim.rates.best_rate`'s.
    """
    sample = sample_ids(n_seqs, seed, samples)
    rho1_share = rho1 * len(sample) / max(n_seqs, 1)

    def trial(eta: float) -> float:
        W, q, state = x0.astype(np.float64, copy=True), np.zeros(x0.size), np.zeros(1)
        loss, _, _, overflowed = epoch(W, sample, 0, eta, alpha, rho1_share, q, state)
        value = loss + rho1_share * l1_norm(W)
        return np.inf if overflowed or not np.isfinite(value) else value

    return best_rate(trial)


class ProgressStop(StopRule):
    """Stop when the last ``window`` epochs lowered the objective by less than ``eps``
    times all it has fallen since the first epoch.

    Measuring the recent fall against the whole fall, not against the value,
    makes the rule blind to where the objective levels out (a penalised
    objective stays high, an unpenalised one sinks towards zero) and to the
    corpus size; a window of epochs averages SGD's noise, and an objective
    that rose over the whole window stops the run too.
    """

    def verdict(self, old: float, f: float) -> str | None:
        if old - f <= self.eps * (self.values[0] - f):
            return (f"converged (the last {self.window} epochs lowered the objective by less "
                    f"than {self.eps:g} of its fall since the first)")
        return None


def minimize(epoch: SgdEpoch, x0: np.ndarray, n_seqs: int, *, rho1: float = DEFAULT_RHO1,
             eta0: float | None = None, alpha: float = 0.8, maxiter: int = 0, seed: int = 0,
             stop_eps: float = DEFAULT_STOP_EPS, stop_window: int = DEFAULT_STOP_WINDOW,
             on_iteration: IterationHook | None = None) -> Result:
    """Train weights by SGD-L1 from ``x0`` (not modified) over ``n_seqs`` sequences;
    ``maxiter`` counts epochs, :class:`ProgressStop` (``stop_eps``, ``stop_window``)
    ends the run before; ``eta0=None`` calibrates it (:func:`calibrate`)."""
    if rho1 < 0 or (eta0 is not None and eta0 <= 0) or not 0 < alpha <= 1:
        raise ValueError("need rho1 >= 0, eta0 > 0 and 0 < alpha <= 1")
    if eta0 is None:
        eta0 = calibrate(epoch, x0, n_seqs, rho1, alpha, seed)
    W = x0.astype(np.float64, copy=True)
    q = np.zeros(W.size)
    state = np.zeros(1)

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        loss, token_errors, sequence_errors, overflowed = epoch(W, order, seen, eta0, alpha,
                                                                rho1, q, state)
        if overflowed:
            raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
        return loss + rho1 * l1_norm(W), token_errors, sequence_errors

    return run_epochs(one_epoch, W, n_seqs, ProgressStop(stop_eps, stop_window), maxiter=maxiter,
                      seed=seed, on_iteration=on_iteration)
