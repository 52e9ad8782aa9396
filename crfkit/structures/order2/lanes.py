"""The second-order training loss with several sequences in SIMD lanes.

Per token, the pair lattice of :mod:`crfkit.structures.order2.pair_lattice` is a sparse
product over a few hundred pair states and their trigram edges, in runs of
about six: too short to vectorise, so one sequence at a time runs scalar,
while first order's dense L x L products vectorise (that made an order-2
iteration about 4x a first-order one on CoNLL-2000). Here ``LANES``
sequences of similar length go through the lattice together: every state
holds a vector of ``LANES`` values (``alpha[t, p, :]``), so each trigram edge
is one vector multiply-add, and the edge lists need no runs at all.

Only the shared-edge case (no observation trigram, ``per_edge`` false: the
``t`` patterns have no observation) runs here; scores, exponentials and the
per-sequence expectations are the order-2 kernels' own, per sequence. A
lane's numbers are those of :func:`crfkit.structures.order2.pair_lattice.loss_block2` up to
the order of the sums (edges added by source instead of by destination,
lanes summed before sequences), so training moves by float reassociation only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import posterior_errors
from crfkit.structures.order2 import pair_lattice as order2

LANES = 8  # two AVX2 vectors of float64


def edge_lists(lat2: tuple) -> tuple:
    """The real trigram edges of ``Order2Space.lattice`` (slots whose trigram has a state)
    as flat lists: (src, dst, slot) by source for the forward pass, by destination for
    the backward pass (int64 arrays)."""
    e_ptr, e_src0, e_tri = lat2.e_ptr, lat2.e_src0, lat2.e_tri
    sizes = np.diff(e_ptr)
    dst = np.repeat(np.arange(len(sizes)), sizes)
    src = np.asarray(e_src0, dtype=np.int64)[dst] + (np.arange(len(e_tri)) - e_ptr[dst])
    real = np.flatnonzero(e_tri >= 0)
    by_src = real[np.lexsort((dst[real], src[real]))]
    return (src[by_src], dst[by_src], by_src, src[real], dst[real], real)


@njit(**JIT)
def forward_lanes(xu0, xN, E, lists, pair_a, lens, T, L, alpha, scale, inv, tmp, logz):
    """Scaled forward pass of the lanes (``alpha[t, state, lane]``) over T tokens; logz[lane]
    = the lane's sum of log scale over its own ``lens[lane]`` tokens (NaN on underflow).
    Lanes past their length carry exp scores of 1: finite, never read."""
    f_src, f_dst, f_slot = lists[0], lists[1], lists[2]
    P, S = tmp.shape[0], tmp.shape[1]
    for t in range(T):
        prev, cur = alpha[t - 1], alpha[t]
        n = L if t == 0 else P
        if t == 0:
            for y in range(L):
                for s in range(S):
                    cur[y, s] = xu0[y, s]
        elif t == 1:
            for p in range(P):
                for s in range(S):
                    cur[p, s] = prev[pair_a[p], s] * xN[1, p, s]
        else:
            for p in range(P):
                for s in range(S):
                    tmp[p, s] = 0.0
            for k in range(f_src.shape[0]):
                e, q, p = E[f_slot[k]], f_src[k], f_dst[k]
                for s in range(S):
                    tmp[p, s] += prev[q, s] * e
            for p in range(P):
                for s in range(S):
                    cur[p, s] = tmp[p, s] * xN[t, p, s]
        for s in range(S):
            inv[s] = 0.0
        for p in range(n):
            for s in range(S):
                inv[s] += cur[p, s]
        for s in range(S):
            z = inv[s]
            if not (z > 0.0 and z < np.inf):
                if t < lens[s]:
                    logz[s] = np.nan
                z = 1.0
            scale[t, s] = z
            inv[s] = 1.0 / z
        for p in range(n):
            for s in range(S):
                cur[p, s] *= inv[s]


@njit(**JIT)
def backward_lanes(xN, E, lists, pair_a, pair_b, lens, T, L, alpha, beta, scale, tmp, pacc,
                   eacc):
    """The backward pass matching :func:`forward_lanes`, fused with the shared expectations:
    leaves each live lane's state marginals in ``alpha`` (zeros past its length), adds the
    pair marginals to ``pacc`` and alpha[t-1, src] * (backward term) to ``eacc`` (still to
    be multiplied by E, as :func:`crfkit.structures.order2.pair_lattice.flush_blocks` does)."""
    b_src, b_dst, b_slot = lists[3], lists[4], lists[5]
    P, S = tmp.shape[0], tmp.shape[1]
    for t in range(T - 1, 0, -1):
        cur_a, cur_b, N, sc = alpha[t], beta[t], xN[t], scale[t]
        for s in range(S):
            if lens[s] - 1 == t:
                for p in range(P):
                    cur_b[p, s] = 1.0
        for p in range(P):
            acc = 0.0
            for s in range(S):
                live = t < lens[s]
                m = cur_a[p, s] * cur_b[p, s] if live else 0.0
                tmp[p, s] = N[p, s] * cur_b[p, s] / sc[s] if live else 0.0
                cur_a[p, s] = m
                acc += m
            pacc[p] += acc
        prev_a, prev_b = alpha[t - 1], beta[t - 1]
        n = L if t == 1 else P
        for q in range(n):
            for s in range(S):
                prev_b[q, s] = 0.0
        if t == 1:
            for p in range(P):
                for s in range(S):
                    prev_b[pair_a[p], s] += tmp[p, s]
            continue
        for k in range(b_src.shape[0]):
            e, q, p = E[b_slot[k]], b_src[k], b_dst[k]
            acc = 0.0
            for s in range(S):
                w = tmp[p, s]
                prev_b[q, s] += e * w
                acc += prev_a[q, s] * w
            eacc[b_slot[k]] += acc
    for s in range(S):
        for y in range(L):
            if lens[s] == 1:
                beta[0, y, s] = 1.0
            alpha[0, y, s] = alpha[0, y, s] * beta[0, y, s] if lens[s] > 0 else 0.0


@njit(**JIT)
def load_lane(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, Wd, work, s, Tg, xu0, xN):
    """Scores and exponentials of one sequence into lane ``s`` (exp scores of 1 past its
    length, up to the group's ``Tg`` tokens); returns the sum of the shifts."""
    psi, node, edge, expu, expN, expE = work[:6]
    P = xN.shape[1]
    shift = 0.0
    if T > 0:
        order2.unigram_rows(W, space, tok_ptr, tok_obs, t0, T, psi, Wd)
        order2.lattice_scores(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, False, psi,
                              node, edge, False)
        shift = order2.exp_lattice(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, False,
                                   psi, node, edge, expu, expN, expE)
    for y in range(L):
        xu0[y, s] = expu[0, y] if T > 0 else 1.0
    for t in range(1, Tg):
        for p in range(P):
            xN[t, p, s] = expN[t, p] if t < T else 1.0
    return shift


@njit(**JIT)
def lane_gradient(G, space, lat2, tok_ptr, tok_obs, t0, T, L, alpha, s, marg, Gd):
    """The per-sequence expectations of lane ``s`` (state marginals in ``alpha``): token
    marginals into ``marg``, observation bigrams into G, unigrams into G / ``Gd``."""
    b_ptr, b_prev, b_cur, n_u = space[2], space[3], space[4], space[5]
    pair_b, pair_of = lat2.pair_b, lat2.pair_of
    for y in range(L):
        marg[0, y] = alpha[0, y, s]
    bigrams = order2.has_bigrams(b_ptr)
    for t in range(1, T):
        for y in range(L):
            marg[t, y] = 0.0
        for p in range(pair_b.shape[0]):
            marg[t, pair_b[p]] += alpha[t, p, s]
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1] if bigrams else 0):
            o = tok_obs[i]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                p = pair_of[b_prev[k] * L + b_cur[k]]
                if p >= 0:
                    G[n_u + k] += alpha[t, p, s]
    order2.unigram_expectations2(G, space, tok_ptr, tok_obs, t0, T, L, marg, Gd)


