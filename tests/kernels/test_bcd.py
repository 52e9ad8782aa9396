"""Blockwise coordinate descent's cached lattice against the batch objective.

Every block's gradient, computed from the forward/backward rows the sweep keeps and
recomputes only where an earlier block's update made them stale, must equal the batch
objective's gradient at the weights of that moment; so must the transition block's, at
the end of the sweep. A stale row that is not recomputed breaks the equality.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import bcd
from crfkit.kernels.bcd import BlockDescent
from crfkit.kernels.objective import Objective
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, no_literal_versions, random_corpus


@pytest.fixture(scope="module")
def corpus():
    return encode_training(PATTERNS, random_corpus(5, n_seqs=12, max_len=6))


def _full_gradient(c, W):
    g = np.empty_like(W)
    Objective(c.space, c.data, c.empirical, 0.0)(W, g)
    return g


def test_every_block_gradient_during_a_sweep_is_the_objectives(corpus):
    c, s = corpus, corpus.space
    assert s.n_b > 0 and s.has_trans  # observation bigrams and transitions both covered
    W = np.random.default_rng(0).normal(scale=0.5, size=s.n_weights)
    d = BlockDescent(s, c.data, c.empirical)
    args = (d.space_arrays, d.data_arrays, d.tok_val, d.per_token, d.lat, d.index)
    bcd.reset(W, d.space_arrays, d.data_arrays, d.tok_val, d.lat)
    moved = 0
    for o in range(s.n_obs):
        want = _full_gradient(c, W)
        nu, nb = bcd.block_gradient(o, W, *args, c.empirical, d.g, d.h)
        np.testing.assert_allclose(d.g[:nu], want[s.u_ptr[o]:s.u_ptr[o + 1]], atol=1e-10)
        np.testing.assert_allclose(d.g[nu:nu + nb],
                                   want[s.n_u + s.b_ptr[o]:s.n_u + s.b_ptr[o + 1]], atol=1e-10)
        assert np.all(d.h[:nu + nb] >= 0.0)
        if nu and bcd.bound_update(W, s.u_ptr[o], d.g, d.h, nu, 0.05, 0.01, 1.5, d.old):
            bcd.apply_unigram_change(o, W, d.space_arrays, d.data_arrays, d.tok_val, d.lat,
                                     d.index, d.old)
            moved += 1
        if nb and bcd.bound_update(W, s.n_u + s.b_ptr[o], d.g[nu:], d.h[nu:], nb, 0.05, 0.01,
                                   1.5, d.old):
            bcd.apply_bigram_change(o, W, d.space_arrays, d.data_arrays, d.lat, d.index)
            moved += 1
    assert moved > s.n_obs // 2  # the rows were made stale often
    want = _full_gradient(c, W)
    L2 = s.n_labels ** 2
    bcd.transition_sweep(W, d.space_arrays, d.data_arrays, d.per_token, d.lat, c.empirical,
                         0.0, 0.0, 1.5, d.g, d.h, d.old)
    np.testing.assert_allclose(d.g[:L2], want[s.trans_offset:], atol=1e-10)


def test_soft_threshold():
    assert bcd.soft_threshold(2.5, 1.0) == 1.5
    assert bcd.soft_threshold(-2.5, 1.0) == -1.5
    assert bcd.soft_threshold(0.7, 1.0) == 0.0 and bcd.soft_threshold(-1.0, 1.0) == 0.0


def test_occurrence_index_lists_each_observation_in_token_order(corpus):
    data = corpus.data
    ptr, occ_tok, occ_j = bcd.occurrence_index(data.tok_ptr, data.tok_obs, corpus.space.n_obs)
    token_of = np.repeat(np.arange(data.n_tokens), np.diff(data.tok_ptr))
    for o in range(corpus.space.n_obs):
        where = np.flatnonzero(data.tok_obs == o)
        assert np.array_equal(occ_j[ptr[o]:ptr[o + 1]], where)
        assert np.array_equal(occ_tok[ptr[o]:ptr[o + 1]], token_of[where])


def test_both_halves_of_a_sweep_share_one_compiled_observation_sweep(corpus):
    """The first half's bounds start at an int64 0, not the literal 0, which would make
    Numba compile the observation sweep a second time."""
    d = BlockDescent(corpus.space, corpus.data, corpus.empirical)
    d.sweep(np.zeros(corpus.space.n_weights), 0.05, 0.01, 1.5)
    assert no_literal_versions(bcd.observation_sweep)
