"""Skip-chain CRF kernels against brute force: loopy BP on tiny document graphs.

A synthetic feature space: token t fires observation t, which has a unigram
weight for every label; a dense transition block; one L x L block per skip
pattern. The reference enumerates every labelling of the document graph.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit.kernels.skipobjective import BeliefPropagation, SkipObjective, skip_decode
from crfkit.skipgraph import graph_from_edges
from crfkit.space import Dataset, FeatureSpace

TIGHT = BeliefPropagation(maxiter=2000, tol=1e-13, damping=0.3)


def make_problem(lengths, docs, edges, L, n_skip=1, scale=1.0, skip_scale=1.0, seed=0):
    """(space, data, graph, W) for sequences of ``lengths``; ``docs`` the first sequence of
    each document; ``edges`` (i, j, pattern) in global token indices."""
    rng = np.random.default_rng(seed)
    N = int(sum(lengths))
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    space = FeatureSpace(n_labels=L, u_ptr=np.arange(N + 1, dtype=np.int64) * L,
                         u_lab=np.tile(np.arange(L, dtype=np.int32), N),
                         b_ptr=np.zeros(N + 1, dtype=np.int64),
                         b_prev=np.zeros(0, dtype=np.int32), b_cur=np.zeros(0, dtype=np.int32),
                         has_trans=True, n_skip=n_skip)
    data = Dataset(seq_ptr=seq_ptr, tok_ptr=np.arange(N + 1, dtype=np.int64),
                   tok_obs=np.arange(N, dtype=np.int32),
                   labels=rng.integers(0, L, N).astype(np.int32))
    doc_ptr = np.array(list(docs) + [len(lengths)], dtype=np.int64)
    e = np.array(edges, dtype=np.int64).reshape(-1, 3)
    graph = graph_from_edges(doc_ptr, seq_ptr, e[:, 0], e[:, 1], e[:, 2])
    W = rng.normal(0, scale, space.n_weights)
    W[space.skip_offset:] = rng.normal(0, skip_scale, n_skip * L * L)
    return space, data, graph, W


def features(space, data, graph, y):
    """Feature counts of a labelling y of all tokens."""
    L = space.n_labels
    f = np.zeros(space.n_weights)
    for t in range(data.n_tokens):
        f[t * L + y[t]] += 1
    for s in range(data.n_seqs):
        for t in range(data.seq_ptr[s] + 1, data.seq_ptr[s + 1]):
            f[space.trans_offset + y[t - 1] * L + y[t]] += 1
    for i, j, p in zip(graph.e_i, graph.e_j, graph.e_pat, strict=True):
        f[space.skip_offset + (p * L + y[i]) * L + y[j]] += 1
    return f


def brute_force(space, data, graph, W):
    """Exact log Z (sum over documents), token marginals and expected feature counts."""
    L, N = space.n_labels, data.n_tokens
    configs = np.array(list(itertools.product(range(L), repeat=N)))
    F = np.array([features(space, data, graph, y) for y in configs])
    scores = F @ W
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    marg = np.zeros((N, L))
    for t in range(N):
        marg[t] = np.bincount(configs[:, t], weights=p, minlength=L)
    return log_z, marg, p @ F, configs[np.argmax(scores)]


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
    h = 1e-5
    numeric = np.empty_like(W)
    for k in range(len(W)):
        step = np.zeros_like(W)
        step[k] = h
        numeric[k] = (objective(space, data, graph, W + step, rho2=0.5)[0]
                      - objective(space, data, graph, W - step, rho2=0.5)[0]) / (2 * h)
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
