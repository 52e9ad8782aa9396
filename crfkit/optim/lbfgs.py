"""L-BFGS with a backtracking (Armijo) line search, and OWL-QN for an L1 term.

Minimises ``F(x) = fun(x) + l1 * |x|_1`` where ``fun`` is smooth (the
negative log-likelihood plus the L2 term). With ``l1 == 0`` this is plain
L-BFGS: the two-loop recursion keeps ``history`` pairs ``s = x' - x``,
``y = g' - g`` and applies the inverse-Hessian approximation to the gradient
without ever forming a matrix. The first step is scaled by ``1/|g|``;
afterwards the unit step is tried first, which L-BFGS accepts almost always;
when it is refused, the next trial is the minimiser of the cubic that fits F
and its slope at both ends of the step (:func:`_cubic_step`), kept below the
longest step a convex F could accept (:func:`_backtrack_step`; OWL-QN, whose
trial points are projected, halves the step instead).

With ``l1 > 0`` it becomes OWL-QN (Andrew & Gao, 2007), because ``|x|_1`` has
no gradient at 0 and a plain quasi-Newton step would make weights oscillate
around zero instead of reaching it:

* the *pseudo-gradient* ``pg`` replaces the gradient: ``g + l1*sign(x)`` where
  ``x != 0``; at ``x == 0`` the one-sided derivative that points downhill
  (``g + l1`` if negative, ``g - l1`` if positive), else 0 — the weight stays
  at zero because no direction decreases F;
* the two-loop direction is computed from ``pg`` (the ``s, y`` pairs still
  use the smooth gradient, since only ``fun`` has curvature). At a zero
  weight, a component that disagrees in sign with ``-pg`` is set to 0: the
  weight may only leave zero downhill. Andrew & Gao (and Wapiti, CRFsuite)
  zero such components at every weight; we do so only while the active set
  is still moving (the last step changed the sign or zero-ness of more than
  ``UNSETTLED`` of the non-zero weights). Once it has settled, F is smooth in
  the current orthant and the quasi-Newton direction is kept on the non-zero
  weights, where it disagrees with ``-pg`` on many of them (on CoNLL-2000,
  ~30% of the non-zero weights at iteration 60). Zeroing those cost the late
  iterations most of their quasi-Newton progress: ``-1 0.5 -2 1`` took 423
  iterations where L2 alone takes 209; with the direction kept, 220. Early
  on, while thousands of weights change sign per step, the full projection
  is the faster step there (measured). On small problems (tests, random
  quadratics) either rule takes about as many iterations;
* each trial point of the line search is projected onto the orthant of the
  current point (of ``-pg`` for zero coordinates): a weight that would cross
  zero stops at exactly zero. That is how L1 models become sparse;
* the Armijo condition uses ``pg . (x' - x)`` as the predicted decrease,
  and a trial point whose predicted change is not a decrease is refused
  (possible once components disagreeing with ``-pg`` are kept, if
  the orthant projection cuts the others).

Both variants decrease F monotonically (each accepted step satisfies the
Armijo condition). A Ctrl-C returns the last accepted point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.optim import INTERRUPTED, Iteration, IterationHook, Result, Stop, StopRule
from crfkit.optim.interrupts import uninterrupted
from crfkit.optim.linesearch import along, wolfe_search
from crfkit.optim.optimality import OptimalityRule
from crfkit.vectors import dot, l1_norm

ARMIJO = 1e-4
MAX_LINESEARCH = 30
# Give up once this many shorter trials in a row left F above F(x) without bringing it closer: a
# continuous F comes back to F(x) as the step shrinks, so F is not continuous at x (a
# skip-chain's Bethe objective whose BP found another fixed point) and no step will do.
MAX_STALLED = 5
# OWL-QN: while the last step changed the sign (or zero-ness) of more than this share of
# the non-zero weights, the active set is still being found (module docstring).
UNSETTLED = 0.01


Function = Callable[[np.ndarray, np.ndarray], float]  # the smooth part: f = fun(w, g fills)


def minimize(fun: Function, x0: np.ndarray, *, l1: float = 0.0, history: int = 6,
             maxiter: int = 0, stop_eps: float = 1e-5, stop_window: int = 10,
             l1_gtol: float = 0.0, on_iteration: IterationHook | None = None,
             max_linesearch: int = MAX_LINESEARCH, linesearch: str | None = None,
             state: dict | None = None, keep_state: bool = True) -> Result:
    """Minimise ``fun(x) + l1*|x|_1`` from ``x0`` (not modified); ``maxiter=0``: no limit.

    ``on_iteration`` is called after every accepted step and may return a
    reason to stop. The returned ``f`` includes the L1 term. With ``l1 > 0``
    and ``l1_gtol > 0`` the run also stops on the pseudo-gradient's norm
    (:mod:`crfkit.optim.optimality`); without L1, ``l1_gtol`` is not read.
    ``max_linesearch`` (trials before the run stops) and ``linesearch``: :func:`_search`.
    ``state``: the :attr:`Result.state` of an earlier run on the same problem, to
    continue it exactly (``x0`` is then not read; ``maxiter`` counts its iterations too).
    ``keep_state=False``: the result carries no state, and its ``x`` takes the direction's
    memory instead of a new copy, so returning costs no vector more than iterating.
    """
    _check(l1, linesearch)
    pairs = _History(history, x0.size)
    stop = StopRule(stop_eps, stop_window)
    f, d, step, it, settling, optimal = _begin(fun, x0, l1, pairs, stop, l1_gtol, state)
    x, g = pairs.x, pairs.g  # views of the history's spare rows: see _History
    pg, gnorm = _pseudo_gradient_and_norm(x, g, l1, np.empty(x.size) if l1 > 0 else g)
    reason = "maximum number of iterations"
    start = time.perf_counter()
    try:
        while maxiter <= 0 or it < maxiter:
            if gnorm == 0.0:
                reason = "zero gradient" if l1 == 0 else "zero pseudo-gradient (optimal)"
                break
            with uninterrupted():  # a state saved on Ctrl-C is the one of an iteration's start
                gd, step = _descent(d, pg, x, l1, settling, pairs, step, gnorm)
            x_new, g_new = pairs.next_rows()
            found = _search(linesearch, fun, x, f, d, step, gd, pg, l1, x_new, g_new,
                            max_linesearch)
            if found is None:
                reason = "line search failed (the objective cannot be decreased further)"
                break
            with uninterrupted():
                it += 1
                if l1 > 0:
                    settling = _sign_changes(x_new, x) > UNSETTLED
                x, g = pairs.push()
                f = found
                pg, gnorm = _pseudo_gradient_and_norm(x, g, l1, pg)
                asked = on_iteration and on_iteration(
                    Iteration(it, f, x, time.perf_counter() - start, gnorm=float(gnorm)))
                finished = asked or stop(f) or optimal(gnorm)
                pairs.direction(pg, d)  # also when finished: a saved state continues from it
                step = 1.0
            if finished:
                reason = finished
                break
    except KeyboardInterrupt:
        reason = INTERRUPTED
    except Stop as stopped:
        reason = str(stopped)
    if not keep_state:  # the direction is not needed any more: it takes x (a row of S)
        np.copyto(d, x)
        return Result(x=d, f=f, iterations=it, reason=reason, state=None)
    kept = {**pairs.state(), "f": np.float64(f), "d": d, "step": np.float64(step),
            "it": np.int64(it), "settling": np.bool_(settling),
            "stop_values": np.array(stop.values, dtype=np.float64),
            "optimal_bound": np.float64(optimal.bound), "optimal_below": np.int64(optimal.below)}
    return Result(x=x.copy(), f=f, iterations=it, reason=reason, state=kept)


def kernels_ahead(l1: float) -> list[tuple[Callable, tuple]]:
    """The kernels :func:`minimize` calls after its first evaluation of ``fun``, each with
    stand-in arguments of the types it calls them with: what a first run (empty Numba
    cache) can compile while it waits for another kernel (``crfkit.kernels.aside``)."""
    v = np.empty(1)
    pairs = _History(1, 1)
    calls: list[tuple[Callable, tuple]] = [
        (_two_loop, (v, pairs.S, pairs.Y, pairs.rows, pairs.rho, pairs.stored, pairs.newest, v,
                     pairs.alphas)),
        (_trial_point, (v, v, 1.0, v, l1 > 0, v)), (dot, (v, v))]
    if l1 > 0:
        calls += [(_pseudo_gradient, (v, v, l1, v)), (_project_direction, (v, v, v, True)),
                  (_sign_changes, (v, v)), (_predicted_decrease, (v, v, v)), (l1_norm, (v,))]
    return calls


def _begin(fun: Function, x0: np.ndarray, l1: float, pairs: _History, stop: StopRule,
           l1_gtol: float, state: dict | None) -> tuple:
    """The run's start: F at ``x0``, steepest descent scaled by ``1/|g|``; or where
    ``state`` left off. Returns f, the direction, the first step, the iteration count,
    OWL-QN's settling flag and the optimality rule; x and g go to ``pairs``."""
    x, g = pairs.x, pairs.g
    if state is not None:
        pairs.restore(state)
        stop.values = [float(v) for v in state["stop_values"]]
        optimal = OptimalityRule(l1_gtol if l1 > 0 else 0.0, stop.window, 0.0)
        optimal.bound, optimal.below = float(state["optimal_bound"]), int(state["optimal_below"])
        return (float(state["f"]), np.array(state["d"], dtype=np.float64),
                float(state["step"]), int(state["it"]), bool(state["settling"]), optimal)
    x[:] = x0
    f = fun(x, g) + (l1 * l1_norm(x) if l1 > 0 else 0.0)  # no kernel compiled without L1
    stop(f)
    # the pseudo-gradient (the gradient itself if no L1)
    pg, gnorm = _pseudo_gradient_and_norm(x, g, l1, np.empty(x.size) if l1 > 0 else g)
    step = 1.0 / gnorm if gnorm > 0 else 1.0
    optimal = OptimalityRule(l1_gtol if l1 > 0 else 0.0, stop.window, gnorm)
    return f, np.negative(pg), step, 0, True, optimal


