"""Forward-backward of a group of sequences that share one transition matrix, as products of
matrices.

Taken one sequence at a time, a token's step of the scaled recurrences
(:mod:`crfkit.kernels.scaled`) is the product of the L x L transition factors and one
vector: L dot products, each a short reduction with its own horizontal sum and remainder,
and the matrix (68 KB at 92 labels) read again from L2 for every token. Here
:data:`GROUP` sequences take their step t together: (GROUP x L) times (L x L), computed
in tiles of 8 x 2 dot products (:func:`row_products`) whose 16 sums stay in registers,
each row of the matrix loaded once for all of them. The pair sums, which need no
recursion, are one more such product per group over all its tokens:

    pair[a, b] = sum over tokens t >= 1 of alpha[t-1, a] U[t, b] beta[t, b] / scale[t]

A block's sequences are taken shortest first (:func:`by_length`), so a group's
sequences end at about the same step and few of its rows are idle. Labels are padded
with zeros to :func:`padded` so the products need no remainder loops; the padding adds
exact zeros.

The recurrences are those of :func:`crfkit.kernels.scaled.shared_logz`; the sums are
taken in another order (tiles; the block's sequences by length), so results agree with the
per-sequence kernels to rounding, not to the bit. They depend only on the block
partition, never on the thread count. Slot k of a group's tables holds one sequence:
``expu``, ``alpha``, ``beta`` are (Tmax, GROUP, Lp), token-major, so that a step's rows
are one contiguous (GROUP x Lp) matrix.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import posterior_errors, unigram_expectations
from crfkit.kernels.lattice import longest_sequence, unigram_factors

# Sequences advanced together: the tile height of row_products.
GROUP = 8

# Sequences sorted by length together (in block order, window by window): enough for
# groups of near-equal lengths, few enough that the features they read stay in cache.
WINDOW = 256


@njit(**JIT)
def padded(L):
    """L rounded up to a multiple of 8: what row_products' tiles need."""
    return (L + 7) // 8 * 8


@njit(**JIT)
def row_products(A, B, C, nA, nB, K):
    """C[i, j] = sum over k < K of A[i, k] B[j, k], for i < nA (a multiple of 8) and
    j < nB (a multiple of 2): A times B transposed, both read along contiguous rows.

    An 8 x 2 tile of sums is kept in registers while k runs: per k, two loads of B
    and eight of A feed sixteen multiply-adds (a dot product at a time: two loads
    per multiply-add)."""
    for i in range(0, nA, 8):
        for j in range(0, nB, 2):
            c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = 0.0
            c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = 0.0
            for k in range(K):
                b0 = B[j, k]
                b1 = B[j + 1, k]
                a = A[i, k]
                c00 += a * b0
                c01 += a * b1
                a = A[i + 1, k]
                c10 += a * b0
                c11 += a * b1
                a = A[i + 2, k]
                c20 += a * b0
                c21 += a * b1
                a = A[i + 3, k]
                c30 += a * b0
                c31 += a * b1
                a = A[i + 4, k]
                c40 += a * b0
                c41 += a * b1
                a = A[i + 5, k]
                c50 += a * b0
                c51 += a * b1
                a = A[i + 6, k]
                c60 += a * b0
                c61 += a * b1
                a = A[i + 7, k]
                c70 += a * b0
                c71 += a * b1
            C[i, j], C[i, j + 1] = c00, c01
            C[i + 1, j], C[i + 1, j + 1] = c10, c11
            C[i + 2, j], C[i + 2, j + 1] = c20, c21
            C[i + 3, j], C[i + 3, j + 1] = c30, c31
            C[i + 4, j], C[i + 4, j + 1] = c40, c41
            C[i + 5, j], C[i + 5, j + 1] = c50, c51
            C[i + 6, j], C[i + 6, j + 1] = c60, c61
            C[i + 7, j], C[i + 7, j + 1] = c70, c71


@njit(**JIT)
def shortest_first(seq_ptr, s0, s1):
    """Sequences s0 .. s1-1 shortest first, in order among equals (a counting sort:
    stable and deterministic, and no general sort to compile)."""
    longest = longest_sequence(seq_ptr, s0, s1)
    count = np.zeros(longest + 2, dtype=np.int64)
    for s in range(s0, s1):
        count[seq_ptr[s + 1] - seq_ptr[s] + 1] += 1
    for n in range(1, longest + 2):
        count[n] += count[n - 1]
    order = np.empty(s1 - s0, dtype=np.int64)
    for s in range(s0, s1):
        T = seq_ptr[s + 1] - seq_ptr[s]
        order[count[T]] = s
        count[T] += 1
    return order


@njit(**JIT)
def by_length(seq_ptr, s0, s1):
    """The non-empty sequences of s0 .. s1-1 in :func:`shortest_first`'s order."""
    order = shortest_first(seq_ptr, s0, s1)
    n = 0
    while n < order.size and seq_ptr[order[n] + 1] == seq_ptr[order[n]]:
        n += 1
    return order[n:]


