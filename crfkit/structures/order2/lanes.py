"""The second-order training loss with several sequences in SIMD lanes.

Per token, the pair lattice of :mod:`crfkit.structures.order2.pair_lattice` is a sparse
product over a few hundred pair states and their trigram edges, in runs of
about six: too short to vectorise, so one sequence at a time runs scalar,
while first order's dense L x L products vectorise (that made an order-2
iteration about 4x a first-order one on CoNLL-2000). Here ``LANES``
sequences of similar length go through the lattice together: every state
holds a vector of ``LANES`` values (``alpha[t, p, :]``), so each trigram edge
is one loop of ``LANES`` independent multiply-adds. The kernels read that
length from the arrays' shape, not from the constant: a loop of constant
length is unrolled into scalar code before LLVM's loop vectoriser sees it
(and Numba leaves the SLP vectoriser off), while a runtime length gets
vector instructions behind one overlap check per loop, which 32 lanes
amortise (about a third less time per sequence than 8 unrolled lanes).

Only the shared-edge case (no observation trigram, ``per_edge`` false: the
``t`` patterns have no observation) runs here. Without observation bigrams
either, a pair state's node factor exp(psi[t, b] + transition[a, b]) splits
into the unigram factor of its second label and a transition factor that
is the same at every token: the transition goes into the edges' factors
(and into the first token's pairs), so a lane loads L unigram factors per
token instead of P node factors, and these are products of exponentiated
weights as in first order (:func:`crfkit.kernels.lattice.unigram_factors`).
The backward pass also sums the token marginals, for all lanes at once. A
lane's numbers are those of :func:`crfkit.structures.order2.pair_lattice.loss_block2` up to
rounding (the order of the sums, factors multiplied instead of scores added
then exponentiated), so training moves by float rounding only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import posterior_errors
from crfkit.kernels.grouped import shortest_first
from crfkit.kernels.lattice import exp_shifted, longest_sequence, unigram_factors
from crfkit.kernels.runs import run_factors, run_marginal_expectations, token_dense_first
from crfkit.space import DataArrays
from crfkit.structures.order2 import pair_lattice as order2

LANES = 32  # a lane vector's loops have this runtime length: vectorised, see the module docstring


def edge_lists(lat2: tuple) -> tuple:
    """The real trigram edges of ``Order2Space.lattice`` (slots whose trigram has a state)
    as flat lists: (src, dst, slot) by source, then by destination (int64 arrays), and
    where each source's edges begin in the first (for the backward pass: a source's
    edges come in the same order of destinations in both)."""
    e_ptr, e_src0, e_tri = lat2.e_ptr, lat2.e_src0, lat2.e_tri
    sizes = np.diff(e_ptr)
    dst = np.repeat(np.arange(len(sizes)), sizes)
    src = np.asarray(e_src0, dtype=np.int64)[dst] + (np.arange(len(e_tri)) - e_ptr[dst])
    real = np.flatnonzero(e_tri >= 0)
    by_src = real[np.lexsort((dst[real], src[real]))]
    starts = np.searchsorted(src[by_src], np.arange(len(sizes) + 1)).astype(np.int64)
    return (src[by_src], dst[by_src], by_src, src[real], dst[real], real, starts)


def lane_order_copy(data: DataArrays, block_ptr: np.ndarray, n_dense: int) -> DataArrays:
    """The corpus with each block's sequences shortest first (stable), the order in which
    :func:`loss_block_lanes` takes them, and each token's observations below ``n_dense``
    (its dense rows, :func:`crfkit.kernels.runs.dense_first`) first; 0: in their order.

    The lanes then read the corpus front to back. Read in the corpus's order, each group
    of lanes started its sequences at scattered places, and loading their factors took a
    fifth longer. The kernel's own ordering finds this copy sorted and keeps it as it is,
    so the lanes are the same."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    order = np.concatenate([shortest_first(seq_ptr, s0, s1) for s0, s1
                            in zip(block_ptr[:-1], block_ptr[1:], strict=True)])
    copy = DataArrays(np.empty_like(seq_ptr), np.empty_like(tok_ptr), np.empty_like(tok_obs),
                      np.empty_like(labels))
    copy_in_order(seq_ptr, tok_ptr, tok_obs, labels, order, n_dense, *copy)
    return copy