def _check(l1: float, linesearch: str | None) -> None:
    if l1 < 0:
        raise ValueError(f"l1 must be >= 0, got {l1}")
    if linesearch is not None and l1 > 0:
        raise ValueError("OWL-QN (l1 > 0) backtracks along the orthant: no other line search")


def _search(linesearch: str | None, fun: Function, x: np.ndarray, f: float, d: np.ndarray,
            step: float, gd: float, pg: np.ndarray, l1: float, x_new: np.ndarray,
            g_new: np.ndarray, max_trials: int) -> float | None:
    """The accepted point's objective by crfkit's line search (``linesearch`` None) or one
    of CRFsuite's (:mod:`crfkit.optim.linesearch`, without L1), its point and gradient in
    ``x_new``, ``g_new``; None if the search failed."""
    if linesearch is None:
        return _line_search(fun, x, f, d, step, gd, pg, l1, x_new, g_new, max_trials)
    return wolfe_search(linesearch, along(fun, x, d, x_new, g_new), step, f, gd, max_trials)


def _descent(d: np.ndarray, pg: np.ndarray, x: np.ndarray, l1: float, settling: bool,
             pairs: _History, step: float, gnorm: float) -> tuple[float, float]:
    """The slope along ``d`` (projected on the orthant with L1) and the first trial step;
    a direction that does not descend is replaced by steepest descent, and the history
    is cleared."""
    if l1 > 0:
        _project_direction(d, pg, x, settling)
    gd = dot(pg, d)
    if not gd < 0.0:
        np.negative(pg, out=d)
        pairs.clear()
        step = 1.0 / gnorm
    return gd, step


