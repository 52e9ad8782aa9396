"""Decoding a second-order CRF: Viterbi, n-best, marginals, posterior, constraints.

The lattice is that of :mod:`crfkit.structures.order2.pair_lattice` (labels at t = 0, label
pairs after, edges = allowed trigrams), scored in log space for the paths:

    delta[0, y] = psi[0, y]
    delta[1, p] = delta[0, a(p)] + node[1, p]
    delta[t, p] = node[t, p] + max_{j into p} (delta[t-1, src(j)] + edge[t, j])

n-best is list Viterbi over the same states (``delta[t, state, k]`` the
k-th best prefix ending in that state): a path among the N best has each
prefix among the N best ending in the same state, since the score of what
follows depends only on the state, so keeping N per state is exact.

Constraints are masks, as in first order: a token mask sets ``psi[t, y] =
-inf`` (so every pair ending in y), a transition mask adds ``-inf`` to the
pairs it forbids. Marginals and log Z are then those of the restricted
model. Posterior decoding takes the allowed path of largest summed token
marginals (Viterbi over the marginals, along the trigrams that have states):
with trigram states a per-token argmax could use a trigram the model gives
probability zero.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit import config
from crfkit.kernels.bestpath import Decoded
from crfkit.kernels.blocks import partition_blocks, run_blocks
from crfkit.kernels.decoder import check_decode_request, decode_masks, insert_ranked
from crfkit.kernels.flavour import read_only, read_only_space
from crfkit.kernels.lattice import longest_sequence
from crfkit.space import Dataset
from crfkit.structures.order2 import pair_lattice as order2


@njit(**config.JIT)
def viterbi2(first, node, edge, per_edge, T, L, lat2, delta, back, path):
    """Best label path (first: scores of t = 0 (L,), node (T, P), edge (TE, K)); returns
    its score (-inf if none is allowed). Ties go to the first predecessor."""
    pair_a, pair_b, e_ptr, e_src0 = lat2.pair_a, lat2.pair_b, lat2.e_ptr, lat2.e_src0
    P = pair_a.shape[0]
    for y in range(L):
        delta[0, y] = first[y]
    for t in range(1, T):
        E = edge[t] if per_edge else edge[0]
        for p in range(P):
            if t == 1:
                best, arg = delta[0, pair_a[p]], pair_a[p]
            else:
                best, arg = -np.inf, -1
                j0, q0 = e_ptr[p], e_src0[p]
                for i in range(e_ptr[p + 1] - j0):
                    v = delta[t - 1, q0 + i] + E[j0 + i]
                    if v > best:
                        best, arg = v, q0 + i
            delta[t, p] = best + node[t, p]
            back[t, p] = arg
    n_last = L if T == 1 else P
    best, arg = -np.inf, 0
    for q in range(n_last):
        if delta[T - 1, q] > best:
            best, arg = delta[T - 1, q], q
    if not best > -np.inf:
        return best
    state = arg
    for t in range(T - 1, 0, -1):
        path[t] = pair_b[state]
        state = back[t, state]
    path[0] = state
    return best


@njit(**config.JIT)
def nbest2(first, node, edge, per_edge, T, L, N, lat2, delta, back, count, paths, scores):
    """The N best label paths, best first (module docstring); returns how many exist.

    ``back[t, q, k] = source state * N + rank``. Paths of score -inf are never listed.
    """
    pair_a, pair_b, e_ptr, e_src0 = lat2.pair_a, lat2.pair_b, lat2.e_ptr, lat2.e_src0
    P = pair_a.shape[0]
    for y in range(L):
        delta[0, y, 0] = first[y]
        count[0, y] = 1 if first[y] > -np.inf else 0
    for t in range(1, T):
        E = edge[t] if per_edge else edge[0]
        for p in range(P):
            n = 0
            if node[t, p] > -np.inf:
                lo, hi = (0, 1) if t == 1 else (e_ptr[p], e_ptr[p + 1])
                for j in range(lo, hi):
                    src = pair_a[p] if t == 1 else e_src0[p] + (j - lo)
                    m = 0.0 if t == 1 else E[j]
                    for k in range(count[t - 1, src]):
                        v = delta[t - 1, src, k] + m
                        if not v > -np.inf or (n == N and not v > delta[t, p, N - 1]):
                            break
                        n = insert_ranked(delta[t, p], back[t, p], n, N, v, src * N + k)
                for k in range(n):
                    delta[t, p, k] += node[t, p]
            count[t, p] = n
    last = T - 1
    n_last = L if T == 1 else P
    found = 0
    for q in range(n_last):
        for k in range(count[last, q]):
            v = delta[last, q, k]
            if found == N and not v > scores[N - 1]:
                break
            i = found if found < N else N - 1
            while i > 0 and v > scores[i - 1]:
                scores[i] = scores[i - 1]
                paths[i, 0] = paths[i - 1, 0]
                i -= 1
            scores[i] = v
            paths[i, 0] = q * N + k
            if found < N:
                found += 1
    for r in range(found):
        code = paths[r, 0]
        q, k = code // N, code % N
        for t in range(last, -1, -1):
            paths[r, t] = pair_b[q] if t > 0 else q
            if t > 0:
                code = back[t, q, k]
                q, k = code // N, code % N
    return found


@njit(**config.JIT)
def path_score2(first, node, edge, per_edge, T, L, lat2, path):
    """Score of one label path; -inf if it uses a pair or trigram without a state."""
    pair_of, e_ptr, e_src0 = lat2.pair_of, lat2.e_ptr, lat2.e_src0
    s = first[path[0]]
    prev = -1
    for t in range(1, T):
        p = pair_of[path[t - 1] * L + path[t]]
        if p < 0:
            return -np.inf
        if t >= 2:  # prev ends in the label p starts with: it is in p's run of sources
            E = edge[t] if per_edge else edge[0]
            i = prev - e_src0[p]
            if i < 0 or i >= e_ptr[p + 1] - e_ptr[p]:
                return -np.inf
            s += E[e_ptr[p] + i]
        s += node[t, p]
        prev = p
    return s


@njit(**config.JIT)
def state_edges(lat2):
    """The edge row of posterior paths: 0 on the trigrams that have states, -inf on the
    other slots (a path must not cross them), so edges add no gain."""
    e_tri = lat2.e_tri
    row = np.zeros((1, e_tri.shape[0]))
    for j in range(e_tri.shape[0]):
        if e_tri[j] < 0:
            row[0, j] = -np.inf
    return row


@njit(**config.JIT)
def posterior2(marg, first, node, T, L, lat2, gain, zero_edge, delta, back, path):
    """The allowed path of largest summed token marginals (module docstring); returns its
    gain, -inf if no path is allowed."""
    pair_b = lat2.pair_b
    for y in range(L):
        gain[0, y] = marg[0, y] if first[y] > -np.inf else -np.inf
    for t in range(1, T):
        for p in range(pair_b.shape[0]):
            gain[t, p] = marg[t, pair_b[p]] if node[t, p] > -np.inf else -np.inf
    return viterbi2(gain[0], gain, zero_edge, T < 0, T, L, lat2, delta, back, path)


@njit(**config.JIT)
def sum_product2(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge, work,
                 want_marg, want_pairs, out):
    """Forward-backward of the sequence at ``t0`` (scores in ``work``, as :func:`work2`):
    token marginals into work[10] (and out[3] with ``want_marg``), pair marginals into
    out[4] with ``want_pairs``; returns log Z."""
    alpha, beta, marg = work[6], work[7], work[10]
    P = lat2.pair_a.shape[0]
    shift = order2.exp_lattice(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared,
                               per_edge, work[0], work[1], work[2], work[3], work[4], work[5])
    log_z = shift + order2.forward_backward2(work[3], work[4], work[5], per_edge, T,
                                             L, lat2, alpha, beta, work[8],
                                             work[9])
    order2.token_marginals(alpha, beta, T, L, lat2, marg)
    for t in range(T):
        for y in range(L):
            if want_marg:
                out[3][t0 + t, y] = marg[t, y]
        if want_pairs and t > 0:
            for p in range(P):
                out[4][t0 + t, p] = alpha[t, p] * beta[t, p]
    return log_z


# Argument groups of decode_block2:
#   masks = (token_ok, use_token_ok, pen (L, L) of 0 / -inf)
#   asked = (N, want_logz, want_marg, posterior, want_pairs)
#   out   = (paths, scores, logz, marginals (n_tok | 0, L), pair states (n_tok | 0, P))
@njit(**config.JIT)
def decode_block2(W, space, lat2, data, L, s0, s1, per_edge, masks, asked, out):
    """Decode sequences s0..s1-1 of ``data`` = (seq_ptr, tok_ptr, tok_obs) into ``out``."""
    seq_ptr, tok_ptr, tok_obs = data
    token_ok, use_token_ok, pen = masks
    N, want_logz, want_marg, posterior, want_pairs = asked
    P, K = lat2.pair_a.shape[0], lat2.e_tri.shape[0]
    Tmax = longest_sequence(seq_ptr, s0, s1)
    work = order2.work2(Tmax, L, P, K, per_edge)
    psi, node, edge, expE, alpha, marg = work[0], work[1], work[2], work[5], work[6], work[10]
    shared = order2.shared_rows(W, space, lat2, L, pen)
    for j in range(K):
        edge[0, j] = shared[1][j]
        expE[0, j] = shared[4][0, j]
    S = max(L, P)
    delta, back, path = np.empty((Tmax, S)), np.empty((Tmax, S), dtype=np.int32), \
        np.empty(Tmax, dtype=np.int32)
    NB = Tmax if N > 1 else 1
    nd, nback, ncount = np.empty((NB, S, N)), np.empty((NB, S, N), dtype=np.int32), \
        np.empty((NB, S), dtype=np.int32)
    npaths, nscores = np.empty((N, Tmax), dtype=np.int32), np.empty(N)
    no_dense = np.empty((0, L))
    zero_edge = state_edges(lat2)
    for s in range(s0, s1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        order2.unigram_rows(W, space, tok_ptr, tok_obs, t0, T, psi, no_dense)
        if use_token_ok:
            for t in range(T):
                for y in range(L):
                    if not token_ok[t0 + t, y]:
                        psi[t, y] = -np.inf
        order2.lattice_scores(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared, per_edge,
                              psi, node, edge, True)
        if want_logz or want_marg or posterior or want_pairs:
            out[2][s] = sum_product2(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared,
                                     per_edge, work, want_marg, want_pairs, out)
        if posterior:
            gain = -np.inf
            if np.isfinite(out[2][s]):  # else no path is allowed (or scores underflow)
                gain = posterior2(marg, psi[0], node, T, L, lat2, alpha, zero_edge, delta,
                                  back, path)
            out[1][s, 0] = -np.inf
            if gain > -np.inf:
                out[1][s, 0] = path_score2(psi[0], node, edge, per_edge, T, L, lat2, path)
        elif N == 1:
            out[1][s, 0] = viterbi2(psi[0], node, edge, per_edge, T, L, lat2, delta, back,
                                    path)
        if posterior or N == 1:
            if out[1][s, 0] > -np.inf:
                for t in range(T):
                    out[0][t0 + t, 0] = path[t]
            continue
        found = nbest2(psi[0], node, edge, per_edge, T, L, N, lat2, nd, nback, ncount, npaths,
                       nscores)
        for r in range(found):
            out[1][s, r] = nscores[r]
            for t in range(T):
                out[0][t0 + t, r] = npaths[r, t]


class Decoded2(Decoded):
    """:class:`Decoded` plus, when asked, the pair marginals (n_tokens, L, L):
    ``pair_marginals[t, a, b] = P(y[t-1] = a, y[t] = b)`` (zero at a sequence's first token)."""

    pair_marginals: np.ndarray | None = None


def decode2(model, data: Dataset, *, nbest: int = 1, log_z: bool = False,
            marginals: bool = False, posterior: bool = False,
            token_ok: np.ndarray | None = None, trans_ok: np.ndarray | None = None,
            pair_marginals: bool = False) -> Decoded:
    """:func:`crfkit.kernels.decoder.decode` for a second-order model (same arguments and
    results); ``pair_marginals`` also returns P(y[t-1], y[t]) per token."""
    check_decode_request(nbest, posterior)
    s = model.space
    L = s.n_labels
    lat2 = s.lattice
    P = len(lat2.pair_a)
    n_tok, n_seq = data.n_tokens, data.n_seqs
    out = (np.full((n_tok, nbest), -1, dtype=np.int32), np.full((n_seq, nbest), -np.inf),
           np.full(n_seq, np.nan), np.zeros((n_tok if marginals else 0, L)),
           np.zeros((n_tok if pair_marginals else 0, P)))
    token_ok, use_token_ok, pen, _ = decode_masks(token_ok, trans_ok, n_tok, L)
    masks = (token_ok, use_token_ok, pen[0])  # the pairs' penalties (L, L)
    if n_seq:
        blocks = partition_blocks(data.lengths, config.N_BLOCKS)
        arrays = (data.seq_ptr, data.tok_ptr, data.tok_obs)
        asked = (nbest, log_z, marginals, posterior, pair_marginals)
        # read-only, whether the model was loaded or just trained: one compiled version
        weights, space = read_only(model.weights), read_only_space(s.arrays())
        lat2 = lat2._replace(**{name: read_only(value) for name, value in lat2._asdict().items()
                                if isinstance(value, np.ndarray)})

        def block(b: int) -> None:
            decode_block2(weights, space, lat2, arrays, L, blocks[b], blocks[b + 1],
                          s.n_g > 0, masks, asked, out)

        run_blocks(block, len(blocks) - 1)
    result = Decoded2(paths=out[0], scores=out[1], log_z=out[2],
                      marginals=out[3] if marginals else None)
    if pair_marginals:
        full = np.zeros((n_tok, L, L))
        full[:, lat2.pair_a, lat2.pair_b] = out[4]
        result.pair_marginals = full
    return result


def decode_any(model, data: Dataset, **options) -> Decoded:
    """Decode with the decoder of the model's order (``model.space.order``)."""
    if model.space.order == 2:
        return decode2(model, data, **options)
    from crfkit.kernels.decoder import decode

    return decode(model, data, **options)
