"""CRFsuite's L-BFGS line searches (liblbfgs): Moré-Thuente, and backtracking to the Wolfe
or the strong Wolfe conditions (``-p linesearch=MoreThuente|Backtracking|StrongBacktracking``).

Along a descent direction ``d`` from ``x``, ``phi(a) = F(x + a d)`` has the slope
``phi'(0) = g.d < 0``. A step ``a`` is accepted when it satisfies

* sufficient decrease (Armijo): ``phi(a) <= phi(0) + ftol * a * phi'(0)``, and
* curvature: ``phi'(a) >= wolfe * phi'(0)`` (Wolfe), or ``|phi'(a)| <= wolfe * |phi'(0)|``
  (strong Wolfe); Moré-Thuente asks the strong one with ``gtol``.

liblbfgs's constants: ``ftol`` 1e-4, ``wolfe`` and ``gtol`` 0.9, ``xtol`` 1e-16, steps kept
in [1e-20, 1e20]. Backtracking shrinks a step that decreases too little by 0.5 and grows
one whose slope is still too steep by 2.1. Moré-Thuente (Moré & Thuente, "Line search
algorithms with guaranteed sufficient decrease", ACM TOMS 20(3), 1994) keeps an interval
known to hold an acceptable step and picks each trial by cubic or quadratic interpolation
of the values and slopes at its ends (:mod:`crfkit.optim.interval`); while no trial has
both decreased enough and had a non-negative slope, it works on ``phi(a) - ftol a phi'(0)``
instead, whose minimisers satisfy the decrease condition.

Each search evaluates at most ``max_trials`` points and returns the accepted step with
its value, the point and gradient of the last evaluation being the accepted ones (the
caller's buffers); None when it fails (too many trials, a step out of bounds, an interval
too small for the arithmetic), where liblbfgs stops the optimisation too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crfkit.optim.interval import Bracket, next_trial
from crfkit.vectors import dot

NAMES = ("MoreThuente", "Backtracking", "StrongBacktracking")
DEFAULT_MAX_TRIALS = 20  # CRFsuite's max_linesearch

# phi(a) -> (F(x + a d), its slope g(x + a d).d), the point and gradient left in the
# caller's buffers
Phi = Callable[[float], "tuple[float, float]"]


@dataclass(frozen=True)
class Conditions:
    ftol: float = 1e-4
    wolfe: float = 0.9
    gtol: float = 0.9
    xtol: float = 1e-16
    min_step: float = 1e-20
    max_step: float = 1e20


LIBLBFGS = Conditions()


def canonical(name: str) -> str:
    """The name of a line search as CRFsuite spells it (given in any case)."""
    for known in NAMES:
        if name.lower() == known.lower():
            return known
    raise ValueError(f"unknown line search {name!r} (expected one of {', '.join(NAMES)})")


def search(name: str, phi: Phi, step: float, f0: float, slope0: float, max_trials: int,
           conditions: Conditions = LIBLBFGS) -> tuple[float, float] | None:
    """(step, value) accepted by the line search ``name``, or None (module docstring)."""
    if not slope0 < 0.0 or not step > 0.0:
        return None
    name = canonical(name)
    if name == "MoreThuente":
        return more_thuente(phi, step, f0, slope0, max_trials, conditions)
    return backtracking(phi, step, f0, slope0, max_trials, conditions,
                        strong=name == "StrongBacktracking")


def backtracking(phi: Phi, step: float, f0: float, slope0: float, max_trials: int,
                 c: Conditions = LIBLBFGS, *, strong: bool = False) -> tuple[float, float] | None:
    """Halve a step that does not decrease enough, multiply by 2.1 one whose slope is still
    below ``wolfe * slope0`` (and, ``strong``, halve one whose slope is above
    ``-wolfe * slope0``), until one satisfies the (strong) Wolfe conditions."""
    for _ in range(max_trials):
        f, slope = phi(step)
        if f > f0 + c.ftol * step * slope0:
            factor = 0.5
        elif slope < c.wolfe * slope0:
            factor = 2.1
        elif strong and slope > -c.wolfe * slope0:
            factor = 0.5
        else:
            return step, f
        if not c.min_step <= step <= c.max_step:
            return None
        step *= factor
    return None


def more_thuente(phi: Phi, step: float, f0: float, slope0: float, max_trials: int,
                 c: Conditions = LIBLBFGS) -> tuple[float, float] | None:
    """The first trial satisfying the decrease condition and ``|slope| <= gtol |slope0|``,
    the trials chosen by Moré and Thuente's interval updates (module docstring)."""
    decrease = c.ftol * slope0  # the slope of the sufficient-decrease line
    bracket = Bracket(f0, slope0, step)
    modified = True  # stage 1: work on phi(a) - decrease * a
    width = c.max_step - c.min_step
    previous_width = 2.0 * width
    for _ in range(max_trials):
        f, slope = phi(step)
        line = f0 + step * decrease
        if f <= line and abs(slope) <= -c.gtol * slope0:
            return step, f
        if bracket.stuck(step, c.xtol) or _at_bound(step, f, slope, line, decrease, c):
            return None
        if modified and f <= line and slope >= min(c.ftol, c.gtol) * slope0:
            modified = False
        # stage 1, a trial below the best one yet above the line: interpolate the modified
        # function, whose trial keeps the step where phi can still fall below the line
        shift = decrease if modified and line < f <= bracket.fx else 0.0
        step = next_trial(bracket, step, f, slope, shift)
        if bracket.bracketed:
            if abs(bracket.sty - bracket.stx) >= 0.66 * previous_width:
                step = bracket.stx + 0.5 * (bracket.sty - bracket.stx)
            previous_width, width = width, abs(bracket.sty - bracket.stx)
        step = bracket.clamp(step, c.min_step, c.max_step, c.xtol)
    return None


def _at_bound(step: float, f: float, slope: float, line: float, decrease: float,
              c: Conditions) -> bool:
    """The step sits on a bound it cannot leave: the largest still decreasing steeply, or
    the smallest not decreasing enough."""
    return ((step >= c.max_step and f <= line and slope <= decrease)
            or (step <= c.min_step and (f > line or slope >= decrease)))


def along(fun: Callable[[np.ndarray, np.ndarray], float], x: np.ndarray, d: np.ndarray,
          x_new: np.ndarray, g_new: np.ndarray) -> Phi:
    """phi for the objective ``fun(w, g)`` along ``d`` from ``x``: each call evaluates
    ``x_new = x + a d`` and fills ``g_new`` (L-BFGS's buffers)."""
    def phi(step: float) -> tuple[float, float]:
        np.multiply(d, step, out=x_new)
        np.add(x_new, x, out=x_new)
        f = fun(x_new, g_new)
        return f, dot(g_new, d)

    return phi


def wolfe_search(name: str, phi: Phi, step: float, f0: float, slope0: float,
                 max_trials: int) -> float | None:
    """L-BFGS's call: the accepted point's value (the point and gradient in phi's buffers),
    or None."""
    found = search(name, phi, step, f0, slope0, max_trials)
    return None if found is None else found[1]