@njit(**JIT)
def copy_in_order(seq_ptr, tok_ptr, tok_obs, labels, order, K, out_seq, out_tok, out_obs,
                  out_labels):
    """Fill :func:`lane_order_copy`'s arrays: sequences ``order``, each token's
    observations below K first."""
    t_new = 0
    j_new = 0
    out_seq[0] = 0
    out_tok[0] = 0
    for i in range(order.size):
        s = order[i]
        for t in range(seq_ptr[s], seq_ptr[s + 1]):
            if labels.size > 0:
                out_labels[t_new] = labels[t]
            j_new = token_dense_first(tok_obs, tok_ptr[t], tok_ptr[t + 1], K, out_obs, j_new)
            t_new += 1
            out_tok[t_new] = j_new
        out_seq[i + 1] = t_new


@njit(**JIT)
def lane_edges(W, space, lat2, L):
    """The shared rows of :func:`crfkit.structures.order2.pair_lattice.shared_rows` and the
    lanes' factors: (shared, E, first, shift, factored). Without observation bigrams
    (``factored``) a node's factor is its unigram exponential alone: the transition of
    the destination pair goes into each edge's E and, at t = 1, into ``first``; with
    them, nodes are the per-pair rows of ``exp_lattice`` and E, first are the plain
    trigram and unit factors. ``shift`` is what each token t >= 2 adds to log Z."""
    shared = order2.shared_rows(W, space, lat2, L, np.zeros((L, L)))
    transP, triE, expT, expE, e_shift = shared[0], shared[1], shared[2], shared[4], shared[5]
    P, K = transP.shape[0], triE.shape[0]
    if order2.has_bigrams(space[2]):
        return shared, expE[0], np.ones(P), e_shift, False
    e_ptr = lat2.e_ptr
    score = np.empty(K)
    for p in range(P):
        for j in range(e_ptr[p], e_ptr[p + 1]):
            score[j] = triE[j] + transP[p]
    E = np.empty(K)
    return shared, E, expT, exp_shifted(score, E), True


@njit(**JIT)
def forward_lanes(xu, xN, E, first, factored, lat2, lens, T, L, alpha, scale, inv, logz):
    """Scaled forward pass of the lanes (``alpha[t, state, lane]``) over T tokens; logz[lane]
    = NaN if the lane underflows within its own ``lens[lane]`` tokens. A state's node
    factor is ``xu[t, b]`` of its second label b when ``factored``, else ``xN[t, p]``
    (:func:`lane_edges`). Lanes past their length carry exp scores of 1: finite, never read."""
    pair_a, pair_b, e_ptr, e_src0 = lat2.pair_a, lat2.pair_b, lat2.e_ptr, lat2.e_src0
    P, S = pair_a.shape[0], alpha.shape[2]
    for t in range(T):
        cur = alpha[t]
        n = L if t == 0 else P
        if t == 0:
            for y in range(L):
                for s in range(S):
                    cur[y, s] = xu[0, y, s]
        for p in range(P if t > 0 else 0):
            node, row = xu[t, pair_b[p]] if factored else xN[t, p], cur[p]
            if t == 1:
                f, src = first[p], alpha[0, pair_a[p]]
                for s in range(S):
                    row[s] = src[s] * f * node[s]
                continue
            for s in range(S):
                row[s] = 0.0
            j0, q0 = e_ptr[p], e_src0[p]
            for i in range(e_ptr[p + 1] - j0):
                e, src = E[j0 + i], alpha[t - 1, q0 + i]
                for s in range(S):
                    row[s] += src[s] * e
            for s in range(S):
                row[s] *= node[s]
        normalise_lanes(cur, n, lens, t, scale[t], inv, logz)


@njit(**JIT)
def normalise_lanes(cur, n, lens, t, scale_t, inv, logz):
    """Divide the first ``n`` states of each lane by their sum, kept in ``scale_t``."""
    S = cur.shape[1]
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
        scale_t[s] = z
        inv[s] = 1.0 / z
    for p in range(n):
        for s in range(S):
            cur[p, s] *= inv[s]