@njit(**JIT)
def loss_block_lanes(W, space, lat2, lists, data, L, s0, s1, Wd, G, out):
    """:func:`crfkit.structures.order2.pair_lattice.loss_block2` without observation trigrams,
    ``LANES``
    sequences at a time (sorted by length, so a group's lanes end close together)."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    pair_a, pair_b = lat2.pair_a, lat2.pair_b
    P, K, S = pair_a.shape[0], lat2.e_tri.shape[0], LANES
    lengths = seq_ptr[s0 + 1:s1 + 1] - seq_ptr[s0:s1]
    order = s0 + np.argsort(lengths, kind="mergesort")
    Tmax = max(1, lengths.max()) if s1 > s0 else 1
    work = order2.work2(Tmax, L, P, K, False)
    shared = order2.shared_rows(W, space, lat2, L, np.zeros((L, L)))
    E = shared[4][0]
    R = max(L, P)
    xu0, xN = np.empty((L, S)), np.empty((Tmax, P, S))
    alpha, beta = np.empty((Tmax, R, S)), np.empty((Tmax, R, S))
    scale, inv, tmp, logz = np.empty((Tmax, S)), np.empty(S), np.empty((P, S)), np.empty(S)
    lens, seqs = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    pacc, eacc, Gd = np.zeros(P), np.zeros(K), np.zeros(Wd.shape)
    marg = work[10]
    G[:] = 0.0
    logz_sum, tok_err, seq_err = 0.0, 0, 0
    for g in range(0, s1 - s0, S):
        Tg = 1
        for s in range(S):
            seqs[s] = order[g + s] if g + s < s1 - s0 else -1
            lens[s] = seq_ptr[seqs[s] + 1] - seq_ptr[seqs[s]] if seqs[s] >= 0 else 0
            Tg = max(Tg, lens[s])
        for s in range(S):
            t0 = seq_ptr[seqs[s]] if seqs[s] >= 0 else 0
            logz[s] = 0.0
            logz_sum += load_lane(W, space, lat2, tok_ptr, tok_obs, t0, lens[s], L, shared,
                                  Wd, work, s, Tg, xu0, xN)
        forward_lanes(xu0, xN, E, lists, pair_a, lens, Tg, L, alpha, scale, inv, tmp, logz)
        for s in range(S):
            for t in range(lens[s]):
                logz[s] += np.log(scale[t, s])
            logz_sum += logz[s]
        backward_lanes(xN, E, lists, pair_a, pair_b, lens, Tg, L, alpha, beta, scale, tmp,
                       pacc, eacc)
        for s in range(S):
            T = lens[s]
            if T == 0:
                continue
            t0 = seq_ptr[seqs[s]]
            lane_gradient(G, space, lat2, tok_ptr, tok_obs, t0, T, L, alpha, s, marg, Gd)
            wrong = posterior_errors(marg, labels, t0, T)
            tok_err += wrong
            seq_err += 1 if wrong else 0
    order2.flush_blocks(G, space, lat2, L, pacc, eacc, E, False, Gd)
    out[0] = logz_sum
    out[1] = tok_err
    out[2] = seq_err
