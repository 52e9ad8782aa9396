"""Real-valued observations (crfkit.kernels.valued) against slow references.

Every check builds a small feature space by hand, gives each occurrence a
random value and compares the kernels with path enumeration (log Z,
marginals, best path) and with finite differences (the gradient)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit.config import NORM_GLOBAL, NORM_MAXENT, NORM_MEMM
from crfkit.kernels import valued as values
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.decoder import decode
from crfkit.kernels.epochs import PerceptronEpochs, SgdEpochs
from crfkit.kernels.objective import Objective
from crfkit.space import Dataset, FeatureSpace, pointer
from tests.helpers import valued_problem


def reference_scores(space: FeatureSpace, data: Dataset, W: np.ndarray, s: int):
    """psi[t, y] and phi[t, a, b] of sequence s, summed feature by feature."""
    L = space.n_labels
    t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
    psi = np.zeros((t1 - t0, L))
    phi = np.zeros((t1 - t0, L, L))
    if space.has_trans:
        phi[:] = W[space.trans_offset:].reshape(L, L)
    for t in range(t1 - t0):
        for j in range(data.tok_ptr[t0 + t], data.tok_ptr[t0 + t + 1]):
            o, v = data.tok_obs[j], data.tok_val[j]
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                psi[t, space.u_lab[k]] += v * W[k]
            for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                phi[t, space.b_prev[k], space.b_cur[k]] += v * W[space.n_u + k]
    return psi, phi


def enumerate_paths(psi, phi):
    T, L = psi.shape
    paths = list(itertools.product(range(L), repeat=T))
    scores = np.array([sum(psi[t, p[t]] for t in range(T))
                       + sum(phi[t, p[t - 1], p[t]] for t in range(1, T)) for p in paths])
    return paths, scores


@pytest.mark.parametrize("bigrams,trans", [(False, True), (True, True), (True, False)])
def test_crf_objective_matches_enumeration_and_finite_differences(bigrams, trans):
    space, data, W = valued_problem(1, bigrams=bigrams, trans=trans)
    empirical = np.zeros(space.n_weights)
    values.path_totals(empirical, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       data.tok_val, data.labels, space.n_labels)
    objective = Objective(space, data, empirical, rho2=0.5)
    g = np.zeros(space.n_weights)
    f = objective(W, g)
    expected = 0.25 * W @ W
    for s in range(data.n_seqs):
        psi, phi = reference_scores(space, data, W, s)
        paths, scores = enumerate_paths(psi, phi)
        gold = tuple(data.labels[data.seq_ptr[s]:data.seq_ptr[s + 1]])
        expected += np.logaddexp.reduce(scores) - scores[paths.index(gold)]
    assert f == pytest.approx(expected, rel=1e-10)
    eps = 1e-6
    numeric = np.empty_like(W)
    for i in range(W.size):
        step = np.zeros_like(W)
        step[i] = eps
        gp, gm = np.zeros_like(W), np.zeros_like(W)
        numeric[i] = (objective(W + step, gp) - objective(W - step, gm)) / (2 * eps)
    np.testing.assert_allclose(g, numeric, atol=1e-6)


@pytest.mark.parametrize("norm", [NORM_MEMM, NORM_MAXENT])
def test_local_models_gradient_matches_finite_differences(norm):
    space, data, W = valued_problem(2, bigrams=norm == NORM_MEMM, trans=norm == NORM_MEMM)
    empirical = np.zeros(space.n_weights)
    values.path_totals(empirical, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       data.tok_val, data.labels, space.n_labels)
    objective = Objective(space, data, empirical, rho2=0.1, normalisation=norm)
    g = np.zeros_like(W)
    objective(W, g)
    eps = 1e-6
    for i in range(W.size):
        step = np.zeros_like(W)
        step[i] = eps
        numeric = (objective(W + step, np.zeros_like(W))
                   - objective(W - step, np.zeros_like(W))) / (2 * eps)
        assert g[i] == pytest.approx(numeric, abs=1e-6)


def test_decoder_best_path_nbest_and_marginals_use_the_values():
    space, data, W = valued_problem(3, bigrams=True, trans=True)
    out = decode(Weights(space, W, NORM_GLOBAL), data, nbest=3, log_z=True, marginals=True)
    for s in range(data.n_seqs):
        t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
        psi, phi = reference_scores(space, data, W, s)
        paths, scores = enumerate_paths(psi, phi)
        order = np.argsort(-scores, kind="stable")
        assert tuple(out.paths[t0:t1, 0]) == paths[order[0]]
        np.testing.assert_allclose(out.scores[s, :min(3, len(paths))],
                                   scores[order[:3]], rtol=1e-10)
        log_z = np.logaddexp.reduce(scores)
        assert out.log_z[s] == pytest.approx(log_z, rel=1e-10)
        prob = np.exp(scores - log_z)
        for t in range(t1 - t0):
            for y in range(space.n_labels):
                expected = sum(p for path, p in zip(paths, prob, strict=True) if path[t] == y)
                assert out.marginals[t0 + t, y] == pytest.approx(expected, abs=1e-12)


def test_values_of_one_give_the_binary_results():
    """The valued code with every value 1 computes what the binary code computes."""
    space, data, W = valued_problem(4, bigrams=True, trans=True)
    ones = Dataset(data.seq_ptr, data.tok_ptr, data.tok_obs, data.labels,
                   tok_val=np.ones(len(data.tok_obs)))
    binary = Dataset(data.seq_ptr, data.tok_ptr, data.tok_obs, data.labels)
    empirical = np.zeros(space.n_weights)
    values.path_totals(empirical, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       None, data.labels, space.n_labels)
    results = []
    for d in (ones, binary):
        g = np.zeros_like(W)
        f = Objective(space, d, empirical, rho2=1.0)(W, g)
        w_sgd, w_ap, u_ap = W.copy(), W.copy(), np.zeros_like(W)
        order = np.arange(d.n_seqs, dtype=np.int64)
        SgdEpochs(space, d)(w_sgd, order, 0, 0.1, 0.9, 0.0, np.zeros_like(W), np.zeros(1))
        PerceptronEpochs(space, d)(w_ap, u_ap, order, 0)
        results.append((f, g, w_sgd, w_ap))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_valued_sgd_step_follows_the_valued_gradient():
    """One SGD step from W moves every weight by -eta x (expected - gold) with values."""
    space, data, W = valued_problem(5, bigrams=True, trans=True)
    n = int(data.seq_ptr[1])
    one = Dataset(data.seq_ptr[:2], data.tok_ptr[:n + 1], data.tok_obs, data.labels[:n],
                  tok_val=data.tok_val)
    empirical = np.zeros(space.n_weights)
    values.path_totals(empirical, space.arrays(), one.seq_ptr, one.tok_ptr, one.tok_obs,
                       one.tok_val, one.labels, space.n_labels)
    g = np.zeros_like(W)
    Objective(space, one, empirical, rho2=0.0)(W, g)
    stepped = W.copy()
    SgdEpochs(space, one)(stepped, np.zeros(1, dtype=np.int64), 0, 0.5, 1.0, 0.0,
                          np.zeros_like(W), np.zeros(1))
    np.testing.assert_allclose(stepped, W - 0.5 * g, atol=1e-12)


def test_path_totals_sum_values_per_feature():
    L = 2
    space = FeatureSpace(n_labels=L, u_ptr=np.array([0, 2, 3]), u_lab=np.array([0, 1, 1],
                         dtype=np.int32), b_ptr=pointer(np.empty(0, dtype=np.int64), 2),
                         b_prev=np.empty(0, dtype=np.int32), b_cur=np.empty(0, dtype=np.int32),
                         has_trans=True)
    # tokens: [obs0 x2.5, obs1 x-1], [obs0 x0.5]; labels 1, 1
    data = Dataset(seq_ptr=np.array([0, 2]), tok_ptr=np.array([0, 2, 3]),
                   tok_obs=np.array([0, 1, 0], dtype=np.int32),
                   labels=np.array([1, 1], dtype=np.int32),
                   tok_val=np.array([2.5, -1.0, 0.5]))
    G = np.zeros(space.n_weights)
    values.path_totals(G, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       data.tok_val, data.labels, L)
    # features: (obs0, 0), (obs0, 1), (obs1, 1); transitions 0->0, 0->1, 1->0, 1->1
    np.testing.assert_array_equal(G, [0.0, 3.0, -1.0, 0.0, 0.0, 0.0, 1.0])