@njit(**JIT)
def backward_lanes(xu, xN, E, first, factored, lat2, lists, lens, T, L, alpha, beta, scale,
                   tmp, inv, marg, pacc, eacc):
    """The backward pass matching :func:`forward_lanes`, fused with the shared expectations
    (``beta`` holds two tokens' rows, t's and t-1's: the pass reads no others, and a
    group's whole table, 2.9 MB for the longest, only added to the cache's traffic):
    leaves each live lane's token marginals in ``marg`` (zeros past its length) and, for
    observation bigrams (not ``factored``), its state marginals in ``alpha``; adds the
    pair marginals to ``pacc`` and alpha[t-1, src] * (backward term) to ``eacc`` (still
    to be multiplied by E, as :func:`crfkit.structures.order2.pair_lattice.flush_blocks`
    does)."""
    b_dst, b_slot, b_ptr = lists[1], lists[2], lists[6]
    pair_a = lat2.pair_a
    P, S = pair_a.shape[0], alpha.shape[2]
    for p in range(P if T > 1 else 0):
        for s in range(S):
            beta[(T - 1) % 2, p, s] = 1.0 if lens[s] == T else 0.0  # lanes past their end: 0
    for t in range(T - 1, 0, -1):
        for s in range(S):
            if lens[s] - 1 == t:
                for p in range(P):
                    beta[t % 2, p, s] = 1.0
            inv[s] = 1.0 / scale[t, s]
        lane_states(xu, xN, first, factored, lat2, lens, t, alpha[t], beta[t % 2], inv, tmp,
                    marg[t], pacc)
        prev_a, prev_b = alpha[t - 1], beta[(t - 1) % 2]
        if t == 1:
            for q in range(L):
                for s in range(S):
                    prev_b[q, s] = 0.0
            for p in range(P):
                for s in range(S):
                    prev_b[pair_a[p], s] += tmp[p, s]
            continue
        for q in range(P):  # a source's edges in order of destination, its row zeroed first
            for s in range(S):
                prev_b[q, s] = 0.0
            for k in range(b_ptr[q], b_ptr[q + 1]):
                e, p = E[b_slot[k]], b_dst[k]
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
            m = alpha[0, y, s] * beta[0, y, s] if lens[s] > 0 else 0.0
            alpha[0, y, s] = m
            marg[0, y, s] = m


@njit(**JIT)
def lane_states(xu, xN, first, factored, lat2, lens, t, cur_a, cur_b, inv, tmp, marg_t, pacc):
    """Token t of the backward pass: the state marginals (into ``marg_t``, ``pacc`` and, not
    ``factored``, ``cur_a``) and tmp[p] = node factor x beta[t, p] / scale, zero in lanes
    past their end."""
    pair_b = lat2.pair_b
    P, S = pair_b.shape[0], cur_a.shape[1]
    for y in range(marg_t.shape[0]):
        for s in range(S):
            marg_t[y, s] = 0.0
    for p in range(P):
        node = xu[t, pair_b[p]] if factored else xN[t, p]
        f = first[p] if t == 1 else 1.0
        ap, bp, tp, mt = cur_a[p], cur_b[p], tmp[p], marg_t[pair_b[p]]
        acc = 0.0
        for s in range(S):  # beta is 0 in lanes past their end (alpha is finite there)
            m = ap[s] * bp[s]
            tp[s] = node[s] * bp[s] * inv[s] * f
            if not factored:  # the state marginals are read for observation bigrams only
                ap[s] = m
            mt[s] += m
            acc += m
        pacc[p] += acc


