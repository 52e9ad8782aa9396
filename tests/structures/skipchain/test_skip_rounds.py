"""A BP round's pass over a chain (``chain_beliefs``) against the full forward-backward
it stands for (``chain_pass`` then ``store_beliefs``): the beliefs of the tokens with
skip edges must be the same bits, so that models do not change.

The round pass skips log Z, takes the exponentials of tokens without edges from a
per-document table and stops the backward pass at the chain's first token with an edge;
chains whose edges start late and end early are what exercises those shortcuts.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import loss
from crfkit.kernels.gradient import work_buffers
from crfkit.kernels.lattice import unigram_scores
from crfkit.structures.skipchain import chain_pass
from tests.helpers import make_problem

CASES = [
    # (sequence lengths, first sequence of each document, edges (i, j, pattern))
    ([7, 6, 8], [0], [(3, 9, 0), (5, 17, 1), (10, 16, 0)]),   # edges start late, end early
    ([5, 5], [0], [(0, 9, 0), (4, 5, 1)]),                     # chain ends and starts
    ([9, 4, 6], [0, 1], [(2, 6, 0), (10, 16, 1), (11, 18, 0)]),  # two documents
]


@pytest.mark.parametrize("lengths, docs, edges", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_round_pass_gives_the_same_beliefs_as_forward_backward(lengths, docs, edges, seed):
    L = 4
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, seed=seed)
    g = graph.arrays()
    inc_ptr = g[5]
    rng = np.random.default_rng(seed + 10)
    msg = rng.normal(0.0, 2.0, (len(g[2]), 2, L))
    trans, exp_trans, trans_shift, expw, Wd = loss.shared_scores(
        W, space.u_ptr, space.u_lab, space.n_u, space.n_b, space.trans_offset,
        space.has_trans, L, 0)
    N = data.n_tokens
    psi_doc = np.empty((N, L))
    unigram_scores(W, data.tok_ptr, data.tok_obs, None, space.u_ptr, space.u_lab, 0, N, psi_doc,
                   Wd)
    expu_doc = np.full((N, L), np.nan)  # rows of tokens with edges must never be read
    chain_pass.fixed_exps(psi_doc, N, L, 0, inc_ptr, expu_doc)
    work = work_buffers(max(lengths), L, False, exp_trans)
    want = np.full((N, L), np.nan)
    got = np.full((N, L), np.nan)
    sp, dt = space.arrays(), data.arrays()
    for s in range(data.n_seqs):
        t0 = int(data.seq_ptr[s])
        T = int(data.seq_ptr[s + 1]) - t0
        chain_pass.chain_pass(W, sp, dt[1], dt[2], t0, T, L, False, trans, exp_trans,
                              trans_shift, expw, psi_doc, 0, g, msg, work)
        chain_pass.store_beliefs(t0, T, L, 0, inc_ptr, work[4], work[5], want)
        work[5][:] = np.nan  # nothing of the full pass may leak into the round pass
        chain_pass.chain_beliefs(W, sp, dt[1], dt[2], t0, T, L, False, trans, exp_trans,
                                 trans_shift, expw, psi_doc, expu_doc, 0, g, msg, work, got)
    with_edges = inc_ptr[1:] > inc_ptr[:-1]
    assert with_edges.any() and not with_edges.all()
    assert np.isfinite(want[with_edges]).all()
    np.testing.assert_array_equal(got[with_edges], want[with_edges])
