"""Optimisers against what must hold at their result.

* OWL-QN: exact soft-thresholding on a separable quadratic; on a CRF, a
  monotone objective and the L1 optimality (KKT) conditions at the end;
* L-BFGS/OWL-QN: an iteration hook can stop the run, Ctrl-C keeps the last point;
* SGD-L1: one step equals a gradient step of the full objective followed by
  Tsuruoka's clipping; many epochs come close to OWL-QN's optimum;
* averaged perceptron: equals a plain re-implementation that averages the
  weight vectors explicitly (no Daumé trick).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from crfkit.kernels import lattice
from crfkit.kernels.crfsuite_epochs import OnlineEpochs
from crfkit.kernels.epochs import PerceptronEpochs, SgdEpochs
from crfkit.kernels.objective import Objective
from crfkit.optim import INTERRUPTED, Iteration, lbfgs, perceptron, sgd
from crfkit.space import Dataset
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, no_literal_versions, random_corpus


def quadratic(a: np.ndarray, c: np.ndarray):
    """f(x) = 1/2 sum a_i (x_i - c_i)^2, an objective with a closed-form L1 solution."""

    def fun(x: np.ndarray, g: np.ndarray) -> float:
        np.multiply(a, x - c, out=g)
        return float(0.5 * np.sum(a * (x - c) ** 2))

    return fun


def test_owlqn_soft_thresholds_a_separable_quadratic():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 3.0, 60)
    c = rng.uniform(-2.0, 2.0, 60)
    l1 = 0.9
    result = lbfgs.minimize(quadratic(a, c), np.zeros(60), l1=l1, stop_eps=0, maxiter=500)
    want = np.sign(c) * np.maximum(np.abs(c) - l1 / a, 0.0)
    np.testing.assert_allclose(result.x, want, atol=1e-8)
    assert np.array_equal(result.x == 0.0, want == 0.0)  # exact zeros, not tiny values
    assert 10 < np.sum(want == 0.0) < 50


def test_plain_lbfgs_still_minimises():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(20, 20))
    H = A @ A.T + np.eye(20)
    b = rng.normal(size=20)

    def fun(x, g):
        np.subtract(H @ x, b, out=g)
        return float(0.5 * x @ H @ x - b @ x)

    result = lbfgs.minimize(fun, np.zeros(20), stop_eps=0, maxiter=300)
    np.testing.assert_allclose(result.x, np.linalg.solve(H, b), rtol=1e-6, atol=1e-8)


def test_cubic_step_finds_a_quadratics_minimum_after_one_refused_step():
    """On a quadratic the cubic through F and its slope at 0 and at a refused step is
    the quadratic itself: the second trial is its minimiser, and is accepted."""
    trials = []

    def fun(x, g):
        trials.append(float(x[0]))
        g[0] = 10.0 * (x[0] - 0.8)
        return float(5.0 * (x[0] - 0.8) ** 2)

    # from x = 1 the first step (1/|g| along -g) reaches 0, where F is 3.2 > 0.2: refused
    result = lbfgs.minimize(fun, np.array([1.0]), stop_eps=0, maxiter=1)
    assert trials[0] == 1.0 and trials[1] == pytest.approx(0.0, abs=1e-12)
    assert trials[2] == pytest.approx(0.8, abs=1e-12)
    assert len(trials) == 3 and result.x[0] == trials[2]


@pytest.mark.parametrize("fa,ga,want", [
    (2.0, 3.0, 0.25),            # F = 1 - a + 2 a^2: the minimiser of that quadratic
    (1.0 / 3.0, -1.0, 0.5),      # a cubic without a local minimum: halve
    (np.inf, 1.0, 0.5),          # an overflowing trial: halve
    (1.0, np.nan, 0.5),
    (2.0, -1.0, 0.1),            # the minimiser lies below a tenth of the step: a tenth
    (100.0, 1000.0, 0.5),        # ... above its half: a half
])
def test_cubic_step_falls_back_and_is_clamped(fa, ga, want):
    """From F(0) = 1 and slope -1, a refused step of 1 with F = fa and slope ga there:
    the cubic's minimiser, halving where it has none, within [0.1, 0.5] of the step."""
    assert lbfgs._cubic_step(1.0, 1.0, -1.0, fa, ga) == pytest.approx(want)


