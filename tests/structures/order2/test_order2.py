"""Second-order CRFs against brute-force enumeration on tiny sequences.

Random feature spaces (:mod:`tests.structures.order2.reference`) with random weights: log Z,
token and pair marginals, Viterbi, n-best and posterior decoding of
:mod:`crfkit.structures.order2.pair_decoder`, with and without constraints; the gradient of
:class:`crfkit.structures.order2.pair_objective.Objective2` against finite differences and
the brute-force expectations; a first-order model written as a second-order
one gives the same probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.config import NORM_GLOBAL
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.decoder import decode
from crfkit.space import Dataset, FeatureSpace
from crfkit.structures.order2.pair_decoder import decode2
from crfkit.structures.order2.pair_objective import Objective2
from crfkit.structures.order2.pair_space import Order2Space, first_order_parts
from tests import naive
from tests.structures.order2.reference import random_data, random_space, reference_lattice

CASES = [(1, 3, False), (2, 2, False), (3, 3, False), (4, 3, True), (5, 2, False),
         (4, 4, False), (3, 3, True)]


def setup(seed, T, L, dense, obs_tri=True):
    rng = np.random.default_rng(seed)
    space = random_space(rng, L, 5, dense=dense, obs_tri=obs_tri)
    data = random_data(rng, [T, max(1, T - 1)], 5, L)
    W = rng.normal(scale=1.2, size=space.n_weights)
    return rng, space, data, W


def masks(rng, data, L, kind):
    token_ok = trans_ok = None
    if kind in ("token", "both"):
        token_ok = rng.random((data.n_tokens, L)) < 0.75
        token_ok[np.arange(data.n_tokens), rng.integers(0, L, data.n_tokens)] = True
    if kind in ("trans", "both"):
        trans_ok = rng.random((L, L)) < 0.75
        np.fill_diagonal(trans_ok, True)
    return token_ok, trans_ok


@pytest.mark.parametrize("constraint", ["none", "token", "trans", "both"])
@pytest.mark.parametrize("T,L,dense", CASES)
def test_decode2_matches_enumeration(T, L, dense, constraint):
    rng, space, data, W = setup(100 * T + 10 * L + dense, T, L, dense)
    token_ok, trans_ok = masks(rng, data, L, constraint)
    model = Weights(space, W, NORM_GLOBAL)
    full = decode2(model, data, log_z=True, marginals=True, pair_marginals=True,
                   token_ok=token_ok, trans_ok=trans_ok)
    best = decode2(model, data, token_ok=token_ok, trans_ok=trans_ok)
    nb = decode2(model, data, nbest=6, token_ok=token_ok, trans_ok=trans_ok)
    post = decode2(model, data, posterior=True, token_ok=token_ok, trans_ok=trans_ok)
    for s in range(data.n_seqs):
        t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
        lat = reference_lattice(space, W, data, s)
        tok = None if token_ok is None else token_ok[t0:t1]
        if not naive.scored_paths2(*lat, tok, trans_ok):
            assert best.scores[s, 0] == -np.inf and nb.scores[s, 0] == -np.inf
            continue
        log_z, unary, pair, _, ranked = naive.order2_summary(*lat, tok, trans_ok)
        assert full.log_z[s] == pytest.approx(log_z, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(full.marginals[t0:t1], unary, atol=1e-10)
        np.testing.assert_allclose(full.pair_marginals[t0 + 1:t1], pair[1:], atol=1e-10)
        assert tuple(best.paths[t0:t1, 0]) == ranked[0][0]
        assert best.scores[s, 0] == pytest.approx(ranked[0][1], rel=1e-12)
        n = min(6, len(ranked))
        assert [tuple(nb.paths[t0:t1, r]) for r in range(n)] == [p for p, _ in ranked[:n]]
        np.testing.assert_allclose(nb.scores[s, :n], [sc for _, sc in ranked[:n]], rtol=1e-12)
        assert np.all(nb.scores[s, n:] == -np.inf)
        gains = {p: sum(unary[t, y] for t, y in enumerate(p)) for p, _ in ranked}
        got = tuple(post.paths[t0:t1, 0])
        assert gains[got] == pytest.approx(max(gains.values()), abs=1e-12)
        assert post.scores[s, 0] == pytest.approx(dict(ranked)[got], rel=1e-12)


@pytest.mark.parametrize("obs_tri", [False, True])
@pytest.mark.parametrize("dense", [False, True])
def test_gradient_matches_finite_differences_and_enumeration(dense, obs_tri):
    rng, space, data, W = setup(7 + dense + 2 * obs_tri, 4, 3, dense, obs_tri)
    data = random_data(rng, [4, 1, 3, 5, 2], 5, 3)
    # gold paths with states: relabel each sequence with its best path
    data.labels = decode2(Weights(space, W, NORM_GLOBAL), data).paths[:, 0].copy()
    empirical = rng.random(space.n_weights)
    objective = Objective2(space, data, empirical, rho2=0.5)
    g = np.empty(space.n_weights)
    f = objective(W, g)
    want_f = -W @ empirical + 0.25 * W @ W
    expected = np.zeros(space.n_weights)
    for s in range(data.n_seqs):
        lat = reference_lattice(space, W, data, s)
        log_z, *_ = naive.order2_summary(*lat)
        want_f += log_z
        eps = 1e-6
        for i in range(space.n_weights):  # expectations by differencing log Z alone
            Wp, Wm = W.copy(), W.copy()
            Wp[i] += eps
            Wm[i] -= eps
            lp, *_ = naive.order2_summary(*reference_lattice(space, Wp, data, s))
            lm, *_ = naive.order2_summary(*reference_lattice(space, Wm, data, s))
            expected[i] += (lp - lm) / (2 * eps)
    assert f == pytest.approx(want_f, rel=1e-10)
    np.testing.assert_allclose(g, expected - empirical + 0.5 * W, atol=1e-6)
    g2 = np.empty_like(g)
    i = int(np.argmax(np.abs(g)))
    Wp, Wm = W.copy(), W.copy()
    Wp[i] += 1e-5
    Wm[i] -= 1e-5
    fd = (objective(Wp, g2) - objective(Wm, g2)) / 2e-5
    assert fd == pytest.approx(g[i], rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_order_model_as_second_order_gives_same_probabilities(seed):
    rng = np.random.default_rng(seed)
    L = 4
    first = random_space(rng, L, 6, dense=True, has_tri=False, obs_tri=False)
    base = FeatureSpace(**first_order_parts(first))
    data = random_data(rng, [1, 2, 5, 7], 6, L)
    W1 = rng.normal(size=base.n_weights)
    # every pair and trigram a state, a trigram block of zeros: the same distribution
    second = Order2Space(**first_order_parts(base),
                         pairs=np.arange(L * L), tri=np.arange(L**3), g_ptr=first.g_ptr,
                         g_tri=first.g_tri, has_tri=True)
    W2 = np.concatenate([W1, np.zeros(second.n_weights - base.n_weights)])
    a = decode(Weights(base, W1, NORM_GLOBAL), data, log_z=True, marginals=True, nbest=3)
    b = decode2(Weights(second, W2, NORM_GLOBAL), data, log_z=True, marginals=True, nbest=3)
    np.testing.assert_allclose(b.log_z, a.log_z, rtol=1e-12)
    np.testing.assert_allclose(b.marginals, a.marginals, atol=1e-12)
    np.testing.assert_allclose(b.scores, a.scores, rtol=1e-12)
    np.testing.assert_array_equal(b.paths, a.paths)


def test_posterior_path_avoids_trigrams_without_a_state():
    """Token marginals can favour a label path whose trigram has no state (here 1 0 1, a
    slot inside its pair's run of sources: the three likely paths 1 0 0, 0 0 1, 1 1 1 share
    the mass). The posterior path is the
    best allowed one, with the model's score of that path (not -inf: labelling read -inf
    as "no path satisfies the constraints")."""
    L = 3
    base = FeatureSpace.from_keys(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                  1, L, False)
    tri = np.setdiff1d(np.arange(L ** 3), [(1 * L + 0) * L + 1])  # every trigram but 1 0 1
    space = Order2Space(**first_order_parts(base), pairs=np.arange(L * L, dtype=np.int64),
                        tri=tri, g_ptr=np.zeros(2, dtype=np.int64),
                        g_tri=np.zeros(0, dtype=np.int32), has_tri=True)
    W = np.zeros(space.n_weights)
    likely = [(a * L + b) * L + c for a, b, c in ((1, 0, 0), (0, 0, 1), (1, 1, 1))]
    W[space.tri_offset:] = np.where(np.isin(tri, likely), 0.0, -20.0)
    data = Dataset(seq_ptr=np.array([0, 3]), tok_ptr=np.zeros(4, dtype=np.int64),
                   tok_obs=np.zeros(0, dtype=np.int32), labels=np.zeros(3, dtype=np.int32))
    model = Weights(space, W, NORM_GLOBAL)
    full = decode2(model, data, marginals=True)
    assert (full.marginals[[0, 1, 2], [1, 0, 1]] > 0.6).all()  # 1 0 1 gains most
    post = decode2(model, data, posterior=True)
    path = tuple(post.paths[:, 0])
    assert path in {(1, 0, 0), (0, 0, 1), (1, 1, 1)}
    assert post.scores[0, 0] == pytest.approx(0.0, abs=1e-12)
