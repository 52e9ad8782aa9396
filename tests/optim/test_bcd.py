"""Blockwise coordinate descent (-a bcd) against what must hold at its result.

* it reaches the elastic-net optimum OWL-QN finds on the same tiny CRF (the objective is
  strictly convex with an L2 term: one optimum), lowering the objective at every sweep;
* soft-thresholding gives exact zeros, and the L1 optimality conditions hold;
* ``kappa`` scales the first step exactly as the bound says (closed form at w = 0, where
  every marginal is 1/L).
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.kernels.bcd import BlockDescent
from crfkit.kernels.objective import Objective
from crfkit.optim import bcd, lbfgs
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, random_corpus

RHO1, RHO2 = 0.3, 0.1


@pytest.fixture(scope="module")
def small_crf():
    return encode_training(PATTERNS, random_corpus(3, n_seqs=30, max_len=6))


def _bcd(c, rho1, rho2, **kw):
    descent = BlockDescent(c.space, c.data, c.empirical)
    objective = Objective(c.space, c.data, c.empirical, rho2)
    return bcd.minimize(descent, objective, np.zeros(c.space.n_weights), rho1=rho1,
                        rho2=rho2, **kw)


def test_bcd_reaches_the_owlqn_optimum_lowering_the_objective_each_sweep(small_crf):
    c = small_crf
    objective = Objective(c.space, c.data, c.empirical, RHO2)
    owlqn = lbfgs.minimize(objective, np.zeros(c.space.n_weights), l1=RHO1, stop_eps=0,
                           maxiter=3000)
    values: list[float] = []
    result = _bcd(c, RHO1, RHO2, stop_eps=1e-13, stop_window=5,
                  on_iteration=lambda it: values.append(it.f))
    assert result.reason.startswith("converged")
    assert np.all(np.diff(values) <= 1e-12 * abs(values[-1]))
    assert result.f == pytest.approx(owlqn.f, rel=1e-10)
    np.testing.assert_allclose(result.x, owlqn.x, atol=1e-4)


def test_soft_threshold_gives_exact_zeros_that_meet_the_l1_conditions(small_crf):
    c = small_crf
    result = _bcd(c, RHO1, RHO2, stop_eps=1e-13, stop_window=5)
    zero = result.x == 0.0
    assert 0.2 < zero.mean() < 0.9  # exact zeros, not tiny values
    g = np.empty_like(result.x)
    Objective(c.space, c.data, c.empirical, RHO2)(result.x, g)
    assert np.all(np.abs(g[zero]) <= RHO1 + 1e-6)
    np.testing.assert_allclose(g[~zero], -RHO1 * np.sign(result.x[~zero]), atol=1e-5)
    assert not _bcd(c, 100.0, RHO2, maxiter=2).x.any()  # a huge L1 term: every weight 0


@pytest.mark.parametrize("kappa", [1.0, 1.5, 4.0])
def test_kappa_scales_the_first_block_step_as_the_bound_says(kappa):
    """The first block (the first token's first observation) moves from w = 0, where every
    token marginal is 1/L (no transition block is visited before it):
    g = n/L - counts, h = n (1/L)(1 - 1/L) for n occurrences; the step is
    -g / (h a kappa), a = max(1, max |g/h|) (no penalty)."""
    c = encode_training(parse_patterns("U:%x[0,0]\nU:%x[0,1]\n"),
                        random_corpus(4, n_seqs=10, max_len=5))
    s = c.space
    W = _bcd(c, 0.0, 0.0, kappa=kappa, maxiter=1).x
    L = s.n_labels
    o = c.data.tok_obs[0]
    n = np.count_nonzero(c.data.tok_obs == o)
    counts = c.empirical[s.u_ptr[o]:s.u_ptr[o + 1]]
    g = n / L - counts
    h = n / L * (1 - 1 / L)
    a = max(1.0, np.max(np.abs(g / h)))
    assert len(counts) > 1
    np.testing.assert_allclose(W[s.u_ptr[o]:s.u_ptr[o + 1]], -g / (h * a * kappa), rtol=1e-12)