@pytest.mark.parametrize("a,f0,g0,fa,ga", [
    (1e-300, 1.0, -1.0, 1e308, 1e308),   # (fa - f0) / a overflows
    (1.0, 1.0, -1e300, 1e308, 1e308),    # d1 * d1 overflows
    (1.0, 1.0, -1.0, 1e308, -1e308),     # inf - inf in the cubic's terms
    (0.0, 1.0, -1.0, 2.0, 1.0),          # a step that underflowed to zero
])
def test_cubic_step_halves_where_its_arithmetic_overflows(a, f0, g0, fa, ga):
    """Extreme values give half the step, never NaN (a NaN step would make every later
    trial NaN) and never a warning (the suite turns warnings into errors)."""
    assert lbfgs._cubic_step(a, f0, g0, fa, ga) == 0.5 * a


def _kinked(t):
    """A convex F along a line whose slope saturates at +-40 away from its minimum at
    0.05, as a log-likelihood's does along a long step: log(e^-40t + e^40(t-0.1))."""
    down, up = math.exp(-40.0 * t), math.exp(40.0 * (t - 0.1))
    return math.log(down + up), 40.0 * (up - down) / (down + up)


def test_backtrack_step_goes_where_the_tangents_meet_when_the_cubic_overshoots():
    """After a refused unit step into the linear region the cubic's trial (0.149) lies
    where the tangent at the step is above the Armijo line: refused again, as a convex F
    must be. The next trial is where the tangents at 0 and 1 meet, next to the minimum,
    and F accepts it."""
    (f0, g0), (fa, ga) = _kinked(0.0), _kinked(1.0)
    cubic = lbfgs._cubic_step(1.0, f0, g0, fa, ga)
    step = lbfgs._backtrack_step(1.0, f0, g0, fa, ga)
    assert _kinked(cubic)[0] > f0 + lbfgs.ARMIJO * cubic * g0
    assert step == pytest.approx((fa - ga - f0) / (g0 - ga))
    assert step < cubic and abs(step - 0.05) < 0.005
    assert _kinked(step)[0] <= f0 + lbfgs.ARMIJO * step * g0


@pytest.mark.parametrize("fa,ga", [
    (2.0, 3.0),            # a quadratic: its minimiser is below the bound
    (100.0, 1000.0),       # half the step, below the bound
    (2.0, -1.0),           # a refused step still descending: no tangent bound
    (1.0 / 3.0, -1.0),
    (np.inf, 1.0), (1.0, np.nan),
])
def test_backtrack_step_is_the_cubics_wherever_the_cubic_is_below_the_bound(fa, ga):
    """The bound only moves trials a convex F could not accept: elsewhere the trial is
    the cubic's, so runs that never overshoot keep their bits."""
    assert lbfgs._backtrack_step(1.0, 1.0, -1.0, fa, ga) == lbfgs._cubic_step(1.0, 1.0, -1.0,
                                                                              fa, ga)


def test_backtrack_step_keeps_a_hundredth_where_the_tangents_meet_near_zero():
    """A non-convex F can rise almost at once: the tangents then meet close to 0, and the
    trial stays at a hundredth of the step; tangents that meet at or below 0 (no convex
    F passes there) leave the cubic's trial."""
    assert lbfgs._backtrack_step(1.0, 1.0, -1.0, 1000.0, 1000.4) == pytest.approx(0.01)
    assert lbfgs._backtrack_step(1.0, 1.0, -1.0, 1000.0, 999.0) == lbfgs._cubic_step(
        1.0, 1.0, -1.0, 1000.0, 999.0)


