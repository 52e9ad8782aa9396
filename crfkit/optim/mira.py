"""Single-best MIRA (Crammer and Singer, 2003), as CRF++'s ``crf_learn -a MIRA`` trains.

Every epoch visits the sequences in file order (CRF++ does not shuffle); the
caller's epoch (:class:`crfkit.kernels.mira.MiraEpochs`) decodes each one and,
when the path is wrong, takes the smallest step that scores the gold path
above it by its number of wrong labels, each sequence's steps summing to at
most ``C`` (CRF++'s ``-c``, the slack's cost). A sequence decoded right
``shrinking_size`` epochs running (CRF++'s ``-H``) is skipped until an epoch
without KKT violation, which brings every sequence back.

Training stops after two epochs running without KKT violation (CRF++'s rule),
or after ``maxiter`` epochs (0: no limit). The value reported per epoch is
CRF++'s ``obj``, the squared norm of the weights; there is no objective to
converge, so ``-e``/``-o`` do not apply. The weights are the last ones, not
an average.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.optim import IterationHook, Result, run_epochs

DEFAULT_C = 1.0  # crf_learn's -c
DEFAULT_SHRINKING_SIZE = 20  # crf_learn's -H
CONVERGED_EPOCHS = 2  # epochs running without KKT violation that end training, as CRF++

# epoch(W, bound, shrink, order, C, shrinking_size)
#   -> (token errors, sequence errors, visited, capped, KKT violation)
MiraEpoch = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int],
                     "tuple[int, int, int, int, float]"]


def minimize(epoch: MiraEpoch, x0: np.ndarray, n_seqs: int, *, C: float = DEFAULT_C,
             shrinking_size: int = DEFAULT_SHRINKING_SIZE, maxiter: int = 0,
             on_iteration: IterationHook | None = None) -> Result:
    """Train weights by MIRA from ``x0`` (not modified); ``maxiter`` counts epochs."""
    if not C > 0:
        raise ValueError("MIRA needs C > 0")
    if shrinking_size < 1:
        raise ValueError("MIRA needs a shrinking size >= 1")
    W = x0.astype(np.float64, copy=True)
    bound = np.zeros(n_seqs, dtype=np.float32)  # each sequence's sum of steps, at most C
    shrink = np.zeros(n_seqs, dtype=np.int64)  # epochs running decoded right
    quiet = [0]  # epochs running without KKT violation
    file_order = np.arange(n_seqs, dtype=np.int64)

    def one_epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
        token_errors, sequence_errors, _, _, kkt = epoch(W, bound, shrink, order, C,
                                                         shrinking_size)
        if kkt <= 0.0:
            shrink[:] = 0
            quiet[0] += 1
        else:
            quiet[0] = 0
        return float(np.dot(W, W)), token_errors, sequence_errors

    def stop(f: float) -> str | None:
        if quiet[0] >= CONVERGED_EPOCHS:
            return f"converged (no KKT violation in {CONVERGED_EPOCHS} epochs running)"
        return None

    return run_epochs(one_epoch, W, n_seqs, stop, maxiter=maxiter, seed=0,
                      on_iteration=on_iteration, orders=lambda: file_order)
