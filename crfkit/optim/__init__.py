"""Optimisers: each takes ``fun(w, g) -> f`` (filling the gradient g) and a start point.

One file per algorithm (``lbfgs``: L-BFGS and OWL-QN; ``sgd``: SGD with the
cumulative L1 penalty; ``perceptron``: the averaged perceptron). They share
the types below so the trainer can drive any of them the same way: after
each iteration (or epoch) they call an :data:`IterationHook`, which may ask
them to stop by returning a reason, and a Ctrl-C (``KeyboardInterrupt``)
ends the run cleanly with the last completed point and reason
:data:`INTERRUPTED` instead of losing the work done so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where an optimiser runs: option declarations
    import numpy as np  # (crfkit.optim.options) must not load it for `crfkit --help`

INTERRUPTED = "interrupted"


@dataclass
class Iteration:
    """What an optimiser reports after each iteration (epoch for online algorithms).

    ``x`` is the optimiser's current point (for the averaged perceptron: the
    averaged weights); it is reused afterwards, so copy it to keep it.
    ``token_errors``/``sequence_errors`` are training errors counted during
    the iteration when the algorithm gets them for free, else -1.
    ``gnorm`` is the norm of the (pseudo-)gradient at ``x`` for the algorithms
    that have one (L-BFGS, OWL-QN), else NaN.
    """

    it: int
    f: float
    x: np.ndarray
    seconds: float
    token_errors: int = -1
    sequence_errors: int = -1
    gnorm: float = float("nan")


class Stop(Exception):
    """Raised by an objective or an epoch that cannot go on (no Dask worker left,
    :mod:`crfkit.dask`): the optimiser ends as on Ctrl-C, with the last finished
    point, and the exception's message as its reason."""


# Returns None to go on, or a reason (one line) to stop.
IterationHook = Callable[[Iteration], "str | None"]


@dataclass
class Result:
    x: np.ndarray
    f: float
    iterations: int
    reason: str
    # Everything the next iterations depend on, for the optimisers that can resume
    # (l-bfgs, rprop: --sstate/--rstate): named arrays, 0-d for the scalars.
    state: dict | None = None


class StopRule:
    """Wapiti's ``-e``/``-w`` (CRFsuite's ``delta``/``period``).

    Stop when the objective improved by a relative amount below ``eps`` over
    the last ``window`` iterations. Comparing over a window rather than one
    step keeps a single slow iteration from ending a run that is still going.
    """

    def __init__(self, eps: float, window: int) -> None:
        self.eps = eps
        self.window = window
        self.values: list[float] = []

    def __call__(self, f: float) -> str | None:
        self.values.append(f)
        if len(self.values) <= self.window:
            return None
        return self.verdict(self.values[-1 - self.window], f)

    def verdict(self, old: float, f: float) -> str | None:
        """The reason to stop, given the value ``window`` iterations ago and now; None
        to go on."""
        if (old - f) / max(abs(f), 1e-300) < self.eps:
            return (f"converged (relative improvement < {self.eps:g} over "
                    f"{self.window} iterations)")
        return None


# Runs one epoch over the sequences in ``order``, ``seen`` sequences having been
# processed in earlier epochs; returns (value reported, token errors, sequence errors).
Epoch = Callable[["np.ndarray", int], "tuple[float, int, int]"]


def run_epochs(epoch: Epoch, x: np.ndarray, n_seqs: int, stop: Callable[[float], str | None],
               *, maxiter: int, seed: int, on_iteration: IterationHook | None,
               orders: Callable[[], np.ndarray] | None = None) -> Result:
    """The epoch loop of the online trainers (SGD, perceptron).

    Each epoch visits the ``n_seqs`` sequences in a new random order drawn
    from ``seed`` (or the next of ``orders``: CRFsuite's shuffle,
    :mod:`crfkit.optim.crandom`); ``epoch`` updates ``x`` (the point reported and returned) in
    place. After each epoch the hook may stop the run, then ``stop`` (a
    :class:`StopRule` or a wrapper around one); ``maxiter`` counts epochs
    (0: until stopped). Ctrl-C ends the run with the last finished epoch.
    """
    if orders is None:
        import numpy as np

        rng = np.random.default_rng(seed)

        def orders() -> np.ndarray:
            return rng.permutation(n_seqs).astype(np.int64)

    seen = 0
    count = 0
    f = float("nan")
    reason = "maximum number of iterations"
    start = time.perf_counter()
    try:
        while maxiter <= 0 or count < maxiter:
            order = orders()
            f, token_errors, sequence_errors = epoch(order, seen)
            seen += n_seqs
            count += 1
            if on_iteration is not None:
                asked = on_iteration(Iteration(count, f, x, time.perf_counter() - start,
                                               token_errors, sequence_errors))
                if asked:
                    reason = asked
                    break
            stopped = stop(f)
            if stopped:
                reason = stopped
                break
    except KeyboardInterrupt:
        reason = INTERRUPTED
    except Stop as stopped:
        reason = str(stopped)
    return Result(x=x, f=f, iterations=count, reason=reason)