def test_line_search_gives_up_early_where_the_objective_jumps():
    """A function that is not continuous at the start point (every other point is 1
    higher, as a Bethe objective whose BP found another fixed point): no step can
    satisfy Armijo, and the search stops after MAX_STALLED halvings that did not
    bring F closer, not after MAX_LINESEARCH."""
    x0 = np.full(5, 2.0)
    calls = []

    def fun(x, g):
        calls.append(1)
        np.multiply(x, 1e-3, out=g)
        return float(0.5e-3 * x @ x) + (0.0 if np.array_equal(x, x0) else 1.0)

    result = lbfgs.minimize(fun, x0, stop_eps=0, maxiter=50)
    assert result.iterations == 0 and "line search failed" in result.reason
    np.testing.assert_array_equal(result.x, x0)
    assert len(calls) == 1 + 1 + lbfgs.MAX_STALLED < 1 + lbfgs.MAX_LINESEARCH


def test_line_search_still_backtracks_through_a_rising_stretch():
    """Halvings whose value rises while the step shrinks are allowed, fewer than
    MAX_STALLED in a row: from x = 2 the trials at 1, 1.5 and 1.75 climb a ramp
    (5.5, 11.1, 14.0 against F(2) = 2) and 1.875, past its cliff, is accepted.
    (OWL-QN halves; without L1 the cubic step would jump from 1 to 1.9 at once, so
    a negligible L1 term keeps the halvings this test is about.)"""
    def fun(x, g):
        u = (1.8 - x[0]) / 0.005
        sig = 0.5 * (1.0 + np.tanh(0.5 * u))  # the logistic function, without overflow
        g[0] = x[0] + 10.0 * sig - 10.0 * (x[0] - 0.5) * sig * (1.0 - sig) / 0.005
        return float(0.5 * x[0] ** 2 + 10.0 * (x[0] - 0.5) * sig)

    result = lbfgs.minimize(fun, np.array([2.0]), l1=1e-12, stop_eps=0, maxiter=1)
    assert result.iterations == 1
    assert result.x[0] == pytest.approx(1.875)


@pytest.fixture(scope="module")
def small_crf():
    corpus = encode_training(PATTERNS, random_corpus(3, n_seqs=30, max_len=6))
    return corpus


def test_owlqn_on_a_crf_decreases_monotonically_and_meets_the_l1_conditions(small_crf):
    c = small_crf
    rho1 = 0.5
    objective = Objective(c.space, c.data, c.empirical, 0.1)
    values: list[float] = []
    result = lbfgs.minimize(objective, np.zeros(c.space.n_weights), l1=rho1, stop_eps=0,
                            maxiter=2000, on_iteration=lambda it: values.append(it.f))
    assert len(values) > 20
    assert np.all(np.diff(values) <= 0.0)
    g = np.empty_like(result.x)
    objective(result.x, g)
    w = result.x
    nonzero = w != 0.0
    assert 0 < nonzero.sum() < w.size  # both conditions are exercised
    assert np.abs(g[nonzero] + rho1 * np.sign(w[nonzero])).max() < 1e-4
    assert np.abs(g[~nonzero]).max() <= rho1 + 1e-6
    # Some zero weights have a non-trivial gradient: L1 pins them at zero.
    assert np.abs(g[~nonzero]).max() > 0.1 * rho1


def test_hook_stops_and_interrupt_keeps_the_last_point():
    fun = quadratic(np.geomspace(1.0, 1e3, 30), np.arange(30.0))  # takes many iterations
    seen: list[np.ndarray] = []

    def hook(info: Iteration):
        seen.append(info.x.copy())
        if info.it == 3:
            raise KeyboardInterrupt
        return None

    result = lbfgs.minimize(fun, np.full(30, 10.0), on_iteration=hook, stop_eps=0)
    assert result.reason == INTERRUPTED and result.iterations == 3
    assert np.array_equal(result.x, seen[-1])

    result = lbfgs.minimize(fun, np.full(30, 10.0), stop_eps=0,
                            on_iteration=lambda info: "enough" if info.it == 2 else None)
    assert result.reason == "enough" and result.iterations == 2