def _pseudo_gradient_and_norm(x: np.ndarray, g: np.ndarray, l1: float,
                              pg: np.ndarray) -> tuple[np.ndarray, float]:
    """OWL-QN's pseudo-gradient written into ``pg`` (without L1: ``g`` itself), and its
    norm."""
    if l1 > 0:
        _pseudo_gradient(x, g, l1, pg)
    else:
        pg = g
    return pg, np.sqrt(dot(pg, pg))


def _line_search(fun: Function, x: np.ndarray, f: float, d: np.ndarray, step: float,
                 gd: float, pg: np.ndarray, l1: float, x_new: np.ndarray,
                 g_new: np.ndarray, max_trials: int = MAX_LINESEARCH) -> float | None:
    """Backtrack from ``step`` along ``d`` until the Armijo condition holds.

    Fills ``x_new``/``g_new`` with the accepted point and its smooth gradient
    and returns its objective (L1 term included), or None if ``max_trials``
    trials, each shorter than the last (:func:`_cubic_step`; halved with L1), did not
    decrease F enough. With L1 each trial point is projected
    onto the orthant (module docstring) and the predicted decrease is
    ``pg . (x_new - x)``; without it, ``step * gd``.
    """
    previous = np.inf
    stalled = 0
    for _ in range(max_trials):
        _trial_point(x, d, step, pg, l1 > 0, x_new)
        f_new = fun(x_new, g_new)
        if l1 > 0:
            f_new += l1 * l1_norm(x_new)
            decrease = _predicted_decrease(pg, x_new, x)
        else:
            decrease = step * gd
        if decrease < 0.0 and f_new <= f + ARMIJO * decrease:
            return f_new
        stalled = stalled + 1 if f < f_new >= previous else 0
        if stalled >= MAX_STALLED:
            return None
        previous = f_new
        step = step * 0.5 if l1 > 0 else _backtrack_step(step, f, gd, f_new, dot(g_new, d))
    return None