@njit(**JIT)
def load_lane(W, space, lat2, tok_ptr, tok_obs, t0, T, L, edges, Wd, factors, work, expu, s,
              Tg, xN, runs, c):
    """Scores and exponentials of one sequence, lane ``s``: its unigram factors into
    ``expu`` (the lane's rows of :func:`lane_buffers`' ``rows``, which :func:`to_lanes` then
    moves into the lane vectors), its node factors into ``xN`` (exp scores of 1 past its
    length, up to the group's ``Tg`` tokens); returns the sum of the shifts. ``edges`` as
    :func:`lane_edges`; ``factors`` the exponentiated unigram weights of
    :meth:`crfkit.kernels.objective.Objective.factors` (empty: exponentiate the scores);
    ``runs`` those of :mod:`crfkit.kernels.runs` (empty: none), the sequence's from ``c``."""
    psi, node, edge = work[:3]
    shared, factored = edges[0], edges[4]
    shift = 0.0
    if T > 0 and factored and factors[0].shape[0] > 0 and runs[3].size > 0:
        run_factors(factors[0], tok_ptr, tok_obs, runs[1], runs[2], runs[3], runs[4], c, t0, T,
                    expu, factors[1])
    elif T > 0 and factored and factors[0].shape[0] > 0:
        unigram_factors(factors[0], tok_ptr, tok_obs, space[0], space[1], t0, T, expu,
                        factors[1])
    elif T > 0:
        order2.unigram_rows(W, space, tok_ptr, tok_obs, t0, T, psi, Wd)
    if T > 0 and factored:
        for t in range(T if factors[0].shape[0] == 0 else 0):
            shift += exp_shifted(psi[t], expu[t])
        shift += (shared[3] if T > 1 else 0.0) + max(T - 2, 0) * edges[3]
    elif T > 0:
        per_edge = np.bool_(False)  # a bool, not the literal: loss_block2's compiled versions
        order2.lattice_scores(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge,
                              psi, node, edge, False)
        shift = order2.exp_lattice(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge,
                                   psi, node, edge, expu, work[4], work[5])
    for t in range(1, Tg if not factored else 0):
        for p in range(xN.shape[1]):
            xN[t, p, s] = work[4][t, p] if t < T else 1.0
    return shift


@njit(**JIT)
def to_lanes(rows, lens, n, L, xu):
    """xu[t, :, s] = rows[s, t] for the group's first ``n`` tokens (1 past a lane's length).

    The lanes' rows are written whole by the kernels that fill them, then moved here
    token by token: the 32 lanes' rows of one token stay in L1 while each xu row is
    written in order. Written lane by lane instead, every value went to another cache
    line of xu, and moving the factors took longer than computing them."""
    for t in range(n):
        for y in range(L):
            for s in range(rows.shape[0]):
                xu[t, y, s] = rows[s, t, y] if t < lens[s] else 1.0


@njit(**JIT)
def from_lanes(lmarg, n, L, rows):
    """rows[s, t] = lmarg[t, :, s] for the group's first ``n`` tokens: each lane's token
    marginals as rows (:func:`to_lanes` the other way)."""
    for t in range(n):
        for y in range(L):
            for s in range(rows.shape[0]):
                rows[s, t, y] = lmarg[t, y, s]


@njit(**JIT)
def lane_gradient(G, space, lat2, tok_ptr, tok_obs, t0, T, L, alpha, s, marg, Gd, runs, c):
    """The per-sequence expectations of lane ``s`` (state marginals in ``alpha``, token
    marginals in ``marg``, from :func:`from_lanes`): observation bigrams into G, unigrams
    into G / ``Gd`` (read from ``runs`` at ``c`` if there are any)."""
    b_ptr, b_prev, b_cur, n_u = space[2], space[3], space[4], space[5]
    pair_of = lat2.pair_of
    for t in range(1, T if order2.has_bigrams(b_ptr) else 0):
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[i]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                p = pair_of[b_prev[k] * L + b_cur[k]]
                if p >= 0:
                    G[n_u + k] += alpha[t, p, s]
    if runs[3].size > 0:
        run_marginal_expectations(G, tok_ptr, tok_obs, runs[1], runs[2], runs[3], runs[4], c,
                                  t0, T, L, marg, Gd)
    else:
        order2.unigram_expectations2(G, space, tok_ptr, tok_obs, t0, T, L, marg, Gd)


@njit(inline="always", **JIT)
def run_start(runs, seq):
    """Where sequence ``seq``'s pairs begin in ``runs`` (0 without runs, or for an empty
    lane, ``seq`` -1)."""
    return runs[0][seq] if seq >= 0 and runs[3].size > 0 else 0


@njit(**JIT)
def lane_buffers(Tmax, L, P, K, factored):
    """xu, xN (a dummy when ``factored``), alpha, beta (two tokens' rows), scale, inv, tmp,
    logz, lane marg, pacc, eacc of a block, and each lane's rows of L values a token (its
    unigram factors, then its token marginals: :func:`to_lanes`, :func:`from_lanes`)."""
    S, R = LANES, max(L, P)
    TN = 1 if factored else Tmax
    return (np.empty((Tmax, L, S)), np.empty((TN, P, S)), np.empty((Tmax, R, S)),
            np.empty((2, R, S)), np.empty((Tmax, S)), np.empty(S), np.empty((P, S)),
            np.empty(S), np.empty((Tmax, L, S)), np.zeros(P), np.zeros(K),
            np.empty((S, Tmax, L)))


