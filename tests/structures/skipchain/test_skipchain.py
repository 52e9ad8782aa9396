"""Skip-chain CRF kernels against brute force: loopy BP on tiny document graphs.

A synthetic feature space: token t fires observation t, which has a unigram
weight for every label; a dense transition block; one L x L block per skip
pattern. The reference enumerates every labelling of the document graph.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.structures.skipchain.bethe import BeliefPropagation, SkipObjective, skip_decode
from tests.helpers import TIGHT, make_problem
from tests.naive import central_differences
from tests.naive import skip_enumeration as brute_force
from tests.naive import skip_features as features


def objective(space, data, graph, W, bp=TIGHT, rho2=0.0, warm=False):
    emp = features(space, data, graph, data.labels)
    obj = SkipObjective(space, data, emp, rho2, graph.arrays(), space.skip_offset, bp, warm=warm)
    g = np.empty(space.n_weights)
    f = obj(W, g)
    return f, g, emp, obj


def bethe(space, data, graph, W, bp=TIGHT):
    """Bethe log Z, beliefs (expected counts) and BP marginals."""
    f, g, emp, obj = objective(space, data, graph, W, bp)
    log_z = f + W @ emp
    dec, _, _ = skip_decode(space, W, data, graph.arrays(), space.skip_offset, bp,
                            posterior=True, marginals=True)
    return log_z, g + emp, dec.marginals, obj


# Graphs without loops: one document of two sentences and one skip edge, or a
# skip edge per pair of three one-token-apart sentences (a tree), or two documents.
TREES = [
    ([3, 2], [0], [(1, 4, 0)], 3),
    ([2, 2, 2], [0], [(0, 2, 0), (3, 5, 0)], 2),
    ([2, 1, 2], [0, 1], [(2, 3, 0)], 3),
    ([1, 1, 1, 1], [0], [(0, 1, 0), (0, 2, 0), (0, 3, 1)], 3),
]


@pytest.mark.parametrize("lengths,docs,edges,L", TREES)
def test_bp_is_exact_on_trees(lengths, docs, edges, L):
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, scale=1.5,
                                         skip_scale=2.0)
    log_z, marg, expect, _ = brute_force(space, data, graph, W)
    b_log_z, b_expect, b_marg, obj = bethe(space, data, graph, W)
    assert obj.unconverged == 0
    assert b_log_z == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(b_marg, marg, atol=1e-9)
    np.testing.assert_allclose(b_expect, expect, atol=1e-9)


# Loops: a skip edge inside a sentence, two edges between two sentences, a triangle.
LOOPS = [
    ([4], [0], [(0, 3, 0)], 3),
    ([3, 3], [0], [(0, 3, 0), (2, 5, 0)], 3),
    ([2, 2, 2], [0], [(0, 2, 0), (2, 4, 0), (0, 4, 0)], 2),
    ([3, 2, 2], [0], [(0, 3, 0), (1, 5, 1), (4, 6, 0), (0, 2, 1)], 2),
]
LOOP_TOLERANCE = 0.03  # Bethe's error on these graphs with skip weights ~ N(0, 0.5): <= 0.019


@pytest.mark.parametrize("lengths,docs,edges,L", LOOPS)
def test_bp_on_loops_is_close_to_brute_force(lengths, docs, edges, L):
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, skip_scale=0.5)
    log_z, marg, _, _ = brute_force(space, data, graph, W)
    b_log_z, _, b_marg, obj = bethe(space, data, graph, W)
    assert obj.unconverged == 0
    assert abs(b_log_z - log_z) < LOOP_TOLERANCE
    assert np.abs(b_marg - marg).max() < LOOP_TOLERANCE
    # and the loops matter: without the skip weights the answer is another one
    W0 = W.copy()
    W0[space.skip_offset:] = 0.0
    assert abs(brute_force(space, data, graph, W0)[0] - log_z) > LOOP_TOLERANCE


@pytest.mark.parametrize("lengths,docs,edges,L", LOOPS[:2] + TREES[:1])
def test_bethe_gradient_matches_finite_differences(lengths, docs, edges, L):
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, skip_scale=0.7,
                                         seed=3)
    f, g, _, _ = objective(space, data, graph, W, rho2=0.5)
    numeric = central_differences(lambda w: objective(space, data, graph, w, rho2=0.5)[0], W)
    np.testing.assert_allclose(g, numeric, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("lengths,docs,edges,L", TREES)
def test_max_product_finds_the_best_labelling_on_trees(lengths, docs, edges, L):
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, scale=1.5,
                                         skip_scale=2.0, seed=5)
    best = brute_force(space, data, graph, W)[3]
    dec, _, unconverged = skip_decode(space, W, data, graph.arrays(), space.skip_offset, TIGHT)
    assert unconverged == 0
    np.testing.assert_array_equal(dec.paths[:, 0], best)


def test_warm_started_messages_give_the_same_objective():
    space, data, graph, W = make_problem([3, 3], [0], LOOPS[1][2], 3, n_skip=2,
                                         skip_scale=0.5)
    cold = objective(space, data, graph, W)
    emp = features(space, data, graph, data.labels)
    warm = SkipObjective(space, data, emp, 0.0, graph.arrays(), space.skip_offset, TIGHT)
    g = np.empty(space.n_weights)
    warm(W * 0.9, g)
    first_rounds = warm.rounds
    assert warm(W, g) == pytest.approx(cold[0], abs=1e-10)
    np.testing.assert_allclose(g, cold[1], atol=1e-10)
    assert warm(W, g) == pytest.approx(cold[0], abs=1e-10)
    assert warm.rounds < first_rounds  # started at the fixed point: nothing left to do


def test_serial_sweeps_settle_a_path_of_sentences_in_three_rounds():
    """Sentences joined one to the next by skip edges make a tree whose messages a
    flooding schedule needs a round per sentence to carry across; the serial sweeps
    carry them forward in the first round and back in the second, and the third finds
    nothing left to move. The fixed point is still the exact one."""
    n = 6
    edges = [(2 * k, 2 * k + 2, 0) for k in range(n - 1)]
    space, data, graph, W = make_problem([2] * n, [0], edges, 2, n_skip=1, scale=1.0,
                                         skip_scale=2.0, seed=2)
    log_z = brute_force(space, data, graph, W)[0]
    undamped = BeliefPropagation(maxiter=50, tol=1e-12, damping=0.0)
    f, _, emp, obj = objective(space, data, graph, W, bp=undamped)
    assert obj.rounds == 3 and obj.unconverged == 0
    assert f + W @ emp == pytest.approx(log_z, abs=1e-10)