def _backtrack_step(a: float, f0: float, g0: float, fa: float, ga: float) -> float:
    """The next trial after step ``a`` was refused: the cubic's minimiser
    (:func:`_cubic_step`), unless it lies past ``a - (fa - f0 - ARMIJO a g0)/(ga - ARMIJO g0)``,
    where the tangent at ``a`` meets the Armijo line. F is convex on a CRF's line, and a
    convex F lies above that tangent: no step past the point can be accepted. The trial
    is then where the tangents at 0 and at ``a`` meet, the minimiser of the convex lower
    model they make.

    The case is a long quasi-Newton step into the region where the log-likelihood is
    nearly linear (Brown's second iteration, 92 labels): F's slope there barely changes,
    so the cubic puts its minimiser too far and the next trial is refused too, where the
    tangents' meeting point lands near the minimum. Kept above a hundredth of ``a``, for
    a non-convex F (hidden states, skip chains) whose tangent bounds nothing.
    """
    t = _cubic_step(a, f0, g0, fa, ga)
    if not (ga > 0.0 and fa > f0 and math.isfinite(fa) and math.isfinite(ga)):
        return t
    gap = fa - ga * a - f0  # the tangent at a, at step 0, minus F(0): < 0 if F is convex
    if not t > gap / (ARMIJO * g0 - ga):  # where that tangent meets the Armijo line
        return t
    meet = gap / (g0 - ga)
    return max(meet, 0.01 * a) if meet > 0.0 else t


