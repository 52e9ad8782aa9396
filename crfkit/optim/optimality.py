"""OWL-QN's stop on first-order optimality: the pseudo-gradient's norm.

Why L1 needs it. The objective rule (:class:`crfkit.optim.StopRule`: relative
decrease below ``-e`` over ``-w`` iterations) suits L-BFGS on a smooth
objective: once the quasi-Newton model is good, the decrease per window falls
quickly and the rule stops soon after. With an L1 term the end of the run is
different: progress is limited by the weights crossing into zero one orthant
face at a time, the decrease per window shrinks slowly, and the rule waits.
On CoNLL-2000 with ``-1 0.5 -2 0.0001`` (Wapiti's defaults) and
``chunking.pat`` it stopped at iteration 625; the relative decrease over 10
iterations was still 1.7e-3 at iteration 150, 3e-4 at 290, 1e-4 at 370, while
test F1 stayed within 93.52-93.58 from iteration 50 on. With this rule
it stops at 507 (test F1 93.56); ``-1 0.5 -2 1`` still stops on the
objective rule (220, where ``|pg|`` is 1.2e-4 of its start: the two rules
agree where the problem is well conditioned).

L1 solvers stop on an optimality measure instead (liblinear's L1 logistic
regression on the minimum-norm subgradient relative to its start; libLBFGS,
CRFsuite and Wapiti on ``|pg| / max(1, |x|)`` with a fixed 1e-5, which here
is never reached before the objective rule). The pseudo-gradient ``pg`` is the
minimum-norm subgradient of ``fun + l1*|x|_1``: zero exactly at the optimum,
and its norm bounds how much any small step can still gain. This rule stops
when ``|pg|`` has stayed at or below ``tol * |pg(x0)|`` for ``window``
iterations in a row (a single low value is not enough: ``|pg|`` jumps by up to
5x between iterations as weights hit zero). The default ``tol`` is the level
L-BFGS reaches on the L2 problem when its objective rule stops it
(README: "L1 and elastic net: when training stops").
"""

from __future__ import annotations

# |pg| / |pg(x0)| at which an L1 run counts as converged (module docstring; --l1-gtol).
L1_GTOL = 1e-4


class OptimalityRule:
    """Stop when ``|pg| <= tol * |pg(x0)|`` at each of the last ``window`` iterations.

    ``tol == 0`` disables the rule (the objective rule alone decides).
    """

    def __init__(self, tol: float, window: int, start_norm: float) -> None:
        if not tol >= 0:
            raise ValueError(f"tol must be >= 0, got {tol}")
        self.tol = tol
        self.window = max(window, 1)
        self.bound = tol * start_norm
        self.below = 0  # consecutive iterations at or below the bound

    def __call__(self, gnorm: float) -> str | None:
        """Record one iteration's ``|pg|``; a reason to stop, or None."""
        if self.tol == 0:
            return None
        self.below = self.below + 1 if gnorm <= self.bound else 0
        if self.below >= self.window:
            return (f"converged (pseudo-gradient norm below {self.tol:g} of its start "
                    f"for {self.window} iterations)")
        return None
