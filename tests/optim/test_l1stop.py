"""OWL-QN's optimality stop (crfkit.optim.optimality, --l1-gtol).

* the rule's decision on synthetic pseudo-gradient histories: it needs the
  whole window below the bound, a single low value is not enough;
* on an L1 problem with a known sparse optimum (a coupled quadratic solved
  by exact coordinate descent), a run stopped by the rule is within the
  bound the rule guarantees: ``F(x) - F* <= |pg|^2 / (2 mu)`` for a
  mu-strongly convex F, pg being its minimum-norm subgradient;
* without L1 the option is not read: the L2 path is unchanged;
* the command line: the option's check, and it is recorded only for L1 models.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.optim import lbfgs
from crfkit.optim.optimality import OptimalityRule
from tests.helpers import ROOT, one_error_line, run


def test_rule_needs_the_whole_window_below_the_bound():
    rule = OptimalityRule(1e-3, 3, start_norm=1000.0)  # bound 1.0
    history = [5.0, 0.5, 0.9, 2.0, 0.1, 1.0, 0.3]  # two, then three in a row at or below 1.0
    decisions = [rule(g) for g in history]
    assert decisions[:6] == [None] * 6
    assert decisions[6] is not None and "pseudo-gradient" in decisions[6]


def test_rule_off_at_zero_and_refuses_a_negative_tolerance():
    rule = OptimalityRule(0.0, 1, start_norm=1.0)
    assert all(rule(0.0) is None for _ in range(5))
    with pytest.raises(ValueError):
        OptimalityRule(-1e-3, 10, start_norm=1.0)


def coupled_lasso(seed: int = 0, n: int = 40):
    """F(x) = 1/2 x'Hx - b'x + l1 |x|_1 (H positive definite, not diagonal) and its optimum."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    H = A @ A.T / n + 0.2 * np.eye(n)
    b = rng.normal(size=n)
    l1 = 0.6
    x = np.zeros(n)
    for _ in range(5000):  # exact coordinate minimisation: converges on a convex quadratic
        old = x.copy()
        for i in range(n):
            r = b[i] - H[i] @ x + H[i, i] * x[i]
            x[i] = np.sign(r) * max(abs(r) - l1, 0.0) / H[i, i]
        if np.abs(x - old).max() < 1e-15:
            break

    def fun(w: np.ndarray, g: np.ndarray) -> float:
        np.subtract(H @ w, b, out=g)
        return float(0.5 * w @ H @ w - b @ w)

    def total(w: np.ndarray) -> float:
        return fun(w, np.empty(n)) + l1 * np.abs(w).sum()

    return fun, total, H, b, l1, x


def test_stopped_run_is_within_the_bound_of_the_known_sparse_optimum():
    fun, total, H, b, l1, best = coupled_lasso()
    assert 5 < np.sum(best == 0.0) < 35  # a sparse optimum, not a trivial one
    mu = np.linalg.eigvalsh(H).min()
    start = np.linalg.norm(np.sign(b) * np.maximum(np.abs(b) - l1, 0.0))  # |pg| at x = 0
    exact = lbfgs.minimize(fun, np.zeros(b.size), l1=l1, stop_eps=0, maxiter=3000)
    np.testing.assert_allclose(exact.x, best, atol=1e-7)
    for tol in (1e-2, 1e-4):
        result = lbfgs.minimize(fun, np.zeros(b.size), l1=l1, stop_eps=0, stop_window=3,
                                l1_gtol=tol, maxiter=3000)
        assert "pseudo-gradient" in result.reason
        assert result.iterations < exact.iterations
        bound = (tol * start) ** 2 / (2 * mu)  # what |pg| <= tol |pg0| guarantees
        assert 0.0 <= total(result.x) - total(best) <= bound
    loose = lbfgs.minimize(fun, np.zeros(b.size), l1=l1, stop_eps=0, stop_window=3,
                           l1_gtol=1e-2, maxiter=3000)
    tight = lbfgs.minimize(fun, np.zeros(b.size), l1=l1, stop_eps=0, stop_window=3,
                           l1_gtol=1e-6, maxiter=3000)
    assert loose.iterations < tight.iterations
    assert np.array_equal(tight.x == 0.0, best == 0.0)


def test_without_l1_the_tolerance_is_not_read():
    fun, _, _, b, _, _ = coupled_lasso(seed=1)
    plain = lbfgs.minimize(fun, np.zeros(b.size), stop_eps=1e-9)
    given = lbfgs.minimize(fun, np.zeros(b.size), stop_eps=1e-9, l1_gtol=0.5)
    assert given.iterations == plain.iterations and np.array_equal(given.x, plain.x)


def test_cli_checks_the_option_and_records_it_for_l1_only(tmp_path):
    pattern = str(ROOT / "patterns/address.pat")
    train = str(ROOT / "data/address-train.txt")
    model = tmp_path / "m.model"
    one_error_line(run("train", "-p", pattern, "--l1-gtol", "-1", train, str(model)),
                   "--l1-gtol")
    assert not model.exists()

    def options(*args: str) -> str:
        result = run("train", "-q", "-p", pattern, "-i", "2", *args, train, str(model))
        assert result.exit_code == 0, result.stderr
        return run("info", str(model)).stdout

    assert "l1_gtol" not in options()
    assert "l1_gtol=0.001" in options("-1", "0.5", "--l1-gtol", "1e-3")
