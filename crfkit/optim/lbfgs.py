"""L-BFGS with a backtracking (Armijo) line search.

The two-loop recursion keeps ``history`` pairs ``s = x' - x``, ``y = g' - g``
and applies the inverse-Hessian approximation to the gradient without ever
forming a matrix. The first step is scaled by ``1/|g|``; afterwards the unit
step is tried first, which L-BFGS accepts almost always.

Stopping rule (Wapiti's ``-e``/``-w``, CRFsuite's ``delta``/``period``):
stop when the objective improved by a relative amount below ``stop_eps``
over the last ``stop_window`` iterations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crfkit.kernels import dot

Function = Callable[[np.ndarray, np.ndarray], float]
IterationHook = Callable[[int, float, float], None]  # (iteration, objective, seconds)

ARMIJO = 1e-4
MAX_LINESEARCH = 30


@dataclass
class Result:
    x: np.ndarray
    f: float
    iterations: int
    reason: str


def minimize(fun: Function, x0: np.ndarray, *, history: int = 6, maxiter: int = 0,
             stop_eps: float = 1e-5, stop_window: int = 10,
             on_iteration: IterationHook | None = None) -> Result:
    """Minimise ``fun`` from ``x0`` (not modified); ``maxiter=0`` means no limit."""
    n = x0.size
    x = x0.astype(np.float64, copy=True)
    g = np.empty(n)
    f = fun(x, g)
    x_new, g_new, d = np.empty(n), np.empty(n), np.empty(n)
    S = np.empty((history, n))
    Y = np.empty((history, n))
    rho = np.zeros(history)
    stored = 0
    newest = -1
    values = [f]
    gnorm = np.sqrt(dot(g, g))
    np.negative(g, out=d)
    step = 1.0 / gnorm if gnorm > 0 else 1.0
    it = 0
    reason = "maximum number of iterations"
    start = time.perf_counter()
    while maxiter <= 0 or it < maxiter:
        if gnorm == 0.0:
            reason = "zero gradient"
            break
        gd = dot(g, d)
        if not gd < 0.0:  # not a descent direction: restart from steepest descent
            np.negative(g, out=d)
            gd = -dot(g, g)
            stored = 0
            step = 1.0 / np.sqrt(-gd)
        for _ in range(MAX_LINESEARCH):
            np.multiply(d, step, out=x_new)
            x_new += x
            f_new = fun(x_new, g_new)
            if f_new <= f + ARMIJO * step * gd:
                break
            step *= 0.5
        else:
            reason = "line search failed (the objective cannot be decreased further)"
            break
        it += 1
        newest = (newest + 1) % history
        np.subtract(x_new, x, out=S[newest])
        np.subtract(g_new, g, out=Y[newest])
        sy = dot(S[newest], Y[newest])
        if sy > 1e-12:
            rho[newest] = 1.0 / sy
            stored = min(stored + 1, history)
        else:
            newest = (newest - 1) % history
        x, x_new = x_new, x
        g, g_new = g_new, g
        f = f_new
        gnorm = np.sqrt(dot(g, g))
        values.append(f)
        if on_iteration is not None:
            on_iteration(it, f, time.perf_counter() - start)
        if len(values) > stop_window:
            old = values[-1 - stop_window]
            if (old - f) / max(abs(f), 1e-300) < stop_eps:
                reason = f"converged (relative improvement < {stop_eps:g} over " \
                         f"{stop_window} iterations)"
                break
        _two_loop(g, S, Y, rho, stored, newest, d)
        step = 1.0
    return Result(x=x, f=f, iterations=it, reason=reason)


def _two_loop(g: np.ndarray, S: np.ndarray, Y: np.ndarray, rho: np.ndarray, stored: int,
              newest: int, d: np.ndarray) -> None:
    """d = -H g with the stored pairs, newest first (Nocedal & Wright, alg. 7.4)."""
    history = len(rho)
    np.negative(g, out=d)
    if stored == 0:
        return
    order = [(newest - i) % history for i in range(stored)]
    alphas = np.empty(stored)
    for i, j in enumerate(order):
        alphas[i] = rho[j] * dot(S[j], d)
        d -= alphas[i] * Y[j]
    j = order[0]
    d *= 1.0 / (rho[j] * dot(Y[j], Y[j]))
    for i in range(stored - 1, -1, -1):
        j = order[i]
        beta = rho[j] * dot(Y[j], d)
        d += (alphas[i] - beta) * S[j]
