"""L-BFGS/OWL-QN's saved state (Result.state) continues a run bit for bit, whether it
stopped on -i or on Ctrl-C; max_linesearch bounds the evaluations of one line search."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.optim import INTERRUPTED, lbfgs
from tests.helpers import rosenbrock_sum

X0 = np.tile([-1.2, 1.0], 5)


@pytest.mark.parametrize("l1", [0.0, 0.5])
def test_state_after_maxiter_continues_bit_for_bit(l1):
    whole = lbfgs.minimize(rosenbrock_sum, X0, l1=l1, history=3, maxiter=25, stop_window=4,
                           l1_gtol=1e-4)
    first = lbfgs.minimize(rosenbrock_sum, X0, l1=l1, history=3, maxiter=9, stop_window=4,
                           l1_gtol=1e-4)
    rest = lbfgs.minimize(rosenbrock_sum, np.zeros(10), l1=l1, history=3, maxiter=25,
                          stop_window=4, l1_gtol=1e-4, state=first.state)
    np.testing.assert_array_equal(rest.x, whole.x)
    assert (rest.iterations, rest.f, rest.reason) == (whole.iterations, whole.f, whole.reason)


def test_state_after_ctrl_c_in_a_line_search_continues_bit_for_bit():
    whole = lbfgs.minimize(rosenbrock_sum, X0, history=3, maxiter=20)
    calls = 0

    def interrupted(x, g):
        nonlocal calls
        calls += 1
        if calls == 14:  # in the middle of the run, during an iteration's line search
            raise KeyboardInterrupt
        return rosenbrock_sum(x, g)

    first = lbfgs.minimize(interrupted, X0, history=3, maxiter=20)
    assert first.reason == INTERRUPTED and 0 < first.iterations < 12
    rest = lbfgs.minimize(rosenbrock_sum, X0, history=3, maxiter=20, state=first.state)
    np.testing.assert_array_equal(rest.x, whole.x)
    assert rest.iterations == whole.iterations == 20


def test_max_linesearch_bounds_the_evaluations_of_a_line_search():
    evaluations: list[int] = []

    def counted(x, g):
        evaluations[-1] += 1
        return rosenbrock_sum(x, g)

    def run(max_linesearch: int):
        evaluations[:] = [0]

        def new_iteration(info):
            evaluations.append(0)

        return lbfgs.minimize(counted, X0, maxiter=40, on_iteration=new_iteration,
                              max_linesearch=max_linesearch)

    free = run(lbfgs.MAX_LINESEARCH)
    most = max(evaluations[1:])  # the first count holds the start point's evaluation
    assert most >= 3 and free.reason == "maximum number of iterations"
    bounded = run(most - 1)
    assert bounded.reason.startswith("line search failed")
    assert bounded.iterations < free.iterations
    assert max(evaluations[1:]) == most - 1  # the failing search used all it was allowed


def test_without_state_the_weights_take_the_direction_s_memory():
    """keep_state=False returns the same run, its weights in no vector more: the peak of
    a run ends 8 MB (one vector) lower on a problem of 1M weights."""
    import tracemalloc

    n = 1 << 20

    def bowl(x: np.ndarray, g: np.ndarray) -> float:  # in place: no temporaries
        np.subtract(x, 1.0, out=g)
        return 0.5 * float(np.dot(g, g))

    lbfgs.minimize(bowl, np.zeros(4), history=1, maxiter=2)  # kernels loaded untraced
    peaks, results = [], []
    for keep in (True, False):
        tracemalloc.start()
        results.append(lbfgs.minimize(bowl, np.zeros(n), history=1, maxiter=2,
                                      keep_state=keep))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    kept, light = results
    np.testing.assert_array_equal(light.x, kept.x)
    assert (light.f, light.iterations, light.reason) == (kept.f, kept.iterations, kept.reason)
    assert kept.state is not None and light.state is None
    assert peaks[1] <= peaks[0] - 0.9 * 8 * n
