"""Resilient propagation (Riedmiller & Braun, 1993), as Wapiti's ``-a rprop``, ``rprop+``
and ``rprop-`` train.

RPROP ignores the gradient's size and keeps a step per weight: it grows (times
``stpinc``, up to ``stpmax``) while the gradient keeps its sign and shrinks (times
``stpdec``, down to ``stpmin``) when the sign flips, and the weight moves by its step
against the gradient's sign. One objective evaluation per iteration and no line search:
cheap iterations, many of them, and no monotone decrease.

Variants, as Wapiti names them:

* ``rprop`` and ``rprop+`` (with weight backtracking): after a sign flip the weight goes
  back to its previous value and the next iteration takes no step for it;
* ``rprop-``: no backtracking, the weight always moves.

With an L1 term there are two ways, as in Wapiti:

* by default, OWL-QN's pseudo-gradient (:mod:`crfkit.optim.lbfgs`) replaces the gradient
  in the sign tests and a move that would leave the orthant it points to is cancelled;
* ``cutoff``: the plain gradient, and a weight whose L1 subgradient interval contains 0 is
  set to zero when it is zero already or has just crossed zero with its gradient.
  (Wapiti 1.5 does not allocate the previous weights in this mode and crashes; here they
  are kept, as the rule reads them.)

Signs are taken with a dead zone of ``64 * machine epsilon``, as Wapiti does, so that
rounding noise around zero counts as no sign. The objective reported for an iteration
is that of the point whose gradient it used, before its update (the only one evaluated);
the weights returned are the updated ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.optim import INTERRUPTED, Iteration, IterationHook, Result, Stop, StopRule
from crfkit.optim.interrupts import uninterrupted
from crfkit.optim.lbfgs import Function
from crfkit.vectors import l1_norm

EPSILON = 64.0 * float(np.finfo(np.float64).eps)
FIRST_STEP = 0.1
VARIANTS = ("rprop", "rprop+", "rprop-")


@dataclass(frozen=True)
class Steps:
    """The per-weight step's bounds and factors (Wapiti's --stpmin ... --stpdec)."""

    stpmin: float = 1e-8
    stpmax: float = 50.0
    stpinc: float = 1.2
    stpdec: float = 0.5


def minimize(fun: Function, x0: np.ndarray, *, variant: str = "rprop", l1: float = 0.0,
             cutoff: bool = False, steps: Steps = Steps(), maxiter: int = 0,
             stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None, state: dict | None = None) -> Result:
    """Minimise ``fun(x) + l1*|x|_1`` from ``x0`` (not modified), or from ``state`` (a
    :attr:`Result.state` of an earlier run: it continues as if never stopped).

    ``maxiter`` counts iterations in all (those of ``state`` included); 0: no limit.
    The result's ``state`` holds everything the next iterations depend on.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown rprop variant {variant!r}")
    if state is None:
        x, xp, gp = x0.astype(np.float64), np.zeros(x0.size), np.zeros(x0.size)
        stp = np.full(x0.size, FIRST_STEP)
        it, f, history = 0, float("nan"), []
    else:
        x, xp, stp, gp = (np.array(state[k], dtype=np.float64) for k in ("x", "xp", "stp", "gp"))
        it, f, history = int(state["it"]), float(state["f"]), list(state["stop_values"])
    stop = StopRule(stop_eps, stop_window)
    stop.values = history
    g = np.empty(x.size)
    mode = 0 if l1 == 0 else 2 if cutoff else 1
    backtrack = variant != "rprop-"
    reason = "maximum number of iterations"
    start = time.perf_counter()
    try:
        while maxiter <= 0 or it < maxiter:
            f_x = fun(x, g) + (l1 * l1_norm(x) if l1 > 0 else 0.0)
            with uninterrupted():
                _update(x, xp, stp, g, gp, l1, mode, backtrack, steps.stpmin, steps.stpmax,
                        steps.stpinc, steps.stpdec)
                it, f = it + 1, f_x
                stopped = stop(f)
                asked = on_iteration and on_iteration(
                    Iteration(it, f, x, time.perf_counter() - start))
            if asked or stopped:
                reason = asked or stopped
                break
    except KeyboardInterrupt:
        reason = INTERRUPTED
    except Stop as error:
        reason = str(error)
    kept = {"x": x, "xp": xp, "stp": stp, "gp": gp, "it": np.int64(it), "f": np.float64(f),
            "stop_values": np.array(stop.values, dtype=np.float64)}
    return Result(x=x.copy(), f=f, iterations=it, reason=reason, state=kept)


@njit(**JIT)
def _sign(v):
    return -1.0 if v < -EPSILON else 1.0 if v > EPSILON else 0.0


@njit(**JIT)
def _update(x, xp, stp, g, gp, l1, mode, backtrack, stpmin, stpmax, stpinc, stpdec):
    """One RPROP step for every weight, in place (module docstring).

    ``mode``: 0 no L1, 1 the pseudo-gradient, 2 the cutoff. ``gp`` receives the gradient
    seen (0 after a backtrack, so that the next step neither grows nor shrinks).
    """
    for i in range(x.size):
        pg = g[i]
        if mode == 1:
            pg = _pseudo_gradient(x[i], g[i], l1)
        elif mode == 2 and (g[i] + l1 * _sign(x[i])) ** 2 < l1 * l1:
            if x[i] == 0.0 or (gp[i] * g[i] < 0.0 and xp[i] * x[i] < 0.0):
                if backtrack:
                    xp[i] = x[i]
                x[i] = 0.0
                gp[i] = g[i]
                continue
        agree = _sign(gp[i]) * _sign(pg)
        if agree > 0.0:
            stp[i] = min(stp[i] * stpinc, stpmax)
        elif agree < 0.0:
            stp[i] = max(stp[i] * stpdec, stpmin)
        seen = g[i]
        if not backtrack or agree > 0.0:
            delta = -stp[i] * _sign(g[i])
            if mode == 1 and delta * _sign(pg) >= 0.0:
                delta = 0.0  # it would leave the orthant the pseudo-gradient points to
            if backtrack:
                xp[i] = x[i]
            x[i] += delta
        elif agree < 0.0:  # the sign flipped: undo the last move
            x[i] = xp[i]
            seen = 0.0
        else:
            xp[i] = x[i]
            if mode != 1:
                x[i] -= stp[i] * _sign(pg)
        gp[i] = seen


@njit(**JIT)
def _pseudo_gradient(x, g, l1):
    """OWL-QN's pseudo-gradient of one weight, with the dead zone on the weight's sign."""
    if x < -EPSILON:
        return g - l1
    if x > EPSILON:
        return g + l1
    if g < -l1:
        return g + l1
    if g > l1:
        return g - l1
    return 0.0