@njit(**JIT)
def loss_block_lanes(W, space, lat2, lists, data, L, s0, s1, Wd, G, out, factors, dense_G,
                     runs):
    """:func:`crfkit.structures.order2.pair_lattice.loss_block2` without observation
    trigrams, ``LANES`` sequences at a time (sorted by length, so a group's lanes end
    close together). ``lists`` as :func:`edge_lists`; ``factors`` as :func:`load_lane`
    (empty tables: exponentiate the scores); ``dense_G`` the dense rows' scratch (zeroed
    here); ``runs`` the sparse features in reading order (:mod:`crfkit.kernels.runs`, over
    occurrences with each token's dense rows first), or :data:`crfkit.kernels.runs.NO_RUNS`."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    P, K, S = lat2.pair_a.shape[0], lat2.e_tri.shape[0], LANES
    order = shortest_first(seq_ptr, s0, s1)
    Tmax = longest_sequence(seq_ptr, s0, s1)
    # per_edge false (shared edges) as a bool, not the literal False, which would make
    # Numba compile work2 and flush_blocks again beside loss_block2's versions
    per_edge = np.bool_(False)
    work = order2.work2(Tmax, L, P, K, per_edge)
    edges = lane_edges(W, space, lat2, L)
    E, first, factored = edges[1], edges[2], edges[4]
    xu, xN, alpha, beta, scale, inv, tmp, logz, lmarg, pacc, eacc, rows = lane_buffers(
        Tmax, L, P, K, factored)
    lens, seqs = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    Gd = dense_G
    Gd[:] = 0.0
    G[:] = 0.0
    logz_sum, tok_err, seq_err = 0.0, 0, 0
    # a block's last group is not full: the shortest sequences take its place, so that its
    # empty lanes are as short as they (the longest group's would be about 6% more lane work)
    for g in range(-((S - (s1 - s0) % S) % S), s1 - s0, S):
        for s in range(S):
            seqs[s] = order[g + s] if 0 <= g + s < s1 - s0 else -1
            lens[s] = seq_ptr[seqs[s] + 1] - seq_ptr[seqs[s]] if seqs[s] >= 0 else 0
        # an int64 from the start: a Tg first typed as the literal 1 has Numba compile
        # the lane kernels a second time
        Tg = max(np.int64(1), lens.max())
        for s in range(S):
            t0 = seq_ptr[seqs[s]] if seqs[s] >= 0 else 0
            logz[s] = 0.0
            c = run_start(runs, seqs[s])
            logz_sum += load_lane(W, space, lat2, tok_ptr, tok_obs, t0, lens[s], L, edges,
                                  Wd, factors, work, rows[s], s, Tg, xN, runs, c)
        to_lanes(rows, lens, Tg if factored else 1, L, xu)
        forward_lanes(xu, xN, E, first, factored, lat2, lens, Tg, L, alpha, scale, inv, logz)
        for s in range(S):
            for t in range(lens[s]):
                logz[s] += np.log(scale[t, s])
            logz_sum += logz[s]
        backward_lanes(xu, xN, E, first, factored, lat2, lists, lens, Tg, L, alpha, beta, scale,
                       tmp, inv, lmarg, pacc, eacc)
        from_lanes(lmarg, Tg, L, rows)
        for s in range(S):
            T = lens[s]
            if T == 0:
                continue
            t0 = seq_ptr[seqs[s]]
            lane_gradient(G, space, lat2, tok_ptr, tok_obs, t0, T, L, alpha, s, rows[s], Gd, runs,
                          run_start(runs, seqs[s]))
            wrong = posterior_errors(rows[s], labels, t0, T)
            tok_err += wrong
            seq_err += 1 if wrong else 0
    order2.flush_blocks(G, space, lat2, L, pacc, eacc, E, per_edge, Gd)
    out[0] = logz_sum
    out[1] = tok_err
    out[2] = seq_err