class GroupWork(NamedTuple):
    """A group's tables for sequences of up to Tmax tokens, labels padded to Lp."""

    expu: np.ndarray     # (Tmax, GROUP, Lp) unigram factors, then the backward factors
    alpha: np.ndarray    # (Tmax, GROUP, Lp) scaled forward rows
    beta: np.ndarray     # (Tmax, GROUP, Lp) scaled backward rows
    scale: np.ndarray    # (Tmax, GROUP) the forward rows' sums
    prod: np.ndarray     # (GROUP, Lp) a step's product
    left: np.ndarray     # (Lp, GROUP Tmax) the pair product's operands
    right: np.ndarray    # (Lp, GROUP Tmax)
    pair: np.ndarray     # (Lp, Lp) the pair sums
    factors: np.ndarray  # (2, Lp, Lp) exp_trans padded: the matrix and its transpose
    lengths: np.ndarray  # (GROUP,) each slot's sequence length
    logz: np.ndarray     # (GROUP,) each slot's log Z (NaN: a scale underflowed)


@njit(**JIT)
def group_work(Tmax, L, exp_trans):
    """A :class:`GroupWork` for sequences of up to Tmax tokens (zeros: the padding must be)."""
    Lp = padded(L)
    factors = np.zeros((2, Lp, Lp))
    for m in range(2):
        for a in range(L):
            for b in range(L):
                factors[m, a, b] = exp_trans[m, a, b]
    return GroupWork(np.zeros((Tmax, GROUP, Lp)), np.zeros((Tmax, GROUP, Lp)),
                     np.zeros((Tmax, GROUP, Lp)), np.ones((Tmax, GROUP)), np.zeros((GROUP, Lp)),
                     np.zeros((Lp, GROUP * Tmax)), np.zeros((Lp, GROUP * Tmax)),
                     np.zeros((Lp, Lp)), factors, np.zeros(GROUP, dtype=np.int64),
                     np.zeros(GROUP))


@njit(**JIT)
def load_slot(gw, k, src, T, Tg, L):
    """Slot k's unigram factors = src[:T] (one sequence's, (T, L)), zero for T <= t < Tg."""
    expu, lengths = gw.expu, gw.lengths
    lengths[k] = T
    for t in range(Tg):
        for y in range(L):
            expu[t, k, y] = src[t, y] if t < T else 0.0


@njit(**JIT)
def unload_slot(gw, k, alpha, beta, L):
    """alpha[:T], beta[:T] (T, L) = slot k's scaled forward and backward rows."""
    galpha, gbeta, lengths = gw.alpha, gw.beta, gw.lengths
    for t in range(lengths[k]):
        for y in range(L):
            alpha[t, y] = galpha[t, k, y]
            beta[t, y] = gbeta[t, k, y]


@njit(**JIT)
def group_logz(gw, n, Tg, L):
    """gw.logz[k] = log Z of slot k < n's sequence minus the transitions' shifts, NaN
    if a scale underflows; alpha, beta, scale filled, expu[t] (t >= 1) turned into the
    backward factors U[t] beta[t] / scale[t] (the pair product's right operand)."""
    lengths, logz = gw.lengths, gw.logz
    group_forward(gw, n, Tg, L)
    group_backward(gw, n, Tg, L)
    scale = gw.scale
    for k in range(n):
        if logz[k] == logz[k]:
            for t in range(lengths[k]):
                logz[k] += np.log(scale[t, k])


@njit(**JIT)
def group_forward(gw, n, Tg, L):
    """alpha[t] = prod(alpha[t-1], M) * U[t], scaled to sum 1, for every slot at once;
    a slot whose scale underflows gets logz NaN and zero factors from there on."""
    expu, alpha, prod, MT, lengths, logz = (gw.expu, gw.alpha, gw.prod, gw.factors[1],
                                            gw.lengths, gw.logz)
    Lp = alpha.shape[2]
    for k in range(GROUP):
        logz[k] = 0.0 if k < n else np.nan
        for y in range(L):
            alpha[0, k, y] = expu[0, k, y] if k < n else 0.0
        rescale_slot(gw, 0, k, L, k < n)
    for t in range(1, Tg):
        row_products(alpha[t - 1], MT, prod, GROUP, Lp, Lp)
        for k in range(GROUP):
            live = t < lengths[k] and logz[k] == logz[k]
            for y in range(L):
                alpha[t, k, y] = prod[k, y] * expu[t, k, y] if live else 0.0
            rescale_slot(gw, t, k, L, live)


@njit(inline="always", **JIT)
def rescale_slot(gw, t, k, L, live):
    """scale[t, k] = the sum of slot k's alpha[t], which is divided by it; a sum that
    underflowed or overflowed sets logz[k] NaN and zeroes the slot's rows."""
    expu, alpha, scale, logz = gw.expu, gw.alpha, gw.scale, gw.logz
    if not live:
        return
    s = 0.0
    for y in range(L):
        s += alpha[t, k, y]
    scale[t, k] = s
    if s > 0.0 and s < np.inf:
        inv = 1.0 / s
        for y in range(L):
            alpha[t, k, y] *= inv
        return
    logz[k] = np.nan
    for u in range(expu.shape[0]):
        for y in range(L):
            expu[u, k, y] = 0.0
            alpha[u, k, y] = 0.0


