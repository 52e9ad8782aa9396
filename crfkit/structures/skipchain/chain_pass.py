"""Numba kernels of the skip-chain CRF: the passes over one chain (sentence) of a document.

Given the skip messages a chain's tokens receive (:mod:`crfkit.structures.skipchain.belief`),
the chain is a tree: these run its forward-backward with the messages as unary scores
(sum-product: :func:`chain_pass`, :func:`chain_beliefs`) or its max-sum passes
(:func:`max_marginals`), and store the log beliefs of its tokens that have skip edges.
Argument groups are belief's (``graph``, ``work``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.lattice import (
    bigram_scores,
    exp_shifted,
    exp_transitions_factors,
    max_forward,
    shift_of,
)
from crfkit.kernels.scaled import scaled_backward, scaled_forward, scaled_logz

LOG_FLOOR = -700.0  # log of a belief that underflowed to 0 (keeps cavities finite)


@njit(**JIT)
def has_edges(inc_ptr, t0, T):
    return inc_ptr[t0 + T] > inc_ptr[t0]


@njit(**JIT)
def augmented(psi_doc, g0, t0, T, L, inc_ptr, inc_edge, inc_side, msg, psi):
    """psi[:T] = unigram scores of tokens t0.. (rows of psi_doc from document token g0)
    plus the skip messages they receive."""
    for t in range(T):
        token_scores(psi_doc, g0, t0 + t, L, inc_ptr, inc_edge, inc_side, msg, psi[t])


@njit(inline="always", **JIT)
def token_scores(psi_doc, g0, g, L, inc_ptr, inc_edge, inc_side, msg, row):
    """row = document token g's unigram scores plus the skip messages it receives."""
    for y in range(L):
        row[y] = psi_doc[g - g0, y]
    for k in range(inc_ptr[g], inc_ptr[g + 1]):
        e = inc_edge[k]
        side = inc_side[k]
        for y in range(L):
            row[y] += msg[e, side, y]


@njit(inline="always", **JIT)
def chain_factors(psi_doc, expu_doc, g0, t0, T, L, inc_ptr, inc_edge, inc_side, msg, psi, expu,
                  with_shift):
    """expu[:T] = the exponentiated scores of the chain's tokens: those with skip edges
    from their scores plus the messages they receive (into ``psi``), the others taken
    from the document's table ``expu_doc`` (:func:`fixed_exps`), the same bits.

    Returns (the sum of the shifts, as :func:`crfkit.kernels.lattice.exp_unigrams`
    does, if ``with_shift``; the chain's first token with an edge, -1 if none)."""
    shift = 0.0
    first = np.int64(-1)  # not the literal -1: scaled_backward's other callers pass an int64
    for t in range(T):
        g = t0 + t
        if inc_ptr[g + 1] > inc_ptr[g]:
            if first < 0:
                first = t
            token_scores(psi_doc, g0, g, L, inc_ptr, inc_edge, inc_side, msg, psi[t])
            shift += exp_shifted(psi[t], expu[t])
        else:
            if with_shift:
                shift += shift_of(psi_doc[g - g0])
            for y in range(L):
                expu[t, y] = expu_doc[g - g0, y]
    return shift, first


@njit(**JIT)
def chain_pass(W, space, tok_ptr, tok_obs, t0, T, L, per_token, trans, exp_trans, trans_shift,
               expw, psi_doc, expu_doc, g0, graph, msg, work):
    """Forward-backward of one chain with the skip messages as unary scores.

    Returns (shift, logz) as :func:`crfkit.kernels.gradient.sequence_gradient`
    does (log Z' = their sum); the marginals are alpha * beta of ``work``. The factors
    of tokens without skip edges come from ``expu_doc`` (:func:`chain_factors`).
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    inc_ptr, inc_edge, inc_side = graph.inc_ptr, graph.inc_edge, graph.inc_side
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    logz, _ = chain_factors(psi_doc, expu_doc, g0, t0, T, L, inc_ptr, inc_edge, inc_side, msg,
                            psi, expu, True)
    shift = 0.0
    if per_token:
        shift = exp_transitions_factors(W, b_ptr, b_prev, b_cur, n_u, tok_ptr, tok_obs, t0, T,
                                        trans, exp_trans[0], trans_shift, expw, phi, expb)
    else:
        shift = trans_shift * (T - 1)
    logz = scaled_logz(expu, expb, per_token, T, L, alpha, beta, scale, tmp, logz)
    return shift, logz


@njit(**JIT)
def store_beliefs(t0, T, L, g0, inc_ptr, alpha, beta, logb):
    """logb[token] = log marginal (alpha * beta) of the chain's tokens that have skip edges."""
    for t in range(T):
        g = t0 + t
        if inc_ptr[g + 1] > inc_ptr[g]:
            for y in range(L):
                v = alpha[t, y] * beta[t, y]
                logb[g - g0, y] = np.log(v) if v > 0.0 else LOG_FLOOR


