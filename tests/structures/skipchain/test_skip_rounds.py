"""A BP round's pass over a chain (``chain_beliefs``, and the span pass of ``window``)
and the evaluation's last pass (``chain_pass``) against the full forward-backward they
stand for (the augmented scores through :func:`crfkit.kernels.lattice.forward_backward`,
then ``store_beliefs``): the beliefs of the tokens with skip edges must be the same bits
(``chain_beliefs``, ``chain_pass``, whose log Z too) or agree to rounding (``window``).

The round pass skips log Z, takes the exponentials of tokens without edges from a
per-document table and stops the backward pass at the chain's first token with an edge;
chains whose edges start late and end early are what exercises those shortcuts.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import loss
from crfkit.kernels.flavour import read_only, read_only_space
from crfkit.kernels.gradient import work_buffers
from crfkit.kernels.lattice import forward_backward, unigram_scores
from crfkit.structures.skipchain import chain_pass, window
from tests.helpers import make_problem

CASES = [
    # (sequence lengths, first sequence of each document, edges (i, j, pattern))
    ([7, 6, 8], [0], [(3, 9, 0), (5, 17, 1), (10, 16, 0)]),   # edges start late, end early
    ([5, 5], [0], [(0, 9, 0), (4, 5, 1)]),                     # chain ends and starts
    ([9, 4, 6], [0, 1], [(2, 6, 0), (10, 16, 1), (11, 18, 0)]),  # two documents
]


def _round_setup(lengths, docs, edges, seed):
    """A small problem's scores and shared buffers: the unigram scores of every token, the
    fixed factors of the tokens without edges (NaN elsewhere) and the chain work tuple; the
    weights read-only, as training and labelling pass them (the kernels' one version)."""
    L = 4
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=2, seed=seed)
    g = graph.arrays()
    inc_ptr = g[5]
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
    scores = (trans, exp_trans, trans_shift, expw)
    return L, space, data, g, read_only(W), scores, psi_doc, expu_doc, work


def _full_pass(W, space, data, s, L, scores, psi_doc, g, msg, work, want):
    """Forward-backward of chain s over its augmented scores, then store_beliefs (the
    reference); returns (t0, T, its log Z without the transitions' shift)."""
    t0 = int(data.seq_ptr[s])
    T = int(data.seq_ptr[s + 1]) - t0
    psi, expu, expb, alpha, beta, scale, tmp = (work[i] for i in (0, 2, 3, 4, 5, 6, 8))
    chain_pass.augmented(psi_doc, 0, t0, T, L, g[5], g[6], g[7], msg, psi)
    logz = forward_backward(psi, expb, False, T, L, expu, alpha, beta, scale, tmp)
    chain_pass.store_beliefs(t0, T, L, 0, g[5], alpha, beta, want)
    return t0, T, logz


