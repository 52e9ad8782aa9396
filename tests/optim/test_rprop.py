"""RPROP (crfkit.optim.rprop) against a plain re-implementation written from Riedmiller &
Braun's rule and Wapiti's handling of its variants and of L1, on small smooth objectives;
and the minimum it reaches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crfkit.optim import rprop
from tests.helpers import rosenbrock_sum

EPS = 64 * np.finfo(float).eps


def sign(v: float) -> float:
    return -1.0 if v < -EPS else 1.0 if v > EPS else 0.0


def reference(fun, x0, iterations, *, backtrack, l1=0.0, cutoff=False, steps=None):
    """RPROP one weight at a time, in plain Python floats; the weights after each update."""
    steps = steps or rprop.Steps()
    n = x0.size
    x, xp, gp, stp = list(map(float, x0)), [0.0] * n, [0.0] * n, [0.1] * n
    g = np.empty(n)
    for _ in range(iterations):
        fun(np.array(x), g)
        for i in range(n):
            grad = float(g[i])
            d = grad
            if l1 and not cutoff:  # OWL-QN's pseudo-gradient
                if abs(x[i]) > EPS:
                    d = grad + l1 * sign(x[i])
                else:
                    d = grad + l1 if grad < -l1 else grad - l1 if grad > l1 else 0.0
            elif l1 and (grad + l1 * sign(x[i])) ** 2 < l1 ** 2 and (
                    x[i] == 0.0 or (gp[i] * grad < 0 and xp[i] * x[i] < 0)):
                xp[i] = x[i] if backtrack else xp[i]
                x[i], gp[i] = 0.0, grad
                continue
            turn = sign(gp[i]) * sign(d)
            stp[i] = (min(stp[i] * steps.stpinc, steps.stpmax) if turn > 0 else
                      max(stp[i] * steps.stpdec, steps.stpmin) if turn < 0 else stp[i])
            if turn < 0 and backtrack:
                x[i], gp[i] = xp[i], 0.0
                continue
            if turn == 0 and backtrack:
                xp[i] = x[i]
                if not (l1 and not cutoff):
                    x[i] -= stp[i] * sign(d)
            else:
                move = -stp[i] * sign(grad)
                if l1 and not cutoff and move * sign(d) >= 0:
                    move = 0.0
                xp[i] = x[i] if backtrack else xp[i]
                x[i] += move
            gp[i] = grad
    return np.array(x)


@pytest.mark.parametrize("variant", ["rprop", "rprop+", "rprop-"])
@pytest.mark.parametrize("l1,cutoff", [(0.0, False), (0.7, False), (0.7, True)])
def test_rprop_equals_the_plain_rule(variant, l1, cutoff):
    x0 = np.random.default_rng(3).uniform(-1.5, 1.5, 12)
    x0[[2, 7]] = 0.0  # weights that start at zero (L1's special case)
    want = reference(rosenbrock_sum, x0, 25, backtrack=variant != "rprop-", l1=l1,
                     cutoff=cutoff)
    got = rprop.minimize(rosenbrock_sum, x0, variant=variant, l1=l1, cutoff=cutoff,
                         maxiter=25, stop_eps=0)
    np.testing.assert_array_equal(got.x, want)
    assert got.iterations == 25


def test_step_options_bound_and_scale_the_moves():
    steps = rprop.Steps(stpmin=1e-3, stpmax=0.05, stpinc=1.5, stpdec=0.3)
    x0 = np.full(6, 0.5)
    want = reference(rosenbrock_sum, x0, 30, backtrack=True, steps=steps)
    trace = []
    got = rprop.minimize(rosenbrock_sum, x0, steps=steps, maxiter=30, stop_eps=0,
                         on_iteration=lambda info: trace.append(info.x.copy()) and None)
    np.testing.assert_array_equal(got.x, want)
    moves = np.abs(np.diff(np.array([x0, *trace]), axis=0))
    # the first step is 0.1 whatever the bounds (Wapiti's), later ones within stpmax, and
    # a backtrack undoes one of those
    assert moves[3:].max() <= 0.05 + 1e-15
    assert not np.array_equal(got.x, rprop.minimize(rosenbrock_sum, x0, maxiter=30,
                                                    stop_eps=0).x)


def test_rprop_reaches_the_minimum_and_l1_makes_exact_zeros():
    rng = np.random.default_rng(0)
    a, c = rng.uniform(0.5, 3.0, 40), rng.uniform(-2.0, 2.0, 40)

    def fun(x, g):
        np.multiply(a, x - c, out=g)
        return float(0.5 * np.sum(a * (x - c) ** 2))

    plain = rprop.minimize(fun, np.zeros(40), maxiter=300, stop_eps=0)
    np.testing.assert_allclose(plain.x, c, atol=1e-6)
    l1 = 0.9
    sparse = rprop.minimize(fun, np.zeros(40), l1=l1, maxiter=300, stop_eps=0)
    want = np.sign(c) * np.maximum(np.abs(c) - l1 / a, 0.0)
    np.testing.assert_allclose(sparse.x, want, atol=1e-6)
    assert np.array_equal(sparse.x == 0.0, want == 0.0)
    assert math.isclose(sparse.f, fun(sparse.x, np.empty(40)) + l1 * np.abs(sparse.x).sum(),
                        rel_tol=1e-6)


@pytest.mark.parametrize("variant,l1", [("rprop+", 0.0), ("rprop-", 0.4)])
def test_a_saved_state_continues_the_run_bit_for_bit(variant, l1):
    x0 = np.random.default_rng(5).uniform(-1, 1, 10)
    whole = rprop.minimize(rosenbrock_sum, x0, variant=variant, l1=l1, maxiter=30)
    first = rprop.minimize(rosenbrock_sum, x0, variant=variant, l1=l1, maxiter=12)
    rest = rprop.minimize(rosenbrock_sum, np.zeros(10), variant=variant, l1=l1, maxiter=30,
                          state=first.state)
    np.testing.assert_array_equal(rest.x, whole.x)
    assert (rest.iterations, rest.f, rest.reason) == (whole.iterations, whole.f, whole.reason)