def test_owlqn_direction_projection_spares_free_weights_once_settled():
    x = np.array([0.0, 0.0, 0.0, 1.5, -2.0, 0.7])
    pg = np.array([0.4, -0.3, 0.0, 0.2, 0.1, -0.5])
    d = np.array([0.1, 0.2, 0.3, 0.4, -0.5, 0.6])
    settled = d.copy()
    lbfgs._project_direction(settled, pg, x, False)
    # at zero: only downhill moves (against pg's sign) survive; elsewhere d is kept
    assert settled.tolist() == [0.0, 0.2, 0.0, 0.4, -0.5, 0.6]
    settling = d.copy()
    lbfgs._project_direction(settling, pg, x, True)  # Andrew & Gao: every component
    assert settling.tolist() == [0.0, 0.2, 0.0, 0.0, -0.5, 0.6]


def test_sign_changes_counts_sign_and_zero_flips_among_the_nonzero():
    x = np.array([0.0, 1.0, -1.0, 2.0, 0.0, 3.0])
    x_new = np.array([0.5, 0.0, 1.0, 2.5, 0.0, 3.0])
    # 0 -> +, + -> 0, - -> +: three changes; x_new has four non-zero weights
    assert lbfgs._sign_changes(x_new, x) == 0.75
    assert lbfgs._sign_changes(np.zeros(3), np.zeros(3)) == 0.0


def test_owlqn_settled_and_unsettled_reach_the_same_optimum(small_crf, monkeypatch):
    c = small_crf
    objective = Objective(c.space, c.data, c.empirical, 0.1)
    settled = lbfgs.minimize(objective, np.zeros(c.space.n_weights), l1=0.5, stop_eps=0,
                             maxiter=2000)
    monkeypatch.setattr(lbfgs, "UNSETTLED", float("inf"))  # Andrew & Gao's projection
    classic = lbfgs.minimize(objective, np.zeros(c.space.n_weights), l1=0.5, stop_eps=0,
                             maxiter=2000)
    assert settled.f == pytest.approx(classic.f, rel=1e-9)
    assert np.array_equal(settled.x == 0.0, classic.x == 0.0)


# --- SGD-L1 ----------------------------------------------------------------------------------
def one_sequence(corpus, s: int) -> Dataset:
    """Sequence s of a corpus as a dataset of its own."""
    d = corpus.data
    t0, t1 = d.seq_ptr[s], d.seq_ptr[s + 1]
    return Dataset(seq_ptr=np.array([0, t1 - t0], dtype=np.int64),
                   tok_ptr=d.tok_ptr[t0:t1 + 1] - d.tok_ptr[t0],
                   tok_obs=d.tok_obs[d.tok_ptr[t0]:d.tok_ptr[t1]], labels=d.labels[t0:t1])


def run_sgd_epoch(space, data, W, order, eta0, rho1, q=None, state=None):
    n = W.size
    q = np.zeros(n) if q is None else q
    state = np.zeros(1) if state is None else state
    loss, token_errors, sequence_errors, overflowed = SgdEpochs(space, data)(
        W, np.asarray(order, dtype=np.int64), 0, eta0, 1.0, rho1, q, state)
    return np.array([loss, token_errors, sequence_errors, overflowed], dtype=float)