def _cubic_step(a: float, f0: float, g0: float, fa: float, ga: float) -> float:
    """The next trial step after step ``a`` failed: the minimiser of the cubic through
    F and its slope at 0 (``f0``, ``g0``) and at ``a`` (``fa``, ``ga``: the trial's
    gradient is computed anyway), kept within [0.1 a, 0.5 a] (Nocedal & Wright, 3.5).

    Plain halving took 233 evaluations for 203 iterations on CoNLL-2000 with
    ``chunking.pat``; the interpolated steps (0.15-0.49 of the failed one) took 218
    for 194. Halving where the cubic has no minimiser or a value is not finite.
    """
    a, f0, g0, fa, ga = float(a), float(f0), float(g0), float(fa), float(ga)
    half = 0.5 * a
    if not (a > 0.0 and math.isfinite(fa) and math.isfinite(ga)):
        return half
    d1 = g0 + ga - 3.0 * (fa - f0) / a
    disc = d1 * d1 - g0 * ga
    if not (disc >= 0.0 and math.isfinite(disc)):  # no minimiser (or an overflow)
        return half
    d2 = math.sqrt(disc)
    denom = ga - g0 + 2.0 * d2
    if not (denom != 0.0 and math.isfinite(denom)):
        return half
    t = a - a * (ga + d2 - d1) / denom
    return min(max(t, 0.1 * a), half) if math.isfinite(t) else half


