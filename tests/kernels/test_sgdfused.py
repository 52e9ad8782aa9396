"""The fused SGD-L1 epoch (kernels.sgdfused) against the reference epoch (kernels.epochs).

Both run from the same weights and orders, with and without observation
bigrams, with and without the L1 penalty; after every sequence and after
whole epochs the weights, the penalty state and the reported loss and
errors must agree (to rounding: only the order in which a feature's
occurrences are summed differs).
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.kernels.epochs import SgdEpochs
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, random_corpus

# Unigrams and the transition block only: every token shares one transition matrix.
SHARED = parse_patterns("""
U00:%x[0,0]
U01:%x[-1,0]/%x[0,0]
U02:%x[0,1]
B
""")


@pytest.fixture(scope="module", params=["bigrams", "shared"])
def corpus(request):
    patterns = PATTERNS if request.param == "bigrams" else SHARED
    c = encode_training(patterns, random_corpus(11, n_seqs=40, max_len=7))
    assert (c.space.n_b > 0) == (request.param == "bigrams")
    return c


def _state(c, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=0.5, size=c.space.n_weights), np.zeros(c.space.n_weights), np.zeros(1)


@pytest.mark.parametrize("rho1", [0.0, 0.2])
def test_fused_epoch_equals_the_reference_step_for_step(corpus, rho1):
    c = corpus
    fused, reference = SgdEpochs(c.space, c.data), SgdEpochs(c.space, c.data, fused=False)
    assert fused.fused and not reference.fused
    W0, q0, s0 = _state(c, 1)
    W1, q1, s1 = W0.copy(), q0.copy(), s0.copy()
    n = c.data.n_seqs
    rng = np.random.default_rng(2)
    moved = 0
    for seen, s in enumerate(rng.permutation(n)):  # one sequence per call: each step compared
        order = np.array([s], dtype=np.int64)
        before = W0.copy()
        got = fused(W0, order, seen, 0.5, 0.8, rho1, q0, s0)
        want = reference(W1, order, seen, 0.5, 0.8, rho1, q1, s1)
        np.testing.assert_allclose(W0, W1, rtol=0, atol=1e-12)
        np.testing.assert_allclose(q0, q1, rtol=0, atol=1e-12)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        assert got[1:] == want[1:]
        moved += int(np.any(W0 != before))
    assert moved > n // 2  # steps moved weights: the comparison is not vacuous
    assert s0[0] == s1[0]
    if rho1:
        assert np.sum(W0 == 0.0) > 0 and np.array_equal(W0 == 0.0, W1 == 0.0)
    assert not fused.G.any() and not reference.G.any()  # both leave G at zero


@pytest.mark.parametrize("rho1", [0.0, 0.2])
def test_fused_epochs_equal_the_reference_over_whole_epochs(corpus, rho1):
    c = corpus
    fused, reference = SgdEpochs(c.space, c.data), SgdEpochs(c.space, c.data, fused=False)
    W0, q0, s0 = _state(c, 3)
    W1, q1, s1 = W0.copy(), q0.copy(), s0.copy()
    n = c.data.n_seqs
    rng = np.random.default_rng(4)
    for epoch in range(4):
        order = rng.permutation(n).astype(np.int64)
        got = fused(W0, order, epoch * n, 0.3, 0.9, rho1, q0, s0)
        want = reference(W1, order, epoch * n, 0.3, 0.9, rho1, q1, s1)
        np.testing.assert_allclose(W0, W1, rtol=0, atol=1e-12)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        assert got[1:] == want[1:]
    if c.space.n_b:  # the exponentiated bigram weights were kept current through the steps
        np.testing.assert_allclose(fused.expw, np.exp(W0[c.space.n_u:c.space.n_u + c.space.n_b]),
                                   rtol=1e-15)


def test_fused_epoch_reports_overflow(corpus):
    c = corpus
    W = np.full(c.space.n_weights, 1e308)
    W[::2] = -1e308
    out = SgdEpochs(c.space, c.data)(W, np.arange(c.data.n_seqs, dtype=np.int64), 0, 0.1, 0.9,
                                     0.0, np.zeros(W.size), np.zeros(1))
    assert out[3]


@pytest.mark.parametrize("rho1", [0.0, 0.2])
def test_dense_rows_give_the_same_bits_whatever_their_number(corpus, rho1):
    """The fused epoch keeps the most frequent observations' weights in dense rows; each
    weight receives the same additions in the same order, so the weights, penalties and
    losses are the same bits with no dense row, some, or every observation's."""
    c = corpus
    n_obs = c.space.n_obs
    runs = []
    for n_dense in (0, n_obs // 3, n_obs):
        epochs = SgdEpochs(c.space, c.data, n_dense=n_dense)
        W, q, s = _state(c, 5)
        rng = np.random.default_rng(6)
        losses = [epochs(W, rng.permutation(c.data.n_seqs).astype(np.int64), e * c.data.n_seqs,
                         0.3, 0.9, rho1, q, s) for e in range(3)]
        assert not epochs.G.any()
        runs.append((W, q, s, losses))
    W0, q0, s0, losses0 = runs[0]
    assert np.any(W0 != _state(c, 5)[0])
    if rho1:
        assert np.sum(W0 == 0.0) > 0  # the penalty clipped weights at zero: compared too
    for W, q, s, losses in runs[1:]:
        np.testing.assert_array_equal(W, W0)
        np.testing.assert_array_equal(q, q0)
        np.testing.assert_array_equal(s, s0)
        assert losses == losses0