@njit(**JIT)
def fixed_exps(psi_doc, D, L, g0, inc_ptr, expu_doc):
    """expu_doc[t] = exp(psi_doc[t] - max) for the document's tokens without skip edges:
    BP rounds change only the scores of tokens with edges, so these are computed once."""
    for t in range(D):
        g = g0 + t
        if inc_ptr[g + 1] == inc_ptr[g]:
            exp_shifted(psi_doc[t], expu_doc[t])


@njit(**JIT)
def chain_beliefs(W, space, tok_ptr, tok_obs, t0, T, L, per_token, trans, exp_trans,
                   trans_shift, expw, psi_doc, expu_doc, g0, graph, msg, work, logb):
    """One BP round over a chain: the log beliefs of its tokens that have skip edges.

    The same arithmetic, bit for bit, as :func:`chain_pass` then :func:`store_beliefs`
    for those tokens, without what a round does not use: log Z, the exponentials of
    tokens without edges (``expu_doc``, computed once a document) and the backward
    rows before the chain's first token with an edge.
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    inc_ptr, inc_edge, inc_side = graph.inc_ptr, graph.inc_edge, graph.inc_side
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    _, first = chain_factors(psi_doc, expu_doc, g0, t0, T, L, inc_ptr, inc_edge, inc_side,
                             msg, psi, expu, False)
    if per_token:
        exp_transitions_factors(W, b_ptr, b_prev, b_cur, n_u, tok_ptr, tok_obs, t0, T,
                                trans, exp_trans[0], trans_shift, expw, phi, expb)
    # an underflowing scale leaves the rest of the lattice unset, as in chain_pass (whose
    # NaN log Z the round ignores: the evaluation's final pass returns it)
    if scaled_forward(expu, expb, per_token, T, L, alpha, scale, tmp):
        scaled_backward(expu, expb, per_token, T, L, beta, scale, tmp, first)
    store_beliefs(t0, T, L, g0, inc_ptr, alpha, beta, logb)


@njit(**JIT)
def max_marginals(psi, phi, per_token, T, L, fwd, bwd, logb_rows, g_first, inc_ptr, g0):
    """Log max-marginals (max-sum forward + backward) of a chain, shifted to max 0, into
    ``logb_rows`` for its tokens that have skip edges."""
    max_forward(psi, phi, per_token, T, L, fwd, np.empty((0, 0), dtype=np.int32))
    for y in range(L):
        bwd[T - 1, y] = 0.0
    for t in range(T - 2, -1, -1):
        M = phi[t + 1] if per_token else phi[0]
        for a in range(L):
            best = -np.inf
            for b in range(L):
                v = M[a, b] + psi[t + 1, b] + bwd[t + 1, b]
                if v > best:
                    best = v
            bwd[t, a] = best
    for t in range(T):
        g = g_first + t
        if inc_ptr[g + 1] > inc_ptr[g]:
            m = -np.inf
            for y in range(L):
                v = fwd[t, y] + bwd[t, y]
                logb_rows[g - g0, y] = v
                if v > m:
                    m = v
            for y in range(L):
                logb_rows[g - g0, y] = max(logb_rows[g - g0, y] - m, LOG_FLOOR)


@njit(**JIT)
def chain_phi(W, space, tok_ptr, tok_obs, t0, T, per_token, trans, phi):
    """Log transition scores of a chain: phi[1:T] with observation bigrams, else phi[0]."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    if per_token:
        bigram_scores(W, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, n_u, trans, t0, T, phi)
    else:
        L = trans.shape[0]
        for a in range(L):
            for b in range(L):
                phi[0, a, b] = trans[a, b]
