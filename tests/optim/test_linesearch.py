"""CRFsuite's line searches: Moré-Thuente against the paper's own tables, the backtracking
ones against the Wolfe conditions, and L-BFGS with each reaching the same optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crfkit.model.model import Model
from crfkit.optim import lbfgs
from crfkit.optim.linesearch import Conditions, search
from tests.helpers import CHUNK_TRAIN, one_error_line, run


def _phi1(a: float) -> tuple[float, float]:  # Moré & Thuente's function 1, beta = 2
    return -a / (a * a + 2.0), (a * a - 2.0) / (a * a + 2.0) ** 2


def _phi2(a: float) -> tuple[float, float]:  # function 2, beta = 0.004
    b = a + 0.004
    return b ** 5 - 2.0 * b ** 4, 5.0 * b ** 4 - 8.0 * b ** 3


def _phi3(a: float, beta: float = 0.01, ell: int = 39) -> tuple[float, float]:  # function 3
    if a <= 1 - beta:
        f, g = 1 - a, -1.0
    elif a >= 1 + beta:
        f, g = a - 1, 1.0
    else:
        f, g = (a - 1) ** 2 / (2 * beta) + beta / 2, (a - 1) / beta
    wave = ell * math.pi / 2
    return (f + 2 * (1 - beta) / (ell * math.pi) * math.sin(wave * a),
            g + (1 - beta) * math.cos(wave * a))


def _yanai(b1: float, b2: float):  # functions 4-6 (Yanai, Ozawa and Kaneko)
    c1, c2 = math.sqrt(1 + b1 * b1) - b1, math.sqrt(1 + b2 * b2) - b2

    def phi(a: float) -> tuple[float, float]:
        left, right = math.sqrt((1 - a) ** 2 + b2 * b2), math.sqrt(a * a + b1 * b1)
        return c1 * left + c2 * right, -c1 * (1 - a) / left + c2 * a / right

    return phi


class _Counted:
    def __init__(self, fun):
        self.fun, self.steps = fun, []

    def __call__(self, a: float) -> tuple[float, float]:
        self.steps.append(a)
        return self.fun(a)


# Moré & Thuente (1994), tables 1-3: (first step, evaluations, accepted step to 2 digits)
PAPER = [
    (_phi1, 1e-3, 0.1, [(1e-3, 6, 1.4), (1e-1, 3, 1.4), (1e1, 1, 10.0), (1e3, 4, 37.0)]),
    (_phi2, 0.1, 0.1, [(1e-3, 12, 1.6), (1e-1, 8, 1.6), (1e1, 8, 1.6), (1e3, 11, 1.6)]),
    (_phi3, 0.1, 0.1, [(1e-3, 12, 1.0), (1e-1, 12, 1.0), (1e1, 10, 1.0), (1e3, 13, 1.0)]),
    (_yanai(1e-3, 1e-3), 1e-3, 1e-3,
     [(1e-3, 4, 0.08), (1e-1, 1, 0.10), (1e1, 3, 0.35), (1e3, 4, 0.83)]),
    (_yanai(1e-2, 1e-3), 1e-3, 1e-3,
     [(1e-3, 6, 0.075), (1e-1, 3, 0.078), (1e1, 7, 0.073), (1e3, 8, 0.076)]),
    (_yanai(1e-3, 1e-2), 1e-3, 1e-3,
     [(1e-3, 13, 0.93), (1e-1, 11, 0.93), (1e1, 8, 0.92), (1e3, 11, 0.92)]),
]


@pytest.mark.parametrize("fun,ftol,gtol,rows", PAPER, ids=[f"phi{i}" for i in range(1, 7)])
def test_more_thuente_reproduces_the_papers_tables(fun, ftol, gtol, rows):
    f0, g0 = fun(0.0)
    for first, evaluations, step in rows:
        phi = _Counted(fun)
        found = search("MoreThuente", phi, first, f0, g0, 50, Conditions(ftol=ftol, gtol=gtol))
        assert found is not None
        a, f = found
        assert len(phi.steps) == evaluations and phi.steps[-1] == a
        assert a == pytest.approx(step, rel=0.07)  # the tables print two digits
        fa, ga = fun(a)
        assert fa <= f0 + ftol * a * g0 and abs(ga) <= gtol * abs(g0)


def _quadratic(a: float) -> tuple[float, float]:
    return (a - 3.0) ** 2, 2.0 * (a - 3.0)


@pytest.mark.parametrize("name", ["Backtracking", "StrongBacktracking"])
@pytest.mark.parametrize("fun", [_phi1, _quadratic])
@pytest.mark.parametrize("first", [1e-3, 1.0, 1e3])
def test_backtracking_satisfies_its_wolfe_conditions(name, fun, first):
    c = Conditions()  # liblbfgs's: ftol 1e-4, wolfe 0.9
    f0, g0 = fun(0.0)
    phi = _Counted(fun)
    a, f = search(name, phi, first, f0, g0, 40, c)
    fa, ga = fun(a)
    assert phi.steps[-1] == a and f == fa
    assert fa <= f0 + c.ftol * a * g0  # sufficient decrease
    assert ga >= c.wolfe * g0  # curvature
    if name == "StrongBacktracking":
        assert abs(ga) <= c.wolfe * abs(g0)


def test_strong_backtracking_refuses_a_step_the_weak_one_takes():
    """From 1e3 on the quadratic the weak search accepts a step whose slope is still
    steeply positive; the strong one goes on (the conditions differ, not only the name)."""
    f0, g0 = _quadratic(0.0)
    weak, _ = search("Backtracking", _quadratic, 5.9, f0, g0, 40)
    strong, _ = search("StrongBacktracking", _quadratic, 5.9, f0, g0, 40)
    assert abs(_quadratic(weak)[1]) > 0.9 * abs(g0) >= abs(_quadratic(strong)[1])


@pytest.mark.parametrize("name", [None, "MoreThuente", "Backtracking", "StrongBacktracking"])
def test_lbfgs_with_each_search_reaches_the_ridge_optimum(name):
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(30, 12)), rng.normal(size=30)

    def fun(w, g):
        r = A @ w - b
        g[:] = A.T @ r + 0.1 * w
        return 0.5 * r @ r + 0.05 * w @ w

    exact = np.linalg.solve(A.T @ A + 0.1 * np.eye(12), A.T @ b)
    result = lbfgs.minimize(fun, np.zeros(12), stop_eps=1e-12, linesearch=name,
                            max_linesearch=20)
    np.testing.assert_allclose(result.x, exact, atol=1e-6)


def test_training_with_each_search_converges_to_one_model(tmp_path):
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nU01:%x[0,1]\nB\n")
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    weights = {}
    for name in ("default", "MoreThuente", "backtracking", "StrongBacktracking"):
        extra = [] if name == "default" else ["--linesearch", name]
        model = tmp_path / f"{name}.model"
        result = run("train", "-q", "-p", tmp_path / "p.pat", "-e", "1e-10", *extra,
                     tmp_path / "t.txt", model)
        assert result.exit_code == 0, result.stderr
        weights[name] = Model.load(model).weights
    for name, w in weights.items():
        np.testing.assert_allclose(w, weights["default"], atol=1e-4, err_msg=name)


def test_linesearch_with_l1_is_refused(tmp_path):
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\n")
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    one_error_line(run("train", "-p", tmp_path / "p.pat", "-1", "0.5", "--linesearch",
                       "MoreThuente", tmp_path / "t.txt", tmp_path / "m"), "OWL-QN")


def _bump(a: float) -> tuple[float, float]:
    """Steep at 0, then rising: from far out, trials land below f(0) but above the
    sufficient-decrease line before any is acceptable."""
    return -math.log(1 + a) + 0.5 * a * a / (1 + a * a), -1 / (1 + a) + a / (1 + a * a) ** 2


@pytest.mark.parametrize("first", [10.0, 1000.0])
def test_more_thuente_stage_one_finds_a_step_above_the_line(first):
    """Moré and Thuente's first stage (the function minus the decrease line) is what
    brings these trials back under the line: without it the search fails here."""
    c = Conditions(ftol=0.3, gtol=0.9)
    f0, g0 = _bump(0.0)
    phi = _Counted(_bump)
    found = search("MoreThuente", phi, first, f0, g0, 20, c)
    assert found is not None and len(phi.steps) <= 6
    fa, ga = _bump(found[0])
    assert fa <= f0 + c.ftol * found[0] * g0 and abs(ga) <= c.gtol * abs(g0)