@pytest.mark.parametrize("rho1", [0.0, 0.3])
def test_sgd_step_is_a_gradient_step_then_cumulative_clipping(small_crf, rho1):
    c = small_crf
    space = c.space
    s = int(np.argmax(np.diff(c.data.seq_ptr)))  # the longest sequence: every block fires
    data = one_sequence(c, s)
    rng = np.random.default_rng(7)
    w0 = rng.normal(scale=0.5, size=space.n_weights)
    # gradient of -log p(y|x) of this one sequence at w0: E[f] - f(gold)
    y = data.labels
    gold = np.zeros(space.n_weights)
    for t in range(len(y)):
        for o in data.tok_obs[data.tok_ptr[t]:data.tok_ptr[t + 1]]:
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                gold[k] += space.u_lab[k] == y[t]
            if t:
                for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                    gold[space.n_u + k] += (space.b_prev[k], space.b_cur[k]) == (y[t - 1], y[t])
        if t and space.has_trans:
            gold[space.trans_offset + y[t - 1] * space.n_labels + y[t]] += 1
    objective = Objective(space, data, gold, 0.0)
    g = np.empty_like(w0)
    loss = objective(w0, g)
    eta = 0.25
    W = w0.copy()
    out = run_sgd_epoch(space, data, W, [0], eta, rho1)
    assert out[0] == pytest.approx(loss, rel=1e-12)
    stepped = w0 - eta * g
    touched = g != 0.0
    u = eta * rho1  # N = 1 sequence
    want = np.where(stepped > 0, np.maximum(stepped - u, 0.0), np.minimum(stepped + u, 0.0))
    want = np.where(touched, want, w0)  # the penalty is lazy: untouched weights wait
    np.testing.assert_allclose(W, want, rtol=1e-12, atol=1e-12)
    if rho1:
        assert np.sum((W == 0) & touched) > 0


def test_sgd_comes_close_to_the_owlqn_optimum(small_crf):
    c = small_crf
    rho1 = 0.5
    objective = Objective(c.space, c.data, c.empirical, 0.0)
    g = np.empty(c.space.n_weights)

    def F(w):
        return objective(w, g) + rho1 * np.abs(w).sum()

    best = lbfgs.minimize(objective, np.zeros(c.space.n_weights), l1=rho1, stop_eps=0,
                          maxiter=2000)
    # 50 epochs whatever the default stopping rule, from the rate this test was written for
    result = sgd.minimize(SgdEpochs(c.space, c.data), np.zeros(c.space.n_weights),
                          c.data.n_seqs, rho1=rho1, maxiter=50, eta0=0.3, alpha=0.9,
                          stop_eps=0)
    assert F(best.x) <= F(result.x) <= 1.01 * F(best.x)
    assert np.sum(result.x == 0) > c.space.n_weights // 3  # the cumulative penalty zeroes
    # the online objective reported for the last epoch is an honest estimate
    assert result.f == pytest.approx(F(result.x), rel=0.02)


def test_sgd_is_reproducible_from_its_seed(small_crf):
    c = small_crf
    runs = [sgd.minimize(SgdEpochs(c.space, c.data), np.zeros(c.space.n_weights),
                         c.data.n_seqs, rho1=0.1, maxiter=3, seed=seed).x
            for seed in (5, 5, 6)]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


# --- averaged perceptron --------------------------------------------------------------------
def reference_perceptron(space, data, orders):
    """The textbook averaged perceptron: keep every weight vector and average them."""
    L = space.n_labels
    W = np.zeros(space.n_weights)
    total = np.zeros_like(W)
    count = 0
    per_token = space.n_b > 0
    for order in orders:
        for s in order:
            t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
            T = t1 - t0
            psi = np.empty((T, L))
            phi = np.empty((max(T, 1), L, L))
            trans = lattice.transition_block(W, space.trans_offset, space.has_trans, L)
            phi[0] = trans
            lattice.unigram_scores(W, data.tok_ptr, data.tok_obs, None, space.u_ptr,
                                   space.u_lab, t0, T, psi, np.empty((0, L)))
            if per_token:
                lattice.bigram_scores(W, data.tok_ptr, data.tok_obs, None, space.b_ptr,
                                      space.b_prev, space.b_cur, space.n_u, trans, t0, T, phi)
            path = np.empty(T, dtype=np.int32)
            lattice.viterbi(psi, phi, per_token, T, L, np.empty((T, L)),
                            np.empty((T, L), dtype=np.int32), path)
            y = data.labels[t0:t1]
            delta = np.zeros_like(W)
            for labels, sign in ((y, 1.0), (path, -1.0)):
                for t in range(T):
                    for o in data.tok_obs[data.tok_ptr[t0 + t]:data.tok_ptr[t0 + t + 1]]:
                        for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                            if space.u_lab[k] == labels[t]:
                                delta[k] += sign
                        if t:
                            for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                                if (space.b_prev[k], space.b_cur[k]) == (labels[t - 1],
                                                                         labels[t]):
                                    delta[space.n_u + k] += sign
                    if t and space.has_trans:
                        delta[space.trans_offset + labels[t - 1] * L + labels[t]] += sign
            W += delta
            total += W
            count += 1
    return total / count


