"""Blockwise coordinate descent for the elastic net (Wapiti's ``-a bcd``).

Minimises ``-LL + rho1 |w|_1 + rho2/2 |w|^2`` one block of weights at a time: an
observation's features (the labels it was seen with, and its label pairs), then the
transition block; each block moves to the closed-form minimiser of a quadratic bound
plus the penalty (:mod:`crfkit.kernels.bcd`), so L1 weights land on exact zeros without
OWL-QN's orthant bookkeeping. One iteration updates every block once.

After each iteration the exact objective is evaluated (one pass of the batch objective,
which also gives the training errors of the progress line) and the stopping rule of the
other batch algorithms applies to it (``-e``/``-o``); ``-i`` caps the iterations. Wapiti's
bcd reports no objective and stops on the training error rate; an objective rule makes a
run comparable with L-BFGS on the same problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.optim import IterationHook, Result, StopRule, run_epochs
from crfkit.vectors import l1_norm

DEFAULT_KAPPA = 1.5  # Wapiti's: the bound's curvature is scaled by kappa (> 1: safer steps)


class Sweeper(Protocol):
    def sweep(self, W: np.ndarray, rho1: float, rho2: float, kappa: float) -> None: ...


def minimize(descent: Sweeper, objective: Callable[[np.ndarray, np.ndarray], float],
             x0: np.ndarray, *, rho1: float, rho2: float, kappa: float = DEFAULT_KAPPA,
             maxiter: int = 0, stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Sweep until the stopping rule, ``maxiter`` (0: no cap), the hook or Ctrl-C says stop.

    ``objective(w, g)``: the smooth part (negative log-likelihood + L2, gradient into g),
    whose value plus ``rho1 |w|_1`` is reported and judged. The weights are updated in
    place in a copy of ``x0``. Every block update lowers the objective, so a sweep that
    Ctrl-C interrupts half way leaves a point as good as the last whole one's.
    """
    x = np.array(x0, dtype=np.float64)
    g = np.empty_like(x)

    def iteration(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        descent.sweep(x, rho1, rho2, kappa)
        if not np.isfinite(x).all():
            raise CrfkitError("numerical overflow in blockwise coordinate descent: the "
                              "weights diverged (try a larger --kappa or -2/--rho2)")
        f = objective(x, g) + rho1 * l1_norm(x)
        return (f, getattr(objective, "token_errors", -1),
                getattr(objective, "sequence_errors", -1))

    return run_epochs(iteration, x, 0, StopRule(stop_eps, stop_window), maxiter=maxiter,
                      seed=0, on_iteration=on_iteration,
                      orders=lambda: np.empty(0, dtype=np.int64))
