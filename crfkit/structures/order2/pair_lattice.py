"""Numba kernels of second-order CRFs: scores, scaled forward-backward, expectations, loss.

The lattice has label states at t = 0 and label-pair states ``p = (y[t-1],
y[t])`` at t >= 1 (only the pairs of :class:`crfkit.structures.order2.pair_space.Order2Space`).
Step 1 goes from label ``a`` to every pair ``(a, b)``; a step t >= 2 follows
an edge ``j`` (a trigram (a, b, c)) from pair ``(a, b)`` to ``(b, c)``. Edges are
stored as dense slots per destination (see ``Order2Space.lattice``): a slot
whose trigram has no state scores -inf, so it adds exactly 0.
Arrays of one sequence of T tokens (``lat2`` as ``Order2Space.lattice``)::

    psi[t, y]    unigram scores (T, L)
    node[t, p]   psi[t, b] + transition[a, b] + observation bigrams at t, t >= 1 (T, P)
    edge[t, j]   label-trigram weight + observation trigrams at t, t >= 2
                 (T, K), or one shared row (1, K) when no observation trigram exists
    alpha, beta  scaled forward/backward vectors over the states (T, max(L, P))

Recurrences (exponentiated scores E = exp(edge - shift), N = exp(node - shift)):

    alpha[0, y] = exp(psi[0, y]) / scale[0]
    alpha[1, p] = alpha[0, a(p)] N[1, p] / scale[1]
    alpha[t, p] = N[t, p] sum_{j into p} alpha[t-1, src(j)] E[t, j] / scale[t]
    beta[T-1]   = 1, beta[t-1, q] = sum_{edges q -> p} E[t, j] N[t, p] beta[t, p] / scale[t]
    P(pair p at t)        = alpha[t, p] beta[t, p]
    P(edge j at t)        = alpha[t-1, src(j)] E[t, j] N[t, p] beta[t, p] / scale[t]

so the work per token is the number of pairs plus the number of trigrams,
not L**3. The factor N is built as exp(psi) * exp(transition) and recomputed
only where an observation bigram fires (as the first-order kernels do).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import posterior_errors
from crfkit.kernels.lattice import exp_shifted, longest_sequence, unigram_scores

OVERFLOW = 700.0  # a recomputed exponent above this falls back to a full row shift


# --- encoding ----------------------------------------------------------------------------------
@njit(**JIT)
def shared_rows(W, space, lat2, L, pen):
    """The transition score of every pair (+ ``pen[a, b]``, 0 or -inf) and the label-trigram
    weight of every edge; with their exponentials and shifts."""
    trans_offset, has_trans = space[6], space[7]
    pair_a, pair_b, e_tri = lat2.pair_a, lat2.pair_b, lat2.e_tri
    tri_offset, has_tri = lat2.tri_offset, lat2.has_tri
    P, K = pair_a.shape[0], e_tri.shape[0]
    transP = np.zeros(P)
    for p in range(P):
        a, b = pair_a[p], pair_b[p]
        transP[p] = (W[trans_offset + a * L + b] if has_trans else 0.0) + pen[a, b]
    triE = np.zeros(K)
    for j in range(K):
        if e_tri[j] < 0:
            triE[j] = -np.inf  # a slot without a trigram state
        elif has_tri:
            triE[j] = W[tri_offset + e_tri[j]]
    expT = np.empty(P)
    expE = np.empty((1, K))
    t_shift = exp_shifted(transP, expT)
    e_shift = exp_shifted(triE, expE[0])
    return transP, triE, expT, t_shift, expE, e_shift


@njit(inline="always", **JIT)
def has_bigrams(b_ptr):
    """Whether the space has observation bigrams: without, the loops over a token's
    bigram features would visit every feature to find none."""
    return b_ptr[b_ptr.shape[0] - 1] > 0


@njit(**JIT)
def lattice_scores(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, psi, node,
                   edge, all_nodes):
    """node[1:T] and (with ``per_edge``) edge[2:T] of tokens t0 .. t0+T-1, from psi[:T]
    (already computed, possibly masked). Without ``all_nodes`` only the nodes an
    observation bigram touches are written: all that :func:`exp_lattice` reads."""
    b_ptr, b_prev, b_cur, n_u = space[2], space[3], space[4], space[5]
    pair_b, pair_of = lat2.pair_b, lat2.pair_of
    g_ptr, g_edge, g_offset = lat2.g_ptr, lat2.g_edge, lat2.g_offset
    transP, triE = shared[0], shared[1]
    P, K = transP.shape[0], triE.shape[0]
    if not (all_nodes or per_edge or has_bigrams(b_ptr)):
        return  # nothing to write
    for t in range(1, T):
        if all_nodes:
            for p in range(P):
                node[t, p] = psi[t, pair_b[p]] + transP[p]
        else:
            for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[i]
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    p = pair_of[b_prev[k] * L + b_cur[k]]
                    if p >= 0:
                        node[t, p] = psi[t, pair_b[p]] + transP[p]
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[i]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                p = pair_of[b_prev[k] * L + b_cur[k]]
                if p >= 0:
                    node[t, p] += W[n_u + k]
        if per_edge and t >= 2:
            for j in range(K):
                edge[t, j] = triE[j]
            for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[i]
                for f in range(g_ptr[o], g_ptr[o + 1]):
                    edge[t, g_edge[f]] += W[g_offset + f]


@njit(**JIT)
def unigram_rows(W, space, tok_ptr, tok_obs, t0, T, psi, Wd):
    """psi[:T] = unigram scores (dense rows ``Wd`` for the most frequent observations)."""
    unigram_scores(W, tok_ptr, tok_obs, None, space[0], space[1], t0, T, psi, Wd)


@njit(**JIT)
def rescored_row(W, space, lat2, tok_ptr, tok_obs, tt, L, psi_t, transP, node_t, expN_t):
    """The node row of token ``tt`` rebuilt in full (the untouched nodes too) and
    exponentiated with its own shift, which it returns (:func:`exp_lattice`'s fallback)."""
    b_ptr, b_prev, b_cur = space[2], space[3], space[4]
    pair_b, pair_of = lat2.pair_b, lat2.pair_of
    P = pair_b.shape[0]
    for p in range(P):
        node_t[p] = psi_t[pair_b[p]] + transP[p]
    for i in range(tok_ptr[tt], tok_ptr[tt + 1]):
        o = tok_obs[i]
        for k in range(b_ptr[o], b_ptr[o + 1]):
            p = pair_of[b_prev[k] * L + b_cur[k]]
            if p >= 0:
                node_t[p] += W[space[5] + k]
    return exp_shifted(node_t[:P], expN_t[:P])


@njit(**JIT)
def bigrams_fit(space, lat2, tok_ptr, tok_obs, tt, L, node_t, base):
    """Whether every node an observation bigram of token ``tt`` touches stays within
    OVERFLOW of ``base`` (its exponential is then taken from that shift)."""
    b_ptr, b_prev, b_cur = space[2], space[3], space[4]
    pair_of = lat2.pair_of
    fit = True
    for i in range(tok_ptr[tt], tok_ptr[tt + 1]):
        o = tok_obs[i]
        for k in range(b_ptr[o], b_ptr[o + 1]):
            p = pair_of[b_prev[k] * L + b_cur[k]]
            if p >= 0 and node_t[p] - base > OVERFLOW:
                fit = False
    return fit


@njit(**JIT)
def exp_lattice(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, psi, node, edge,
                expu, expN, expE):
    """expu[0] = exp(psi[0]), expN[1:T], expE[2:T] (with ``per_edge``), each row shifted;
    returns the sum of the shifts (log Z = shifts + sum log scale)."""
    b_ptr, b_prev, b_cur = space[2], space[3], space[4]
    pair_b, pair_of, g_ptr, g_edge = lat2.pair_b, lat2.pair_of, lat2.g_ptr, lat2.g_edge
    expT, t_shift, expE0, e_shift = shared[2], shared[3], shared[4], shared[5]
    P, K = expT.shape[0], expE0.shape[1]
    bigrams = has_bigrams(b_ptr)
    shift = exp_shifted(psi[0], expu[0])
    for t in range(1, T):
        m = exp_shifted(psi[t], expu[t])
        base = m + t_shift
        safe = not bigrams or bigrams_fit(space, lat2, tok_ptr, tok_obs, t0 + t, L, node[t],
                                          base)
        if safe:
            top = 0.0
            for p in range(P):
                v = expu[t, pair_b[p]] * expT[p]
                expN[t, p] = v
                top = max(top, v)
            last = tok_ptr[t0 + t + 1] if bigrams else tok_ptr[t0 + t]
            for i in range(tok_ptr[t0 + t], last):
                o = tok_obs[i]
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    p = pair_of[b_prev[k] * L + b_cur[k]]
                    if p >= 0:
                        expN[t, p] = np.exp(node[t, p] - base)
                        top = max(top, expN[t, p])
            # the factors' maxima need not meet in one pair: if every product is tiny,
            # shift the row by its own maximum instead
            safe = top > 1e-200
        if safe:
            shift += base
        else:  # rare (extreme weights)
            shift += rescored_row(W, space, lat2, tok_ptr, tok_obs, t0 + t, L, psi[t],
                                  shared[0], node[t], expN[t])
        if per_edge and t >= 2:
            safe = True
            for j in range(K):
                expE[t, j] = expE0[0, j]
            for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[i]
                for f in range(g_ptr[o], g_ptr[o + 1]):
                    j = g_edge[f]
                    if edge[t, j] - e_shift > OVERFLOW:
                        safe = False
                    expE[t, j] = np.exp(edge[t, j] - e_shift)
            if safe:
                shift += e_shift
            else:
                shift += exp_shifted(edge[t, :K], expE[t, :K])
        elif t >= 2:
            shift += e_shift
    return shift


# --- lattice -----------------------------------------------------------------------------------
@njit(**JIT)
def forward2(expu, expN, expE, per_edge, T, L, lat2, alpha, scale):
    """Scaled forward pass over the pair lattice; returns sum log scale (NaN on underflow)."""
    pair_a, e_ptr, e_src0 = lat2.pair_a, lat2.e_ptr, lat2.e_src0
    P = pair_a.shape[0]
    s = 0.0
    for y in range(L):
        alpha[0, y] = expu[0, y]
        s += expu[0, y]
    scale[0] = s
    if not (s > 0.0 and s < np.inf):
        return np.nan
    for y in range(L):
        alpha[0, y] /= s
    for t in range(1, T):
        E = expE[t] if per_edge else expE[0]
        prev, cur, N = alpha[t - 1], alpha[t], expN[t]  # row views: cheaper indexing
        s = 0.0
        if t == 1:
            for p in range(P):
                v = prev[pair_a[p]] * N[p]
                cur[p] = v
                s += v
        else:
            for p in range(P):
                acc = 0.0
                j0, q0 = e_ptr[p], e_src0[p]
                for i in range(e_ptr[p + 1] - j0):
                    acc += prev[q0 + i] * E[j0 + i]
                v = acc * N[p]
                cur[p] = v
                s += v
        scale[t] = s
        if not (s > 0.0 and s < np.inf):
            return np.nan
        inv = 1.0 / s
        for p in range(P):
            alpha[t, p] *= inv
    logz = 0.0
    for t in range(T):
        logz += np.log(scale[t])
    return logz


@njit(**JIT)
def ones_last(beta, T, L, lat2):
    """The backward pass's start: 1 for every state of the last token; returns the
    number of pair states."""
    P = lat2.pair_a.shape[0]
    n_last = L if T == 1 else P
    for q in range(n_last):
        beta[T - 1, q] = 1.0
    return P


@njit(**JIT)
def spread_back(E, tmp, e_ptr, e_src0, P, prev_b):
    """One step of the backward pass over the edges: prev_b[src] += E[j] tmp[dst]."""
    for p in range(P):
        w = tmp[p]
        j0, q0 = e_ptr[p], e_src0[p]
        for i in range(e_ptr[p + 1] - j0):
            prev_b[q0 + i] += E[j0 + i] * w


@njit(**JIT)
def edge_marginals(E, tmp, e_ptr, e_src0, P, prev_a, prev_b, em):
    """:func:`spread_back` that also keeps each edge's marginal in ``em`` (per-token edges)."""
    for p in range(P):
        w = tmp[p]
        j0, q0 = e_ptr[p], e_src0[p]
        for i in range(e_ptr[p + 1] - j0):
            e = E[j0 + i] * w
            prev_b[q0 + i] += e
            em[j0 + i] = prev_a[q0 + i] * e


@njit(**JIT)
def backward2(expN, expE, per_edge, T, L, lat2, beta, scale, tmp):
    """The scaled backward pass matching :func:`forward2`'s scales."""
    pair_a, e_ptr, e_src0 = lat2.pair_a, lat2.e_ptr, lat2.e_src0
    P = ones_last(beta, T, L, lat2)
    for t in range(T - 1, 0, -1):
        E = expE[t] if per_edge else expE[0]
        inv = 1.0 / scale[t]
        for p in range(P):
            tmp[p] = expN[t, p] * beta[t, p] * inv
        beta[t - 1, :L if t == 1 else P] = 0.0
        if t == 1:
            for p in range(P):
                beta[0, pair_a[p]] += tmp[p]
        else:
            spread_back(E, tmp, e_ptr, e_src0, P, beta[t - 1])


@njit(**JIT)
def forward_backward2(expu, expN, expE, per_edge, T, L, lat2, alpha, beta, scale, tmp):
    """Scaled forward-backward over the pair lattice; returns sum log scale (NaN on
    underflow). alpha[t] * beta[t] is then the state marginal of t (module docstring)."""
    logz = forward2(expu, expN, expE, per_edge, T, L, lat2, alpha, scale)
    if logz == logz:
        backward2(expN, expE, per_edge, T, L, lat2, beta, scale, tmp)
    return logz


@njit(**JIT)
def token_marginals(alpha, beta, T, L, lat2, marg):
    """marg[t, y] = P(y[t] = y) from the state marginals."""
    pair_b = lat2.pair_b
    for y in range(L):
        marg[0, y] = alpha[0, y] * beta[0, y]
    for t in range(1, T):
        for y in range(L):
            marg[t, y] = 0.0
        for p in range(pair_b.shape[0]):
            marg[t, pair_b[p]] += alpha[t, p] * beta[t, p]


# --- expectations ------------------------------------------------------------------------------
@njit(**JIT)
def backward_expectations2(G, space, lat2, tok_ptr, tok_obs, t0, T, L, per_edge, expN, expE,
                           alpha, beta, scale, tmp, marg, em, pacc, eacc, Gd):
    """The backward pass of :func:`backward2` fused with the expectations, after
    :func:`forward2`: G += expected counts of the features of tokens t0 .. t0+T-1. An edge's
    marginal is alpha[t-1, src] times the term the backward pass adds, so both come from
    one sweep over the trigrams. Dense transition and trigram counts go to ``pacc`` (per
    pair) and ``eacc`` (per edge, still to be multiplied by E when shared), the dense-row
    unigram counts to ``Gd``. Leaves the token marginals in ``marg``."""
    b_ptr, b_prev, b_cur, n_u = space[2], space[3], space[4], space[5]
    pair_a, pair_b, pair_of = lat2.pair_a, lat2.pair_b, lat2.pair_of
    e_ptr, e_src0 = lat2.e_ptr, lat2.e_src0
    g_ptr, g_edge, g_offset, has_tri = lat2.g_ptr, lat2.g_edge, lat2.g_offset, lat2.has_tri
    P = ones_last(beta, T, L, lat2)
    for t in range(T - 1, 0, -1):
        E = expE[t] if per_edge else expE[0]
        inv = 1.0 / scale[t]
        for y in range(L):
            marg[t, y] = 0.0
        cur_a, cur_b, N, mt = alpha[t], beta[t], expN[t], marg[t]
        for p in range(P):
            tmp[p] = N[p] * cur_b[p] * inv
            m = cur_a[p] * cur_b[p]  # the state marginal: alpha[t] is no longer needed
            cur_a[p] = m
            pacc[p] += m
            mt[pair_b[p]] += m
        beta[t - 1, :L if t == 1 else P] = 0.0
        if t == 1:
            for p in range(P):
                beta[0, pair_a[p]] += tmp[p]
        elif per_edge:
            edge_marginals(E, tmp, e_ptr, e_src0, P, alpha[t - 1], beta[t - 1], em)
            for j in range(e_ptr[0], e_ptr[P]):
                eacc[j] += em[j]
            for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[i]
                for f in range(g_ptr[o], g_ptr[o + 1]):
                    G[g_offset + f] += em[g_edge[f]]
        elif has_tri:
            prev_a, prev_b = alpha[t - 1], beta[t - 1]
            for p in range(P):
                w = tmp[p]
                j0, q0 = e_ptr[p], e_src0[p]
                for i in range(e_ptr[p + 1] - j0):
                    prev_b[q0 + i] += E[j0 + i] * w
                    eacc[j0 + i] += prev_a[q0 + i] * w  # times E[j] at the flush
        else:
            spread_back(E, tmp, e_ptr, e_src0, P, beta[t - 1])
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[i]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                p = pair_of[b_prev[k] * L + b_cur[k]]
                if p >= 0:
                    G[n_u + k] += alpha[t, p]
    for y in range(L):
        marg[0, y] = alpha[0, y] * beta[0, y]
    unigram_expectations2(G, space, tok_ptr, tok_obs, t0, T, L, marg, Gd)


@njit(**JIT)
def unigram_expectations2(G, space, tok_ptr, tok_obs, t0, T, L, marg, Gd):
    """G += the token marginals of the unigram features (observations below ``len(Gd)``:
    into their dense rows ``Gd``)."""
    u_ptr, u_lab = space[0], space[1]
    K = Gd.shape[0]
    for t in range(T):
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[i]
            if o < K:
                for y in range(L):
                    Gd[o, y] += marg[t, y]
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    G[k] += marg[t, u_lab[k]]


@njit(**JIT)
def flush_blocks(G, space, lat2, L, pacc, eacc, expE0, per_edge, Gd):
    """Move the per-pair, per-edge and dense-row counts of a block into G (a shared edge's
    counts still lack their factor ``expE0[j]``)."""
    u_ptr, u_lab, trans_offset, has_trans = space[0], space[1], space[6], space[7]
    pair_a, pair_b, e_tri = lat2.pair_a, lat2.pair_b, lat2.e_tri
    tri_offset, has_tri = lat2.tri_offset, lat2.has_tri
    if has_trans:
        for p in range(pair_a.shape[0]):
            G[trans_offset + pair_a[p] * L + pair_b[p]] += pacc[p]
    if has_tri:
        for j in range(e_tri.shape[0]):
            if e_tri[j] >= 0:
                G[tri_offset + e_tri[j]] += eacc[j] if per_edge else eacc[j] * expE0[j]
    for o in range(Gd.shape[0]):
        for k in range(u_ptr[o], u_ptr[o + 1]):
            G[k] += Gd[o, u_lab[k]]


@njit(**JIT)
def work2(Tmax, L, P, K, per_edge):
    """Buffers of a block: psi, node, edge, expu, expN, expE, alpha, beta, scale, tmp, marg."""
    S = max(L, P)
    TE = Tmax if per_edge else 1
    return (np.empty((Tmax, L)), np.empty((Tmax, P)), np.empty((TE, K)), np.empty((Tmax, L)),
            np.empty((Tmax, P)), np.empty((TE, K)), np.empty((Tmax, S)), np.empty((Tmax, S)),
            np.empty(Tmax), np.empty(S), np.empty((Tmax, L)))


@njit(**JIT)
def sequence_logz(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, Wd, work):
    """Scores, exponentials and the forward pass of one sequence; returns log Z (NaN on
    underflow). ``work`` as :func:`work2`, with the shared edge row in expE[0]."""
    psi, node, edge, expu, expN, expE, alpha, beta, scale, tmp = work[:10]
    unigram_rows(W, space, tok_ptr, tok_obs, t0, T, psi, Wd)
    lattice_scores(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, psi, node,
                   edge, False)
    shift = exp_lattice(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, psi, node,
                        edge, expu, expN, expE)
    return shift + forward2(expu, expN, expE, per_edge, T, L, lat2, alpha, scale)


@njit(**JIT)
def loss_block2(W, space, lat2, data, L, s0, s1, per_edge, Wd, G, out):
    """Sequences s0..s1-1: the sum of their log Z into out[0], expected counts into G,
    token / sequence errors of posterior decoding into out[1] / out[2]."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    P, K = lat2.pair_a.shape[0], lat2.e_tri.shape[0]
    work = work2(longest_sequence(seq_ptr, s0, s1), L, P, K, per_edge)
    shared = shared_rows(W, space, lat2, L, np.zeros((L, L)))
    if not per_edge:  # every token reads the shared edge row
        for j in range(K):
            work[5][0, j] = shared[4][0, j]
    em, pacc, eacc = np.empty(K), np.zeros(P), np.zeros(K)
    Gd = np.zeros(Wd.shape)
    G[:] = 0.0
    logz_sum, tok_err, seq_err = 0.0, 0, 0
    for s in range(s0, s1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        logz_sum += sequence_logz(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared,
                                  per_edge, Wd, work)
        marg = work[10]
        backward_expectations2(G, space, lat2, tok_ptr, tok_obs, t0, T, L, per_edge, work[4],
                               work[5], work[6], work[7], work[8], work[9], marg, em, pacc,
                               eacc, Gd)
        wrong = posterior_errors(marg, labels, t0, T)
        tok_err += wrong
        seq_err += 1 if wrong else 0
    flush_blocks(G, space, lat2, L, pacc, eacc, shared[4][0], per_edge, Gd)
    out[0] = logz_sum
    out[1] = tok_err
    out[2] = seq_err
