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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

INTERRUPTED = "interrupted"


@dataclass
class Iteration:
    """What an optimiser reports after each iteration (epoch for online algorithms).

    ``x`` is the optimiser's current point (for the averaged perceptron: the
    averaged weights); it is reused afterwards, so copy it to keep it.
    ``token_errors``/``sequence_errors`` are training errors counted during
    the iteration when the algorithm gets them for free, else -1.
    """

    it: int
    f: float
    x: np.ndarray
    seconds: float
    token_errors: int = -1
    sequence_errors: int = -1


# Returns None to go on, or a reason (one line) to stop.
IterationHook = Callable[[Iteration], "str | None"]


@dataclass
class Result:
    x: np.ndarray
    f: float
    iterations: int
    reason: str


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
        old = self.values[-1 - self.window]
        if (old - f) / max(abs(f), 1e-300) < self.eps:
            return (f"converged (relative improvement < {self.eps:g} over "
                    f"{self.window} iterations)")
        return None