def test_perceptron_matches_the_explicit_average(small_crf):
    c = small_crf
    space, data = c.space, c.data
    rng = np.random.default_rng(3)
    orders = [rng.permutation(data.n_seqs) for _ in range(3)]
    W = np.zeros(space.n_weights)
    U = np.zeros_like(W)
    seen = 0
    epoch = PerceptronEpochs(space, data)
    for order in orders:
        epoch(W, U, order.astype(np.int64), seen)
        seen += data.n_seqs
    want = reference_perceptron(space, data, orders)
    np.testing.assert_allclose(W - U / seen, want, atol=1e-9)
    assert np.abs(want).max() > 0


def test_the_gold_and_the_predicted_path_share_one_compiled_count_kernel(small_crf):
    """The predicted path's counts start at an int64 0, not the literal 0, which would
    make Numba compile add_path_counts a second time in every epoch kernel."""
    from crfkit.kernels.gradient import add_path_counts

    c = small_crf
    W = np.zeros(c.space.n_weights)
    PerceptronEpochs(c.space, c.data)(W, np.zeros_like(W), np.arange(c.data.n_seqs), 0)
    assert no_literal_versions(add_path_counts)


def test_perceptron_stops_on_separable_data():
    rows = [["a", "X"], ["b", "Y"], ["c", "Z"]]
    from crfkit.features.patterns import parse_patterns
    from crfkit.io.reader import Sequence

    seqs = [Sequence(rows=[list(r) for r in rows[i:] + rows[:i]], lines=[1, 2, 3])
            for i in range(3)]
    c = encode_training(parse_patterns("U:%x[0,0]\nB\n"), seqs)
    epochs = OnlineEpochs(c.space, c.data)
    # CRFsuite's rule: stop when the error per sequence falls below epsilon > 0 ...
    result = perceptron.minimize(epochs.ap, np.zeros(c.space.n_weights), c.data.n_seqs,
                                 maxiter=50, stop_eps=1e-5)
    assert "no training error" in result.reason
    assert result.iterations < 50
    # ... and with its default epsilon 0, never: every epoch asked for runs
    result = perceptron.minimize(epochs.ap, np.zeros(c.space.n_weights), c.data.n_seqs,
                                 maxiter=50)
    assert result.iterations == 50 and result.reason == "maximum number of iterations"


@pytest.mark.parametrize("l1", [0.0, 0.9])
def test_the_kernels_ahead_have_the_types_minimize_calls_them_with(l1):
    """Otherwise a first run would compile, while it waits, versions nothing calls."""
    rng = np.random.default_rng(0)
    lbfgs.minimize(quadratic(rng.uniform(0.5, 3.0, 8), rng.uniform(-2.0, 2.0, 8)),
                   np.zeros(8), l1=l1, maxiter=5)
    for kernel, args in lbfgs.kernels_ahead(l1):
        assert tuple(kernel.typeof_pyval(a) for a in args) in kernel.overloads, kernel
