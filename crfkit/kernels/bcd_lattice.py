"""The cached lattice of blockwise coordinate descent (:mod:`crfkit.kernels.bcd`).

Coordinate descent updates one observation's block of weights at a time, and each update
needs the token marginals at the places where that observation fires. Recomputing a whole
forward-backward per (observation, sequence), as Wapiti does, repeats work: an update only
changes the scores of the tokens where the updated observation fires, so most of every
sequence's forward and backward vectors stay valid. Here they are kept for the whole
corpus, with per sequence how far they are valid, and only the invalidated part is
recomputed when a block needs it. A block whose update leaves its weights as they were
(an L1 block that stays at zero) invalidates nothing.

State over the corpus (``n`` tokens, ``L`` labels)::

    psi   (n, L)  each token's unigram scores (sum of its features' weights)
    expu  (n, L)  exp(psi[t] - max psi[t])
    alpha (n, L)  forward vectors, each normalised to sum 1
    beta  (n, L)  backward vectors, each normalised to sum 1
    a_ok  (S,)    rows 0 .. a_ok[s]-1 of sequence s's alpha are valid
    b_from (S,)   rows b_from[s] .. T-1 of sequence s's beta are valid (T: none)
    expT  (L, L)  exp(transitions - max); M (L, L), tmp (L,): scratch
    expw  (n_b,)  exp of every observation-bigram weight
    expTT (L, L)  expT transposed: without observation bigrams, a forward entry is then
                  the dot product of two contiguous rows, which vectorises

Recurrences for local rows of one sequence (``M_t``: the transition factors into token
t, ``expT`` times the ``expw`` of the bigram features firing at t)::

    alpha[t, b] ~ expu[t, b] * sum_a alpha[t-1, a] M_t[a, b]
    beta[t, a]  ~ sum_b M_{t+1}[a, b] expu[t+1, b] beta[t+1, b]
    P(y_t = y)  = alpha[t, y] beta[t, y] / sum_y' alpha[t, y'] beta[t, y']

A row is computed from its neighbour by the same operations whenever it is recomputed,
so the cache changes no bit against recomputing every sequence in full.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.scaled import shared_row


@njit(**JIT)
def transition_factors(t, per_token, lat, tok_ptr, tok_obs, b_ptr, b_prev, b_cur):
    """M_t (global token t, t not a sequence start): expT times the exponentiated
    observation bigrams firing at t (the shared expT itself without ``per_token``)."""
    expT, M, expw = lat[6], lat[7], lat[8]
    if not per_token:
        return expT
    L = expT.shape[0]
    for a in range(L):
        for b in range(L):
            M[a, b] = expT[a, b]
    for j in range(tok_ptr[t], tok_ptr[t + 1]):
        o = tok_obs[j]
        for k in range(b_ptr[o], b_ptr[o + 1]):
            M[b_prev[k], b_cur[k]] *= expw[k]
    return M


@njit(**JIT)
def normalise_row(row, total):
    inv = 1.0 / total
    for y in range(row.shape[0]):
        row[y] *= inv


@njit(**JIT)
def ensure_alpha(s, i, per_token, lat, seq_ptr, space, tok_ptr, tok_obs):
    """Make rows 0..i of sequence s's alpha valid."""
    expu, alpha, a_ok = lat[1], lat[2], lat[4]
    b_ptr, b_prev, b_cur = space[2], space[3], space[4]
    t0 = seq_ptr[s]
    L = expu.shape[1]
    r = a_ok[s]
    if r == 0:
        total = 0.0
        for y in range(L):
            alpha[t0, y] = expu[t0, y]
            total += expu[t0, y]
        normalise_row(alpha[t0], total)
        r = 1
    while r <= i:
        t = t0 + r
        if per_token:
            forward_row(alpha, expu, t, transition_factors(t, per_token, lat, tok_ptr, tok_obs,
                                                           b_ptr, b_prev, b_cur), L)
        else:
            forward_row_shared(alpha, expu, t, lat[10], L)
        r += 1
    a_ok[s] = r


@njit(**JIT)
def forward_row(alpha, expu, t, M, L):
    """alpha[t] from alpha[t-1] through token t's own transition factors M."""
    total = 0.0
    for b in range(L):
        acc = 0.0
        for a in range(L):
            acc += alpha[t - 1, a] * M[a, b]
        v = acc * expu[t, b]
        alpha[t, b] = v
        total += v
    normalise_row(alpha[t], total)


@njit(**JIT)
def forward_row_shared(alpha, expu, t, MT, L):
    """alpha[t] from alpha[t-1] through the shared transition factors, given transposed."""
    normalise_row(alpha[t], shared_row(alpha, expu, t, MT, L))


@njit(**JIT)
def ensure_beta(s, i, per_token, lat, seq_ptr, space, tok_ptr, tok_obs):
    """Make rows i..T-1 of sequence s's beta valid."""
    expu, beta, b_from, tmp = lat[1], lat[3], lat[5], lat[9]
    b_ptr, b_prev, b_cur = space[2], space[3], space[4]
    t0 = seq_ptr[s]
    T = seq_ptr[s + 1] - t0
    L = expu.shape[1]
    r = b_from[s]
    if r >= T:
        for y in range(L):
            beta[t0 + T - 1, y] = 1.0 / L
        r = T - 1
    while r > i:
        t = t0 + r  # beta row t - 1 from row t
        M = transition_factors(t, per_token, lat, tok_ptr, tok_obs, b_ptr, b_prev, b_cur)
        for b in range(L):
            tmp[b] = expu[t, b] * beta[t, b]
        total = 0.0
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += M[a, b] * tmp[b]
            beta[t - 1, a] = acc
            total += acc
        normalise_row(beta[t - 1], total)
        r -= 1
    b_from[s] = r


@njit(**JIT)
def invalidate(s, i, lat):
    """The scores of local token i of sequence s changed: alpha rows from i and beta rows
    before i are stale."""
    a_ok, b_from = lat[4], lat[5]
    if a_ok[s] > i:
        a_ok[s] = i
    if b_from[s] < i:
        b_from[s] = i


@njit(**JIT)
def refresh_expu(t, lat):
    """expu[t] = exp(psi[t] - max psi[t]) after psi[t] changed."""
    psi, expu = lat[0], lat[1]
    L = psi.shape[1]
    m = psi[t, 0]
    for y in range(1, L):
        m = max(m, psi[t, y])
    for y in range(L):
        expu[t, y] = np.exp(psi[t, y] - m)


@njit(**JIT)
def pair_normaliser(t, M, lat):
    """sum_ab alpha[t-1, a] M[a, b] expu[t, b] beta[t, b]: the normaliser of token t's
    label-pair marginals; leaves tmp[b] = expu[t, b] beta[t, b]."""
    expu, alpha, beta, tmp = lat[1], lat[2], lat[3], lat[9]
    L = expu.shape[1]
    for b in range(L):
        tmp[b] = expu[t, b] * beta[t, b]
    z = 0.0
    for a in range(L):
        w = alpha[t - 1, a]
        for b in range(L):
            z += w * M[a, b] * tmp[b]
    return z
