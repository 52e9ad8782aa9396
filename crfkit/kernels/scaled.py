"""Numba kernels: the scaled forward and backward recurrences of one sequence's lattice
(CRFsuite's method; the recurrences are written out in :mod:`crfkit.kernels.lattice`), and
the variant for one transition matrix shared by every token.

Each ``alpha[t]`` sums to one, its normaliser is ``scale[t]``; ``alpha[t] * beta[t]`` is
the marginal of token ``t`` and log Z the sum of the logs of the scales (plus the maxima
the caller subtracted). A scale that underflows or overflows makes log Z NaN: the caller
falls back to a safer path.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT


@njit(**JIT)
def scaled_logz(expu, expb, per_token, T, L, alpha, beta, scale, tmp, logz):
    """Scaled forward-backward given the exponentiated scores; returns ``logz`` plus
    the log of every scale (NaN if a scale underflows)."""
    if not scaled_forward(expu, expb, per_token, T, L, alpha, scale, tmp):
        return np.nan
    scaled_backward(expu, expb, per_token, T, L, beta, scale, tmp, 0)
    for t in range(T):
        logz += np.log(scale[t])
    return logz


@njit(**JIT)
def scaled_forward(expu, expb, per_token, T, L, alpha, scale, tmp):
    """alpha[t] = the forward vector of tokens 0..t, normalised by scale[t] to sum 1.

    False if a scale underflows or overflows (the caller's log Z is then NaN).
    """
    forward_start(expu, L, alpha, scale)
    for t in range(1, T):
        M = expb[t] if per_token else expb[0]
        for b in range(L):
            tmp[b] = 0.0
        for a in range(L):
            w = alpha[t - 1, a]
            for b in range(L):
                tmp[b] += w * M[a, b]
        s = 0.0
        for b in range(L):
            v = tmp[b] * expu[t, b]
            alpha[t, b] = v
            s += v
        if not rescale(alpha, t, L, scale, s):
            return False
    return True


@njit(inline="always", **JIT)
def forward_start(expu, L, alpha, scale):
    """alpha[0] = expu[0] normalised to sum 1; scale[0] its sum."""
    s = 0.0
    for y in range(L):
        alpha[0, y] = expu[0, y]
        s += alpha[0, y]
    scale[0] = s
    for y in range(L):
        alpha[0, y] /= s


@njit(inline="always", **JIT)
def rescale(alpha, t, L, scale, s):
    """scale[t] = s (the sum of alpha[t]) and alpha[t] divided by it; False if s
    underflowed to 0 or overflowed (or is NaN)."""
    scale[t] = s
    if not (s > 0.0 and s < np.inf):
        return False
    inv = 1.0 / s
    for b in range(L):
        alpha[t, b] *= inv
    return True


@njit(**JIT)
def scaled_backward(expu, expb, per_token, T, L, beta, scale, tmp, first):
    """beta[t] for t = T-1 down to ``first``, scaled by the forward scales, so that
    alpha[t] * beta[t] is token t's marginal (``first > 0``: the earlier rows are
    not needed and not computed)."""
    for y in range(L):
        beta[T - 1, y] = 1.0
    for t in range(T - 2, first - 1, -1):
        M = expb[t + 1] if per_token else expb[0]
        inv = 1.0 / scale[t + 1]
        for b in range(L):
            tmp[b] = expu[t + 1, b] * beta[t + 1, b] * inv
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += M[a, b] * tmp[b]
            beta[t, a] = acc


@njit(**JIT)
def shared_logz(expu, M, MT, T, L, alpha, beta, scale, tmp, pair, pairs, logz):
    """:func:`scaled_logz` for one transition matrix ``M`` shared by every token (``MT``
    its transpose), and with ``pairs`` the sums that give the transitions' expectations:

        pair[a, b] = sum_t alpha[t-1, a] U[t, b] beta[t, b] / scale[t]

    (times ``M[a, b]``: P(y[t-1] = a, y[t] = b) summed over the tokens). Returns
    ``logz`` plus the log of every scale, NaN if a scale underflows (pair is then
    not filled).

    The shape of the loops is the point: a forward entry is the dot product of two
    contiguous rows (alpha[t-1] and MT[b]) and the backward pass adds token t's
    pair sums while it holds the row it multiplies M by, so every inner loop is a
    contiguous reduction or update that vectorises, and the pair sums cost no pass
    of their own (:func:`scaled_logz` followed by
    :func:`crfkit.kernels.gradient.shared_pair_expectations` gives the same sums,
    more slowly).
    """
    if not shared_forward(expu, MT, T, L, alpha, scale):
        return np.nan
    for y in range(L):
        beta[T - 1, y] = 1.0
    if pairs:
        pair[:, :] = 0.0
    for t in range(T - 2, -1, -1):
        inv = 1.0 / scale[t + 1]
        for b in range(L):
            tmp[b] = expu[t + 1, b] * beta[t + 1, b] * inv
        if pairs:
            for a in range(L):
                w = alpha[t, a]
                acc = 0.0
                for b in range(L):
                    acc += M[a, b] * tmp[b]
                    pair[a, b] += w * tmp[b]
                beta[t, a] = acc
        else:
            for a in range(L):
                acc = 0.0
                for b in range(L):
                    acc += M[a, b] * tmp[b]
                beta[t, a] = acc
    for t in range(T):
        logz += np.log(scale[t])
    return logz


@njit(**JIT)
def shared_forward(expu, MT, T, L, alpha, scale):
    """:func:`scaled_forward` with one transition matrix for every token, given as its
    transpose ``MT``: alpha[t, b] is then a dot product of two contiguous rows."""
    forward_start(expu, L, alpha, scale)
    for t in range(1, T):
        if not rescale(alpha, t, L, scale, shared_row(alpha, expu, t, MT, L)):
            return False
    return True


@njit(inline="always", **JIT)
def shared_row(alpha, expu, t, MT, L):
    """alpha[t] = (alpha[t-1] through the shared transition factors MT, transposed) times
    token t's unigram factors, unscaled; returns the row's sum."""
    s = 0.0
    for b in range(L):
        acc = 0.0
        for a in range(L):
            acc += MT[b, a] * alpha[t - 1, a]
        v = acc * expu[t, b]
        alpha[t, b] = v
        s += v
    return s