@njit(**JIT)
def group_backward(gw, n, Tg, L):
    """beta[t] = prod(U[t+1] beta[t+1] / scale[t+1], M transposed) for every slot at once,
    beta[T-1] = 1 for each slot's last token T-1."""
    expu, beta, scale, prod, M, lengths, logz = (gw.expu, gw.beta, gw.scale, gw.prod,
                                                 gw.factors[0], gw.lengths, gw.logz)
    Lp = beta.shape[2]
    for k in range(n):
        for y in range(L):
            beta[lengths[k] - 1, k, y] = 1.0
    for t in range(Tg - 2, -1, -1):
        for k in range(n):
            if t < lengths[k] - 1 and logz[k] == logz[k]:
                inv = 1.0 / scale[t + 1, k]
                for y in range(L):
                    expu[t + 1, k, y] *= beta[t + 1, k, y] * inv
        row_products(expu[t + 1], M, prod, GROUP, Lp, Lp)
        for k in range(n):
            if t < lengths[k] - 1:
                for y in range(L):
                    beta[t, k, y] = prod[k, y]


@njit(**JIT)
def group_pair_expectations(G, trans_offset, gw, n, L):
    """G's transition block += sum over the group's tokens of P(y[t-1] = a, y[t] = b):
    pair = (alpha[t-1] rows)^T (backward factor rows) as one product, times M."""
    expu, alpha, lengths, logz = gw.expu, gw.alpha, gw.lengths, gw.logz
    left, right, pair, M = gw.left, gw.right, gw.pair, gw.factors[0]
    Lp = pair.shape[0]
    m = 0
    for k in range(n):
        if logz[k] == logz[k]:
            for y in range(L):  # the rows written in runs: the slot's rows stay in L1
                for t in range(1, lengths[k]):
                    left[y, m + t - 1] = alpha[t - 1, k, y]
                    right[y, m + t - 1] = expu[t, k, y]
            m += lengths[k] - 1
    if m == 0:
        return
    row_products(left, right, pair, Lp, Lp, m)
    for a in range(L):
        for b in range(L):
            G[trans_offset + a * L + b] += pair[a, b] * M[a, b]


@njit(**JIT)
def grouped_block(space, data, L, s0, s1, exp_trans, trans_shift, expW, expWd, Gd, G, out):
    """:func:`crfkit.kernels.loss.crf_loss_block` of a binary corpus whose tokens share one
    transition matrix (unigram factors given): the expected counts of sequences s0..s1-1
    into G (the dense rows' into Gd, both zeroed by the caller), (sum of log Z, token
    errors, sequence errors) into out, the sequences taken in groups by length (:data:`WINDOW`)."""
    Tmax = longest_sequence(data[0], s0, s1)
    gw = group_work(Tmax, L, exp_trans)
    rows = (np.empty((Tmax, L)), np.empty((Tmax, L)), np.empty((Tmax, L)))
    out[0] = out[1] = out[2] = 0.0
    for w0 in range(s0, s1, WINDOW):
        order = by_length(data[0], w0, min(w0 + WINDOW, s1))
        for g0 in range(0, order.size, GROUP):
            group_gradient(space, data, L, order[g0:g0 + GROUP], gw, rows, trans_shift, expW,
                           expWd, Gd, G, out)


@njit(**JIT)
def group_gradient(space, data, L, seqs, gw, rows, trans_shift, expW, expWd, Gd, G, out):
    """:func:`grouped_block`'s work for one group: the sequences ``seqs`` (sorted by
    length); ``rows``: (expu, alpha, beta) of one sequence, (Tmax, L) each."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    u_ptr, u_lab, trans_offset, has_trans = space[0], space[1], space[6], space[7]
    expu, alpha, beta = rows
    n = seqs.size
    Tg = seq_ptr[seqs[n - 1] + 1] - seq_ptr[seqs[n - 1]]  # the longest
    for k in range(n):
        t0, T = seq_ptr[seqs[k]], seq_ptr[seqs[k] + 1] - seq_ptr[seqs[k]]
        unigram_factors(expW, tok_ptr, tok_obs, u_ptr, u_lab, t0, T, expu, expWd)
        load_slot(gw, k, expu, T, Tg, L)
    group_logz(gw, n, Tg, L)
    if has_trans:
        group_pair_expectations(G, trans_offset, gw, n, L)
    for k in range(n):
        t0, T = seq_ptr[seqs[k]], seq_ptr[seqs[k] + 1] - seq_ptr[seqs[k]]
        unload_slot(gw, k, alpha, beta, L)
        unigram_expectations(G, tok_ptr, tok_obs, None, u_ptr, u_lab, t0, T, L, alpha, beta, Gd)
        out[0] += trans_shift * (T - 1)
        out[0] += gw.logz[k]
        wrong = posterior_errors(alpha, labels, t0, T)
        out[1] += wrong
        out[2] += 1 if wrong else 0