class _History:
    """The last ``size`` pairs ``s = x' - x``, ``y = g' - g`` and ``rho = 1 / s.y``, and
    the optimiser's point and gradient.

    ``S`` and ``Y`` have one row more than the pairs: the spare rows hold x and g
    (``x``, ``g``), and the line search writes its trial point and gradient into the
    rows of the slot the next pair will take (:meth:`next_rows`), whose old pair the
    direction has already used. :meth:`push` then turns x and g into the new pair where
    they lie and makes the trial rows the spare ones: no copy, and 4 vectors of the
    size of the weights where separate x, g, x' and g' took 6 (7 MB on CoNLL-2000).
    """

    def __init__(self, size: int, n: int) -> None:
        self.S = np.empty((size + 1, n))
        self.Y = np.empty((size + 1, n))
        self.rho = np.zeros(size)
        self.alphas = np.empty(size)  # the two-loop recursion's scratch
        self.rows = np.arange(size)  # slot -> its row of S and Y
        self.spare = size  # the row of x in S, of g in Y
        self.stored = 0
        self.newest = -1

    @property
    def x(self) -> np.ndarray:
        return self.S[self.spare]

    @property
    def g(self) -> np.ndarray:
        return self.Y[self.spare]

    def clear(self) -> None:
        self.stored = 0

    def state(self) -> dict:
        """The pairs, x and g, and where each lies: what :meth:`restore` takes back."""
        return {"S": self.S, "Y": self.Y, "rho": self.rho, "rows": self.rows,
                "spare": np.int64(self.spare), "stored": np.int64(self.stored),
                "newest": np.int64(self.newest)}

    def restore(self, state: dict) -> None:
        if state["S"].shape != self.S.shape:
            raise ValueError(f"the state's history is {state['S'].shape}, this run's "
                             f"{self.S.shape} (weights, --history)")
        self.S[:], self.Y[:], self.rho[:] = state["S"], state["Y"], state["rho"]
        self.rows[:] = state["rows"]
        self.spare, self.stored = int(state["spare"]), int(state["stored"])
        self.newest = int(state["newest"])

    def next_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Where the line search puts x' and g': the rows of the slot the next pair takes."""
        row = self.rows[(self.newest + 1) % self.rho.size]
        return self.S[row], self.Y[row]

    def push(self) -> tuple[np.ndarray, np.ndarray]:
        """Store the pair of the step x -> x' (over the oldest) if it has curvature;
        returns the new x and g (x', g')."""
        slot = (self.newest + 1) % self.rho.size
        row = self.rows[slot]
        np.subtract(self.S[row], self.x, out=self.x)  # s = x' - x, where x was
        np.subtract(self.Y[row], self.g, out=self.g)
        self.rows[slot], self.spare = self.spare, row
        sy = dot(self.S[self.rows[slot]], self.Y[self.rows[slot]])
        if sy > 1e-12:
            self.rho[slot] = 1.0 / sy
            self.newest = slot
            self.stored = min(self.stored + 1, self.rho.size)
        else:  # no curvature information: drop the pair (it overwrote the oldest one)
            self.stored = min(self.stored, self.rho.size - 1)
        return self.x, self.g

    def direction(self, pg: np.ndarray, d: np.ndarray) -> None:
        """d = -H pg, H the inverse-Hessian approximation of the stored pairs."""
        _two_loop(pg, self.S, self.Y, self.rows, self.rho, self.stored, self.newest, d,
                  self.alphas)


@njit(**JIT)
def _two_loop(g, S, Y, rows, rho, stored, newest, d, alphas):
    """d = -H g with the stored pairs (slot j in row ``rows[j]`` of S and Y), newest
    first (Nocedal & Wright, alg. 7.4); ``alphas``: scratch, one per pair.

    Compiled, with the vector updates done in place: in numpy each update made
    a temporary of the size of the weights (20 ms an iteration on CoNLL-2000).
    """
    history = rho.size
    n = d.size
    for k in range(n):
        d[k] = -g[k]
    if stored == 0:
        return
    for i in range(stored):
        j = (newest - i) % history
        r = rows[j]
        a = rho[j] * dot(S[r], d)
        alphas[i] = a
        for k in range(n):
            d[k] -= a * Y[r, k]
    r = rows[newest]
    scale = 1.0 / (rho[newest] * dot(Y[r], Y[r]))
    for k in range(n):
        d[k] *= scale
    for i in range(stored - 1, -1, -1):
        j = (newest - i) % history
        r = rows[j]
        c = alphas[i] - rho[j] * dot(Y[r], d)
        for k in range(n):
            d[k] += c * S[r, k]


# --- OWL-QN helpers (serial loops: a fixed summation order, no temporaries) ------------------
@njit(**JIT)
def _pseudo_gradient(x, g, l1, pg):
    """pg = the steepest-descent-defining subgradient of fun + l1*|x|_1 (module docstring)."""
    for i in range(x.size):
        if x[i] > 0.0:
            pg[i] = g[i] + l1
        elif x[i] < 0.0:
            pg[i] = g[i] - l1
        elif g[i] + l1 < 0.0:
            pg[i] = g[i] + l1
        elif g[i] - l1 > 0.0:
            pg[i] = g[i] - l1
        else:
            pg[i] = 0.0


@njit(**JIT)
def _project_direction(d, pg, x, everywhere):
    """Zero the components of d whose sign disagrees with -pg: at x = 0 only, or
    ``everywhere`` while the active set settles (module docstring)."""
    for i in range(d.size):
        if (everywhere or x[i] == 0.0) and d[i] * pg[i] >= 0.0:
            d[i] = 0.0


@njit(**JIT)
def _sign_changes(x_new, x):
    """The share of x_new's non-zero weights whose sign (or zero-ness) differs from x's."""
    changed = 0
    nonzero = 0
    for i in range(x.size):
        if (x_new[i] > 0.0) != (x[i] > 0.0) or (x_new[i] < 0.0) != (x[i] < 0.0):
            changed += 1
        if x_new[i] != 0.0:
            nonzero += 1
    return changed / max(nonzero, 1)


@njit(**JIT)
def _trial_point(x, d, step, pg, orthant, out):
    """out = x + step*d, projected (if ``orthant``) onto the orthant of x (of -pg where x = 0)."""
    for i in range(x.size):
        v = x[i] + step * d[i]
        if orthant:
            side = x[i] if x[i] != 0.0 else -pg[i]
            if v * side <= 0.0:
                v = 0.0
        out[i] = v


@njit(**JIT)
def _predicted_decrease(pg, x_new, x):
    """pg . (x_new - x): the first-order change of F along the projected step."""
    acc = 0.0
    for i in range(x.size):
        acc += pg[i] * (x_new[i] - x[i])
    return acc