@pytest.mark.parametrize("lengths, docs, edges", CASES)
def test_last_pass_is_forward_backward_bit_for_bit(lengths, docs, edges):
    """``chain_pass`` takes the factors of tokens without edges from the document's table
    instead of exponentiating their scores again: log Z and the lattice are the same bits."""
    L, space, data, g, W, scores, psi_doc, expu_doc, work = _round_setup(lengths, docs, edges,
                                                                         4)
    msg = np.random.default_rng(11).normal(0.0, 2.0, (len(g[2]), 2, L))
    want = np.full((data.n_tokens, L), np.nan)
    got = np.full((data.n_tokens, L), np.nan)
    sp = read_only_space(space.arrays())
    for s in range(data.n_seqs):
        t0, T, logz = _full_pass(W, space, data, s, L, scores, psi_doc, g, msg, work, want)
        lattice = work[4][:T].copy(), work[5][:T].copy()
        work[4][:] = np.nan
        work[5][:] = np.nan
        shift, got_logz = chain_pass.chain_pass(W, sp, data.tok_ptr, data.tok_obs, t0, T, L,
                                                False, *scores, psi_doc, expu_doc, 0, g, msg,
                                                work)
        assert shift + got_logz == scores[2] * (T - 1) + logz
        np.testing.assert_array_equal(work[4][:T], lattice[0])
        np.testing.assert_array_equal(work[5][:T], lattice[1])
        chain_pass.store_beliefs(t0, T, L, 0, g[5], work[4], work[5], got)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lengths, docs, edges", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_round_pass_gives_the_same_beliefs_as_forward_backward(lengths, docs, edges, seed):
    L, space, data, g, W, scores, psi_doc, expu_doc, work = _round_setup(lengths, docs, edges,
                                                                         seed)
    inc_ptr = g[5]
    N = data.n_tokens
    rng = np.random.default_rng(seed + 10)
    msg = rng.normal(0.0, 2.0, (len(g[2]), 2, L))
    want = np.full((N, L), np.nan)
    got = np.full((N, L), np.nan)
    sp, dt = read_only_space(space.arrays()), data.arrays()
    for s in range(data.n_seqs):
        t0, T, _ = _full_pass(W, space, data, s, L, scores, psi_doc, g, msg, work, want)
        work[5][:] = np.nan  # nothing of the full pass may leak into the round pass
        chain_pass.chain_beliefs(W, sp, dt[1], dt[2], t0, T, L, False, *scores, psi_doc,
                                 expu_doc, 0, g, msg, work, got)
    with_edges = inc_ptr[1:] > inc_ptr[:-1]
    assert with_edges.any() and not with_edges.all()
    assert np.isfinite(want[with_edges]).all()
    np.testing.assert_array_equal(got[with_edges], want[with_edges])


@pytest.mark.parametrize("lengths, docs, edges", CASES)
def test_window_round_gives_the_beliefs_of_forward_backward(lengths, docs, edges):
    """The span pass (``window``): its ends are taken once from the fixed factors, then
    rounds with new messages reuse them; equal to rounding (other sums, same formula)."""
    L, space, data, g, W, scores, psi_doc, expu_doc, work = _round_setup(lengths, docs, edges,
                                                                         3)
    inc_ptr = g[5]
    N = data.n_tokens
    M = scores[1][0]
    MT = np.ascontiguousarray(M.T)
    pre, suf = np.full((N, L), np.nan), np.full((N, L), np.nan)
    tmp, row = np.empty(L), np.empty(L)
    rng = np.random.default_rng(7)
    for round_ in range(3):
        msg = rng.normal(0.0, 2.0, (len(g[2]), 2, L))
        want = np.full((N, L), np.nan)
        got = np.full((N, L), np.nan)
        for s in range(data.n_seqs):
            t0, T, _ = _full_pass(W, space, data, s, L, scores, psi_doc, g, msg, work, want)
            first, last = window.edge_span(inc_ptr, t0, T)
            if first < 0:
                continue
            work[4][:] = np.nan  # nothing of the full pass may leak into the round pass
            work[5][:] = np.nan
            if round_ == 0:
                assert window.chain_ends(expu_doc, t0, T, first, last, L, M, MT, pre[t0],
                                         suf[t0], tmp, row)
            assert window.window_beliefs(psi_doc, expu_doc, 0, t0, first, last, L, inc_ptr,
                                         g[6], g[7], msg, M, MT, pre[t0], suf[t0], work, got)
        with_edges = inc_ptr[1:] > inc_ptr[:-1]
        assert with_edges.any() and not with_edges.all()
        assert np.isfinite(want[with_edges]).all()
        np.testing.assert_allclose(got[with_edges], want[with_edges], rtol=1e-12, atol=1e-12)


def test_window_refuses_ends_that_underflowed():
    L = 2
    expu_doc = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])  # token 1: no label is possible
    M = np.ones((L, L))
    pre, suf = np.empty(L), np.empty(L)
    ok = window.chain_ends(expu_doc, 0, 3, 2, 2, L, M, M, pre, suf, np.empty(L), np.empty(L))
    assert not ok and np.isnan(suf[0])
